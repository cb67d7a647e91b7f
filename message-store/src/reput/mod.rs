//! Reput: follows the CommitLog behind the writer and dispatches every record
//! to the consume queue and the index, then wakes waiting readers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};
use rmq_common::constants::LMQ_QUEUE_ID;
use rmq_common::cq::{ConsumeQueueStore, CqError, CqPut};
use rmq_common::delay::{delay_level_of_view, is_schedule_topic};
use rmq_common::message::record::RecordView;
use rmq_common::names::is_lmq;
use rmq_common::service::{Next, Service, Signal};
use rmq_common::{DelayLevels, DispatchRequest};
use rmq_store_file::commitlog::CommitLog;
use rmq_store_file::index::IndexService;
use rmq_store_file::StoreError;

mod concurrent;
pub(crate) mod shadow;
mod truncate;

use super::arrival::MessageArrivalListener;
use super::SharedOffset;
use crate::metrics::{LaneMetrics, Role};
use shadow::{Shadow, ShadowBatch};

/// Records dispatched in one pass at most (one consume-queue batch).
const MAX_RECORDS_PER_PASS: usize = 4096;
/// During a long catch-up (a backend rebuilt from the CommitLog), flush the
/// consume queue after this many bytes so a crash resumes the rebuild
/// instead of starting it over.
const CATCH_UP_FLUSH_BYTES: i64 = 64 * 1024 * 1024;
/// How often catch-up logs its progress.
const PROGRESS_LOG_INTERVAL: Duration = Duration::from_secs(5);

/// A CommitLog record reput cannot parse.
fn corrupt(at: i64, detail: String) -> StoreError {
    StoreError::Corrupt {
        path: std::path::PathBuf::from("commitlog"),
        offset: at,
        detail,
    }
}

/// How a pass ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Dispatched this many records (the pass may have ended at a segment end).
    Progress(usize),
    /// Nothing new to dispatch.
    Idle,
}

/// Dispatch state shared by the start-up catch-up, the reput thread and shutdown.
#[derive(Debug)]
pub(crate) struct Dispatcher {
    commit_log: Arc<CommitLog>,
    /// The backend this dispatcher writes; for the store's own dispatcher,
    /// the serving one (swapped by a flip, under `pass_lock`).
    cq: RwLock<Arc<dyn ConsumeQueueStore>>,
    index: Option<Arc<IndexService>>,
    /// For the delivery time a schedule-topic unit keeps as its tagsCode.
    delay_levels: DelayLevels,
    lane: RwLock<LaneMetrics>,
    /// Passes stop before this CommitLog offset (a shadow catching up
    /// stops where the serving dispatch is); `i64::MAX` for none.
    until: AtomicI64,
    /// Passes dispatch only whole records ending at or before this offset
    /// (controller mode's confirm offset); `i64::MAX` for none. Unlike
    /// `until` it may fall inside a record.
    confirm_limit: AtomicI64,
    /// A second backend fed every batch this one writes (the store's
    /// dispatcher only).
    shadow: Mutex<Option<Shadow>>,
    /// Parsers of a concurrent pass; 1 is the serial reput.
    parse_workers: usize,
    /// Where the next pass starts parsing; may run ahead of what the
    /// consume-queue backend has written.
    parse_from: Arc<SharedOffset>,
    visible: Arc<Visible>,
    pass_lock: Mutex<()>,
    /// Wakes the reput service after an append.
    new_data: Arc<Signal>,
    /// A slave's log may end inside a record (its master's frames are not
    /// cut at records): such a tail waits for the rest instead of being
    /// corruption.
    partial_tail: std::sync::atomic::AtomicBool,
    /// Passes that failed (each is retried).
    failed_passes: std::sync::atomic::AtomicU64,
    /// `enableLmq` and `enableMultiDispatch`: a record's light message
    /// queues get units too.
    multi_dispatch: bool,
}

/// What readers can see: the offset whose units are written, the readers to
/// wake when it moves, and the first write failure.
#[derive(Debug)]
struct Visible {
    /// A serving backend's write failure poisons the CommitLog; a shadow's
    /// only stops the shadow.
    role: Role,
    offset: SharedOffset,
    listeners: RwLock<Vec<Arc<dyn MessageArrivalListener>>>,
    progress: Mutex<Option<String>>,
    progress_cv: Condvar,
}

impl Visible {
    /// Runs once the backend has written a batch: publish, then wake.
    fn written(
        &self,
        commit_log: &CommitLog,
        result: Result<(), CqError>,
        to: i64,
        arrived: Vec<(String, i32, i64)>,
    ) {
        match result {
            Ok(()) => {
                {
                    let _guard = self.progress.lock();
                    self.offset.set(to);
                }
                self.progress_cv.notify_all();
                let listeners = self.listeners.read();
                for (topic, queue_id, max) in &arrived {
                    for l in listeners.iter() {
                        l.arrived(topic, *queue_id, *max);
                    }
                }
            }
            Err(e) => {
                let reason = format!("consume queue write failed: {e}");
                if self.role == Role::Serving {
                    // Appends would pile up undispatched; refuse them and say why.
                    commit_log.poison(reason.clone());
                }
                self.progress.lock().get_or_insert(reason);
                self.progress_cv.notify_all();
            }
        }
    }
}

impl Dispatcher {
    /// Lets the log end inside a record (a slave's).
    pub(crate) fn accept_partial_tail(&self) {
        self.partial_tail
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// A dispatcher writing `cq` in `role` from CommitLog offset
    /// `reput_from`; only a serving one gets the index.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        role: Role,
        commit_log: Arc<CommitLog>,
        cq: Arc<dyn ConsumeQueueStore>,
        index: Option<Arc<IndexService>>,
        reput_from: i64,
        delay_levels: DelayLevels,
        lane: LaneMetrics,
        parse_workers: usize,
    ) -> Self {
        Self {
            commit_log,
            cq: RwLock::new(cq),
            index,
            delay_levels,
            lane: RwLock::new(lane),
            until: AtomicI64::new(i64::MAX),
            confirm_limit: AtomicI64::new(i64::MAX),
            shadow: Mutex::new(None),
            parse_workers: parse_workers.max(1),
            parse_from: Arc::new(SharedOffset::new(reput_from)),
            visible: Arc::new(Visible {
                role,
                offset: SharedOffset::new(reput_from),
                listeners: RwLock::new(Vec::new()),
                progress: Mutex::new(None),
                progress_cv: Condvar::new(),
            }),
            pass_lock: Mutex::new(()),
            new_data: Signal::new(),
            partial_tail: std::sync::atomic::AtomicBool::new(false),
            failed_passes: std::sync::atomic::AtomicU64::new(0),
            multi_dispatch: false,
        }
    }

    /// Dispatches into light message queues too (`enableLmq` and
    /// `enableMultiDispatch`).
    pub(crate) fn with_multi_dispatch(mut self, on: bool) -> Self {
        self.multi_dispatch = on;
        self
    }

    /// CommitLog offset below which every record's units are readable.
    pub(crate) fn reput_from(&self) -> i64 {
        self.visible.offset.get()
    }

    /// Where the next pass starts: everything below it has been handed to
    /// the backend (maybe not written yet).
    pub(crate) fn parsed_to(&self) -> i64 {
        self.parse_from.get()
    }

    /// The backend this dispatcher writes.
    pub(crate) fn cq(&self) -> Arc<dyn ConsumeQueueStore> {
        Arc::clone(&self.cq.read())
    }

    /// The first write failure, if any (then nothing more is published).
    pub(crate) fn failure(&self) -> Option<String> {
        self.visible.progress.lock().clone()
    }

    /// Dispatch passes that failed and were retried.
    pub(crate) fn failed_passes(&self) -> u64 {
        self.failed_passes
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn add_listener(&self, l: Arc<dyn MessageArrivalListener>) {
        self.visible.listeners.write().push(l);
    }

    /// Called after an append so the reput thread need not poll.
    pub(crate) fn notify_new_data(&self) {
        self.new_data.nudge();
    }

    /// Blocks until reput has passed `target`, or `timeout`.
    pub(crate) fn wait_reput_to(&self, target: i64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut failed = self.visible.progress.lock();
        while self.reput_from() < target && failed.is_none() {
            if self
                .visible
                .progress_cv
                .wait_until(&mut failed, deadline)
                .timed_out()
            {
                break;
            }
        }
        self.reput_from() >= target
    }

    /// Dispatches every record up to the CommitLog's current max offset.
    pub(crate) fn catch_up(&self) -> Result<u64, StoreError> {
        let started = Instant::now();
        let mut last_log = Instant::now();
        let mut total = 0u64;
        let target = self.commit_log.max_offset();
        let mut flushed_at = self.parse_from.get();
        loop {
            match self.dispatch_pass()? {
                Pass::Idle => break,
                Pass::Progress(n) => total += n as u64,
            }
            if self.parse_from.get() - flushed_at >= CATCH_UP_FLUSH_BYTES {
                self.cq().flush()?;
                flushed_at = self.parse_from.get();
            }
            if let Some(reason) = self.visible.progress.lock().clone() {
                return Err(StoreError::Poisoned { reason });
            }
            if last_log.elapsed() >= PROGRESS_LOG_INTERVAL {
                last_log = Instant::now();
                tracing::info!(
                    reput_from = self.parse_from.get(),
                    target,
                    records = total,
                    "rebuilding consume queue from the CommitLog"
                );
            }
        }
        // Wait for the backend to write what was handed to it.
        let parsed = self.parse_from.get();
        while !self.wait_reput_to(parsed, PROGRESS_LOG_INTERVAL) {
            if let Some(reason) = self.visible.progress.lock().clone() {
                return Err(StoreError::Poisoned { reason });
            }
            tracing::info!(
                visible = self.reput_from(),
                parsed,
                "waiting for the consume queue writer"
            );
        }
        if total > 0 {
            tracing::info!(records = total, elapsed_ms = started.elapsed().as_millis() as u64,
                backend = %self.cq().backend(), "dispatch caught up");
        }
        Ok(total)
    }

    /// One bounded pass: parses records from `reput_from` to the end of its
    /// segment's data (at most [`MAX_RECORDS_PER_PASS`]), writes their units
    /// in one consume-queue batch, indexes them, then wakes readers.
    pub(crate) fn dispatch_pass(&self) -> Result<Pass, StoreError> {
        // One mechanism for both reputs: with one parser the pass is one
        // batch parsed inline (the serial reput).
        self.dispatch_batches()
    }

    /// Where a pass starts (moved up to the CommitLog min if retention
    /// passed it), or `None` with nothing new to read.
    fn pass_start(&self) -> Option<i64> {
        let mut from = self.parse_from.get();
        let min = self.commit_log.min_offset();
        if from < min {
            tracing::warn!(
                reput_from = from,
                commit_log_min = min,
                "reput position is below the CommitLog min offset; skipping to it"
            );
            from = min;
            self.parse_from.set(min);
            if self.reput_from() < min {
                self.visible.offset.set(min);
            }
        }
        (from < self.pass_end()).then_some(from)
    }

    /// Where passes stop now: the CommitLog's end, `until` and the confirm
    /// limit, whichever is lowest.
    pub(crate) fn pass_end(&self) -> i64 {
        self.commit_log
            .max_offset()
            .min(self.until.load(Ordering::Acquire))
            .min(self.confirm_limit.load(Ordering::Acquire))
    }

    /// Dispatch only whole records ending at or before `limit` (`i64::MAX`:
    /// no limit); wakes the reput service when the limit rose.
    pub(crate) fn set_confirm_limit(&self, limit: i64) {
        let old = self.confirm_limit.swap(limit, Ordering::AcqRel);
        if limit > old {
            self.notify_new_data();
        }
    }

    /// Parses the record at the start of `bytes` (CommitLog offset `at`)
    /// into what the dispatchers need; a schedule-topic unit gets its due
    /// time as tagsCode, so the schedule service needs no CommitLog read.
    fn request_at(&self, bytes: &[u8], at: i64) -> Result<DispatchRequest, StoreError> {
        let view = RecordView::parse(bytes, false).map_err(|e| corrupt(at, e.to_string()))?;
        if view.physical_offset() != at {
            return Err(corrupt(
                at,
                format!(
                    "record says it is at {}, found at {at}",
                    view.physical_offset()
                ),
            ));
        }
        let mut request = DispatchRequest::from_record(&view);
        if !self.multi_dispatch {
            request.lmq.clear();
        }
        if is_schedule_topic(&request.topic) {
            if let Some(due) = self
                .delay_levels
                .deliver_time_ms(delay_level_of_view(&view), request.store_timestamp)
            {
                request.tags_code = due;
            }
        }
        Ok(request)
    }

    /// Hands the records `[from, next_from)` to the backend (which may
    /// write them later) and to the shadow, indexes them, and moves the
    /// parse position on. Readers are woken by the backend's completion
    /// callback, never before the write.
    fn apply(
        &self,
        requests: &[DispatchRequest],
        from: i64,
        next_from: i64,
    ) -> Result<(), StoreError> {
        let puts = units_of(requests);
        if let Some(shadow) = self.shadow.lock().as_ref() {
            shadow.offer(ShadowBatch {
                from,
                to: next_from,
                puts: puts.clone(),
            });
        }
        self.hand_over(puts, next_from);
        if let Some(index) = &self.index {
            for r in requests.iter().filter(|r| r.goes_to_index()) {
                if let Err(e) = index.build_index(r) {
                    // The index only serves queries by key; a failure there
                    // must not stop consumption. Logged, and the pass goes on.
                    tracing::warn!(offset = r.commit_log_offset, error = %e, "index build failed");
                }
            }
        }
        self.parse_from.set(next_from);
        Ok(())
    }

    /// Gives `puts` (everything below `next_from`) to the backend; its
    /// completion publishes `next_from` and wakes the readers of the queues
    /// that grew.
    fn hand_over(&self, puts: Vec<CqPut>, next_from: i64) {
        let mut arrived: HashMap<(&str, i32), i64> = HashMap::new();
        for p in &puts {
            let slot = arrived.entry((p.topic.as_str(), p.queue_id)).or_insert(0);
            *slot = (*slot).max(p.queue_offset + 1);
        }
        let arrived: Vec<(String, i32, i64)> = arrived
            .into_iter()
            .map(|((t, q), m)| (t.to_owned(), q, m))
            .collect();
        let visible = Arc::clone(&self.visible);
        let commit_log = Arc::clone(&self.commit_log);
        let metrics = self.lane.read().clone();
        let units = puts.len();
        let lmq_units = puts.iter().filter(|p| is_lmq(&p.topic)).count();
        // One dispatch delay per record, not per unit: a record's units are
        // adjacent and share its CommitLog offset (LMQ fan-out would
        // otherwise weigh the histogram).
        let mut store_times: Vec<i64> = Vec::with_capacity(units);
        let mut last_phy = -1;
        for p in &puts {
            if p.phy_offset != last_phy {
                store_times.push(p.store_timestamp);
                last_phy = p.phy_offset;
            }
        }
        let handed_over = std::time::Instant::now();
        self.cq().put_async(
            puts,
            next_from,
            Box::new(move |result| {
                if result.is_ok() {
                    metrics.cq_write(units, lmq_units, handed_over.elapsed());
                    let now = rmq_common::time::now_ms();
                    for ts in &store_times {
                        metrics.dispatched(now - ts);
                    }
                }
                visible.written(&commit_log, result, next_from, arrived)
            }),
        );
    }
}

/// The consume-queue units of `requests`, in CommitLog order: each
/// consumable record's own unit, then one per light message queue it names
/// (so a backend writes all of one message's units in the same batch).
fn units_of(requests: &[DispatchRequest]) -> Vec<CqPut> {
    let mut puts = Vec::with_capacity(requests.len());
    for r in requests.iter().filter(|r| r.goes_to_consume_queue()) {
        puts.push(CqPut::from(r));
        for t in &r.lmq {
            puts.push(CqPut {
                topic: t.queue.clone(),
                queue_id: LMQ_QUEUE_ID,
                queue_offset: t.offset,
                ..CqPut::from(r)
            });
        }
    }
    puts
}

/// Longest sleep between passes when no append notified us.
const IDLE_WAIT: Duration = Duration::from_millis(10);
/// While appends keep coming, reput looks for them on this timer instead of
/// being woken by each (as RocketMQ's ReputMessageService sleeps 1 ms): one
/// wake-up per millisecond rather than a futex call and a context switch
/// per put. The first append after a quiet pass still wakes it at once.
const BUSY_POLL: Duration = Duration::from_millis(1);
/// Back-off after a failed pass, so a persistent failure does not spin.
const FAILURE_BACKOFF: Duration = Duration::from_millis(500);

/// Starts the reput service: one dispatch pass after another while there is
/// news, woken by appends. It stops between passes (never halfway through a
/// batch).
pub(crate) fn spawn_reput(dispatcher: Arc<Dispatcher>) -> Result<Service, StoreError> {
    let signal = Arc::clone(&dispatcher.new_data);
    let mut last_error: Option<String> = None;
    // Whether the previous pass dispatched something: then appends are
    // likely still coming, and reput polls for them.
    let mut busy = false;
    Service::start_with("reput", signal, Next::Now, move || {
        match dispatcher.dispatch_pass() {
            Ok(Pass::Progress(_)) => {
                last_error = None;
                busy = true;
                Next::Now
            }
            Ok(Pass::Idle) if std::mem::take(&mut busy) => Next::Poll(BUSY_POLL),
            Ok(Pass::Idle) => Next::After(IDLE_WAIT),
            Err(e) => {
                dispatcher
                    .failed_passes
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let msg = e.to_string();
                if last_error.as_deref() != Some(msg.as_str()) {
                    tracing::error!(error = %msg, reput_from = dispatcher.reput_from(), "reput pass failed; retrying");
                    last_error = Some(msg);
                }
                Next::After(FAILURE_BACKOFF)
            }
        }
    })
    .map_err(|e| StoreError::io("spawn reput thread", e))
}
