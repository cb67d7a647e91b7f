//! Consumer-side bodies: the message queue as clients name it, the
//! LOCK_BATCH_MQ / UNLOCK_BATCH_MQ body, and the connection and offset
//! reports of GET_CONSUMER_CONNECTION_LIST, GET_TOPIC_STATS_INFO and
//! GET_CONSUME_STATS.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::heartbeat::SubscriptionData;

/// A message queue as clients name it (Java's `MessageQueue`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MessageQueue {
    /// Topic.
    pub topic: String,
    /// Broker name.
    pub broker_name: String,
    /// Queue id.
    pub queue_id: i32,
}

/// LOCK_BATCH_MQ / UNLOCK_BATCH_MQ body (Java's `LockBatchRequestBody`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LockBatchBody {
    /// The consumer group.
    pub consumer_group: String,
    /// The client asking.
    pub client_id: String,
    /// The queues to lock or unlock.
    pub mq_set: Vec<MessageQueue>,
}

/// One live client connection, as GET_CONSUMER_CONNECTION_LIST and
/// GET_PRODUCER_CONNECTION_LIST report it (Java's `Connection`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientConnection {
    /// The client's address.
    pub client_addr: String,
    /// Its instance id.
    pub client_id: String,
    /// Its language name (`JAVA`, `CPP`, `GO`, ...).
    pub language: String,
    /// Its version ordinal (Java's `MQVersion`).
    pub version: i32,
}

/// A consumer group as its members last described it (Java's
/// `ConsumerConnection`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsumerConnection {
    /// Live members.
    pub connection_set: Vec<ClientConnection>,
    /// Topic to subscription.
    pub subscription_table: BTreeMap<String, SubscriptionData>,
    /// `CONSUME_ACTIVELY` (pull) or `CONSUME_PASSIVELY` (push).
    pub consume_type: String,
    /// `CLUSTERING` or `BROADCASTING`.
    pub message_model: String,
    /// Where a new member starts.
    pub consume_from_where: String,
}

/// One queue of GET_TOPIC_STATS_INFO (Java's `TopicOffset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicOffset {
    /// Store time of the newest message, or 0.
    pub last_update_timestamp: i64,
    /// Next offset to be written.
    pub max_offset: i64,
    /// Oldest offset still readable.
    pub min_offset: i64,
}

/// One queue of GET_CONSUME_STATS (Java's `OffsetWrapper`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OffsetWrapper {
    /// The queue's max offset.
    pub broker_offset: i64,
    /// The group's committed offset (0 when none).
    pub consumer_offset: i64,
    /// Store time of the last message the group consumed, or 0.
    pub last_timestamp: i64,
}
