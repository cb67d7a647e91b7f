//! Topic configs (`config/topics.json`): queue counts and permissions.

use std::collections::BTreeMap;
use std::path::PathBuf;

use parking_lot::RwLock;
use rmq_common::constants::{AUTO_CREATE_TOPIC, DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX};
use rmq_common::names::validate_topic;
use rmq_store_file::StoreError;
use serde::{Deserialize, Serialize};

use super::{read_json, write_json};

/// Topic may be read.
pub const PERM_READ: i32 = 4;
/// Topic may be written.
pub const PERM_WRITE: i32 = 2;

/// One topic's settings, as RocketMQ's `TopicConfig` serializes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicConfig {
    /// Topic name.
    pub topic_name: String,
    /// Queues consumers read.
    pub read_queue_nums: i32,
    /// Queues producers write.
    pub write_queue_nums: i32,
    /// [`PERM_READ`] | [`PERM_WRITE`].
    pub perm: i32,
    /// `SINGLE_TAG` or `MULTI_TAG`.
    pub topic_filter_type: String,
    /// System flags of the topic.
    pub topic_sys_flag: i32,
    /// Ordered topic.
    pub order: bool,
}

/// Java's `TopicConfig` defaults (16 read and write queues, read-write), so
/// a body that leaves a field out means what it means to a Java broker.
impl Default for TopicConfig {
    fn default() -> Self {
        Self::new("", JAVA_DEFAULT_QUEUE_NUMS)
    }
}

/// `TopicConfig.defaultReadQueueNums` / `defaultWriteQueueNums` in Java.
pub const JAVA_DEFAULT_QUEUE_NUMS: i32 = 16;

impl TopicConfig {
    /// A read-write topic with `queues` queues.
    pub fn new(name: &str, queues: i32) -> Self {
        Self {
            topic_name: name.to_owned(),
            read_queue_nums: queues,
            write_queue_nums: queues,
            perm: PERM_READ | PERM_WRITE,
            topic_filter_type: "SINGLE_TAG".into(),
            topic_sys_flag: 0,
            order: false,
        }
    }

    /// Whether producers may send to it.
    pub fn writable(&self) -> bool {
        self.perm & PERM_WRITE != 0
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct DataVersion {
    pub(crate) timestamp: i64,
    pub(crate) counter: i64,
}

/// `config/topics.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct TopicsFile {
    pub(crate) topic_config_table: BTreeMap<String, TopicConfig>,
    pub(crate) data_version: DataVersion,
}

/// The topic table, persisted on every change.
#[derive(Debug)]
pub struct TopicConfigManager {
    path: PathBuf,
    state: RwLock<TopicsFile>,
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
    Store(#[from] StoreError),
}

impl TopicConfigManager {
    /// Loads `config/topics.json` under the store root (or starts with the
    /// system topics) .
    pub fn open(root: &std::path::Path, default_queue_nums: i32) -> Result<Self, StoreError> {
        let path = root.join("config").join("topics.json");
        let mut file: TopicsFile = read_json(&path)?.unwrap_or_default();
        file.topic_config_table
            .entry(AUTO_CREATE_TOPIC.to_owned())
            .or_insert_with(|| TopicConfig::new(AUTO_CREATE_TOPIC, default_queue_nums));
        Ok(Self {
            path,
            state: RwLock::new(file),
        })
    }

    /// The config of `topic`.
    pub fn get(&self, topic: &str) -> Option<TopicConfig> {
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

    /// Data version (timestamp, counter), which moves on every change.
    pub fn data_version(&self) -> (i64, i64) {
        let s = self.state.read();
        (s.data_version.timestamp, s.data_version.counter)
    }

    /// Creates or replaces a topic and persists the table.
    pub fn upsert(&self, config: TopicConfig) -> Result<(), TopicError> {
        self.upsert_many(vec![config])
    }

    /// Creates or replaces every topic of `configs` and persists the table
    /// once (UPDATE_AND_CREATE_TOPIC_LIST): the table file holds every
    /// topic, so creating thousands one by one would rewrite it thousands
    /// of times. All or nothing: one bad config and none is applied.
    pub fn upsert_many(&self, configs: Vec<TopicConfig>) -> Result<(), TopicError> {
        for config in &configs {
            check(config)?;
        }
        let mut s = self.state.write();
        for config in configs {
            s.topic_config_table
                .insert(config.topic_name.clone(), config);
        }
        s.data_version.counter += 1;
        s.data_version.timestamp = rmq_common::time::now_ms();
        write_json(&self.path, &*s)?;
        Ok(())
    }

    /// Returns the topic, creating it with `queues` queues if it is new.
    /// Retry and DLQ topics get one queue.
    pub fn get_or_create(
        &self,
        topic: &str,
        queues: i32,
    ) -> Result<(TopicConfig, bool), TopicError> {
        if let Some(c) = self.get(topic) {
            return Ok((c, false));
        }
        let queues = if topic.starts_with(RETRY_GROUP_TOPIC_PREFIX)
            || topic.starts_with(DLQ_GROUP_TOPIC_PREFIX)
        {
            1
        } else {
            queues
        };
        let config = TopicConfig::new(topic, queues);
        self.upsert(config.clone())?;
        Ok((config, true))
    }

    /// Removes a topic.
    pub fn delete(&self, topic: &str) -> Result<bool, StoreError> {
        let mut s = self.state.write();
        let existed = s.topic_config_table.remove(topic).is_some();
        if existed {
            s.data_version.counter += 1;
            write_json(&self.path, &*s)?;
        }
        Ok(existed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_persist_reload() {
        let dir = tempfile::tempdir().unwrap();
        let m = TopicConfigManager::open(dir.path(), 8).unwrap();
        assert!(m.get(AUTO_CREATE_TOPIC).is_some());
        let (c, created) = m.get_or_create("T1", 4).unwrap();
        assert!(created);
        assert_eq!(c.write_queue_nums, 4);
        let (c, created) = m.get_or_create("%RETRY%g", 4).unwrap();
        assert!(created);
        assert_eq!(c.read_queue_nums, 1);
        assert!(matches!(
            m.upsert(TopicConfig::new("bad topic", 4)),
            Err(TopicError::Name(_))
        ));
        assert!(matches!(
            m.upsert(TopicConfig::new("T2", 0)),
            Err(TopicError::QueueCount { .. })
        ));
        let raw = std::fs::read_to_string(dir.path().join("config/topics.json")).unwrap();
        assert!(
            raw.contains("\"topicConfigTable\"") && raw.contains("\"readQueueNums\": 4"),
            "{raw}"
        );
        let m = TopicConfigManager::open(dir.path(), 8).unwrap();
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
    }
}
