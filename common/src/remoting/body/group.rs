//! The subscription-group body of UPDATE_AND_CREATE_SUBSCRIPTIONGROUP and
//! of `config/subscriptionGroup.json`, with RocketMQ 5.x's fields.

use std::collections::BTreeMap;

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
    /// RocketMQ 5.x: the group consumes in order (the 5.x proxy marks its
    /// gRPC clients FIFO; the broker does not read it).
    pub consume_message_orderly: bool,
    /// RocketMQ 5.x: how the 5.x proxy spaces a POP/gRPC consumer's
    /// retries (the broker's own send-back uses delay levels).
    pub group_retry_policy: GroupRetryPolicy,
    /// RocketMQ 5.x: system flags of the group.
    pub group_sys_flag: i32,
    /// RocketMQ 5.x: minutes a push consumer may take for one message.
    pub consume_timeout_minute: i32,
    /// RocketMQ 5.x: the group's subscriptions as an admin declared them;
    /// absent unless given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscription_data_set: Option<Vec<SimpleSubscriptionData>>,
    /// RocketMQ 5.x: group attributes (none is known in 5.3.3, so a
    /// request that names one is refused); left out of the JSON when empty.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, String>,
}

/// RocketMQ 5.x's `GroupRetryPolicy`: which policy applies, and each
/// policy's settings when given (a missing one is its defaults).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GroupRetryPolicy {
    /// `EXPONENTIAL` or `CUSTOMIZED`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Settings of the exponential policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exponential_retry_policy: Option<ExponentialRetryPolicy>,
    /// Settings of the customized policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub customized_retry_policy: Option<CustomizedRetryPolicy>,
}

impl Default for GroupRetryPolicy {
    fn default() -> Self {
        Self {
            kind: "CUSTOMIZED".into(),
            exponential_retry_policy: None,
            customized_retry_policy: None,
        }
    }
}

/// Delay = min(max, initial × multiplier^reconsumeTimes), ms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ExponentialRetryPolicy {
    /// First delay, ms (5,000).
    pub initial: i64,
    /// Longest delay, ms (7,200,000).
    pub max: i64,
    /// Growth per retry (2).
    pub multiplier: i64,
}

impl Default for ExponentialRetryPolicy {
    fn default() -> Self {
        Self {
            initial: 5_000,
            max: 7_200_000,
            multiplier: 2,
        }
    }
}

/// Delays by retry, ms (`next[min(reconsumeTimes + 2, len - 1)]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CustomizedRetryPolicy {
    /// The delays, ms.
    pub next: Vec<i64>,
}

/// RocketMQ 5.x's `SimpleSubscriptionData`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SimpleSubscriptionData {
    /// Topic.
    pub topic: String,
    /// `TAG` or `SQL92`.
    pub expression_type: String,
    /// The filter.
    pub expression: String,
    /// Its version.
    pub version: i64,
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
            consume_message_orderly: false,
            group_retry_policy: GroupRetryPolicy::default(),
            group_sys_flag: 0,
            consume_timeout_minute: 15,
            subscription_data_set: None,
            attributes: BTreeMap::new(),
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
