//! Timer messages (RocketMQ 5.x): the send path's rewrite ([`rewrite`]),
//! recall handles ([`handle`]), and the service that files timer-topic
//! messages into the timer store and delivers them when due.
//!
//! The send path stores a timer message in `rmq_sys_wheel_timer`, queue 0,
//! with its slot in TIMER_OUT_MS. [`Timers`] holds the logic in bounded
//! passes (tests drive them with a manual clock):
//! - [`Timers::enqueue_pass`] (`enqueue.rs`) reads the timer topic's
//!   consume queue from the enqueue offset and files each message in the
//!   [`TimerStore`] under its slot, or delivers it at once when its slot is
//!   before the write time; a slot beyond the store's horizon is filed at a
//!   roll point. After each batch the write time moves to now.
//! - [`Timers::dequeue_pass`] (`dequeue.rs`) reads each slot before the
//!   write time, drops messages a recall's delete marker names, puts the
//!   rest into their real topics (`convert.rs`) and moves the read time on.
//! - [`Timers::checkpoint`] records both positions in the timer store after
//!   making its entries durable.
//!
//! A crash loses nothing: the store holds every entry filed before the
//! last checkpoint and the enqueue offset goes back to it, so later ones
//! are filed again; slots delivered after the last checkpoint are
//! delivered again (at least once, as RocketMQ).

mod convert;
mod dequeue;
mod enqueue;
pub mod handle;
pub mod rewrite;
mod runner;

pub use runner::TimerService;

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use rmq_common::constants::TIMER_TOPIC;
use rmq_timer::{Progress, TimerStore};

use crate::error::ServiceError;
use crate::service::poison::PoisonLog;
use crate::service::schedule::DeliverySink;
use rmq_store::MessageStore;

/// Most consume-queue units (enqueue) or slot entries (dequeue) one pass
/// handles before it yields.
pub const MAX_PER_PASS: usize = 4096;
/// Units read from the timer topic's consume queue at a time.
const READ_BATCH: usize = 256;
/// Wait before a delivery whose put failed is tried again.
pub const PUT_RETRY_MS: i64 = 500;

/// Why a pass ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassEnd {
    /// Hit its budget; more work may be ready.
    Budget,
    /// Nothing left to do now.
    CaughtUp,
    /// The next work is possible at `at_ms`.
    NotDue {
        /// Epoch ms.
        at_ms: i64,
    },
    /// A put failed; try again at `retry_at_ms`.
    PutFailed {
        /// Epoch ms.
        retry_at_ms: i64,
    },
}

/// Counts since start, for metrics and tests.
#[derive(Debug, Default)]
pub struct TimerCounts {
    /// Entries filed in the timer store.
    pub filed: AtomicU64,
    /// Messages put into their real topics.
    pub delivered: AtomicU64,
    /// Of those, delivered at once (due before they could be filed).
    pub delivered_direct: AtomicU64,
    /// Messages dropped because a recall named them.
    pub recalled: AtomicU64,
    /// Messages put back into the timer topic from a roll point.
    pub rolled: AtomicU64,
}

/// The timer logic over one message store and one timer store.
#[derive(Debug)]
pub struct Timers {
    store: Arc<MessageStore>,
    timers: Arc<dyn TimerStore>,
    sink: Arc<dyn DeliverySink>,
    precision: i64,
    roll_window_ms: i64,
    /// Next timer-topic queue offset to file.
    enqueue_offset: AtomicI64,
    /// Slots before it can receive no more entries (only the enqueue side
    /// moves it, after filing).
    write_ms: AtomicI64,
    /// Next slot to deliver.
    read_ms: AtomicI64,
    /// A slot half delivered when a put failed: (slot, entries done).
    resume: Mutex<(i64, usize)>,
    /// How late the last delivered slot was, ms.
    last_lag_ms: AtomicI64,
    poison: PoisonLog,
    counts: TimerCounts,
}

impl Timers {
    /// Opens the timer store `store`'s config names and restores the
    /// positions its last checkpoint recorded (a new store starts at the
    /// timer topic's first offset and at the current slot). Delivered
    /// messages go through `sink` (the store itself in a broker).
    pub fn open(
        store: Arc<MessageStore>,
        sink: Arc<dyn DeliverySink>,
    ) -> Result<Self, ServiceError> {
        let config = store.config().clone();
        let timers = rmq_timer::open_timer_store(&config)?;
        let precision = config.timer_precision();
        let now = store.clock().now_ms();
        let min = store.min_offset_in_queue(TIMER_TOPIC, 0)?;
        let max = store.max_offset_in_queue(TIMER_TOPIC, 0)?;
        let p = timers.recovered().unwrap_or(Progress {
            read_ms: now - now.rem_euclid(precision),
            enqueue_offset: min,
        });
        let enqueue_offset = p.enqueue_offset.clamp(min, max.max(min));
        if enqueue_offset != p.enqueue_offset {
            tracing::warn!(
                recorded = p.enqueue_offset,
                min,
                max,
                continue_at = enqueue_offset,
                "timer enqueue offset outside the timer topic's queue; corrected"
            );
        }
        // Apache's `timerRollWindowSlot` rule: below 2 or beyond the
        // wheel, the whole wheel less its blank slots.
        let slots = i64::try_from(config.timer_roll_window_slot).unwrap_or(i64::MAX);
        let max_slots = rmq_timer::wheel::slots::SLOTS_TOTAL - rmq_timer::wheel::slots::BLANK_SLOTS;
        let window_slots = if (2..=max_slots).contains(&slots) {
            slots
        } else {
            max_slots
        };
        timers.advance(p.read_ms);
        tracing::info!(backend = %timers.backend(), read_ms = p.read_ms, enqueue_offset,
            backlog = timers.backlog(), "timer store open");
        Ok(Self {
            poison: PoisonLog::new(&config.store_path_root_dir, "timer"),
            store,
            timers,
            sink,
            precision,
            roll_window_ms: window_slots.saturating_mul(precision),
            enqueue_offset: AtomicI64::new(enqueue_offset),
            write_ms: AtomicI64::new(p.read_ms),
            read_ms: AtomicI64::new(p.read_ms),
            resume: Mutex::new((i64::MIN, 0)),
            last_lag_ms: AtomicI64::new(0),
            counts: TimerCounts::default(),
        })
    }

    /// The timer store.
    pub fn timer_store(&self) -> &Arc<dyn TimerStore> {
        &self.timers
    }

    /// Counts since start.
    pub fn counts(&self) -> &TimerCounts {
        &self.counts
    }

    /// The slot width, ms.
    pub fn precision(&self) -> i64 {
        self.precision
    }

    /// Next timer-topic offset to file.
    pub fn enqueue_offset(&self) -> i64 {
        self.enqueue_offset.load(Ordering::Acquire)
    }

    /// Next slot to deliver, epoch ms.
    pub fn read_ms(&self) -> i64 {
        self.read_ms.load(Ordering::Acquire)
    }

    /// Messages filed and not yet delivered (recalled ones excluded).
    pub fn backlog(&self) -> i64 {
        self.timers.backlog().max(0)
    }

    /// Timer-topic messages stored but not yet filed.
    pub fn enqueue_lag(&self) -> i64 {
        let max = self.store.max_offset_in_queue(TIMER_TOPIC, 0).unwrap_or(0);
        (max - self.enqueue_offset()).max(0)
    }

    /// How far delivery is behind: now minus the end of the next slot to
    /// deliver, 0 when it is not due yet, ms.
    pub fn due_lag_ms(&self) -> i64 {
        let now = self.store.clock().now_ms();
        (now - (self.read_ms() + self.precision)).max(0)
    }

    /// How late the last delivered slot was (delivery time minus the
    /// slot's end), ms.
    pub fn last_slot_lag_ms(&self) -> i64 {
        self.last_lag_ms.load(Ordering::Relaxed)
    }

    /// Entries passed over because they can never be delivered.
    pub fn poisoned(&self) -> u64 {
        self.poison.count()
    }

    /// Records both positions in the timer store, after making every
    /// entry filed so far durable.
    pub fn checkpoint(&self) -> Result<(), ServiceError> {
        // Load before the store's flush: every entry the offset covers was
        // filed before it, so the flush covers them.
        let p = Progress {
            read_ms: self.read_ms(),
            enqueue_offset: self.enqueue_offset(),
        };
        self.timers.checkpoint(p)?;
        Ok(())
    }

    /// Frees timer-store space whose messages the CommitLog no longer holds.
    pub fn release(&self) -> Result<usize, ServiceError> {
        Ok(self.timers.release(self.store.min_phy_offset())?)
    }

    fn floor(&self, ms: i64) -> i64 {
        ms - ms.rem_euclid(self.precision)
    }
}
