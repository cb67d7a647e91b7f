//! Consumer progress (`config/consumerOffset.json`): the next offset to
//! consume per (group, topic, queue).
//!
//! With `enableLmq` the table lives in `config/lmqConsumerOffset.json`
//! instead, in RocketMQ 5.3.3's shape (`LmqConsumerOffsetManager`): the
//! offsets of `%LMQ%` groups as one number per `topic@group` in
//! `lmqOffsetTable`, every other group's in `offsetTable`. So a store
//! moves between Java and this broker with its offsets, whatever
//! `enableLmq` says. Either setting reads the newer of the two files, so
//! turning `enableLmq` on or off never loses progress (Java starts from an
//! empty table the first time it is turned on).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::MetaError;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use rmq_common::names::is_lmq;

use super::persist::{write_dirty, Generations, PersistTable, Snapshot};
use super::{encode_json, read_json};

/// The file without `enableLmq`.
const FILE: &str = "consumerOffset.json";
/// The file with `enableLmq` (RocketMQ 5.3.3's `LmqConsumerOffsetManager`).
const LMQ_FILE: &str = "lmqConsumerOffset.json";

/// `config/consumerOffset.json` (or `lmqConsumerOffset.json`).
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct OffsetsFile {
    /// Key `topic@group`, as RocketMQ writes it.
    pub(crate) offset_table: BTreeMap<String, BTreeMap<i32, i64>>,
    /// `lmqConsumerOffset.json` only: the offset of each `topic@group`
    /// whose group is an LMQ, queue id left out (Java keeps one per pair).
    /// Always empty in memory: loading moves it to queue 0 of
    /// `offset_table`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) lmq_offset_table: BTreeMap<String, i64>,
}

impl OffsetsFile {
    /// Moves `lmqOffsetTable` into queue 0 of `offsetTable` (a key in
    /// both: the LMQ table wins, as Java's LMQ group reads only that one).
    fn unfold_lmq(&mut self) {
        for (k, offset) in std::mem::take(&mut self.lmq_offset_table) {
            self.offset_table.entry(k).or_default().insert(0, offset);
        }
    }

    /// The table in `lmqConsumerOffset.json`'s shape: LMQ groups' pairs in
    /// `lmqOffsetTable` (queue 0's offset, else the first queue's).
    fn fold_lmq(&self) -> Self {
        let mut out = Self::default();
        for (k, queues) in &self.offset_table {
            let lmq_group = k.rsplit_once('@').is_some_and(|(_, g)| is_lmq(g));
            match queues.get(&0).or_else(|| queues.values().next()) {
                Some(offset) if lmq_group => {
                    out.lmq_offset_table.insert(k.clone(), *offset);
                }
                _ => {
                    out.offset_table.insert(k.clone(), queues.clone());
                }
            }
        }
        out
    }
}

/// When `path` was last written; `None` when it does not exist.
fn written_at(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Committed consumer offsets, written behind by the meta persister every
/// `flushConsumerOffsetInterval` and at a clean stop (commits only change
/// memory).
#[derive(Debug)]
pub struct ConsumerOffsetManager {
    path: PathBuf,
    /// Written in `lmqConsumerOffset.json`'s shape (`enableLmq`).
    lmq_file: bool,
    state: Mutex<OffsetsFile>,
    generations: Generations,
    /// How far each group has pulled (memory only).
    pub pulled: super::pulled::PullOffsets,
}

fn key(topic: &str, group: &str) -> String {
    format!("{topic}@{group}")
}

impl ConsumerOffsetManager {
    /// Loads `config/consumerOffset.json` under the store root (no LMQ).
    pub fn open(root: &std::path::Path) -> Result<Self, MetaError> {
        Self::open_with(root, false)
    }

    /// Loads the table under the store root and writes it where RocketMQ
    /// 5.3.3 does for this `enableLmq`: from the newer of the two files
    /// (the other setting's file when it is the newer one).
    pub fn open_with(root: &std::path::Path, enable_lmq: bool) -> Result<Self, MetaError> {
        let config = root.join("config");
        let (own, other) = match enable_lmq {
            true => (config.join(LMQ_FILE), config.join(FILE)),
            false => (config.join(FILE), config.join(LMQ_FILE)),
        };
        let from = match (written_at(&own), written_at(&other)) {
            (None, Some(_)) => &other,
            (Some(a), Some(b)) if b > a => &other,
            _ => &own,
        };
        if from != &own {
            tracing::info!(file = %from.display(), "consumer offsets read from the newer file of the other enableLmq setting");
        }
        let mut file: OffsetsFile = read_json(from)?.unwrap_or_default();
        file.unfold_lmq();
        Ok(Self {
            path: own,
            lmq_file: enable_lmq,
            state: Mutex::new(file),
            generations: Generations::default(),
            pulled: super::pulled::PullOffsets::default(),
        })
    }

    /// GET_ALL_CONSUMER_OFFSET's body: `{"offsetTable":{"topic@group":{...}}}`.
    pub fn table_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(&*self.state.lock())
    }

    /// A slave takes its master's offsets: each `topic@group` the master
    /// has replaces the slave's (keys only the slave has stay), as Java's
    /// slave does.
    pub fn take_from_master(&self, table: BTreeMap<String, BTreeMap<i32, i64>>) {
        let mut s = self.state.lock();
        for (k, queues) in table {
            s.offset_table.insert(k, queues);
        }
        drop(s);
        self.generations.mark();
    }

    /// The committed offset, if any. A negative one (stored as sent) is
    /// none, as Java's `queryOffset` answers -1 for both.
    pub fn query(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        self.state
            .lock()
            .offset_table
            .get(&key(topic, group))
            .and_then(|q| q.get(&queue_id))
            .copied()
            .filter(|o| *o >= 0)
    }

    /// Records a committed offset. A negative one is stored as sent and
    /// replaces the one before, as Java 4.9.7 stores it (ali-ons commits
    /// -1 for a queue it has not consumed); [`Self::query`] then answers
    /// none for it.
    pub fn commit(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        let mut s = self.state.lock();
        s.offset_table
            .entry(key(topic, group))
            .or_default()
            .insert(queue_id, offset);
        self.generations.mark();
    }

    /// Every (topic, queue, offset) a group has committed.
    pub fn group_offsets(&self, group: &str) -> Vec<(String, i32, i64)> {
        let suffix = format!("@{group}");
        let s = self.state.lock();
        s.offset_table
            .iter()
            .filter_map(|(k, v)| k.strip_suffix(&suffix).map(|t| (t, v)))
            .flat_map(|(t, v)| v.iter().map(move |(q, o)| (t.to_owned(), *q, *o)))
            .collect()
    }

    /// Every committed (group, topic, queue, offset), the negative ones
    /// (none, see [`Self::query`]) left out.
    pub fn all(&self) -> Vec<(String, String, i32, i64)> {
        let s = self.state.lock();
        s.offset_table
            .iter()
            .filter_map(|(k, v)| k.split_once('@').map(|(t, g)| (t, g, v)))
            .flat_map(|(t, g, v)| {
                v.iter()
                    .filter(|(_, o)| **o >= 0)
                    .map(move |(q, o)| (g.to_owned(), t.to_owned(), *q, *o))
            })
            .collect()
    }

    /// Groups that committed offsets for `topic`.
    pub fn groups_of_topic(&self, topic: &str) -> Vec<String> {
        let prefix = format!("{topic}@");
        self.state
            .lock()
            .offset_table
            .keys()
            .filter_map(|k| k.strip_prefix(&prefix).map(str::to_owned))
            .collect()
    }

    /// Forgets every offset of `group` (DELETE_SUBSCRIPTIONGROUP with
    /// removeOffset); returns how many topics it had.
    pub fn remove_group(&self, group: &str) -> usize {
        self.pulled.remove_group(group);
        let suffix = format!("@{group}");
        self.remove_keys(|k| k.ends_with(&suffix))
    }

    /// Forgets every group's offsets of `topic` (DELETE_TOPIC_IN_BROKER).
    pub fn remove_topic(&self, topic: &str) -> usize {
        self.pulled.remove_topic(topic);
        let prefix = format!("{topic}@");
        self.remove_keys(|k| k.starts_with(&prefix))
    }

    /// [`ConsumerOffsetManager::remove_topic`] for many topics in one walk
    /// of the table (LMQs removed by expiry).
    pub fn remove_topics(&self, topics: &[String]) -> usize {
        for topic in topics {
            self.pulled.remove_topic(topic);
        }
        let doomed: std::collections::HashSet<&str> = topics.iter().map(String::as_str).collect();
        self.remove_keys(|k| k.split_once('@').is_some_and(|(t, _)| doomed.contains(t)))
    }

    fn remove_keys(&self, doomed: impl Fn(&str) -> bool) -> usize {
        let mut s = self.state.lock();
        let before = s.offset_table.len();
        s.offset_table.retain(|k, _| !doomed(k));
        let removed = before - s.offset_table.len();
        if removed > 0 {
            self.generations.mark();
        }
        removed
    }

    /// Writes the table now if it changed since the last write (on the
    /// caller's thread; the meta persister does it otherwise).
    pub fn persist(&self) -> Result<(), MetaError> {
        write_dirty(self).map(|_| ())
    }

    /// Its change generations (how far the file has caught up).
    pub fn generations(&self) -> &Generations {
        &self.generations
    }
}

impl PersistTable for ConsumerOffsetManager {
    fn path(&self) -> &Path {
        &self.path
    }

    fn generations(&self) -> &Generations {
        &self.generations
    }

    fn encode_snapshot(&self) -> Result<Snapshot, MetaError> {
        let (snapshot, generation) = {
            let s = self.state.lock();
            let copy = match self.lmq_file {
                true => s.fold_lmq(),
                false => s.clone(),
            };
            (copy, self.generations.current())
        };
        Ok(Snapshot {
            bytes: encode_json(&self.path, &snapshot)?,
            generation,
            cut: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_persist_reload() {
        let dir = tempfile::tempdir().unwrap();
        let m = ConsumerOffsetManager::open(dir.path()).unwrap();
        assert_eq!(m.query("g", "T", 0), None);
        m.commit("g", "T", 0, 12);
        m.commit("g", "T", 1, 5);
        m.commit("g", "T", 2, 9);
        // As Java 4.9.7: -1 (ali-ons, for a queue not consumed yet) is
        // stored, replaces the offset before, and then reads as none.
        m.commit("g", "T", 2, -1);
        m.persist().unwrap();
        let raw = std::fs::read_to_string(dir.path().join("config/consumerOffset.json")).unwrap();
        assert!(raw.contains("\"T@g\""), "{raw}");
        let m = ConsumerOffsetManager::open(dir.path()).unwrap();
        assert_eq!(m.query("g", "T", 0), Some(12));
        assert_eq!(m.query("g", "T", 1), Some(5));
        assert_eq!(m.query("g", "T", 2), None);
        assert!(String::from_utf8(m.table_json().unwrap())
            .unwrap()
            .contains("-1"));
        assert_eq!(m.all().len(), 2, "the -1 is none: {:?}", m.all());
        assert_eq!(m.group_offsets("g").len(), 3);
        assert_eq!(m.groups_of_topic("T"), vec!["g".to_owned()]);
    }

    /// What RocketMQ 5.3.3 writes with enableLmq (fastjson: bare queue ids).
    const JAVA_LMQ_FILE: &str = r#"{"offsetTable":{"T@g":{0:12,1:5},"%LMQ%a@CID_1":{0:4}},
        "lmqOffsetTable":{"%LMQ%a@%LMQ%g":7},"dataVersion":{"timestamp":1,"counter":2}}"#;

    #[test]
    fn enable_lmq_reads_and_writes_javas_lmq_consumer_offset_file() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join(LMQ_FILE), JAVA_LMQ_FILE).unwrap();
        let m = ConsumerOffsetManager::open_with(dir.path(), true).unwrap();
        assert_eq!(m.query("g", "T", 1), Some(5));
        assert_eq!(m.query("CID_1", "%LMQ%a", 0), Some(4));
        assert_eq!(m.query("%LMQ%g", "%LMQ%a", 0), Some(7), "lmqOffsetTable");
        m.commit("%LMQ%g", "%LMQ%a", 0, 9);
        m.persist().unwrap();
        assert!(!config.join(FILE).exists(), "written where Java reads it");
        let raw: serde_json::Value =
            serde_json::from_slice(&std::fs::read(config.join(LMQ_FILE)).unwrap()).unwrap();
        assert_eq!(
            raw["lmqOffsetTable"],
            serde_json::json!({"%LMQ%a@%LMQ%g": 9})
        );
        assert_eq!(
            raw["offsetTable"]["%LMQ%a@CID_1"],
            serde_json::json!({"0": 4})
        );
        assert!(raw["offsetTable"].get("%LMQ%a@%LMQ%g").is_none(), "{raw}");
        // GET_ALL_CONSUMER_OFFSET keeps this broker's one shape.
        let all: serde_json::Value = serde_json::from_slice(&m.table_json().unwrap()).unwrap();
        assert_eq!(
            all["offsetTable"]["%LMQ%a@%LMQ%g"],
            serde_json::json!({"0": 9})
        );
    }

    #[test]
    fn switching_enable_lmq_reads_the_newer_file() {
        let dir = tempfile::tempdir().unwrap();
        let m = ConsumerOffsetManager::open_with(dir.path(), false).unwrap();
        m.commit("g", "T", 0, 3);
        m.persist().unwrap();
        // LMQ turned on: the plain file is the only one, so it is read.
        let m = ConsumerOffsetManager::open_with(dir.path(), true).unwrap();
        assert_eq!(m.query("g", "T", 0), Some(3));
        std::thread::sleep(std::time::Duration::from_millis(20));
        m.commit("g", "T", 0, 8);
        m.persist().unwrap();
        // And off again: the LMQ file is newer.
        let m = ConsumerOffsetManager::open_with(dir.path(), false).unwrap();
        assert_eq!(m.query("g", "T", 0), Some(8));
    }
}
