//! POP's gauges and counters: RocketMQ 5.3.3's `rocketmq_pop_*` families
//! with its label names (the revive-topic ones only where this broker has
//! a revive topic), and this broker's own per POP-state form.

use std::sync::atomic::Ordering;

use metrics::Label;
use rmq_common::pop::names::REVIVE_GROUP;

use super::Sampler;
use crate::metrics::{names, rocketmq_names as r};

impl Sampler {
    pub(super) fn pop(&self) {
        let pop = &self.ctx.pop;
        let m = &pop.metrics;
        let form = pop.state.name();
        let own = self.with(&[("pop_state", form.into())]);
        metrics::gauge!(names::POP_IN_FLIGHT, own.clone()).set(pop.state.in_flight() as f64);
        metrics::counter!(names::POP_MESSAGES_TOTAL, own.clone())
            .absolute(m.popped.load(Ordering::Relaxed));
        metrics::counter!(names::POP_ACKS_TOTAL, own.clone())
            .absolute(m.acked.load(Ordering::Relaxed));
        metrics::counter!(names::POP_REVIVED_TOTAL, own.clone())
            .absolute(m.revived.load(Ordering::Relaxed));
        metrics::gauge!(names::POP_REVIVE_DUE_LAG_SECONDS, own)
            .set(m.revive_lag_ms.load(Ordering::Relaxed) as f64 / 1e3);

        for (group, topic, c) in m.pairs.all() {
            let pair = |extra: &[(&'static str, String)]| {
                let mut l = vec![("consumer_group", group.clone()), ("topic", topic.clone())];
                l.extend_from_slice(extra);
                self.rocketmq_labels(&l)
            };
            for (kind, n) in [("CK", c.ck), ("ACK", c.ack)] {
                let labels = pair(&[
                    ("revive_message_type", kind.into()),
                    ("put_status", "PUT_OK".into()),
                ]);
                metrics::counter!(r::POP_REVIVE_IN_MESSAGE_TOTAL, labels).absolute(n);
            }
            let labels = pair(&[("put_status", "PUT_OK".into())]);
            metrics::counter!(r::POP_REVIVE_RETRY_MESSAGES_TOTAL, labels).absolute(c.retried);
        }
        // RocketMQ buffers checkpoints in memory (its POP buffer-merge
        // service) and writes them later; this broker writes each one when
        // the pop is answered, so nothing is ever buffered.
        for name in [r::POP_CHECKPOINT_BUFFER_SIZE, r::POP_OFFSET_BUFFER_SIZE] {
            metrics::gauge!(name, self.rocketmq_labels(&[])).set(0.0);
        }
        if !pop.config.pop_kv_store {
            self.revive_queues();
        }
    }

    /// Per revive queue: records not yet settled (RocketMQ's revive lag)
    /// and the age of the oldest of them, ms (its revive latency).
    fn revive_queues(&self) {
        let pop = &self.ctx.pop;
        let store = &self.ctx.store;
        let topic = &pop.revive_topic;
        let now = rmq_common::time::now_ms();
        for q in 0..pop.config.revive_queue_num {
            let max = store.max_offset_in_queue(topic, q).unwrap_or(0);
            let at = self
                .ctx
                .offsets
                .query(REVIVE_GROUP, topic, q)
                .unwrap_or(max)
                .min(max);
            let latency = if at < max {
                store
                    .message_store_time(topic, q, at)
                    .ok()
                    .flatten()
                    .map_or(0, |t| (now - t).max(0))
            } else {
                0
            };
            let labels: Vec<Label> = self.rocketmq_labels(&[("queue_id", q.to_string())]);
            metrics::gauge!(r::POP_REVIVE_LAG_MS, labels.clone()).set((max - at) as f64);
            metrics::gauge!(r::POP_REVIVE_LATENCY_MS, labels).set(latency as f64);
        }
    }
}
