//! Topic configs (`config/topics.json`): queue counts and permissions.
//!
//! Changes are made in memory and written behind by the
//! [`MetaPersister`](super::MetaPersister): an admin's create or delete
//! waits until the table is on disk (sharing the write with every other
//! change since the last one); a topic created on the side of a request
//! (a retry topic for a heartbeat's group, an auto-created topic) does
//! not wait, and reaches the disk within one persister interval, or at a
//! clean stop.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::error::MetaError;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::{Mutex, RwLock};
use rmq_common::constants::AUTO_CREATE_TOPIC;
use rmq_common::names::{is_lmq, validate_topic};
use rmq_common::remoting::body::{DataVersion, TopicConfig, TopicConfigSerializeWrapper};

use super::generation::Generation;
use super::journal::{Journal, Keyed, KeyedFile};
use super::persist::{wait_on_disk, Generations, PersistTable, Snapshot, PERSIST_WAIT_TIMEOUT};
use super::read_json;

/// `config/topics.json` has the layout of the registered table.
pub(crate) type TopicsFile = TopicConfigSerializeWrapper;

/// Most topics [`TopicConfigManager::create_missing`] inserts under one
/// hold of the table's write lock, so readers (every send and pull) wait
/// for one bounded chunk at a time, never for a whole request's worth.
const CREATE_CHUNK: usize = 256;

/// The topic table: changes journaled (see [`super::journal`]) and
/// written by the meta persister.
#[derive(Debug)]
pub struct TopicConfigManager {
    path: PathBuf,
    state: RwLock<TopicsFile>,
    generations: Generations,
    journal: Journal,
    unregistered: Mutex<Unregistered>,
    /// `enableLmq`: every `%LMQ%` name is a topic of one queue that is never
    /// stored (RocketMQ's `LmqTopicConfigManager`).
    lmq: AtomicBool,
}

/// Topic changes the NameServers have not been told of yet (the
/// registrar takes them for an incremental registration).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Unregistered {
    /// Topics created or changed.
    pub changed: BTreeSet<String>,
    /// Topics deleted.
    pub deleted: BTreeSet<String>,
    /// Every topic changed at once (the broker's permission, a slave's
    /// copy of its master): only a full registration tells it.
    pub full: bool,
}

impl Unregistered {
    /// Nothing to tell.
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.deleted.is_empty() && !self.full
    }
}

impl Keyed for TopicConfig {
    fn key(&self) -> &str {
        &self.topic_name
    }
}

impl KeyedFile<TopicConfig> for TopicsFile {
    fn parts(&self) -> (&BTreeMap<String, TopicConfig>, &DataVersion) {
        (&self.topic_config_table, &self.data_version)
    }
    fn parts_mut(&mut self) -> (&mut BTreeMap<String, TopicConfig>, &mut DataVersion) {
        (&mut self.topic_config_table, &mut self.data_version)
    }
}

fn check(config: &TopicConfig) -> Result<(), TopicError> {
    validate_topic(&config.topic_name)?;
    for count in [config.read_queue_nums, config.write_queue_nums] {
        if !(1..=1024).contains(&count) {
            return Err(TopicError::QueueCount {
                topic: config.topic_name.clone(),
                count,
            });
        }
    }
    Ok(())
}

/// Why a topic could not be created.
#[derive(Debug, thiserror::Error)]
pub enum TopicError {
    /// The name is not legal.
    #[error(transparent)]
    Name(#[from] rmq_common::names::NameError),
    /// A queue count is out of range.
    #[error("topic {topic}: queue count {count} is outside 1..=1024")]
    QueueCount {
        /// Topic.
        topic: String,
        /// The count asked for.
        count: i32,
    },
    /// Persisting failed.
    #[error(transparent)]
    Meta(#[from] MetaError),
}

impl TopicConfigManager {
    /// Loads `config/topics.json` under the store root (or starts with the
    /// system topics) .
    pub fn open(root: &std::path::Path, default_queue_nums: i32) -> Result<Self, MetaError> {
        let path = root.join("config").join("topics.json");
        let mut file: TopicsFile = read_json(&path)?.unwrap_or_default();
        let journal = Journal::new(&path);
        super::journal::recover(&path, &journal, &mut file)?;
        file.topic_config_table
            .entry(AUTO_CREATE_TOPIC.to_owned())
            .or_insert_with(|| TopicConfig::new(AUTO_CREATE_TOPIC, default_queue_nums));
        Ok(Self {
            path,
            state: RwLock::new(file),
            generations: Generations::default(),
            journal,
            unregistered: Mutex::new(Unregistered::default()),
            lmq: AtomicBool::new(false),
        })
    }

    /// Serves `%LMQ%` names as topics of one readable and writable queue,
    /// without config (`enableLmq`); creating or updating one is ignored,
    /// as RocketMQ does.
    pub fn serve_lmq(&self, on: bool) {
        self.lmq.store(on, Ordering::Relaxed);
    }

    fn is_served_lmq(&self, topic: &str) -> bool {
        self.lmq.load(Ordering::Relaxed) && is_lmq(topic)
    }

    /// The config of `topic`.
    pub fn get(&self, topic: &str) -> Option<TopicConfig> {
        if self.is_served_lmq(topic) {
            return Some(TopicConfig::new(topic, 1));
        }
        self.state.read().topic_config_table.get(topic).cloned()
    }

    /// Every topic.
    pub fn all(&self) -> Vec<TopicConfig> {
        self.state
            .read()
            .topic_config_table
            .values()
            .cloned()
            .collect()
    }

    /// The whole table with its version, as GET_ALL_TOPIC_CONFIG answers
    /// and REGISTER_BROKER carries it.
    pub fn table(&self) -> TopicConfigSerializeWrapper {
        super::journal::copy_in_chunks(&self.state)
    }

    /// Data version (timestamp, counter), which moves on every change.
    pub fn data_version(&self) -> (i64, i64) {
        let s = self.state.read();
        (s.data_version.timestamp, s.data_version.counter)
    }

    /// Moves the data version without changing a topic, so the NameServers
    /// take the next registration's topics (a new `brokerPermission`).
    pub fn touch(&self) {
        let mut s = self.state.write();
        self.changed(&mut s, Vec::new(), Vec::new());
        self.unregistered.lock().full = true;
    }

    /// Takes the changes the NameServers have not been told of, once they
    /// are on disk: a route is never announced for a topic a crash could
    /// still take away. (A write that does not come in time is logged; the
    /// changes go out anyway, as the table in memory has them.)
    pub fn take_unregistered(&self) -> Unregistered {
        let (changes, generation) = {
            let _table = self.state.read();
            (
                std::mem::take(&mut *self.unregistered.lock()),
                self.generations.current(),
            )
        };
        self.wait_durable(generation);
        changes
    }

    /// The whole table with its version, once on disk (a full
    /// registration; see [`TopicConfigManager::take_unregistered`]).
    pub fn durable_table(&self) -> TopicConfigSerializeWrapper {
        let table = self.table();
        // Every change the copy holds is at or before this generation.
        self.wait_durable(self.generations.current());
        table
    }

    fn wait_durable(&self, generation: Generation) {
        if let Err(e) = wait_on_disk(self, generation, PERSIST_WAIT_TIMEOUT) {
            tracing::warn!(error = %e, "topic changes registered before they reached the disk");
        }
    }

    /// The configs of those of `names` that exist, with the table's
    /// current version: an incremental registration's body.
    pub fn increment<'a>(
        &self,
        names: impl IntoIterator<Item = &'a String>,
    ) -> TopicConfigSerializeWrapper {
        let s = self.state.read();
        TopicConfigSerializeWrapper {
            topic_config_table: names
                .into_iter()
                .filter_map(|n| s.topic_config_table.get(n).map(|c| (n.clone(), c.clone())))
                .collect(),
            data_version: s.data_version.clone(),
        }
    }

    /// Creates or replaces a topic and waits until the table is on disk.
    pub fn upsert(&self, config: TopicConfig) -> Result<(), TopicError> {
        self.upsert_many(vec![config])
    }

    /// Creates or replaces every topic of `configs` and waits until the
    /// table is on disk (UPDATE_AND_CREATE_TOPIC_LIST), one write for them
    /// all. All or nothing: one bad config and none is applied. A write
    /// that fails or does not come within [`PERSIST_WAIT_TIMEOUT`] is an
    /// error, but the topics stay (in memory, written later).
    pub fn upsert_many(&self, configs: Vec<TopicConfig>) -> Result<(), TopicError> {
        let generation = self.apply_many(configs)?;
        wait_on_disk(self, generation, PERSIST_WAIT_TIMEOUT)?;
        Ok(())
    }

    /// Creates or replaces every topic of `configs` in memory, all or
    /// nothing, without waiting for the disk; returns the change's
    /// generation for [`TopicConfigManager::wait_persisted`].
    pub fn apply_many(&self, configs: Vec<TopicConfig>) -> Result<Generation, TopicError> {
        let configs: Vec<TopicConfig> = configs
            .into_iter()
            .filter(|c| !self.is_served_lmq(&c.topic_name))
            .collect();
        for config in &configs {
            check(config)?;
        }
        let mut s = self.state.write();
        for config in &configs {
            s.topic_config_table
                .insert(config.topic_name.clone(), config.clone());
        }
        Ok(self.changed(&mut s, configs, Vec::new()))
    }

    /// Waits (at most `timeout`) until the change of `generation` is on
    /// disk; wakes the persister so it writes now.
    pub fn wait_persisted(
        &self,
        generation: Generation,
        timeout: std::time::Duration,
    ) -> Result<(), MetaError> {
        wait_on_disk(self, generation, timeout)
    }

    /// Returns the topic, creating it with `queues` queues if it is new
    /// (true; retry and DLQ topics get one queue). A new topic is on disk
    /// when this returns, as before the persister: the wait shares its
    /// write with every other change since the last one.
    pub fn get_or_create(
        &self,
        topic: &str,
        queues: i32,
    ) -> Result<(TopicConfig, bool), TopicError> {
        let (config, created) = self.get_or_create_deferred(topic, queues)?;
        if let Some(generation) = created {
            wait_on_disk(self, generation, PERSIST_WAIT_TIMEOUT)?;
        }
        Ok((config, created.is_some()))
    }

    /// [`TopicConfigManager::get_or_create`] without the wait: a new topic
    /// (its generation returned) reaches the disk within one persister
    /// interval, or at a clean stop.
    pub fn get_or_create_deferred(
        &self,
        topic: &str,
        queues: i32,
    ) -> Result<(TopicConfig, Option<Generation>), TopicError> {
        if let Some(c) = self.get(topic) {
            return Ok((c, None));
        }
        self.create_if_missing(TopicConfig::new(topic, queues))
    }

    /// Inserts `config` unless its topic exists (then the existing one is
    /// returned, unchanged), without waiting for the disk; a new topic's
    /// generation is returned. The broker's own topics at start (its
    /// cluster and broker names, the reply topic) are made this way.
    pub fn create_if_missing(
        &self,
        config: TopicConfig,
    ) -> Result<(TopicConfig, Option<Generation>), TopicError> {
        check(&config)?;
        let mut s = self.state.write();
        if let Some(c) = s.topic_config_table.get(&config.topic_name) {
            return Ok((c.clone(), None));
        }
        s.topic_config_table
            .insert(config.topic_name.clone(), config.clone());
        let generation = self.changed(&mut s, vec![config.clone()], Vec::new());
        Ok((config, Some(generation)))
    }

    /// Creates those of `topics` that do not exist yet, with `queues`
    /// queues each (a retry topic: its group's retryQueueNums), in chunks of
    /// [`CREATE_CHUNK`] under the write lock, without waiting for the disk.
    /// Names that are not legal topics are skipped. Returns how many were
    /// created (a heartbeat's retry topics: notify the NameServer registrar
    /// once if any).
    pub fn create_missing(&self, topics: impl IntoIterator<Item = String>, queues: i32) -> usize {
        let mut created = 0;
        let mut topics = topics.into_iter().peekable();
        while topics.peek().is_some() {
            let chunk: Vec<TopicConfig> = {
                let s = self.state.read();
                topics
                    .by_ref()
                    .take(CREATE_CHUNK)
                    .filter(|t| !s.topic_config_table.contains_key(t))
                    .map(|t| TopicConfig::new(&t, queues))
                    .filter(|c| check(c).is_ok())
                    .collect()
            };
            if chunk.is_empty() {
                continue;
            }
            let mut s = self.state.write();
            let new: Vec<TopicConfig> = chunk
                .into_iter()
                .filter(|c| !s.topic_config_table.contains_key(&c.topic_name))
                .collect();
            for config in &new {
                s.topic_config_table
                    .insert(config.topic_name.clone(), config.clone());
            }
            created += new.len();
            if !new.is_empty() {
                self.changed(&mut s, new, Vec::new());
            }
        }
        created
    }

    /// Removes a topic and waits until the table is on disk (true if it
    /// existed).
    pub fn delete(&self, topic: &str) -> Result<bool, MetaError> {
        let generation = {
            let mut s = self.state.write();
            if s.topic_config_table.remove(topic).is_none() {
                return Ok(false);
            }
            self.changed(&mut s, Vec::new(), vec![topic.to_owned()])
        };
        wait_on_disk(self, generation, PERSIST_WAIT_TIMEOUT)?;
        Ok(true)
    }

    /// Its change generations (how far the file has caught up).
    pub fn generations(&self) -> &Generations {
        &self.generations
    }

    /// A slave takes its master's table when its data version differs
    /// (Java's SlaveSynchronize): the whole table and the version, written
    /// behind. Returns whether it changed.
    pub fn take_from_master(&self, master: TopicConfigSerializeWrapper) -> bool {
        let mut s = self.state.write();
        if s.data_version == master.data_version {
            return false;
        }
        // Journaled as the difference.
        let (put, delete) =
            super::journal::difference(&s.topic_config_table, &master.topic_config_table);
        *s = master;
        let generation = self.generations.mark();
        self.journal
            .record(generation, &s.data_version, put, delete);
        self.unregistered.lock().full = true;
        true
    }

    /// Moves the data version, marks the change and queues its journal
    /// line (under the write lock); notes the topics for the registrar.
    fn changed(
        &self,
        s: &mut TopicsFile,
        put: Vec<TopicConfig>,
        delete: Vec<String>,
    ) -> Generation {
        s.data_version.counter += 1;
        s.data_version.timestamp = rmq_common::time::now_ms();
        let generation = self.generations.mark();
        {
            let mut u = self.unregistered.lock();
            for c in &put {
                u.deleted.remove(&c.topic_name);
                u.changed.insert(c.topic_name.clone());
            }
            for name in &delete {
                u.changed.remove(name);
                u.deleted.insert(name.clone());
            }
        }
        self.journal
            .record(generation, &s.data_version, put, delete);
        generation
    }
}

impl PersistTable for TopicConfigManager {
    fn path(&self) -> &Path {
        &self.path
    }

    fn generations(&self) -> &Generations {
        &self.generations
    }

    fn journal(&self) -> Option<&Journal> {
        Some(&self.journal)
    }

    fn encode_snapshot(&self) -> Result<Snapshot, MetaError> {
        Snapshot::of_journaled(&self.path, &self.state, &self.generations, &self.journal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_topics_file_is_a_meta_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join("topics.json"), b"{\"topicConfigTable\": [1,").unwrap();
        let err = TopicConfigManager::open(dir.path(), 8).unwrap_err();
        assert!(matches!(err, MetaError::Invalid { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains("topics.json") && text.contains("is not valid"),
            "{text}"
        );
        assert!(!text.contains("offset"), "{text}");
    }

    #[test]
    fn create_persist_reload() {
        let dir = tempfile::tempdir().unwrap();
        let m = TopicConfigManager::open(dir.path(), 8).unwrap();
        assert!(m.get(AUTO_CREATE_TOPIC).is_some());
        let (c, created) = m.get_or_create("T1", 4).unwrap();
        assert!(created);
        assert_eq!(c.write_queue_nums, 4);
        let (c, created) = m.get_or_create("%RETRY%g", 3).unwrap();
        assert!(created);
        assert_eq!(c.read_queue_nums, 3, "the caller's count (retryQueueNums)");
        assert!(matches!(
            m.upsert(TopicConfig::new("bad topic", 4)),
            Err(TopicError::Name(_))
        ));
        assert!(matches!(
            m.upsert(TopicConfig::new("T2", 0)),
            Err(TopicError::QueueCount { .. })
        ));
        let (_, created) = m.get_or_create_deferred("%DLQ%g", 4).unwrap();
        let generation = created.expect("a new topic");
        assert_eq!(m.get_or_create_deferred("%DLQ%g", 4).unwrap().1, None);
        m.wait_persisted(generation, PERSIST_WAIT_TIMEOUT).unwrap();
        // On disk as journal lines; the next start writes them into the
        // JSON file, in Java's layout, and empties the journal.
        let journal = dir.path().join("config/topics.json.journal");
        let lines = std::fs::read_to_string(&journal).unwrap();
        assert!(lines.contains("\"%DLQ%g\""), "{lines}");
        let m = TopicConfigManager::open(dir.path(), 8).unwrap();
        assert!(!journal.exists());
        let raw = std::fs::read_to_string(dir.path().join("config/topics.json")).unwrap();
        assert!(
            raw.contains("\"topicConfigTable\"") && raw.contains("\"readQueueNums\": 4"),
            "{raw}"
        );
        assert_eq!(m.get("T1").unwrap().read_queue_nums, 4);
        // A list is all or nothing.
        let before = m.data_version();
        assert!(m
            .upsert_many(vec![
                TopicConfig::new("L1", 2),
                TopicConfig::new("bad name", 2)
            ])
            .is_err());
        assert!(m.get("L1").is_none());
        assert_eq!(m.data_version(), before);
        m.upsert_many(
            (0..100)
                .map(|i| TopicConfig::new(&format!("L{i}"), 2))
                .collect(),
        )
        .unwrap();
        assert_eq!(m.data_version().1, before.1 + 1);
        let m = TopicConfigManager::open(dir.path(), 8).unwrap();
        assert_eq!(m.get("L99").unwrap().write_queue_nums, 2);
        assert!(m.delete("T1").unwrap());
        assert!(m.get("T1").is_none());
        assert!(!m.delete("T1").unwrap());
        let m = TopicConfigManager::open(dir.path(), 8).unwrap();
        assert!(m.get("T1").is_none(), "a delete is on disk when it returns");
    }

    #[test]
    fn changes_reach_the_registrar_once_on_disk_and_deletes_cancel_creates() {
        let dir = tempfile::tempdir().unwrap();
        let m = TopicConfigManager::open(dir.path(), 8).unwrap();
        m.get_or_create_deferred("A", 4).unwrap();
        m.get_or_create_deferred("B", 4).unwrap();
        let journal = dir.path().join("config/topics.json.journal");
        assert!(!journal.exists(), "deferred changes wait for the persister");
        let taken = m.take_unregistered();
        assert_eq!(
            taken.changed.iter().map(String::as_str).collect::<Vec<_>>(),
            ["A", "B"]
        );
        // Taken only once they are on disk: a crash now cannot take away
        // a topic the NameServers were told of.
        let lines = std::fs::read_to_string(&journal).unwrap();
        assert!(
            lines.contains("\"A\"") && lines.contains("\"B\""),
            "{lines}"
        );
        assert!(m.take_unregistered().is_empty());
        // A create then a delete tells the delete only; and the other way.
        m.get_or_create_deferred("C", 4).unwrap();
        m.delete("C").unwrap();
        m.delete("A").unwrap();
        m.upsert(TopicConfig::new("A", 2)).unwrap();
        let taken = m.take_unregistered();
        assert_eq!(taken.changed.iter().collect::<Vec<_>>(), ["A"]);
        assert_eq!(taken.deleted.iter().collect::<Vec<_>>(), ["C"]);
        assert!(!taken.full);
        // The increment carries what exists now, with the table's version.
        let inc = m.increment(&taken.changed);
        assert_eq!(inc.topic_config_table["A"].write_queue_nums, 2);
        assert_eq!(inc.data_version, m.table().data_version);
        m.touch();
        assert!(m.take_unregistered().full);
    }

    #[test]
    fn create_missing_skips_existing_and_illegal_names_in_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let m = TopicConfigManager::open(dir.path(), 8).unwrap();
        m.upsert(TopicConfig::new("%RETRY%g1", 1)).unwrap();
        let before = m.data_version().1;
        let names = (0..CREATE_CHUNK * 2 + 10)
            .map(|i| format!("%RETRY%g{i}"))
            .chain([
                "bad name".to_owned(),
                "%DLQ%g".to_owned(),
                "Plain".to_owned(),
            ]);
        let created = m.create_missing(names, 4);
        assert_eq!(created, CREATE_CHUNK * 2 + 10 - 1 + 2);
        assert_eq!(m.get("%DLQ%g").unwrap().write_queue_nums, 4);
        assert_eq!(m.get("Plain").unwrap().write_queue_nums, 4);
        assert!(m.get("bad name").is_none());
        // One version step per chunk, not per topic.
        assert_eq!(m.data_version().1, before + 3);
        assert_eq!(m.create_missing(["Plain".to_owned()], 4), 0);
        assert_eq!(m.data_version().1, before + 3);
    }
}
