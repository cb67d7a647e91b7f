//! Timer messages' gauges: this broker's own (`rmq_timer_*`, labelled with
//! the timer store's engine) and RocketMQ 5.3.3's `rocketmq_timer_*`
//! (DefaultStoreMetricsManager's, with the store's labels).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rmq_common::constants::TIMER_TOPIC;

use super::Sampler;
use crate::metrics::names;
use crate::metrics::rocketmq_names as r;
use crate::service::timer::Timers;

/// RocketMQ's `timerDist`: the upper bounds, seconds from now, of the
/// windows `rocketmq_timer_message_snapshot` counts (each from the bound
/// before it).
const SNAPSHOT_BOUNDS_S: [i64; 8] = [5, 60, 300, 900, 3600, 14_400, 28_800, 86_400];

/// The snapshot is recounted this often: counting 24 h of slots holds the
/// wheel's lock for a while, and the RocksDB engine scans every key.
pub(super) const SNAPSHOT_EVERY: Duration = Duration::from_secs(10);

/// The last snapshot counted.
#[derive(Debug, Default)]
pub(super) struct Snapshot {
    at: Option<Instant>,
    counts: [i64; SNAPSHOT_BOUNDS_S.len()],
}

impl Sampler {
    pub(super) fn timers(&self) {
        let Some(t) = &self.ctx.timers else {
            return;
        };
        let labels = self.with(&[("timer_store", t.timer_store().backend().as_str().into())]);
        let enqueue_lag = t.enqueue_lag();
        let due_lag_ms = t.due_lag_ms();
        let backlog = t.backlog();
        metrics::gauge!(names::TIMER_BACKLOG, labels.clone()).set(backlog as f64);
        metrics::gauge!(names::TIMER_DUE_LAG_SECONDS, labels.clone()).set(due_lag_ms as f64 / 1e3);
        metrics::gauge!(names::TIMER_DISK_BYTES, labels.clone())
            .set(t.timer_store().disk_bytes() as f64);
        self.gauge(names::TIMER_ENQUEUE_LAG, enqueue_lag as f64);
        let counts = t.counts();
        metrics::counter!(names::TIMER_DELIVERED_TOTAL, self.labels.clone())
            .absolute(counts.delivered.load(Ordering::Relaxed));
        metrics::counter!(names::TIMER_RECALLED_TOTAL, self.labels.clone())
            .absolute(counts.recalled.load(Ordering::Relaxed));

        let rocketmq = self.rocketmq_timer_labels();
        for (name, v) in [
            (r::TIMER_ENQUEUE_LAG, enqueue_lag),
            (
                r::TIMER_ENQUEUE_LATENCY_MS,
                self.enqueue_latency_ms(t, enqueue_lag),
            ),
            (r::TIMER_DEQUEUE_LAG, backlog),
            (r::TIMER_DEQUEUE_LATENCY_MS, due_lag_ms),
        ] {
            metrics::gauge!(name, rocketmq.clone()).set(v as f64);
        }
        let snapshot = self.timer_snapshot(t);
        for (bound, n) in SNAPSHOT_BOUNDS_S.iter().zip(snapshot) {
            let mut labels = rocketmq.clone();
            labels.push(metrics::Label::new("timer_bound_s", bound.to_string()));
            metrics::gauge!(r::TIMER_MESSAGE_SNAPSHOT, labels).set(n as f64);
        }
    }

    /// Age of the oldest timer-topic message not yet filed, ms (0 when
    /// none waits). RocketMQ reports the age of the last message it filed
    /// already due, for 2 s after; both say how far filing is behind.
    fn enqueue_latency_ms(&self, t: &Timers, enqueue_lag: i64) -> i64 {
        if enqueue_lag <= 0 {
            return 0;
        }
        let store = &self.ctx.store;
        store
            .message_store_time(TIMER_TOPIC, 0, t.enqueue_offset())
            .ok()
            .flatten()
            .map_or(0, |ts| (store.clock().now_ms() - ts).max(0))
    }

    /// Timers due in each window of the next 24 h, recounted every
    /// [`SNAPSHOT_EVERY`].
    fn timer_snapshot(&self, t: &Timers) -> [i64; SNAPSHOT_BOUNDS_S.len()] {
        let mut cache = self.timer_snapshot.lock();
        if cache.at.is_some_and(|at| at.elapsed() < SNAPSHOT_EVERY) {
            return cache.counts;
        }
        let precision = t.precision().max(1);
        let now = self.ctx.store.clock().now_ms() / precision * precision;
        let mut from = now;
        for (i, bound) in SNAPSHOT_BOUNDS_S.iter().enumerate() {
            let to = now + bound * 1000;
            match t.timer_store().pending_in(from, to) {
                Ok(n) => cache.counts[i] = n.max(0),
                Err(e) => tracing::warn!(error = %e, "timer snapshot count failed"),
            }
            from = to;
        }
        cache.at = Some(Instant::now());
        cache.counts
    }
}
