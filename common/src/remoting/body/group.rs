//! The subscription-group body of UPDATE_AND_CREATE_SUBSCRIPTIONGROUP and
//! of `config/subscriptionGroup.json`.

use serde::{Deserialize, Serialize};

/// One group's settings, with Java's `SubscriptionGroupConfig` defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscriptionGroupConfig {
    /// Group name.
    pub group_name: String,
    /// Members may consume.
    pub consume_enable: bool,
    /// A new group starts at the queue's min offset.
    pub consume_from_min_enable: bool,
    /// Broadcasting consumption is allowed.
    pub consume_broadcast_enable: bool,
    /// Queues of the group's retry topic.
    pub retry_queue_nums: i32,
    /// Retries before the dead-letter queue.
    pub retry_max_times: i32,
    /// Broker id to read from.
    pub broker_id: i64,
    /// Broker id to read from when consumption is slow.
    pub which_broker_when_consume_slowly: i64,
    /// Members hear of membership changes.
    pub notify_consumer_ids_changed_enable: bool,
}

impl SubscriptionGroupConfig {
    /// Java's defaults for a group named `name`.
    pub fn named(name: &str) -> Self {
        Self {
            group_name: name.to_owned(),
            ..Self::default()
        }
    }
}

impl Default for SubscriptionGroupConfig {
    fn default() -> Self {
        Self {
            group_name: String::new(),
            consume_enable: true,
            consume_from_min_enable: true,
            consume_broadcast_enable: true,
            retry_queue_nums: 1,
            retry_max_times: 16,
            broker_id: 0,
            which_broker_when_consume_slowly: 1,
            notify_consumer_ids_changed_enable: true,
        }
    }
}

/// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST body (RocketMQ 5.x's
/// `SubscriptionGroupList`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscriptionGroupList {
    /// The groups to create or replace.
    pub group_config_list: Vec<SubscriptionGroupConfig>,
}
