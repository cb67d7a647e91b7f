//! Consumer progress (`config/consumerOffset.json`): the next offset to
//! consume per (group, topic, queue).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::MetaError;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::persist::{write_dirty, Generations, PersistTable, Snapshot};
use super::{encode_json, read_json};

/// `config/consumerOffset.json`.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct OffsetsFile {
    /// Key `topic@group`, as RocketMQ writes it.
    pub(crate) offset_table: BTreeMap<String, BTreeMap<i32, i64>>,
}

/// Committed consumer offsets, written behind by the meta persister every
/// `flushConsumerOffsetInterval` and at a clean stop (commits only change
/// memory).
#[derive(Debug)]
pub struct ConsumerOffsetManager {
    path: PathBuf,
    state: Mutex<OffsetsFile>,
    generations: Generations,
    /// How far each group has pulled (memory only).
    pub pulled: super::pulled::PullOffsets,
}

fn key(topic: &str, group: &str) -> String {
    format!("{topic}@{group}")
}

impl ConsumerOffsetManager {
    /// Loads the file under the store root.
    pub fn open(root: &std::path::Path) -> Result<Self, MetaError> {
        let path = root.join("config").join("consumerOffset.json");
        let file = read_json(&path)?.unwrap_or_default();
        Ok(Self {
            path,
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

    /// The committed offset, if any.
    pub fn query(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        self.state
            .lock()
            .offset_table
            .get(&key(topic, group))
            .and_then(|q| q.get(&queue_id))
            .copied()
    }

    /// Records a committed offset (negative offsets are ignored).
    pub fn commit(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        if offset < 0 {
            return;
        }
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

    /// Every committed (group, topic, queue, offset).
    pub fn all(&self) -> Vec<(String, String, i32, i64)> {
        let s = self.state.lock();
        s.offset_table
            .iter()
            .filter_map(|(k, v)| k.split_once('@').map(|(t, g)| (t, g, v)))
            .flat_map(|(t, g, v)| {
                v.iter()
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
            (s.clone(), self.generations.current())
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
        m.commit("g", "T", 1, -1);
        m.persist().unwrap();
        let raw = std::fs::read_to_string(dir.path().join("config/consumerOffset.json")).unwrap();
        assert!(raw.contains("\"T@g\""), "{raw}");
        let m = ConsumerOffsetManager::open(dir.path()).unwrap();
        assert_eq!(m.query("g", "T", 0), Some(12));
        assert_eq!(m.query("g", "T", 1), Some(5));
        assert_eq!(m.group_offsets("g").len(), 2);
        assert_eq!(m.groups_of_topic("T"), vec!["g".to_owned()]);
    }
}
