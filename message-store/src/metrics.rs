//! Handles the store's hot paths record into, built once per store with the
//! broker's labels (no-ops until a recorder is installed).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use metrics::{Counter, Histogram, Label};
use rmq_common::constants::{
    DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX, SCHEDULE_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC,
    TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC,
};

/// The bounded `topic_class` label values.
pub const TOPIC_CLASSES: [&str; 5] = ["user", "retry", "dlq", "schedule", "transaction"];

/// The `topic_class` of a stored topic (index into [`TOPIC_CLASSES`]).
pub fn topic_class(topic: &str) -> usize {
    if topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) {
        1
    } else if topic.starts_with(DLQ_GROUP_TOPIC_PREFIX) {
        2
    } else if topic == SCHEDULE_TOPIC {
        3
    } else if [
        TRANS_HALF_TOPIC,
        TRANS_OP_HALF_TOPIC,
        TRANS_CHECK_MAX_TIME_TOPIC,
    ]
    .contains(&topic)
    {
        4
    } else {
        0
    }
}

/// Per-store metric handles.
#[derive(Clone)]
pub struct StoreMetrics {
    labels: Vec<Label>,
    put_total: [Counter; 5],
    put_latency: Histogram,
    get_total: Counter,
    get_latency: Histogram,
    cq_read_latency: Histogram,
    flush_latency: Histogram,
    totals: Arc<Totals>,
}

/// Running totals the broker itself reads back (GET_BROKER_RUNTIME_INFO's
/// counts and TPS); the Prometheus counters are write-only handles.
#[derive(Debug, Default)]
pub struct Totals {
    /// Messages stored.
    pub put_messages: AtomicU64,
    /// Puts (requests) stored.
    pub put_times: AtomicU64,
    /// Messages served by pulls.
    pub get_messages: AtomicU64,
    /// Puts refused by the store (Java's putMessageFailedTimes).
    pub put_failed: AtomicU64,
}

impl std::fmt::Debug for StoreMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreMetrics")
            .field("labels", &self.labels)
            .finish_non_exhaustive()
    }
}

impl StoreMetrics {
    /// Handles labelled `broker`, `backend`.
    pub fn new(broker: &str, backend: &str) -> Self {
        let labels = base_labels(broker, backend);
        let l = || labels.clone();
        let put_total = TOPIC_CLASSES.map(|class| {
            let mut with = labels.clone();
            with.push(Label::new("topic_class", class));
            metrics::counter!(names::PUT_MESSAGES_TOTAL, with)
        });
        Self {
            put_total,
            put_latency: metrics::histogram!(names::PUT_LATENCY_SECONDS, l()),
            get_total: metrics::counter!(names::GET_MESSAGES_TOTAL, l()),
            get_latency: metrics::histogram!(names::GET_LATENCY_SECONDS, l()),
            cq_read_latency: metrics::histogram!(names::CQ_READ_LATENCY_SECONDS, l()),
            flush_latency: metrics::histogram!(names::FLUSH_LATENCY_SECONDS, l()),
            totals: Arc::default(),
            labels,
        }
    }

    /// Running totals since start.
    pub fn totals(&self) -> &Totals {
        &self.totals
    }

    /// The `broker` label's value.
    pub fn broker(&self) -> &str {
        self.labels
            .iter()
            .find(|l| l.key() == "broker")
            .map_or("", |l| l.value())
    }

    /// The `broker`/`backend` labels.
    pub fn labels(&self) -> &[Label] {
        &self.labels
    }

    /// `n` messages stored in `topic`, taking `took`.
    pub fn put(&self, topic: &str, n: u64, took: Duration) {
        self.put_total[topic_class(topic)].increment(n);
        self.totals.put_messages.fetch_add(n, Ordering::Relaxed);
        self.totals.put_times.fetch_add(1, Ordering::Relaxed);
        self.put_latency.record(took.as_secs_f64());
    }

    /// A put the store refused.
    pub fn put_failed(&self) {
        self.totals.put_failed.fetch_add(1, Ordering::Relaxed);
    }

    /// A get returned `n` messages, taking `took`.
    pub fn get(&self, n: u64, took: Duration) {
        self.get_total.increment(n);
        self.totals.get_messages.fetch_add(n, Ordering::Relaxed);
        self.get_latency.record(took.as_secs_f64());
    }

    /// One consume-queue read.
    pub fn cq_read(&self, took: Duration) {
        self.cq_read_latency.record(took.as_secs_f64());
    }

    /// One CommitLog flush pass that wrote something.
    pub fn flushed(&self, took: Duration) {
        self.flush_latency.record(took.as_secs_f64());
    }
}

/// What a consume-queue backend is doing in a store: serving reads, or a
/// shadow fed the same dispatch to compare against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Pulls, offsets and lookups read it.
    Serving,
    /// Written like the serving one, read only by `cq verify`.
    Shadow,
}

impl Role {
    /// The `role` label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Serving => "serving",
            Self::Shadow => "shadow",
        }
    }
}

/// Handles one consume-queue backend's dispatch records into, labelled
/// `broker`, `backend` and `role`, so two backends in one store are told
/// apart (and compared) on one dashboard.
#[derive(Clone)]
pub struct LaneMetrics {
    labels: Vec<Label>,
    cq_write_latency: Histogram,
    cq_write_batch: Histogram,
    dispatch_delay: Histogram,
    entries: Counter,
    lmq_entries: Counter,
}

impl std::fmt::Debug for LaneMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaneMetrics")
            .field("labels", &self.labels)
            .finish_non_exhaustive()
    }
}

impl LaneMetrics {
    /// Handles for `backend` in `role` on `broker`.
    pub fn new(broker: &str, backend: &str, role: Role) -> Self {
        let mut labels = base_labels(broker, backend);
        labels.push(Label::new("role", role.as_str()));
        let l = || labels.clone();
        Self {
            cq_write_latency: metrics::histogram!(names::CQ_WRITE_LATENCY_SECONDS, l()),
            cq_write_batch: metrics::histogram!(names::CQ_WRITE_BATCH_SIZE, l()),
            dispatch_delay: metrics::histogram!(names::DISPATCH_DELAY_SECONDS, l()),
            entries: metrics::counter!(names::CQ_ENTRIES_TOTAL, l()),
            lmq_entries: metrics::counter!(names::CQ_LMQ_ENTRIES_TOTAL, l()),
            labels,
        }
    }

    /// The same backend in another role (after a flip).
    pub fn with_role(&self, role: Role) -> Self {
        let get = |name: &str| {
            self.labels
                .iter()
                .find(|l| l.key() == name)
                .map_or(String::new(), |l| l.value().to_owned())
        };
        Self::new(&get("broker"), &get("backend"), role)
    }

    /// One consume-queue write of `units` (of which `lmq_units` went into
    /// light message queues), from hand-over to written.
    pub fn cq_write(&self, units: usize, lmq_units: usize, took: Duration) {
        self.cq_write_batch.record(units as f64);
        self.cq_write_latency.record(took.as_secs_f64());
        self.entries.increment(units as u64);
        if lmq_units > 0 {
            self.lmq_entries.increment(lmq_units as u64);
        }
    }

    /// A record became readable `delay_ms` after it was stored.
    pub fn dispatched(&self, delay_ms: i64) {
        self.dispatch_delay.record(delay_ms.max(0) as f64 / 1000.0);
    }
}

/// The `broker` and `backend` labels every series of one broker carries.
pub fn base_labels(broker: &str, backend: &str) -> Vec<metrics::Label> {
    vec![
        metrics::Label::new("broker", broker.to_owned()),
        metrics::Label::new("backend", backend.to_owned()),
    ]
}

/// The names of the series the store records.
pub mod names {
    /// Per record: dispatch time - store time.
    pub const DISPATCH_DELAY_SECONDS: &str = "rmq_dispatch_delay_seconds";
    /// Messages stored, by topic class.
    pub const PUT_MESSAGES_TOTAL: &str = "rmq_put_messages_total";
    /// Put latency (append + SYNC_FLUSH wait).
    pub const PUT_LATENCY_SECONDS: &str = "rmq_put_latency_seconds";
    /// Messages returned by pulls.
    pub const GET_MESSAGES_TOTAL: &str = "rmq_get_messages_total";
    /// get_message latency.
    pub const GET_LATENCY_SECONDS: &str = "rmq_get_latency_seconds";
    /// CommitLog flush pass latency.
    pub const FLUSH_LATENCY_SECONDS: &str = "rmq_flush_latency_seconds";
    /// Units per consume-queue write.
    pub const CQ_WRITE_BATCH_SIZE: &str = "rmq_cq_write_batch_size";
    /// Consume-queue write latency (hand-over to written).
    pub const CQ_WRITE_LATENCY_SECONDS: &str = "rmq_cq_write_latency_seconds";
    /// Units written to a consume-queue backend (rate: entries/s).
    pub const CQ_ENTRIES_TOTAL: &str = "rmq_cq_entries_total";
    /// Of those, units written into light message queues (multi-dispatch).
    pub const CQ_LMQ_ENTRIES_TOTAL: &str = "rmq_cq_lmq_entries_total";
    /// Consume-queue read latency.
    pub const CQ_READ_LATENCY_SECONDS: &str = "rmq_cq_read_latency_seconds";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert_eq!(TOPIC_CLASSES[topic_class("Orders")], "user");
        assert_eq!(TOPIC_CLASSES[topic_class("%RETRY%g")], "retry");
        assert_eq!(TOPIC_CLASSES[topic_class("%DLQ%g")], "dlq");
        assert_eq!(TOPIC_CLASSES[topic_class(SCHEDULE_TOPIC)], "schedule");
        assert_eq!(TOPIC_CLASSES[topic_class(TRANS_HALF_TOPIC)], "transaction");
    }
}
