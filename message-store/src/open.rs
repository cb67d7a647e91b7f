//! Start-up: lock the root, recover the CommitLog tail, bring the consume
//! queue in line with it, dispatch what it missed, then start the services.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use rmq_common::config::CqBackend;
use rmq_common::constants::LMQ_QUEUE_ID;
use rmq_common::cq::{ConsumeQueueStore, CqError, QueueKey};
use rmq_common::names::is_lmq;
use rmq_common::time::{Clock, SystemClock};
use rmq_common::StoreConfig;
use rmq_store_file::commitlog::{CommitLog, LmqOffsetSource, RecoverOptions, RecoveryReport};
use rmq_store_file::epoch_file::EpochFile;
use rmq_store_file::index::IndexService;
use rmq_store_file::root::{AbortFile, Checkpoint, RootLock};
use rmq_store_file::StoreError;

use super::clean::{CleanPolicy, Cleaner, DiskGuard, FsDiskUsage};
use super::factory::open_backend;
use super::lanes::CqChoice;
use super::reput::Dispatcher;
use super::services::Services;
use super::MessageStore;
use crate::metrics::{LaneMetrics, Role, StoreMetrics};

/// What start-up found and did.
#[derive(Debug, Clone)]
pub struct StartupReport {
    /// The previous run crashed (abort file found).
    pub abnormal: bool,
    /// Consume-queue backend in use.
    pub backend: CqBackend,
    /// CommitLog recovery.
    pub recovery: RecoveryReport,
    /// Where reput restarted.
    pub redispatch_from: i64,
    /// Records dispatched before the store opened for business.
    pub redispatched_records: u64,
    /// Time that dispatch took.
    pub redispatch_elapsed: Duration,
    /// Queues known after start-up.
    pub queues: usize,
    /// Whole start-up time.
    pub elapsed: Duration,
}

impl MessageStore {
    /// Opens the store with the system clock and the configured backend.
    pub fn open(config: StoreConfig) -> Result<Self, StoreError> {
        Self::open_with(config, Arc::new(SystemClock), None)
    }

    /// Opens the store with an injected clock and, optionally, an already
    /// opened consume-queue backend (tests use the in-memory model).
    pub fn open_with(
        config: StoreConfig,
        clock: Arc<dyn Clock>,
        cq: Option<Box<dyn ConsumeQueueStore>>,
    ) -> Result<Self, StoreError> {
        Self::open_labelled(config, clock, cq, "store")
    }

    /// Opens the store of broker `broker` (its metrics carry that label).
    pub fn open_for_broker(config: StoreConfig, broker: &str) -> Result<Self, StoreError> {
        Self::open_labelled(config, Arc::new(SystemClock), None, broker)
    }

    fn open_labelled(
        config: StoreConfig,
        clock: Arc<dyn Clock>,
        cq: Option<Box<dyn ConsumeQueueStore>>,
        broker: &str,
    ) -> Result<Self, StoreError> {
        let started = Instant::now();
        config.validate()?;
        let delay_levels = config.delay_levels()?;
        let root = config.store_path_root_dir.clone();
        let lock = RootLock::acquire(&root)?;
        let abnormal = AbortFile::previous_run_crashed(&root);
        if abnormal {
            tracing::warn!(root = %root.display(), "abort file found: the last run did not shut down cleanly; recovering");
        }
        let choice = CqChoice::effective(&config)?;
        let cq: Arc<dyn ConsumeQueueStore> = match cq {
            Some(cq) => Arc::from(cq),
            None => Arc::from(open_backend(&config, choice.serving)?),
        };
        let backend = cq.backend();
        let shadow: Option<Arc<dyn ConsumeQueueStore>> = match choice.shadow {
            Some(b) if b != backend => Some(Arc::from(open_backend(&config, b)?)),
            _ => None,
        };
        let metrics = StoreMetrics::new(broker, backend.as_str());
        let dispatched = cq.dispatched_phy_offset()?;
        let (commit_log, recovery) = CommitLog::open(
            &config,
            Arc::clone(&clock),
            RecoverOptions {
                abnormal,
                check_crc: config.check_crc_on_recover,
                scan_from: dispatched,
            },
        )?;
        let commit_log = Arc::new(commit_log);
        let flush_metrics = metrics.clone();
        commit_log.set_flush_observer(Box::new(move |took| flush_metrics.flushed(took)));
        // No unit may point at or past the valid tail.
        cq.truncate_from_phy(recovery.tail)?;
        if let Some(shadow) = &shadow {
            shadow.truncate_from_phy(recovery.tail)?;
        }
        let index = if config.message_index_enable {
            Some(Arc::new(IndexService::open(&config)?))
        } else {
            None
        };
        let checkpoint = Arc::new(Checkpoint::open(&root)?);
        // As Java's controller-mode recovery: within the recovered log.
        let confirm = checkpoint
            .confirm_offset()
            .clamp(commit_log.min_offset(), recovery.tail);
        let epochs = Arc::new(Mutex::new(EpochFile::open(&root)?));
        let abort = AbortFile::create(&root)?;

        let redispatch_from = cq
            .dispatched_phy_offset()?
            .clamp(commit_log.min_offset(), recovery.tail);
        let dispatcher = Arc::new(
            Dispatcher::new(
                Role::Serving,
                Arc::clone(&commit_log),
                Arc::clone(&cq),
                index.clone(),
                redispatch_from,
                delay_levels.clone(),
                LaneMetrics::new(broker, backend.as_str(), Role::Serving),
                reput_parse_workers(&config),
            )
            .with_multi_dispatch(config.enable_lmq && config.enable_multi_dispatch),
        );
        if let Some(shadow) = shadow {
            // Fed from here on; it fills what it lacks from the CommitLog
            // by itself once the serving backend has caught up.
            let from = shadow
                .dispatched_phy_offset()?
                .clamp(commit_log.min_offset(), recovery.tail);
            let lane = LaneMetrics::new(broker, shadow.backend().as_str(), Role::Shadow);
            dispatcher.attach_shadow(shadow, from, lane)?;
        }
        // Dispatch everything the consume queue missed before any new append
        // takes a queue offset, so offsets continue without reuse.
        let catch_up_started = Instant::now();
        let redispatched_records = dispatcher.catch_up()?;
        let redispatch_elapsed = catch_up_started.elapsed();
        let (queues, offsets) = queue_offset_table(&config, cq.as_ref())?;
        commit_log.set_queue_offsets(offsets);
        commit_log.set_lmq_offset_source(Arc::new(LmqSource(Arc::downgrade(&dispatcher))));

        let cleaner = Arc::new(Cleaner {
            policy: CleanPolicy::from_config(&config)?,
            commit_log: Arc::clone(&commit_log),
            index: index.clone(),
            dispatcher: Arc::clone(&dispatcher),
            clock: Arc::clone(&clock),
            // The CommitLog's disk decides deletion and the write guard, as in
            // Java (it may be another disk than the root's: storePathCommitLog).
            disk: RwLock::new(Arc::new(FsDiskUsage(config.commit_log_dir()))),
            guard: DiskGuard::new(config.disk_space_warning_level_ratio_pct),
            pass_lock: Mutex::new(()),
            enable_lmq: config.enable_lmq,
            lmq_removed: Default::default(),
            epochs: Arc::clone(&epochs),
        });
        let services = Services::start(
            &config,
            &commit_log,
            index.as_ref(),
            &checkpoint,
            &dispatcher,
            &cleaner,
        )?;
        let startup = StartupReport {
            abnormal,
            backend,
            recovery,
            redispatch_from,
            redispatched_records,
            redispatch_elapsed,
            // LMQs counted, not listed, when they are on.
            queues: queues.len()
                + if config.enable_lmq {
                    cq.lmq_queues() as usize
                } else {
                    0
                },
            elapsed: started.elapsed(),
        };
        tracing::info!(
            root = %root.display(),
            backend = %backend,
            abnormal,
            tail = startup.recovery.tail,
            redispatch_from,
            redispatched_records,
            queues = startup.queues,
            elapsed_ms = startup.elapsed.as_millis() as u64,
            "message store started"
        );
        Ok(Self {
            config,
            delay_levels,
            metrics,
            clock,
            commit_log,
            index,
            checkpoint,
            dispatcher,
            cq_change: Mutex::new(()),
            cleaner,
            services: Mutex::new(Some(services)),
            abort: Mutex::new(Some(abort)),
            lock: Mutex::new(Some(lock)),
            shut_down: AtomicBool::new(false),
            replica_only: AtomicBool::new(false),
            appended: Arc::new(tokio::sync::Notify::new()),
            epochs,
            confirm: crate::SharedOffset::new(confirm),
            confirm_bound: AtomicBool::new(false),
            startup,
        })
    }
}

/// Each queue's next queue offset.
type QueueOffsets = Vec<(QueueKey, i64)>;

/// The queues of `cq` (LMQs' left out with `enableLmq`: their offsets are
/// read on their first append instead) and each one's max offset, for the
/// put path's table.
fn queue_offset_table(
    config: &StoreConfig,
    cq: &dyn ConsumeQueueStore,
) -> Result<(Vec<QueueKey>, QueueOffsets), StoreError> {
    let queues = if config.enable_lmq {
        cq.queues_except_lmq()?
    } else {
        cq.queues()?
    };
    let mut offsets = Vec::with_capacity(queues.len());
    for q in &queues {
        if config.enable_lmq && is_lmq(&q.topic) && q.queue_id == LMQ_QUEUE_ID {
            continue;
        }
        let max = cq.max_offset(&q.topic, q.queue_id)?;
        offsets.push((q.clone(), max));
    }
    Ok((queues, offsets))
}

impl MessageStore {
    /// Rebuilds the put path's queue offsets from the serving consume
    /// queue (after a truncation, once dispatch is where it must be).
    pub(crate) fn rebuild_queue_offsets(&self) -> Result<(), StoreError> {
        let (_, offsets) = queue_offset_table(&self.config, self.dispatcher.cq().as_ref())?;
        self.commit_log.set_queue_offsets(offsets);
        Ok(())
    }
}

/// Parsers the reput uses: 1 (serial) unless
/// `enableBuildConsumeQueueConcurrently`, then one per core, at most
/// [`MAX_PARSE_WORKERS`].
fn reput_parse_workers(config: &StoreConfig) -> usize {
    if !config.enable_build_consume_queue_concurrently {
        return 1;
    }
    std::thread::available_parallelism()
        .map_or(2, std::num::NonZeroUsize::get)
        .clamp(2, MAX_PARSE_WORKERS)
}

/// Upper bound on concurrent reput parsers.
const MAX_PARSE_WORKERS: usize = 8;

/// The serving consume queue, as the put path's LMQ table asks it (weakly:
/// the dispatcher holds the CommitLog).
struct LmqSource(std::sync::Weak<Dispatcher>);

impl LmqOffsetSource for LmqSource {
    fn max_offset(&self, queue: &str) -> Result<i64, CqError> {
        match self.0.upgrade() {
            Some(d) => d.cq().max_offset(queue, LMQ_QUEUE_ID),
            None => Err(CqError::Closed),
        }
    }

    fn dispatched_to(&self) -> i64 {
        self.0.upgrade().map_or(0, |d| d.reput_from())
    }
}
