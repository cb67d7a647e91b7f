//! A shadow backend: a second consume-queue store written from the same
//! dispatch as the serving one, read by nobody but `cq verify`, ready to be
//! flipped to.
//!
//! The serving dispatcher offers every batch it hands to its own backend
//! (the same parsed units, `[from, to)` of the CommitLog) to the shadow's
//! bounded queue and never waits for it: a full queue drops the batch. The
//! shadow's thread writes the batches that continue where it stands, and
//! fills every gap (a dropped batch, a shadow added to a running store, a
//! shadow that was behind at start-up) by dispatching that stretch of the
//! CommitLog itself, through a dispatcher of its own bounded to where the
//! serving dispatch is. While the serving dispatch is more than
//! [`YIELD_BEHIND_BYTES`] behind the CommitLog, gap filling waits, so
//! catching up never holds the serving backend further back than that.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_common::config::CqBackend;
use rmq_common::cq::{ConsumeQueueStore, CqError, CqPut};
use rmq_common::service::{Next, Service};
use rmq_store_file::StoreError;

use super::{Dispatcher, Pass, Visible, FAILURE_BACKOFF, PROGRESS_LOG_INTERVAL};
use crate::metrics::{LaneMetrics, Role};
use crate::SharedOffset;

/// Batches waiting for the shadow before the serving dispatch drops them
/// (up to 4096 units each).
const QUEUE_BATCHES: usize = 64;
/// Gap filling waits while the serving dispatch is this far behind the
/// CommitLog: the bound a shadow catching up puts on the serving backend.
pub(crate) const YIELD_BEHIND_BYTES: i64 = 4 * 1024 * 1024;
/// How long the shadow waits for a batch before looking for a gap.
const IDLE_WAIT: Duration = Duration::from_millis(10);
/// How long gap filling waits for the serving dispatch to catch up.
const YIELD_WAIT: Duration = Duration::from_millis(1);

/// Units of `[from, to)` of the CommitLog, as the serving backend got them.
#[derive(Debug)]
pub(crate) struct ShadowBatch {
    pub(crate) from: i64,
    pub(crate) to: i64,
    pub(crate) puts: Vec<CqPut>,
}

/// Where the serving dispatch is, read by the shadow's thread.
#[derive(Debug, Clone)]
struct Leader {
    parsed: Arc<SharedOffset>,
    visible: Arc<Visible>,
    commit_log: Arc<rmq_store_file::commitlog::CommitLog>,
}

impl Leader {
    fn behind(&self) -> i64 {
        self.commit_log.max_offset() - self.visible.offset.get()
    }
}

/// A running shadow: its dispatcher (its backend and position), the queue
/// the serving dispatch offers batches to, and the thread writing them.
#[derive(Debug)]
pub(crate) struct Shadow {
    lane: Arc<Dispatcher>,
    tx: SyncSender<ShadowBatch>,
    dropped: Arc<AtomicU64>,
    service: Option<Service>,
}

impl Shadow {
    /// Starts feeding `cq` from CommitLog offset `from`, following `leader`.
    pub(super) fn start(
        leader: &Dispatcher,
        cq: Arc<dyn ConsumeQueueStore>,
        from: i64,
        lane: LaneMetrics,
    ) -> Result<Self, StoreError> {
        let lane = Arc::new(
            Dispatcher::new(
                Role::Shadow,
                Arc::clone(&leader.commit_log),
                cq,
                None,
                from,
                leader.delay_levels.clone(),
                lane,
                1,
            )
            .with_multi_dispatch(leader.multi_dispatch),
        );
        if leader.partial_tail.load(Ordering::Acquire) {
            lane.accept_partial_tail();
        }
        let (tx, rx) = sync_channel(QUEUE_BATCHES);
        let leader = Leader {
            parsed: Arc::clone(&leader.parse_from),
            visible: Arc::clone(&leader.visible),
            commit_log: Arc::clone(&leader.commit_log),
        };
        let mut feeder = Feeder {
            lane: Arc::clone(&lane),
            leader,
            rx,
            pending: None,
            last_log: Instant::now(),
            last_error: None,
        };
        let name = format!("cq-shadow-{}", lane.cq().backend());
        let service = Service::start(&name, Next::Now, move || feeder.pass())
            .map_err(|e| StoreError::io("spawn the shadow consume-queue thread", e))?;
        Ok(Self {
            lane,
            tx,
            dropped: Arc::default(),
            service: Some(service),
        })
    }

    /// Queues a batch without waiting; a full queue drops it (the shadow
    /// reads that stretch from the CommitLog later).
    pub(super) fn offer(&self, batch: ShadowBatch) {
        match self.tx.try_send(batch) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => {}
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The shadow's backend.
    pub(crate) fn cq(&self) -> Arc<dyn ConsumeQueueStore> {
        self.lane.cq()
    }

    /// Which engine it is.
    pub(crate) fn backend(&self) -> CqBackend {
        self.lane.cq().backend()
    }

    /// CommitLog offset below which the shadow has written every unit.
    pub(crate) fn written_to(&self) -> i64 {
        self.lane.reput_from()
    }

    /// Its dispatcher, to wait on without holding the shadow's lock.
    pub(crate) fn lane(&self) -> Arc<Dispatcher> {
        Arc::clone(&self.lane)
    }

    /// Batches dropped because the shadow's queue was full.
    pub(crate) fn dropped_batches(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Why the shadow stopped writing, if it did (a write that failed).
    pub(crate) fn failure(&self) -> Option<String> {
        self.lane.failure()
    }

    /// Its dispatch metrics.
    pub(crate) fn lane_metrics(&self) -> LaneMetrics {
        self.lane.lane.read().clone()
    }

    /// Stops the thread (between batches) and returns the backend.
    pub(crate) fn stop(mut self, reason: &str) -> Arc<dyn ConsumeQueueStore> {
        if let Some(service) = self.service.take() {
            service.stop(reason);
        }
        self.lane.cq()
    }
}

impl Drop for Shadow {
    fn drop(&mut self) {
        if let Some(service) = self.service.take() {
            service.halt("shadow dropped");
        }
    }
}

/// The shadow thread's state between passes.
struct Feeder {
    lane: Arc<Dispatcher>,
    leader: Leader,
    rx: Receiver<ShadowBatch>,
    /// A batch waiting for a gap before it to be filled.
    pending: Option<ShadowBatch>,
    last_log: Instant,
    last_error: Option<String>,
}

impl Feeder {
    /// One step: write a batch that continues the shadow, fill one pass of
    /// a gap, or wait a little for a batch.
    fn pass(&mut self) -> Next {
        if self.lane.failure().is_some() {
            // A failed write stops the shadow until it is dropped (or the
            // broker restarts and it recovers from its own checkpoint).
            return Next::WhenWoken;
        }
        let at = self.lane.parsed_to();
        if let Some(batch) = self.pending.take() {
            if batch.to <= at {
                return Next::Now;
            }
            if batch.from > at {
                let target = batch.from;
                self.pending = Some(batch);
                return self.fill(target);
            }
            self.lane.hand_over(batch.puts, batch.to);
            self.lane.parse_from.set(batch.to);
            return Next::Now;
        }
        match self.rx.recv_timeout(IDLE_WAIT) {
            Ok(batch) => {
                self.pending = Some(batch);
                Next::Now
            }
            Err(RecvTimeoutError::Timeout) => {
                let target = self.leader.parsed.get();
                if at < target {
                    self.fill(target)
                } else {
                    Next::Now
                }
            }
            Err(RecvTimeoutError::Disconnected) => Next::WhenWoken,
        }
    }

    /// One pass of the CommitLog toward `target` (a position where a
    /// serving pass ended), unless the serving dispatch is behind.
    fn fill(&mut self, target: i64) -> Next {
        if self.leader.behind() > YIELD_BEHIND_BYTES {
            return Next::Poll(YIELD_WAIT);
        }
        self.lane.until.store(target, Ordering::Release);
        match self.lane.dispatch_pass() {
            Ok(Pass::Progress(_)) => {
                self.last_error = None;
                if self.last_log.elapsed() >= PROGRESS_LOG_INTERVAL {
                    self.last_log = Instant::now();
                    tracing::info!(
                        backend = %self.lane.cq().backend(),
                        at = self.lane.parsed_to(),
                        target,
                        serving_at = self.leader.visible.offset.get(),
                        "shadow consume queue catching up from the CommitLog"
                    );
                }
                Next::Now
            }
            // Nothing readable up to the target yet.
            Ok(Pass::Idle) => Next::After(IDLE_WAIT),
            Err(e) => {
                let msg = e.to_string();
                if self.last_error.as_deref() != Some(msg.as_str()) {
                    tracing::error!(error = %msg, at = self.lane.parsed_to(), "shadow dispatch pass failed; retrying");
                    self.last_error = Some(msg);
                }
                Next::After(FAILURE_BACKOFF)
            }
        }
    }
}

/// The points a flip passes, in order (crash tests stop the process at
/// each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlipStep {
    /// Dispatch paused; both backends written to the same offset.
    Paused,
    /// Both backends flushed; the new choice not yet persisted.
    Flushed,
    /// The new choice persisted; readers still on the old backend.
    Persisted,
    /// Readers on the new backend; the old one not yet fed as the shadow.
    Swapped,
}

impl FlipStep {
    /// Every step, in order.
    pub const ALL: [FlipStep; 4] = [Self::Paused, Self::Flushed, Self::Persisted, Self::Swapped];

    /// Its name (crash-test arguments, logs).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Paused => "paused",
            Self::Flushed => "flushed",
            Self::Persisted => "persisted",
            Self::Swapped => "swapped",
        }
    }
}

/// Why a flip did not happen.
#[derive(Debug, thiserror::Error)]
pub enum FlipError {
    /// There is no shadow to serve from.
    #[error("there is no shadow consume queue to serve from")]
    NoShadow,
    /// The shadow stopped after a failed write.
    #[error("the shadow ({backend}) failed and cannot serve: {reason}")]
    ShadowFailed {
        /// The shadow's engine.
        backend: CqBackend,
        /// Its failure.
        reason: String,
    },
    /// One of the backends did not reach the dispatch position in time.
    #[error("the {role} backend ({backend}) is {behind} bytes behind the dispatch position {at}; try again once the shadow has caught up")]
    Behind {
        /// serving or shadow.
        role: &'static str,
        /// Its engine.
        backend: CqBackend,
        /// Bytes it lacks.
        behind: i64,
        /// Where dispatch stood.
        at: i64,
    },
    /// A flush, the persisted choice, or restarting the shadow failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Dispatcher {
    /// Starts feeding `cq` as this dispatcher's shadow, from CommitLog
    /// offset `from` (its own dispatched offset); it catches up in the
    /// background.
    pub(crate) fn attach_shadow(
        &self,
        cq: Arc<dyn ConsumeQueueStore>,
        from: i64,
        lane: LaneMetrics,
    ) -> Result<(), StoreError> {
        let shadow = Shadow::start(self, cq, from, lane)?;
        let old = self.shadow.lock().replace(shadow);
        if let Some(old) = old {
            old.stop("replaced");
        }
        Ok(())
    }

    /// Stops feeding the shadow and returns its backend (still open).
    pub(crate) fn detach_shadow(&self, reason: &str) -> Option<Arc<dyn ConsumeQueueStore>> {
        let shadow = self.shadow.lock().take();
        shadow.map(|s| s.stop(reason))
    }

    /// Takes the shadow out without stopping it (dropping it halts it).
    pub(crate) fn take_shadow(&self) -> Option<Shadow> {
        self.shadow.lock().take()
    }

    /// Runs `f` on the shadow, if there is one. The serving dispatch takes
    /// this lock for every batch: `f` must not block.
    pub(crate) fn with_shadow<R>(&self, f: impl FnOnce(&Shadow) -> R) -> Option<R> {
        self.shadow.lock().as_ref().map(f)
    }

    /// After CommitLog segments below `commit_log_min` are deleted: raises
    /// every queue's min offset in both backends.
    pub(crate) fn correct_min_offset(&self, commit_log_min: i64) -> Result<(), CqError> {
        for cq in self.backends() {
            cq.correct_min_offset(commit_log_min)?;
        }
        Ok(())
    }

    /// The serving backend, then the shadow if any.
    pub(crate) fn backends(&self) -> Vec<Arc<dyn ConsumeQueueStore>> {
        let mut all = vec![self.cq()];
        if let Some(shadow) = self.with_shadow(Shadow::cq) {
            all.push(shadow);
        }
        all
    }

    /// Makes the shadow the serving backend and the serving one the shadow.
    /// Dispatch pauses (between passes) while both backends finish writing
    /// up to the same CommitLog offset, are flushed, and `persist` records
    /// the new choice (serving, shadow); only then do readers switch. On an
    /// error before `persist` succeeded nothing changes.
    pub(crate) fn flip(
        &self,
        timeout: Duration,
        step: &dyn Fn(FlipStep),
        persist: impl FnOnce(CqBackend, CqBackend) -> Result<(), StoreError>,
    ) -> Result<(CqBackend, CqBackend), FlipError> {
        let _pass = self.pass_lock.lock();
        let at = self.parse_from.get();
        let serving = self.cq();
        let behind = |role, backend, written: i64| FlipError::Behind {
            role,
            backend,
            behind: at - written,
            at,
        };
        if !self.wait_reput_to(at, timeout) {
            return Err(behind("serving", serving.backend(), self.reput_from()));
        }
        let (lane, backend, failure) = self
            .with_shadow(|s| (s.lane(), s.backend(), s.failure()))
            .ok_or(FlipError::NoShadow)?;
        if let Some(reason) = failure {
            return Err(FlipError::ShadowFailed { backend, reason });
        }
        // Waited on without the shadow's lock (the cq flush and the metrics
        // take it); dispatch is paused by the pass lock.
        if !lane.wait_reput_to(at, timeout) {
            return Err(behind("shadow", backend, lane.reput_from()));
        }
        let mut slot = self.shadow.lock();
        let Some(shadow) = slot.take() else {
            return Err(FlipError::NoShadow);
        };
        step(FlipStep::Paused);
        let shadow_lane = shadow.lane_metrics();
        let next = shadow.stop("flipping serving and shadow");
        let prepared = serving
            .flush()
            .and_then(|()| next.flush())
            .map_err(StoreError::from)
            .and_then(|()| {
                step(FlipStep::Flushed);
                persist(next.backend(), serving.backend())
            });
        if let Err(e) = prepared {
            // Nothing switched: the shadow goes on from where it stopped.
            *slot = Some(Shadow::start(self, next, at, shadow_lane)?);
            return Err(e.into());
        }
        let serving_lane = std::mem::replace(
            &mut *self.lane.write(),
            shadow_lane.with_role(Role::Serving),
        );
        step(FlipStep::Persisted);
        *self.cq.write() = Arc::clone(&next);
        step(FlipStep::Swapped);
        *slot = Some(Shadow::start(
            self,
            Arc::clone(&serving),
            at,
            serving_lane.with_role(Role::Shadow),
        )?);
        tracing::info!(serving = %next.backend(), shadow = %serving.backend(), at, "consume-queue backends flipped");
        Ok((next.backend(), serving.backend()))
    }
}
