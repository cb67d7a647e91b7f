//! Topic configs (`config/topics.json`): queue counts and permissions.

use std::path::PathBuf;

use crate::error::MetaError;
use parking_lot::RwLock;
use rmq_common::constants::{AUTO_CREATE_TOPIC, DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX};
use rmq_common::names::validate_topic;
use rmq_common::remoting::body::{TopicConfig, TopicConfigSerializeWrapper};

use super::{read_json, write_json};

/// `config/topics.json` has the layout of the registered table.
pub(crate) type TopicsFile = TopicConfigSerializeWrapper;

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
    Meta(#[from] MetaError),
}

impl TopicConfigManager {
    /// Loads `config/topics.json` under the store root (or starts with the
    /// system topics) .
    pub fn open(root: &std::path::Path, default_queue_nums: i32) -> Result<Self, MetaError> {
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

    /// The whole table with its version, as GET_ALL_TOPIC_CONFIG answers
    /// and REGISTER_BROKER carries it.
    pub fn table(&self) -> TopicConfigSerializeWrapper {
        self.state.read().clone()
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
    pub fn delete(&self, topic: &str) -> Result<bool, MetaError> {
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
