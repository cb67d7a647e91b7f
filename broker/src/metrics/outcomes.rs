//! RocketMQ 5.x's series of what became of messages, recorded where it
//! happens: transactions committed and rolled back
//! (`rocketmq_commit_messages_total`, `rocketmq_rollback_messages_total`,
//! per real topic) with the time from the half's birth to its commit
//! (`rocketmq_finish_message_latency`), and messages moved to a
//! dead-letter topic (`rocketmq_send_to_dlq_messages_total`, per consumer
//! group and topic). As RocketMQ's EndTransactionProcessor, the latency is
//! recorded for commits only, in whole seconds.

use std::collections::HashMap;
use std::hash::Hash;

use metrics::{Counter, Histogram, Label};
use parking_lot::RwLock;
use rmq_common::names::is_system_topic;

use super::rocketmq::{system_group, CARDINALITY_LIMIT};
use super::rocketmq_names as r;

/// Metric handles by label key, at most [`CARDINALITY_LIMIT`] keys.
#[derive(Debug)]
struct Keyed<K, T> {
    map: RwLock<HashMap<K, T>>,
}

impl<K, T> Default for Keyed<K, T> {
    fn default() -> Self {
        Self {
            map: RwLock::default(),
        }
    }
}

impl<K: Eq + Hash, T: Clone> Keyed<K, T> {
    /// The handle of `key`, made by `make` the first time; `None` past the
    /// cardinality limit.
    fn handle(&self, key: K, make: impl FnOnce(&K) -> T) -> Option<T> {
        if let Some(h) = self.map.read().get(&key) {
            return Some(h.clone());
        }
        let mut map = self.map.write();
        if map.len() >= CARDINALITY_LIMIT && !map.contains_key(&key) {
            return None;
        }
        Some(map.entry(key).or_insert_with_key(|k| make(k)).clone())
    }
}

/// Transaction and dead-letter series of one broker.
#[derive(Debug)]
pub struct Outcomes {
    labels: Vec<Label>,
    commits: Keyed<String, Counter>,
    rollbacks: Keyed<String, Counter>,
    finish: Keyed<String, Histogram>,
    /// By (consumer group, topic).
    dead_letters: Keyed<(String, String), Counter>,
    /// LMQ topics and groups are labelled `%LMQ%`.
    fold: super::LmqFold,
}

/// Seconds from a half's birth at `born_ms` to `now_ms`, as RocketMQ
/// records its commit latency: whole seconds, truncated (0 for a born
/// time in the future).
pub fn finish_latency_s(born_ms: i64, now_ms: i64) -> u64 {
    u64::try_from((now_ms - born_ms) / 1000).unwrap_or(0)
}

impl Outcomes {
    /// Series carrying `labels` (the broker's and RocketMQ's common ones),
    /// LMQ names labelled as `fold` says.
    pub fn new(labels: Vec<Label>, fold: super::LmqFold) -> Self {
        Self {
            labels,
            fold,
            commits: Keyed::default(),
            rollbacks: Keyed::default(),
            finish: Keyed::default(),
            dead_letters: Keyed::default(),
        }
    }

    fn topic_labels(&self, topic: &str) -> Vec<Label> {
        let mut l = self.labels.clone();
        l.push(Label::new("topic", topic.to_owned()));
        l
    }

    /// A transaction of real topic `topic`, whose half was born at
    /// `born_ms`, was committed at `now_ms`.
    pub fn committed(&self, topic: &str, born_ms: i64, now_ms: i64) {
        let topic = self.fold.name(topic);
        if let Some(c) = self.commits.handle(topic.to_owned(), |t| {
            metrics::counter!(r::COMMIT_MESSAGES_TOTAL, self.topic_labels(t))
        }) {
            c.increment(1);
        }
        if let Some(h) = self.finish.handle(topic.to_owned(), |t| {
            metrics::histogram!(r::FINISH_MESSAGE_LATENCY_MS, self.topic_labels(t))
        }) {
            h.record(finish_latency_s(born_ms, now_ms) as f64);
        }
    }

    /// A transaction of real topic `topic` was rolled back.
    pub fn rolled_back(&self, topic: &str) {
        let topic = self.fold.name(topic);
        if let Some(c) = self.rollbacks.handle(topic.to_owned(), |t| {
            metrics::counter!(r::ROLLBACK_MESSAGES_TOTAL, self.topic_labels(t))
        }) {
            c.increment(1);
        }
    }

    /// A message of `topic` that `group` consumed was moved to the group's
    /// dead-letter topic.
    pub fn sent_to_dlq(&self, group: &str, topic: &str) {
        let key = (
            self.fold.name(group).to_owned(),
            self.fold.name(topic).to_owned(),
        );
        if let Some(c) = self.dead_letters.handle(key, |(g, t)| {
            let mut l = self.labels.clone();
            l.extend([
                Label::new("consumer_group", g.clone()),
                Label::new("topic", t.clone()),
                Label::new(
                    "is_system",
                    (is_system_topic(t) || system_group(g)).to_string(),
                ),
            ]);
            metrics::counter!(r::SEND_TO_DLQ_MESSAGES_TOTAL, l)
        }) {
            c.increment(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_is_whole_seconds_as_rocketmq_records_it() {
        assert_eq!(finish_latency_s(1_000, 1_999), 0);
        assert_eq!(finish_latency_s(1_000, 7_500), 6);
        assert_eq!(finish_latency_s(10_000, 1_000), 0, "born in the future");
    }

    #[test]
    fn keys_stop_at_the_limit() {
        let k: Keyed<usize, usize> = Keyed::default();
        for i in 0..CARDINALITY_LIMIT {
            assert_eq!(k.handle(i, |i| *i), Some(i));
        }
        assert_eq!(k.handle(CARDINALITY_LIMIT, |i| *i), None);
        assert_eq!(k.handle(7, |_| 0), Some(7), "a known key is still served");
    }
}
