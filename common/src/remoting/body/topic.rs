//! Topic bodies: `TopicConfig` with its permission bits, the table a broker
//! registers and persists (`TopicConfigSerializeWrapper`, which is also the
//! layout of `config/topics.json`), its `DataVersion`, and the topic lists
//! of UPDATE_AND_CREATE_TOPIC_LIST and GET_ALL_TOPIC_LIST_FROM_NAMESERVER.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Topic may be read.
pub const PERM_READ: i32 = 4;
/// Topic may be written.
pub const PERM_WRITE: i32 = 2;

/// `TopicConfig.defaultReadQueueNums` / `defaultWriteQueueNums` in Java.
pub const JAVA_DEFAULT_QUEUE_NUMS: i32 = 16;

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
    /// RocketMQ 5.x's topic attributes, keys without their sign (e.g.
    /// `message.type` = `FIFO`); see [`crate::attributes`]. Left out of the
    /// JSON when empty, as a 4.x broker writes it; 5.x writes `{}`, and
    /// both read either.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, String>,
}

/// Java's `TopicConfig` defaults (16 read and write queues, read-write), so
/// a body that leaves a field out means what it means to a Java broker.
impl Default for TopicConfig {
    fn default() -> Self {
        Self::new("", JAVA_DEFAULT_QUEUE_NUMS)
    }
}

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
            attributes: BTreeMap::new(),
        }
    }

    /// Whether producers may send to it.
    pub fn writable(&self) -> bool {
        self.perm & PERM_WRITE != 0
    }
}

/// The version of a broker's table (Java's `DataVersion`): moves on every
/// change, so a NameServer knows when a registration carries news.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DataVersion {
    /// When the table last changed, ms.
    pub timestamp: i64,
    /// Change counter.
    pub counter: i64,
    /// RocketMQ 5.x: in controller mode, the master epoch the broker
    /// registers under; a NameServer keeps a master of a newer epoch over
    /// an older one registering the same id from another address.
    #[serde(skip_serializing_if = "is_zero")]
    pub state_version: i64,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

/// A broker's topics with their version: the body of
/// GET_ALL_TOPIC_CONFIG, part of REGISTER_BROKER, and `config/topics.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicConfigSerializeWrapper {
    /// Topic to config.
    pub topic_config_table: BTreeMap<String, TopicConfig>,
    /// Version of the table.
    pub data_version: DataVersion,
}

/// UPDATE_AND_CREATE_TOPIC_LIST body (Java's `CreateTopicListRequestBody`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CreateTopicList {
    /// The topics to create or replace.
    pub topic_config_list: Vec<TopicConfig>,
}

/// GET_ALL_TOPIC_LIST_FROM_NAMESERVER body (Java's `TopicList`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicList {
    /// Topic names.
    pub topic_list: Vec<String>,
}
