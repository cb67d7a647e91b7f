//! POP's broker.conf keys, RocketMQ 5.x's names and defaults (flattened
//! into [`crate::config::BrokerConfig`]).

use serde::{Deserialize, Serialize};

/// POP settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PopConfig {
    /// Keep POP state in RocksDB (`<storePathRootDir>/kvStore`, one record
    /// per popped message, RocketMQ's RIP-73) instead of the revive topic
    /// (RocketMQ 5.x's checkpoint and ack messages).
    #[serde(rename = "popConsumerKVServiceEnable")]
    pub pop_kv_store: bool,
    /// Queues of the revive topic `rmq_sys_REVIVE_LOG_<cluster>`.
    pub revive_queue_num: i32,
    /// How often due pops are looked for, ms.
    #[serde(rename = "reviveInterval")]
    pub revive_interval_ms: u64,
    /// POP requests that may wait under one (topic, group, queue).
    pub pop_polling_size: usize,
    /// POP requests that may wait in the whole broker.
    pub max_pop_polling_size: usize,
    /// Percent of pops that read the retry topic first.
    pub pop_from_retry_probability: u32,
    /// Name POP retry topics `%RETRY%<group>+<topic>` (else `_`).
    pub enable_retry_topic_v2: bool,
    /// With V2 names on, still read V1 retry topics.
    #[serde(rename = "retrieveMessageFromPopRetryTopicV1")]
    pub retrieve_from_retry_topic_v1: bool,
    /// Send retried messages under their retry topic (else under the
    /// original topic with a `POP_CK` property).
    pub pop_response_return_actual_retry_topic: bool,
    /// QUERY_ASSIGNMENT's mode for a (topic, group) that
    /// SET_MESSAGE_REQUEST_MODE never set (a retry topic is always PULL).
    pub default_message_request_mode: rmq_common::remoting::body::MessageRequestMode,
    /// Its popShareQueueNum when that default is POP.
    pub default_pop_share_queue_num: i32,
    /// QUERY_ASSIGNMENT allocates a clustering group's queues among its
    /// clients; off, every client gets every queue.
    pub server_load_balancer_enable: bool,
}

impl Default for PopConfig {
    fn default() -> Self {
        Self {
            pop_kv_store: false,
            revive_queue_num: 8,
            revive_interval_ms: 1000,
            pop_polling_size: 1024,
            max_pop_polling_size: 100_000,
            pop_from_retry_probability: 20,
            enable_retry_topic_v2: false,
            retrieve_from_retry_topic_v1: true,
            pop_response_return_actual_retry_topic: false,
            default_message_request_mode: Default::default(),
            default_pop_share_queue_num: -1,
            server_load_balancer_enable: true,
        }
    }
}
