//! RocketMQ 5.x's consumer gauges per (group, topic), as its
//! ConsumerLagCalculator computes them for pull consumers, summed over the
//! queues the group committed offsets for:
//! - lag: the queue's max offset less the committed offset, and its
//!   latency, the age of the oldest message not yet committed;
//! - in flight: pulled (the pull-offset table) less committed;
//! - ready: the max offset less pulled, and its queueing latency, the age
//!   of the oldest message not yet pulled.
//!
//! The (group, topic) pairs are those with committed offsets or pulls
//! since the start (RocketMQ's: the groups in its group table with online
//! or pulling consumers). A queue never committed has no lag and nothing
//! in flight, as in RocketMQ; one not pulled since the start counts as
//! pulled up to its committed offset (RocketMQ counts it as pulled to the
//! end, so its ready count reads 0 until the first pull).

use std::collections::HashMap;

use metrics::Label;
use rmq_common::names::is_system_topic;

use super::Sampler;
use crate::metrics::rocketmq::{counted, system_group, CARDINALITY_LIMIT};
use crate::metrics::rocketmq_names as n;
use crate::service::transaction::TRANS_GROUP;

/// (group, topic, queue).
type QueueKey = (String, String, i32);

/// One (group, topic)'s sums; timestamps are the oldest over its queues
/// (0: none).
#[derive(Debug, Default)]
struct Progress {
    lag: i64,
    inflight: i64,
    ready: i64,
    oldest_unconsumed_ms: i64,
    oldest_unpulled_ms: i64,
}

fn oldest(at: &mut i64, t: Option<i64>) {
    if let Some(t) = t.filter(|t| *t > 0) {
        if *at == 0 || t < *at {
            *at = t;
        }
    }
}

impl Sampler {
    pub(super) fn rocketmq_consumers(&self) {
        let store = &self.ctx.store;
        let offsets = &self.ctx.offsets;
        // (group, topic, queue) -> (committed, pulled): the queues a group
        // committed or pulled (RocketMQ also counts the groups a pull made
        // known without a heartbeat).
        let mut queues: HashMap<QueueKey, (Option<i64>, Option<i64>)> = HashMap::new();
        for (group, topic, queue, committed) in offsets.all() {
            queues.entry((group, topic, queue)).or_default().0 = Some(committed);
        }
        for (group, topic, queue, pulled) in offsets.pulled.all() {
            queues.entry((group, topic, queue)).or_default().1 = Some(pulled);
        }
        let mut all: HashMap<(String, String), Progress> = HashMap::new();
        let fold = self.lmq_fold();
        for ((group, topic, queue), (committed, pulled)) in queues {
            if group == TRANS_GROUP || !counted(&topic) {
                continue;
            }
            // Every LMQ of a group adds to one `%LMQ%` series.
            let key = (fold.name(&group).to_owned(), fold.name(&topic).to_owned());
            if !all.contains_key(&key) && all.len() >= CARDINALITY_LIMIT {
                continue;
            }
            let topic = &topic;
            let max = store.max_offset_in_queue(topic, queue).unwrap_or(0);
            // As RocketMQ, a queue never committed has no lag and nothing
            // in flight; one not pulled since the start counts as pulled up
            // to its commit (RocketMQ counts it as pulled to the end).
            let pulled = pulled.or(committed).unwrap_or(max);
            let consumed = committed.unwrap_or(max);
            let time = |o: i64| store.message_store_time(topic, queue, o).ok().flatten();
            let p = all.entry(key.clone()).or_default();
            let lag = (max - consumed).max(0);
            p.lag += lag;
            p.inflight += (pulled - committed.unwrap_or(pulled)).max(0);
            p.ready += (max - pulled).max(0);
            if lag > 0 {
                oldest(&mut p.oldest_unconsumed_ms, time(consumed));
            }
            if max > pulled {
                oldest(&mut p.oldest_unpulled_ms, time(pulled));
            }
        }
        let now = store.clock().now_ms();
        let age = |t: i64| if t > 0 { (now - t).max(0) } else { 0 };
        for ((group, topic), p) in all {
            let system = is_system_topic(&topic) || system_group(&group);
            let labels: Vec<Label> = self.rocketmq_labels(&[
                ("consumer_group", group),
                ("topic", topic),
                ("is_retry", "false".into()),
                ("is_system", system.to_string()),
            ]);
            for (name, v) in [
                (n::CONSUMER_LAG_MESSAGES, p.lag),
                (n::CONSUMER_LAG_LATENCY_MS, age(p.oldest_unconsumed_ms)),
                (n::CONSUMER_INFLIGHT_MESSAGES, p.inflight),
                (n::CONSUMER_READY_MESSAGES, p.ready),
                (n::CONSUMER_QUEUEING_LATENCY_MS, age(p.oldest_unpulled_ms)),
            ] {
                metrics::gauge!(name, labels.clone()).set(v as f64);
            }
        }
    }
}
