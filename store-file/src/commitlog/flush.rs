//! Making the CommitLog durable: the periodic flush of ASYNC_FLUSH and the
//! group commit of SYNC_FLUSH, run by one [`FlushService`] thread.

use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use rmq_common::service::{Next, Pass, Service, Signal};
use rmq_common::FlushDiskType;

use super::CommitLog;
use crate::error::{Result, StoreError};

/// Why a flush a writer waited for failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("CommitLog flush failed: {0}")]
pub struct FlushFailed(pub String);

/// Called once the flush covering an offset is done (or failed).
pub type FlushCallback = Box<dyn FnOnce(std::result::Result<(), FlushFailed>) + Send>;

/// How long the group-commit thread sleeps when no writer waits; a new
/// request wakes it at once.
const GROUP_COMMIT_IDLE_WAIT: Duration = Duration::from_millis(10);

impl CommitLog {
    /// Calls `done` once everything below `end_offset` is durable. Used by
    /// SYNC_FLUSH sends; requests that arrive together share one flush.
    pub fn request_flush(&self, end_offset: i64, done: FlushCallback) {
        if self.flushed_offset() >= end_offset {
            done(Ok(()));
            return;
        }
        if let Some(reason) = self.poisoned.lock().clone() {
            done(Err(FlushFailed(reason)));
            return;
        }
        let mut q = self.flush_queue.lock();
        if q.stopping {
            drop(q);
            done(Err(FlushFailed("store is shutting down".into())));
            return;
        }
        q.requests.push((end_offset, done));
        drop(q);
        self.flush_signal.lock().wake();
    }

    /// Blocks until everything below `end_offset` is durable, or `timeout`.
    pub fn wait_flushed(&self, end_offset: i64, timeout: Duration) -> Result<()> {
        let (tx, rx) = mpsc::channel();
        self.request_flush(
            end_offset,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        match rx.recv_timeout(timeout) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(FlushFailed(reason))) => Err(StoreError::Poisoned { reason }),
            Err(_) => Err(StoreError::FlushTimeout {
                offset: end_offset,
                timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            }),
        }
    }

    /// Flushes segments from the flushed offset on; a segment with fewer than
    /// `least_pages` dirty pages stops the pass (0 flushes whatever is
    /// dirty). A failed sync poisons the log: the bytes' fate on disk is
    /// unknown, so no later write may be acknowledged as durable.
    pub fn flush(&self, least_pages: usize) -> Result<i64> {
        let _pass = self.flush_pass.lock();
        let store_ts = self.last_store_timestamp.load(Ordering::Acquire);
        let started = std::time::Instant::now();
        let mut flushed = self.flushed_offset();
        let flushed_before = flushed;
        for seg in self.segments.snapshot() {
            let end = seg.file_from_offset() + seg.file_size() as i64;
            if end <= flushed {
                continue;
            }
            let pos = match seg.flush(least_pages, self.flush_method) {
                Ok(p) => p,
                Err(e) => {
                    let reason = format!("flush of {} failed: {e}", seg.path().display());
                    self.poison(reason.clone());
                    return Err(StoreError::io(reason, e));
                }
            };
            flushed = flushed.max(seg.file_from_offset() + pos as i64);
            if pos < seg.file_size() {
                break;
            }
        }
        self.flushed_where.fetch_max(flushed, Ordering::AcqRel);
        if flushed > flushed_before {
            if let Some(observe) = self.flush_observer.0.get() {
                observe(started.elapsed());
            }
        }
        if flushed >= self.max_offset() {
            self.flushed_store_timestamp
                .fetch_max(store_ts, Ordering::AcqRel);
        }
        Ok(flushed)
    }

    /// Answers every waiter whose offset is now durable; with `all`, answers
    /// the rest with `failure` (shutdown or poisoning).
    fn answer_waiters(&self, failure: Option<&str>) {
        let flushed = self.flushed_offset();
        let ready: Vec<_> = {
            let mut q = self.flush_queue.lock();
            let (ready, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut q.requests)
                .into_iter()
                .partition(|(end, _)| *end <= flushed || failure.is_some());
            q.requests = waiting;
            ready
        };
        for (end, done) in ready {
            if end <= flushed {
                done(Ok(()));
            } else {
                done(Err(FlushFailed(failure.unwrap_or_default().to_owned())));
            }
        }
    }
}

/// Settings of the flush thread.
#[derive(Debug, Clone, Copy)]
pub struct FlushSettings {
    /// ASYNC_FLUSH: interval between periodic flushes.
    pub interval: Duration,
    /// ASYNC_FLUSH: dirty pages needed before a periodic flush.
    pub least_pages: usize,
    /// ASYNC_FLUSH: interval after which a flush ignores `least_pages`.
    pub thorough_interval: Duration,
}

impl FlushSettings {
    /// From the store config's keys.
    pub fn from_config(c: &rmq_common::StoreConfig) -> Self {
        Self {
            interval: Duration::from_millis(c.flush_interval_commit_log_ms),
            least_pages: c.flush_commit_log_least_pages as usize,
            thorough_interval: Duration::from_millis(c.flush_commit_log_thorough_interval_ms),
        }
    }
}

/// The CommitLog flush thread. Stopping it flushes everything and answers
/// every waiter.
#[derive(Debug)]
pub struct FlushService {
    service: Option<Service>,
}

impl FlushService {
    /// Starts the thread for `log`'s flushDiskType.
    pub fn spawn(log: Arc<CommitLog>, settings: FlushSettings) -> Result<Self> {
        let signal = Signal::new();
        *log.flush_signal.lock() = Arc::clone(&signal);
        if !log.flush_queue.lock().requests.is_empty() {
            // Writers that asked before the service existed woke no one.
            signal.wake();
        }
        let pass = Flusher {
            log,
            settings,
            last_thorough: Instant::now(),
        };
        let first = pass.idle_wait();
        let service = Service::start_with("cl-flush", signal, first, pass)
            .map_err(|e| StoreError::io("spawn CommitLog flush thread", e))?;
        Ok(Self {
            service: Some(service),
        })
    }

    /// Stops the thread after a final full flush.
    pub fn stop(mut self) {
        self.stop_inner();
    }

    fn stop_inner(&mut self) {
        if let Some(service) = self.service.take() {
            service.stop("store shutdown");
        }
    }
}

impl Drop for FlushService {
    fn drop(&mut self) {
        self.stop_inner();
    }
}

/// One flush per pass: everything under SYNC_FLUSH or when writers wait,
/// else what `flushCommitLogLeastPages` allows.
struct Flusher {
    log: Arc<CommitLog>,
    settings: FlushSettings,
    last_thorough: Instant,
}

impl Flusher {
    /// How long to sleep when no writer waits (a request wakes it at once).
    fn idle_wait(&self) -> Next {
        Next::After(if self.log.flush_disk_type == FlushDiskType::SyncFlush {
            GROUP_COMMIT_IDLE_WAIT
        } else {
            self.settings.interval
        })
    }
}

impl Pass for Flusher {
    fn run(&mut self) -> Next {
        let log = &self.log;
        let sync = log.flush_disk_type == FlushDiskType::SyncFlush;
        let has_waiters = !log.flush_queue.lock().requests.is_empty();
        let least_pages = if sync
            || has_waiters
            || self.last_thorough.elapsed() >= self.settings.thorough_interval
        {
            self.last_thorough = Instant::now();
            0
        } else {
            self.settings.least_pages
        };
        match log.flush(least_pages) {
            Ok(_) => log.answer_waiters(None),
            Err(e) => log.answer_waiters(Some(&e.to_string())),
        }
        self.idle_wait()
    }

    /// Refuses new waiters, flushes everything, answers every waiter.
    fn finish(&mut self, _reason: &str) {
        let log = &self.log;
        log.flush_queue.lock().stopping = true;
        let failure = log.flush(0).err().map(|e| e.to_string());
        log.answer_waiters(Some(failure.as_deref().unwrap_or("store is shutting down")));
    }
}
