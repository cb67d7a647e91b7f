//! RocketMQ 5.x's series that are recorded as things happen rather than
//! sampled: `rocketmq_message_size` per send,
//! `rocketmq_topic_create_execution_time` per topic creation, and the
//! per-request ones (`super::rpc`). Also the label conventions every
//! `rocketmq_*` series shares: besides this broker's `broker` label,
//! `cluster`, `node_type="broker"`, `node_id` (the broker name) and
//! `otel_scope_name="broker-meter"` (the OpenTelemetry meter RocketMQ's
//! exporter names on every series).

use std::collections::HashMap;
use std::time::Instant;

use metrics::{Histogram, Label};
use parking_lot::RwLock;
use rmq_common::constants::{
    DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX, SCHEDULE_TOPIC, TRANS_HALF_TOPIC,
};
use rmq_common::names::is_system_topic;

use super::outcomes::Outcomes;
use super::rocketmq_names as r;
use super::rpc::RpcMeters;

/// RocketMQ's `metricsOtelCardinalityLimit` default: series of one name
/// beyond it are not exported.
pub const CARDINALITY_LIMIT: usize = 50_000;

/// RocketMQ's meter name, on every series as `otel_scope_name`.
const METER: &str = "broker-meter";

/// `broker` plus RocketMQ's common labels.
pub fn common_labels(broker: &str, cluster: &str) -> Vec<Label> {
    vec![
        Label::new("broker", broker.to_owned()),
        Label::new("otel_scope_name", METER),
        Label::new("cluster", cluster.to_owned()),
        Label::new("node_type", "broker"),
        Label::new("node_id", broker.to_owned()),
    ]
}

/// RocketMQ's `message_type` of a stored topic: the schedule topic is
/// `delay`, the half topic `transaction`, anything else `normal`.
pub fn message_type(topic: &str) -> &'static str {
    if topic == SCHEDULE_TOPIC {
        "delay"
    } else if topic == TRANS_HALF_TOPIC {
        "transaction"
    } else {
        "normal"
    }
}

/// Whether RocketMQ counts `topic` in its message series (`%RETRY%` and
/// `%DLQ%` topics are left out).
pub fn counted(topic: &str) -> bool {
    !topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) && !topic.starts_with(DLQ_GROUP_TOPIC_PREFIX)
}

/// RocketMQ's system consumer groups start with this (any case).
const SYSTEM_GROUP_PREFIX: &str = "CID_RMQ_SYS_";

/// Whether RocketMQ counts `group` as a system group (`is_system`).
pub fn system_group(group: &str) -> bool {
    group
        .get(..SYSTEM_GROUP_PREFIX.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(SYSTEM_GROUP_PREFIX))
}

/// One broker's recorded RocketMQ 5.x series.
#[derive(Debug)]
pub struct RocketmqMeters {
    labels: Vec<Label>,
    /// `rocketmq_message_size` per stored topic.
    sizes: RwLock<HashMap<String, Histogram>>,
    /// `rocketmq_topic_create_execution_time` per (success, system).
    topic_create: RwLock<HashMap<(bool, bool), Histogram>>,
    /// `rocketmq_consumer_group_create_execution_time` per success.
    group_create: RwLock<HashMap<bool, Histogram>>,
    /// Per-request series.
    pub rpc: RpcMeters,
    /// Transactions and dead letters.
    pub outcomes: Outcomes,
    /// LMQ topics and groups are labelled `%LMQ%`.
    fold: super::LmqFold,
}

impl RocketmqMeters {
    /// The meters of broker `broker` in cluster `cluster`, labelling LMQ
    /// names as `fold` says.
    pub fn new(broker: &str, cluster: &str, fold: super::LmqFold) -> Self {
        let labels = common_labels(broker, cluster);
        Self {
            rpc: RpcMeters::new(labels.clone()),
            outcomes: Outcomes::new(labels.clone(), fold),
            fold,
            labels,
            sizes: RwLock::default(),
            topic_create: RwLock::default(),
            group_create: RwLock::default(),
        }
    }

    /// One send stored `messages` messages of `bytes` bytes in `topic`:
    /// one observation of their mean size, as RocketMQ records it.
    pub fn message_stored(&self, topic: &str, messages: usize, bytes: u64) {
        let topic = self.fold.name(topic);
        if messages == 0 || !counted(topic) {
            return;
        }
        let size = bytes as f64 / messages as f64;
        if let Some(h) = self.sizes.read().get(topic) {
            h.record(size);
            return;
        }
        let mut map = self.sizes.write();
        if map.len() >= CARDINALITY_LIMIT && !map.contains_key(topic) {
            return;
        }
        map.entry(topic.to_owned())
            .or_insert_with(|| {
                let mut l = self.labels.clone();
                l.extend([
                    Label::new("topic", topic.to_owned()),
                    Label::new("message_type", message_type(topic)),
                    Label::new("is_system", is_system_topic(topic).to_string()),
                ]);
                metrics::histogram!(r::MESSAGE_SIZE, l)
            })
            .record(size);
    }

    /// A topic creation that began at `started` ended, `ok` or not.
    pub fn topic_created(&self, topic: &str, ok: bool, started: Instant) {
        let ms = started.elapsed().as_millis() as f64;
        let key = (ok, is_system_topic(topic));
        if let Some(h) = self.topic_create.read().get(&key) {
            h.record(ms);
            return;
        }
        self.topic_create
            .write()
            .entry(key)
            .or_insert_with(|| {
                let mut l = self.labels.clone();
                l.extend([
                    Label::new("invocation_status", if ok { "success" } else { "failure" }),
                    Label::new("is_system", key.1.to_string()),
                ]);
                metrics::histogram!(r::TOPIC_CREATE_EXECUTION_TIME_MS, l)
            })
            .record(ms);
    }

    /// A subscription group creation (one group or a list) that began at
    /// `started` ended, `ok` or not. RocketMQ labels it with
    /// `invocation_status` only.
    pub fn group_created(&self, ok: bool, started: Instant) {
        let ms = started.elapsed().as_millis() as f64;
        if let Some(h) = self.group_create.read().get(&ok) {
            h.record(ms);
            return;
        }
        self.group_create
            .write()
            .entry(ok)
            .or_insert_with(|| {
                let mut l = self.labels.clone();
                l.push(Label::new(
                    "invocation_status",
                    if ok { "success" } else { "failure" },
                ));
                metrics::histogram!(r::CONSUMER_GROUP_CREATE_EXECUTION_TIME_MS, l)
            })
            .record(ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_groups_are_rocketmqs() {
        assert!(system_group("CID_RMQ_SYS_TRANS"));
        assert!(system_group("cid_rmq_sys_x"));
        assert!(!system_group("CID_RMQ"));
        assert!(!system_group("MyGroup"));
        assert!(
            !system_group("CID_RMQ_SYS\u{e9}X"),
            "no panic inside a character"
        );
    }
}
