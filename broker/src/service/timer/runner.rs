//! Runs [`Timers`] on three threads: `timer-enqueue` (woken when the timer
//! topic grows), `timer-dequeue` (woken when the write time moves, or at the
//! next slot's end) and `timer-flush` (a checkpoint every
//! `timerFlushIntervalMs` and once more at an orderly stop).

use std::sync::Arc;
use std::time::Duration;

use rmq_common::constants::TIMER_TOPIC;
use rmq_common::service::{Next, Pass, Service, Signal};
use rmq_store::{MessageArrivalListener, MessageStore};

use super::{PassEnd, Timers};

/// Back-off after a pass that failed.
const ERROR_BACKOFF: Duration = Duration::from_secs(1);
/// Longest the dequeue side parks at once (a clock jump is noticed).
const MAX_PARK: Duration = Duration::from_secs(1);
/// Release passes run every this many checkpoints.
const RELEASE_EVERY: u32 = 30;
const STOP: &str = "timer service stop";

/// Wakes the enqueue side when reput makes a new timer-topic unit readable.
#[derive(Debug)]
struct ArrivalWaker(Arc<Signal>);

impl MessageArrivalListener for ArrivalWaker {
    fn arrived(&self, topic: &str, _queue_id: i32, _max_offset: i64) {
        if topic == TIMER_TOPIC {
            self.0.wake();
        }
    }
}

/// The running timer service.
#[derive(Debug)]
pub struct TimerService {
    timers: Arc<Timers>,
    enqueue: Service,
    dequeue: Service,
    flush: Service,
}

impl TimerService {
    /// Starts the three threads over `timers`.
    pub fn start(timers: Arc<Timers>, store: &MessageStore) -> std::io::Result<Self> {
        let dequeue_signal = Signal::new();
        let enqueue_signal = Signal::new();
        let dequeue = Service::start_with(
            "timer-dequeue",
            Arc::clone(&dequeue_signal),
            Next::Now,
            Dequeue(Arc::clone(&timers)),
        )?;
        let enqueue = Service::start_with(
            "timer-enqueue",
            Arc::clone(&enqueue_signal),
            Next::Now,
            Enqueue {
                timers: Arc::clone(&timers),
                dequeue: dequeue_signal,
            },
        )?;
        store.add_arrival_listener(Arc::new(ArrivalWaker(enqueue_signal)));
        let interval = Duration::from_millis(store.config().timer_flush_interval_ms);
        let flush = Service::start(
            "timer-flush",
            Next::After(interval),
            Flush {
                timers: Arc::clone(&timers),
                interval,
                passes: 0,
            },
        )?;
        tracing::info!(backend = %timers.timer_store().backend(), "timer service started");
        Ok(Self {
            timers,
            enqueue,
            dequeue,
            flush,
        })
    }

    /// The logic it runs.
    pub fn timers(&self) -> &Arc<Timers> {
        &self.timers
    }

    /// Stops the enqueue and dequeue sides between passes, then the flush
    /// thread, which checkpoints as it stops.
    pub fn stop(self) {
        self.enqueue.stop(STOP);
        self.dequeue.stop(STOP);
        self.flush.stop(STOP);
    }

    /// Stops without the last checkpoint, as a crash would.
    pub fn halt(self) {
        self.enqueue.halt(STOP);
        self.dequeue.halt(STOP);
        self.flush.halt(STOP);
    }
}

fn until(timers: &Timers, at_ms: i64) -> Duration {
    let now = timers.store.clock().now_ms();
    Duration::from_millis(u64::try_from(at_ms - now).unwrap_or(0).max(1)).min(MAX_PARK)
}

struct Enqueue {
    timers: Arc<Timers>,
    dequeue: Arc<Signal>,
}

impl Pass for Enqueue {
    fn run(&mut self) -> Next {
        let t = &self.timers;
        let r = t.enqueue_pass();
        // The write time may have moved: the dequeue side may go on.
        self.dequeue.wake();
        match r {
            Ok(PassEnd::Budget) => Next::Now,
            Ok(PassEnd::PutFailed { retry_at_ms }) => Next::After(until(t, retry_at_ms)),
            Ok(_) => {
                // Idle: look again at the next slot boundary (so the write
                // time follows the clock), or sooner on an arrival.
                let now = t.store.clock().now_ms();
                Next::After(until(t, t.floor(now) + t.precision + 1))
            }
            Err(e) => {
                tracing::error!(error = %e, "timer enqueue pass failed");
                Next::After(ERROR_BACKOFF)
            }
        }
    }
}

struct Dequeue(Arc<Timers>);

impl Pass for Dequeue {
    fn run(&mut self) -> Next {
        let t = &self.0;
        match t.dequeue_pass() {
            Ok(PassEnd::Budget) => Next::Now,
            Ok(PassEnd::NotDue { at_ms }) => Next::After(until(t, at_ms + 2)),
            Ok(PassEnd::PutFailed { retry_at_ms }) => Next::After(until(t, retry_at_ms)),
            Ok(PassEnd::CaughtUp) => Next::After(MAX_PARK),
            Err(e) => {
                tracing::error!(error = %e, "timer dequeue pass failed");
                Next::After(ERROR_BACKOFF)
            }
        }
    }
}

struct Flush {
    timers: Arc<Timers>,
    interval: Duration,
    passes: u32,
}

impl Pass for Flush {
    fn run(&mut self) -> Next {
        if let Err(e) = self.timers.checkpoint() {
            tracing::error!(error = %e, "timer checkpoint failed");
        }
        self.passes = self.passes.wrapping_add(1);
        if self.passes.is_multiple_of(RELEASE_EVERY) {
            match self.timers.release() {
                Ok(0) => {}
                Ok(n) => tracing::info!(freed = n, "timer store space freed"),
                Err(e) => tracing::warn!(error = %e, "timer store release failed"),
            }
        }
        Next::After(self.interval)
    }

    fn finish(&mut self, _reason: &str) {
        match self.timers.checkpoint() {
            Ok(()) => tracing::info!("timer service stopped; checkpoint written"),
            Err(e) => tracing::error!(error = %e, "timer checkpoint at stop failed"),
        }
    }
}
