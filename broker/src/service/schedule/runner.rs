//! Runs the [`Scheduler`]: one thread per delay level (a level parks until
//! its next entry is due without holding up the others) and one that
//! persists progress. Store work is blocking, so these are threads, not
//! async tasks.

use std::sync::Arc;
use std::time::Duration;

use rmq_common::constants::SCHEDULE_TOPIC;
use rmq_common::service::{Next, Pass, Service, Signal};
use rmq_common::DelayLevels;

use super::{PassEnd, Scheduler};
use rmq_store::MessageArrivalListener;

/// Longest a level sleeps with nothing stored; an arrival wakes it sooner.
const IDLE_WAIT: Duration = Duration::from_secs(1);
/// Longest a level parks at once even when its next entry is due later, so
/// a clock that jumps is noticed.
const MAX_PARK: Duration = Duration::from_secs(1);
/// Back-off after a pass that failed to read the consume queue.
const ERROR_BACKOFF: Duration = Duration::from_secs(1);
/// The reason the services log when the schedule service stops.
const STOP: &str = "schedule service stop";

/// Wakes a level when reput makes a new entry of its queue readable.
#[derive(Debug)]
struct ArrivalWaker(Vec<Arc<Signal>>);

impl MessageArrivalListener for ArrivalWaker {
    fn arrived(&self, topic: &str, queue_id: i32, _max_offset: i64) {
        if topic != SCHEDULE_TOPIC {
            return;
        }
        let level = DelayLevels::level_of_queue(queue_id);
        let slot = usize::try_from(level).ok().and_then(|l| l.checked_sub(1));
        if let Some(signal) = slot.and_then(|i| self.0.get(i)) {
            signal.wake();
        }
    }
}

/// The running schedule service.
#[derive(Debug)]
pub struct ScheduleService {
    scheduler: Arc<Scheduler>,
    levels: Vec<Service>,
    persister: Service,
}

impl ScheduleService {
    /// Starts one service per level and the persister (every
    /// `persist_interval`). New schedule entries wake their level through
    /// an arrival listener on the store.
    pub fn start(
        scheduler: Arc<Scheduler>,
        store: &rmq_store::MessageStore,
        persist_interval: Duration,
    ) -> std::io::Result<Self> {
        let max_level = scheduler.levels().max_level();
        let signals: Vec<Arc<Signal>> = (0..max_level).map(|_| Signal::new()).collect();
        let mut levels = Vec::with_capacity(signals.len());
        for (level, _) in scheduler.levels().clone().iter() {
            let slot = usize::try_from(level - 1).ok();
            let signal = slot
                .and_then(|i| signals.get(i))
                .map_or_else(Signal::new, Arc::clone);
            let pass = LevelPass {
                scheduler: Arc::clone(&scheduler),
                level,
            };
            levels.push(Service::start_with(
                &format!("schedule-{level}"),
                signal,
                Next::Now,
                pass,
            )?);
        }
        store.add_arrival_listener(Arc::new(ArrivalWaker(signals)));
        let persister = Service::start(
            "schedule-persist",
            Next::After(persist_interval),
            Persister {
                scheduler: Arc::clone(&scheduler),
                interval: persist_interval,
            },
        )?;
        tracing::info!(levels = max_level, "schedule service started");
        Ok(Self {
            scheduler,
            levels,
            persister,
        })
    }

    /// The logic it runs (progress, pending counts).
    pub fn scheduler(&self) -> &Arc<Scheduler> {
        &self.scheduler
    }

    /// Stops every level between passes, then the persister, which persists
    /// progress as it stops.
    pub fn stop(self) {
        for level in self.levels {
            level.stop(STOP);
        }
        self.persister.stop(STOP);
    }
}

/// One delivery pass of a level; parks until its next entry is due.
struct LevelPass {
    scheduler: Arc<Scheduler>,
    level: i32,
}

impl Pass for LevelPass {
    fn run(&mut self) -> Next {
        let level = self.level;
        match self.scheduler.pass(level) {
            Ok(pass) => match pass.ended {
                PassEnd::Budget => Next::Now,
                PassEnd::CaughtUp => Next::After(IDLE_WAIT),
                PassEnd::NotDue { due_ms: at } | PassEnd::PutFailed { retry_at_ms: at } => {
                    let now = self.scheduler.store.clock().now_ms();
                    let ms = u64::try_from(at - now).unwrap_or(0).max(1);
                    Next::After(Duration::from_millis(ms).min(MAX_PARK))
                }
            },
            Err(e) => {
                tracing::error!(level, error = %e, "schedule pass failed");
                Next::After(ERROR_BACKOFF)
            }
        }
    }
}

/// Persists delay offsets every interval and once more at stop.
struct Persister {
    scheduler: Arc<Scheduler>,
    interval: Duration,
}

impl Pass for Persister {
    fn run(&mut self) -> Next {
        if let Err(e) = self.scheduler.persist() {
            tracing::error!(error = %e, "persisting delay offsets failed");
        }
        Next::After(self.interval)
    }

    fn finish(&mut self, _reason: &str) {
        match self.scheduler.persist() {
            Ok(()) => tracing::info!("schedule service stopped; delay offsets persisted"),
            Err(e) => tracing::error!(error = %e, "persisting delay offsets at stop failed"),
        }
    }
}
