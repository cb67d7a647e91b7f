//! RocketMQ 5.x POP consumption: the broker keeps each consumer group's
//! place and hands out messages that stay invisible to the group until
//! they are acked or their invisible time ends, when they come back through
//! the group's POP retry topic.
//!
//! - [`PopRuntime`]: what the POP processors share (the state, the queue
//!   try-locks, the waiting requests, the revive-queue counter).
//! - [`revive_log::RevivePopState`] and `rmq_store_rocks::RocksPopState`:
//!   the two forms of [`PopStateStore`], chosen by
//!   `popConsumerKVServiceEnable`.
//! - [`revive::Reviver`]: the service that brings due messages back.
//! - [`polling::PopPolling`]: long polling of POP and NOTIFICATION.
//! - [`orderly::OrderTable`]: FIFO groups (one message group's next
//!   message waits until the previous one is acked).
//! - [`request_mode::RequestModeTable`] and [`assignment`]: server-side
//!   assignment (QUERY_ASSIGNMENT) of a group's queues to its clients, in
//!   PULL or POP mode.

pub mod assignment;
pub mod config;
pub mod orderly;
pub mod pair_counts;
pub mod polling;
pub mod request_mode;
pub mod revive;
pub mod revive_log;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rmq_common::pop::names::revive_topic;
use rmq_common::pop::{PopStateError, PopStateStore};
use rmq_common::service::{Next, Service};
use rmq_store::MessageStore;

pub use config::PopConfig;

use crate::meta::{ConsumerOffsetManager, TopicConfigManager};

/// Counters of POP, for the metrics.
#[derive(Debug, Default)]
pub struct PopMetrics {
    /// POP_MESSAGE requests answered.
    pub pop_requests: AtomicU64,
    /// Messages handed out by POP.
    pub popped: AtomicU64,
    /// Messages handed out again (reconsumeTimes > 0).
    pub popped_retry: AtomicU64,
    /// Offsets acked.
    pub acked: AtomicU64,
    /// Invisible times changed.
    pub changed: AtomicU64,
    /// Messages revived into retry topics.
    pub revived: AtomicU64,
    /// How late the oldest due pop is, ms.
    pub revive_lag_ms: AtomicI64,
    /// Checkpoint records written (a pop, a change of invisible time).
    pub ck_written: AtomicU64,
    /// Ack records written (acks, and revives recorded as acks).
    pub ack_written: AtomicU64,
    /// The writes and revives per (group, topic).
    pub pairs: pair_counts::PairCounts,
}

/// What the POP processors share.
#[derive(Debug)]
pub struct PopRuntime {
    /// Settings.
    pub config: PopConfig,
    /// Unacked popped messages.
    pub state: Arc<dyn PopStateStore>,
    /// `rmq_sys_REVIVE_LOG_<cluster>`.
    pub revive_topic: String,
    /// This broker's name (extraInfo field 5).
    pub broker_name: String,
    /// Waiting requests.
    pub polling: Arc<polling::PopPolling>,
    /// FIFO groups' per-queue state.
    pub orders: Arc<orderly::OrderTable>,
    /// Counters.
    pub metrics: Arc<PopMetrics>,
    revive_counter: AtomicU64,
    locks: Mutex<HashSet<String>>,
    rng: AtomicU64,
}

/// A held queue try-lock, released when dropped.
pub struct QueueLock<'a> {
    runtime: &'a PopRuntime,
    key: String,
}

impl Drop for QueueLock<'_> {
    fn drop(&mut self) {
        self.runtime.locks.lock().remove(&self.key);
    }
}

/// Why POP could not start.
#[derive(Debug, thiserror::Error)]
pub enum PopOpenError {
    /// The state could not be opened.
    #[error(transparent)]
    State(#[from] PopStateError),
    /// The revive topic could not be created.
    #[error("revive topic {topic}: {reason}")]
    ReviveTopic {
        /// Its name.
        topic: String,
        /// Why.
        reason: String,
    },
}

impl PopRuntime {
    /// The runtime over `state`.
    pub fn new(
        config: PopConfig,
        state: Arc<dyn PopStateStore>,
        cluster: &str,
        broker_name: &str,
        orders: Arc<orderly::OrderTable>,
        lmq_fold: crate::metrics::LmqFold,
    ) -> Self {
        let polling = Arc::new(polling::PopPolling::new(
            config.pop_polling_size,
            config.max_pop_polling_size,
        ));
        Self {
            state,
            revive_topic: revive_topic(cluster),
            broker_name: broker_name.to_owned(),
            polling,
            orders,
            metrics: Arc::new(PopMetrics {
                pairs: pair_counts::PairCounts::with_lmq_fold(lmq_fold),
                ..PopMetrics::default()
            }),
            revive_counter: AtomicU64::new(0),
            locks: Mutex::default(),
            rng: AtomicU64::new(rmq_common::time::now_ms().unsigned_abs() | 1),
            config,
        }
    }

    /// The revive queue of the next non-orderly pop (turn by turn).
    pub fn next_revive_qid(&self) -> i32 {
        let n = self.revive_counter.fetch_add(1, Ordering::Relaxed);
        (n % u64::from(self.config.revive_queue_num.max(1).unsigned_abs())) as i32
    }

    /// A number in 0..100 (xorshift; only spreads reads, nothing depends on
    /// its quality).
    pub fn roll(&self) -> u32 {
        let mut x = self.rng.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.store(x, Ordering::Relaxed);
        (x % 100) as u32
    }

    /// The try-lock of `topic@group@queueId`; `None` while another pop
    /// holds it.
    pub fn try_lock(&self, topic: &str, group: &str, queue_id: i32) -> Option<QueueLock<'_>> {
        let key = format!("{topic}@{group}@{queue_id}");
        if !self.locks.lock().insert(key.clone()) {
            return None;
        }
        Some(QueueLock { runtime: self, key })
    }
}

/// Opens the POP state in the form `popConsumerKVServiceEnable` picks.
pub fn open_state(
    store: &Arc<MessageStore>,
    topics: &TopicConfigManager,
    offsets: &Arc<ConsumerOffsetManager>,
    broker: &crate::config::BrokerConfig,
    root: &std::path::Path,
    store_host: SocketAddr,
) -> Result<Arc<dyn PopStateStore>, PopOpenError> {
    if broker.pop.pop_kv_store {
        let sync = store.config().flush_disk_type == rmq_common::FlushDiskType::SyncFlush;
        let state: Arc<dyn PopStateStore> = Arc::new(rmq_store_rocks::RocksPopState::open(
            root,
            &broker.broker_name,
            sync,
        )?);
        raise_offsets(state.as_ref(), offsets);
        tracing::info!(form = state.name(), "POP state opened");
        return Ok(state);
    }
    open_revive_state(
        store,
        topics,
        offsets,
        &broker.pop,
        &broker.broker_cluster_name,
        &broker.broker_name,
        store_host,
    )
}

/// Creates the revive topic and opens the revive-topic form of the state;
/// consumer offsets are raised past every pop the state remembers.
pub fn open_revive_state(
    store: &Arc<MessageStore>,
    topics: &TopicConfigManager,
    offsets: &Arc<ConsumerOffsetManager>,
    config: &PopConfig,
    cluster: &str,
    broker_name: &str,
    store_host: SocketAddr,
) -> Result<Arc<dyn PopStateStore>, PopOpenError> {
    let topic = revive_topic(cluster);
    let queues = config.revive_queue_num.clamp(1, 1024);
    topics
        .get_or_create_deferred(&topic, queues)
        .map_err(|e| PopOpenError::ReviveTopic {
            topic: topic.clone(),
            reason: e.to_string(),
        })?;
    let state = revive_log::RevivePopState::open(
        Arc::clone(store),
        Arc::clone(offsets),
        topic,
        queues,
        broker_name.to_owned(),
        store_host,
    )?;
    let state: Arc<dyn PopStateStore> = Arc::new(state);
    raise_offsets(state.as_ref(), offsets);
    Ok(state)
}

/// Consumer offsets move at pop time; those on disk may be older than the
/// last pops recorded, which must not be handed out again.
pub fn raise_offsets(state: &dyn PopStateStore, offsets: &ConsumerOffsetManager) {
    for p in state.pop_offsets() {
        let current = offsets.query(&p.group, &p.topic, p.queue_id).unwrap_or(-1);
        if p.next_offset > current {
            offsets.commit(&p.group, &p.topic, p.queue_id, p.next_offset);
        }
    }
}

/// Starts the revive service.
pub fn start_reviver(reviver: revive::Reviver) -> std::io::Result<Service> {
    let interval = reviver.interval;
    Service::start("pop-revive", Next::After(interval), move || reviver.pass())
}

/// Wakes pops waiting on `topic` (an orderly queue was unblocked).
pub fn wake(runtime: &PopRuntime, topic: &str) {
    runtime.polling.wake(topic);
}

/// How long a request may still wait: until `born + poll`, less 50 ms so
/// the answer reaches the client before it gives up (RocketMQ's margin).
pub fn remaining_poll(born_ms: i64, poll_ms: i64, now_ms: i64) -> Option<Duration> {
    let left = born_ms.saturating_add(poll_ms).saturating_sub(now_ms + 50);
    (left > 0).then(|| Duration::from_millis(left.unsigned_abs()))
}
