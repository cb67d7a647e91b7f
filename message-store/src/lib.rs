//! The message store: one CommitLog, the consume-queue backends behind
//! [`ConsumeQueueStore`] (the serving one and an optional shadow), the
//! IndexFile, and the services that tie them together. The broker serves
//! every request that reads or writes messages through [`MessageStore`];
//! this crate knows nothing of the broker.
//!
//! Layout:
//! - `open`: start-up (lock, recovery, backends, catch-up) and
//!   [`StartupReport`]; `services`: the threads a running store owns
//!   (flush, reput, shadow, consume-queue flush, clean).
//! - `put`, `get`, `lookup`, `filter`: appending messages, reading them
//!   back by queue offset, by time and by key, and the tag/SQL filters a
//!   read applies.
//! - `reput`: the dispatcher that follows the CommitLog and writes the
//!   consume-queue units and the index (`reput/shadow.rs`: the second
//!   backend); `arrival`: who is woken when a queue grows.
//! - `factory`: opening a backend by name; `lanes`: adding a shadow,
//!   flipping which backend serves, dropping the shadow; `verify`:
//!   comparing the two.
//! - [`clean`]: retention and the disk guard; [`headroom`] and `delay`:
//!   delay-level rewrites at put time.
//! - [`metrics`]: the handles the hot paths record into and their names.
#![forbid(unsafe_code)]

mod arrival;
pub mod clean;
mod controller_mode;
mod delay;
mod factory;
mod filter;
mod get;
pub mod headroom;
mod lanes;
mod lmq;
mod lookup;
pub mod metrics;
mod open;
mod put;
mod reput;
mod services;
mod verify;

pub use arrival::{MessageArrivalListener, QueueWaiters};
pub use controller_mode::DispatchBound;
pub use factory::{backend_dir, disk_use, open_backend, open_consume_queue_store};
pub use filter::{MessageFilter, SubscriptionFilter, TagFilter};
pub use get::{GetMessageResult, GetRequest, GetStatus, DEFAULT_MAX_BYTES};
pub use lanes::{BackendStatus, CqAdminError, CqChoice, FlipError, FlipStep};
pub use lmq::LmqRemovedListener;
pub use open::StartupReport;
pub use put::{is_permanent, wants_wait, PutMessageResult, PutStatus};
pub use rmq_store_file::epoch_file::EpochEntry;
pub use verify::{Difference, VerifyError, VerifyOptions, VerifyReport};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use rmq_common::cq::ConsumeQueueStore;
use rmq_common::time::Clock;
use rmq_common::{DelayLevels, StoreConfig};

use crate::metrics::StoreMetrics;
use rmq_store_file::commitlog::CommitLog;
use rmq_store_file::index::IndexService;
use rmq_store_file::root::{AbortFile, Checkpoint, RootLock};

use self::reput::Dispatcher;
use self::services::Services;

/// The store a broker serves from.
#[derive(Debug)]
pub struct MessageStore {
    config: StoreConfig,
    delay_levels: DelayLevels,
    metrics: StoreMetrics,
    clock: Arc<dyn Clock>,
    commit_log: Arc<CommitLog>,
    index: Option<Arc<IndexService>>,
    checkpoint: Arc<Checkpoint>,
    /// Owns the consume-queue backends: the serving one and the shadow.
    dispatcher: Arc<Dispatcher>,
    /// One add / flip / drop of a backend at a time.
    cq_change: Mutex<()>,
    cleaner: Arc<clean::Cleaner>,
    services: Mutex<Option<Services>>,
    abort: Mutex<Option<AbortFile>>,
    lock: Mutex<Option<RootLock>>,
    shut_down: AtomicBool,
    /// Set on a slave: only replicated bytes are written.
    replica_only: AtomicBool,
    /// Woken after every append (the HA writers stream new bytes at once).
    appended: Arc<tokio::sync::Notify>,
    /// Controller mode's epoch file (`epochFileCheckpoint`).
    epochs: Arc<Mutex<rmq_store_file::epoch_file::EpochFile>>,
    /// The confirm offset (stored value; see [`DispatchBound`]).
    confirm: SharedOffset,
    /// Whether reput stops at the confirm offset.
    confirm_bound: AtomicBool,
    startup: StartupReport,
}

impl MessageStore {
    /// The configuration the store runs with.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// The parsed `messageDelayLevel` table.
    pub fn delay_levels(&self) -> &DelayLevels {
        &self.delay_levels
    }

    /// The metric handles the store records into.
    pub fn metrics(&self) -> &StoreMetrics {
        &self.metrics
    }

    /// The clock that stamps store times.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The CommitLog.
    pub fn commit_log(&self) -> &Arc<CommitLog> {
        &self.commit_log
    }

    /// The serving consume-queue backend (the one reads use; a flip
    /// changes it, so hold it only for the work at hand).
    pub fn consume_queue(&self) -> Arc<dyn ConsumeQueueStore> {
        self.dispatcher.cq()
    }

    /// Makes the store a slave's: puts are refused (`StoreError::Slave`),
    /// only [`MessageStore::append_replica`] writes.
    pub fn set_replica_only(&self) {
        self.replica_only.store(true, Ordering::Release);
        self.dispatcher.accept_partial_tail();
    }

    /// Makes a slave's store a master's again (controller mode): puts are
    /// taken.
    pub fn set_writable(&self) {
        self.replica_only.store(false, Ordering::Release);
    }

    /// Whether only replicated bytes are written (a slave).
    pub fn is_replica_only(&self) -> bool {
        self.replica_only.load(Ordering::Acquire)
    }

    /// Woken after every append.
    pub fn appended(&self) -> &Arc<tokio::sync::Notify> {
        &self.appended
    }

    /// What start-up found and did.
    pub fn startup_report(&self) -> &StartupReport {
        &self.startup
    }

    /// Registers a listener woken after units are dispatched for a queue.
    pub fn add_arrival_listener(&self, listener: Arc<dyn MessageArrivalListener>) {
        self.dispatcher.add_listener(listener);
    }

    /// CommitLog offset reput has dispatched up to.
    pub fn reput_from_offset(&self) -> i64 {
        self.dispatcher.reput_from()
    }

    /// Reput passes that failed and were retried (a record it could not
    /// parse, a consume-queue write that failed).
    pub fn reput_failures(&self) -> u64 {
        self.dispatcher.failed_passes()
    }

    /// Bytes appended but not yet dispatched to the consume queue.
    pub fn dispatch_behind_bytes(&self) -> i64 {
        (self.commit_log.max_offset() - self.dispatcher.reput_from()).max(0)
    }

    /// Blocks until reput has dispatched everything below `target`, or
    /// `timeout` passes; returns whether it has.
    pub fn wait_dispatched_to(&self, target: i64, timeout: std::time::Duration) -> bool {
        self.dispatcher.wait_reput_to(target, timeout)
    }

    /// Runs one clean pass now, as the clean service or an operator would
    /// (see [`clean::CleanTrigger`]).
    pub fn clean_pass(
        &self,
        trigger: clean::CleanTrigger,
    ) -> Result<clean::CleanReport, rmq_store_file::StoreError> {
        self.cleaner.pass(trigger)
    }

    /// Replaces how the clean service reads disk use (tests simulate a
    /// full disk with it).
    pub fn set_disk_usage(&self, probe: Arc<dyn clean::DiskUsage>) {
        *self.cleaner.disk.write() = probe;
        self.cleaner.check_disk();
    }

    /// Re-reads disk use now (the put path does so at most once a second,
    /// the clean service every pass); returns whether writes are refused
    /// because the disk is past `diskSpaceWarningLevelRatio`.
    pub fn check_disk(&self) -> bool {
        self.cleaner.check_disk()
    }

    /// Removes a topic's consume queues (files or RocksDB keys) and its
    /// next queue offsets, so a topic created again under the name starts
    /// at 0 (DELETE_TOPIC_IN_BROKER). Its records stay in the CommitLog
    /// until retention removes them, as in RocketMQ.
    pub fn delete_topic(&self, topic: &str) -> Result<(), rmq_store_file::StoreError> {
        for cq in self.dispatcher.backends() {
            cq.delete_topic(topic)?;
        }
        self.commit_log.remove_topic_offsets(topic);
        Ok(())
    }

    /// CLEAN_EXPIRED_CONSUMEQUEUE, as RocketMQ's `cleanExpiredConsumerQueue`:
    /// moves every queue's min offset up to the CommitLog's, then removes
    /// the consume queues whose last unit points below the CommitLog's
    /// minimum (every message they indexed is gone), with their next
    /// offsets, so the next message there is at 0 as in RocketMQ. Topics
    /// with any message still stored keep every queue. RocketMQ decides
    /// per queue; this decides per topic: a topic with some queues
    /// expired and others not keeps them all. Returns the topics removed
    /// (and the expired light message queues).
    pub fn clean_expired_queues(&self) -> Result<Vec<String>, rmq_store_file::StoreError> {
        let cq = self.consume_queue();
        self.dispatcher
            .correct_min_offset(self.commit_log.min_offset())?;
        let mut topics: BTreeMap<String, HashMap<i32, i64>> = BTreeMap::new();
        let mut live: BTreeSet<String> = BTreeSet::new();
        for q in cq.queues()? {
            // RocketMQ leaves the delay levels' queues alone.
            if rmq_common::names::is_lmq(&q.topic)
                || q.topic == rmq_common::constants::SCHEDULE_TOPIC
            {
                continue;
            }
            let (min, max) = (
                cq.min_offset(&q.topic, q.queue_id)?,
                cq.max_offset(&q.topic, q.queue_id)?,
            );
            if min < max {
                live.insert(q.topic.clone());
            }
            topics.entry(q.topic).or_default().insert(q.queue_id, max);
        }
        let mut gone = Vec::new();
        for (topic, max) in topics {
            if live.contains(&topic) || !self.commit_log.forget_topic_unless_ahead(&topic, &max) {
                continue;
            }
            for backend in self.dispatcher.backends() {
                backend.delete_topic(&topic)?;
            }
            gone.push(topic);
        }
        if !gone.is_empty() {
            tracing::info!(topics = ?gone, "removed consume queues whose messages all expired");
        }
        gone.extend(self.remove_expired_lmqs()?);
        Ok(gone)
    }

    /// CLEAN_UNUSED_TOPIC: drops the consume queues of topics
    /// `keep` says no longer exist, then moves every queue's min offset up
    /// to the CommitLog's; returns the topics dropped.
    pub fn clean_unused_topics(
        &self,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Vec<String>, rmq_store_file::StoreError> {
        let mut gone: Vec<String> = self
            .consume_queue()
            .queues()?
            .into_iter()
            .map(|q| q.topic)
            .filter(|t| !keep(t))
            .collect();
        gone.sort();
        gone.dedup();
        for topic in &gone {
            self.delete_topic(topic)?;
        }
        self.dispatcher
            .correct_min_offset(self.commit_log.min_offset())?;
        gone.extend(self.remove_expired_lmqs()?);
        Ok(gone)
    }

    /// Lowest CommitLog offset still stored.
    pub fn min_phy_offset(&self) -> i64 {
        self.commit_log.min_offset()
    }

    /// CommitLog offset just past the last record.
    pub fn max_phy_offset(&self) -> i64 {
        self.commit_log.max_offset()
    }

    fn ensure_running(&self) -> Result<(), rmq_store_file::StoreError> {
        if self.shut_down.load(Ordering::Acquire) {
            Err(rmq_store_file::StoreError::ShutDown)
        } else {
            Ok(())
        }
    }
}

/// A shared i64 read by many threads.
#[derive(Debug, Default)]
pub(crate) struct SharedOffset(AtomicI64);

impl SharedOffset {
    pub(crate) fn new(v: i64) -> Self {
        Self(AtomicI64::new(v))
    }
    pub(crate) fn get(&self) -> i64 {
        self.0.load(Ordering::Acquire)
    }
    pub(crate) fn set(&self, v: i64) {
        self.0.store(v, Ordering::Release);
    }
}
