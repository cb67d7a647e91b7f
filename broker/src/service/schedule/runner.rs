//! Runs the [`Scheduler`]: one thread per delay level (a level parks until
//! its next entry is due without holding up the others) and one that
//! persists progress. Store work is blocking, so these are threads, not
//! async tasks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use rmq_common::constants::SCHEDULE_TOPIC;
use rmq_common::DelayLevels;

use super::{PassEnd, Scheduler};
use crate::store::MessageArrivalListener;

/// Longest a level sleeps with nothing stored; an arrival wakes it sooner.
const IDLE_WAIT: Duration = Duration::from_secs(1);
/// Longest a level parks at once even when its next entry is due later, so
/// a clock that jumps is noticed.
const MAX_PARK: Duration = Duration::from_secs(1);
/// Back-off after a pass that failed to read the consume queue.
const ERROR_BACKOFF: Duration = Duration::from_secs(1);

/// A wake-up flag per level plus the stop flag.
#[derive(Debug)]
struct Signals {
    stop: AtomicBool,
    levels: Vec<(Mutex<bool>, Condvar)>,
}

impl Signals {
    fn slot(&self, level: i32) -> Option<&(Mutex<bool>, Condvar)> {
        let i = usize::try_from(level).ok()?.checked_sub(1)?;
        self.levels.get(i)
    }

    fn wake(&self, level: i32) {
        if let Some((flag, cv)) = self.slot(level) {
            *flag.lock() = true;
            cv.notify_one();
        }
    }

    fn wake_all(&self) {
        for (flag, cv) in &self.levels {
            *flag.lock() = true;
            cv.notify_all();
        }
    }

    /// Sleeps up to `timeout` unless woken (or already woken since the last
    /// wait).
    fn wait(&self, level: i32, timeout: Duration) {
        if let Some((flag, cv)) = self.slot(level) {
            let mut woken = flag.lock();
            if !*woken && !self.stop.load(Ordering::Acquire) {
                cv.wait_for(&mut woken, timeout);
            }
            *woken = false;
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }
}

/// Wakes a level when reput makes a new entry of its queue readable.
#[derive(Debug)]
struct ArrivalWaker(Arc<Signals>);

impl MessageArrivalListener for ArrivalWaker {
    fn arrived(&self, topic: &str, queue_id: i32, _max_offset: i64) {
        if topic == SCHEDULE_TOPIC {
            self.0.wake(DelayLevels::level_of_queue(queue_id));
        }
    }
}

/// The running schedule service.
#[derive(Debug)]
pub struct ScheduleService {
    scheduler: Arc<Scheduler>,
    signals: Arc<Signals>,
    threads: Vec<JoinHandle<()>>,
    persister: Option<JoinHandle<()>>,
    persist_wake: Arc<(Mutex<bool>, Condvar)>,
}

impl ScheduleService {
    /// Starts one thread per level and the persister (every
    /// `persist_interval`). New schedule entries wake their level through
    /// an arrival listener on the store.
    pub fn start(
        scheduler: Arc<Scheduler>,
        store: &crate::store::MessageStore,
        persist_interval: Duration,
    ) -> std::io::Result<Self> {
        let max_level = scheduler.levels().max_level();
        let signals = Arc::new(Signals {
            stop: AtomicBool::new(false),
            levels: (0..max_level)
                .map(|_| (Mutex::new(false), Condvar::new()))
                .collect(),
        });
        store.add_arrival_listener(Arc::new(ArrivalWaker(Arc::clone(&signals))));
        let persist_wake = Arc::new((Mutex::new(false), Condvar::new()));
        let mut service = Self {
            scheduler,
            signals,
            threads: Vec::new(),
            persister: None,
            persist_wake,
        };
        for (level, _) in service.scheduler.levels().clone().iter() {
            let (s, sig) = (Arc::clone(&service.scheduler), Arc::clone(&service.signals));
            let spawned = std::thread::Builder::new()
                .name(format!("schedule-{level}"))
                .spawn(move || run_level(&s, &sig, level));
            match spawned {
                Ok(t) => service.threads.push(t),
                Err(e) => {
                    service.stop_threads();
                    return Err(e);
                }
            }
        }
        let (s, sig, wake) = (
            Arc::clone(&service.scheduler),
            Arc::clone(&service.signals),
            Arc::clone(&service.persist_wake),
        );
        let spawned = std::thread::Builder::new()
            .name("schedule-persist".into())
            .spawn(move || run_persister(&s, &sig, &wake, persist_interval));
        match spawned {
            Ok(t) => service.persister = Some(t),
            Err(e) => {
                service.stop_threads();
                return Err(e);
            }
        }
        tracing::info!(levels = max_level, "schedule service started");
        Ok(service)
    }

    /// The logic it runs (progress, pending counts).
    pub fn scheduler(&self) -> &Arc<Scheduler> {
        &self.scheduler
    }

    /// Stops every thread between passes, then persists progress.
    pub fn stop(mut self) {
        self.stop_threads();
        match self.scheduler.persist() {
            Ok(()) => tracing::info!("schedule service stopped; delay offsets persisted"),
            Err(e) => tracing::error!(error = %e, "persisting delay offsets at stop failed"),
        }
    }

    fn stop_threads(&mut self) {
        self.signals.stop.store(true, Ordering::Release);
        self.signals.wake_all();
        {
            let (flag, cv) = &*self.persist_wake;
            *flag.lock() = true;
            cv.notify_all();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        if let Some(t) = self.persister.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ScheduleService {
    fn drop(&mut self) {
        if !self.threads.is_empty() || self.persister.is_some() {
            self.stop_threads();
        }
    }
}

fn run_level(scheduler: &Scheduler, signals: &Signals, level: i32) {
    let clock = Arc::clone(scheduler.store.clock());
    while !signals.stopped() {
        let wait = match scheduler.pass(level) {
            Ok(pass) => match pass.ended {
                PassEnd::Budget => Duration::ZERO,
                PassEnd::CaughtUp => IDLE_WAIT,
                PassEnd::NotDue { due_ms: at } | PassEnd::PutFailed { retry_at_ms: at } => {
                    let ms = u64::try_from(at - clock.now_ms()).unwrap_or(0).max(1);
                    Duration::from_millis(ms).min(MAX_PARK)
                }
            },
            Err(e) => {
                tracing::error!(level, error = %e, "schedule pass failed");
                ERROR_BACKOFF
            }
        };
        if !wait.is_zero() {
            signals.wait(level, wait);
        }
    }
}

fn run_persister(
    scheduler: &Scheduler,
    signals: &Signals,
    wake: &(Mutex<bool>, Condvar),
    interval: Duration,
) {
    loop {
        {
            let mut woken = wake.0.lock();
            if !*woken {
                wake.1.wait_for(&mut woken, interval);
            }
        }
        if signals.stopped() {
            break;
        }
        if let Err(e) = scheduler.persist() {
            tracing::error!(error = %e, "persisting delay offsets failed");
        }
    }
}
