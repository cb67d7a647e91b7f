//! The [`TimerStore`] trait: what the broker's timer service needs of a
//! place that keeps pending timer messages by slot.
//!
//! Durability contract, the same for every engine:
//! - [`TimerStore::put`] files entries; they are readable at once but not
//!   durable.
//! - [`TimerStore::checkpoint`] first makes every entry put so far durable,
//!   then records the [`Progress`]. After a crash at any point, reopening
//!   yields the last recorded progress (or none), and every entry put
//!   before that checkpoint is there. Entries put after it may or may not
//!   be: the caller files them again from `Progress::enqueue_offset`, and
//!   filing an entry that survived again is harmless (a slot read never
//!   returns the same (offset, kind) twice).
//! - Nothing is delivered by the store; the caller reads a due slot with
//!   [`TimerStore::read_slot`] and moves `Progress::read_ms` on.

use crate::entry::TimerEntry;
use crate::error::TimerError;
use rmq_common::TimerStoreType;

/// How far the timer service got, recorded by a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Progress {
    /// The next slot to deliver, epoch ms (every earlier slot is done).
    pub read_ms: i64,
    /// The next timer-topic queue offset to file (every earlier one is
    /// filed or was delivered directly).
    pub enqueue_offset: i64,
}

/// Where pending timer messages wait, by slot.
pub trait TimerStore: Send + Sync + std::fmt::Debug {
    /// Which engine this is.
    fn backend(&self) -> TimerStoreType;

    /// The progress the last checkpoint recorded, as found at open; `None`
    /// for a new store.
    fn recovered(&self) -> Option<Progress>;

    /// Files `entries` (any slots, any order).
    fn put(&self, entries: &[TimerEntry]) -> Result<(), TimerError>;

    /// Appends the entries of slot `slot_ms` to `out`, oldest first, each
    /// (CommitLog offset, kind) once.
    fn read_slot(&self, slot_ms: i64, out: &mut Vec<TimerEntry>) -> Result<(), TimerError>;

    /// The caller is done with every slot before `read_ms` (in memory;
    /// the next checkpoint records it): the backlog drops their entries.
    fn advance(&self, read_ms: i64);

    /// Makes every put durable, then records `progress` (see the module's
    /// contract).
    fn checkpoint(&self, progress: Progress) -> Result<(), TimerError>;

    /// Entries waiting in slots not yet passed by [`TimerStore::advance`]
    /// (delete markers count -1, as RocketMQ's slot count does).
    fn backlog(&self) -> i64;

    /// Net entries (delete markers -1) of the slots in `[from_ms, to_ms)`:
    /// how many timers fall due in that window (RocketMQ's
    /// `rocketmq_timer_message_snapshot` sums wheel slots the same way).
    fn pending_in(&self, from_ms: i64, to_ms: i64) -> Result<i64, TimerError>;

    /// How far ahead of the read time a slot can be filed, ms; `None`
    /// when the engine has no horizon. Entries beyond it must be rolled.
    fn horizon_ms(&self) -> Option<i64>;

    /// Frees space no pending entry needs any more: parts whose entries
    /// all point below `commit_log_min` (their messages are gone) or lie
    /// in slots already passed. Returns the files or ranges freed.
    fn release(&self, commit_log_min: i64) -> Result<usize, TimerError>;

    /// Bytes the store holds on disk.
    fn disk_bytes(&self) -> u64;
}
