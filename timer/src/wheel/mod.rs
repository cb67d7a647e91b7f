//! [`WheelTimerStore`]: RocketMQ 5.x's timer wheel and timer log.
//!
//! Files under the store root: `timerwheel` ([`slots`]), `timerlog/`
//! ([`log`]) and `config/timercheck` ([`checkpoint`]). A put appends one
//! 52-byte unit per entry to the timer log, chained to the previous unit of
//! its slot, and points the slot (in memory) at it. A checkpoint syncs the
//! log, then writes the changed wheel pages and syncs them, then writes
//! the checkpoint: the wheel file never points past what the log has on
//! disk, and the checkpoint's log position is at or before what the wheel
//! covers. Recovery ([`recover`]) replays the units after that position
//! into the wheel, as RocketMQ's `TimerMessageStore.recover` does.

pub mod checkpoint;
pub mod log;
mod recover;
pub mod slots;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};

use parking_lot::Mutex;
use rmq_common::TimerStoreType;

use self::checkpoint::TimerCheckpoint;
use self::log::TimerLog;
use self::slots::{Slot, Wheel, BLANK_SLOTS, FILE_SLOTS, SLOTS_TOTAL};
use crate::entry::{decode_unit, encode_unit, TimerEntry, UNIT_SIZE};
use crate::error::TimerError;
use crate::store::{Progress, TimerStore};

/// The wheel file under the root.
pub const WHEEL_FILE: &str = "timerwheel";
/// The timer-log folder under the root.
pub const LOG_DIR: &str = "timerlog";
/// The checkpoint under the root.
pub const CHECKPOINT_FILE: &str = "config/timercheck";

/// Marks "no read time yet" in [`WheelTimerStore::advanced_to`].
const UNSET: i64 = i64::MIN;

/// The timer wheel store.
#[derive(Debug)]
pub struct WheelTimerStore {
    root: PathBuf,
    precision: i64,
    inner: Mutex<Inner>,
    recovered: Option<Progress>,
    backlog: AtomicI64,
    advanced_to: AtomicI64,
}

#[derive(Debug)]
struct Inner {
    wheel: Wheel,
    log: TimerLog,
    counter: i64,
    /// Set when a write failed half way: the store takes no more writes.
    poisoned: Option<String>,
}

impl WheelTimerStore {
    /// Opens the store under `root` with slots of `precision` ms and timer
    /// log files of `log_file_size` bytes, recovering after a crash.
    pub fn open(root: &Path, precision: i64, log_file_size: i64) -> Result<Self, TimerError> {
        if precision <= 0 || log_file_size < (UNIT_SIZE + log::BLANK_SIZE) as i64 {
            return Err(TimerError::BadEntry(format!(
                "precision {precision} ms and timer log file size {log_file_size} must be positive and hold a unit"
            )));
        }
        rmq_common::meta_file::create_dir_all_durable(root)
            .map_err(TimerError::io("create", root))?;
        let ckpt = TimerCheckpoint::load(&root.join(CHECKPOINT_FILE))?;
        let mut wheel = Wheel::open(&root.join(WHEEL_FILE), precision)?;
        let mut log = TimerLog::open(&root.join(LOG_DIR), log_file_size)?;
        let report = recover::recover(&mut wheel, &mut log, ckpt.as_ref())?;
        let recovered = ckpt.map(|c| Progress {
            read_ms: c.last_read_time_ms,
            enqueue_offset: c.last_timer_queue_offset.min(c.master_timer_queue_offset),
        });
        let read_ms = recovered.map_or(0, |p| p.read_ms);
        let backlog = wheel.count_from(read_ms);
        tracing::info!(
            root = %root.display(),
            replayed_units = report.replayed,
            log_end = report.end,
            dropped_slots = report.dropped_slots,
            backlog,
            ?recovered,
            "timer wheel recovered"
        );
        Ok(Self {
            root: root.to_owned(),
            precision,
            inner: Mutex::new(Inner {
                wheel,
                log,
                counter: ckpt.map_or(0, |c| c.counter),
                poisoned: None,
            }),
            recovered,
            backlog: AtomicI64::new(backlog),
            advanced_to: AtomicI64::new(recovered.map_or(UNSET, |p| p.read_ms)),
        })
    }

    /// The store root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// A crash in the middle of a checkpoint, for tests: the log is
    /// synced and `pages` changed wheel pages are written, then nothing
    /// more (no checkpoint file).
    #[doc(hidden)]
    pub fn crash_during_checkpoint(&self, pages: usize) -> Result<(), TimerError> {
        let mut inner = self.inner.lock();
        inner.log.flush()?;
        inner.wheel.flush_pages(pages)?;
        Ok(())
    }

    fn check(&self, e: &TimerEntry) -> Result<(), TimerError> {
        if e.slot_ms.rem_euclid(self.precision) != 0 || e.slot_ms < 0 {
            return Err(TimerError::BadEntry(format!(
                "slot {} ms is not a non-negative multiple of the precision {} ms",
                e.slot_ms, self.precision
            )));
        }
        if e.commit_log_offset < 0 || e.size <= 0 {
            return Err(TimerError::BadEntry(format!(
                "CommitLog position {}+{} is not a record",
                e.commit_log_offset, e.size
            )));
        }
        Ok(())
    }
}

impl Inner {
    fn writable(&self) -> Result<(), TimerError> {
        match &self.poisoned {
            Some(why) => Err(TimerError::Poisoned(why.clone())),
            None => Ok(()),
        }
    }
}

impl TimerStore for WheelTimerStore {
    fn backend(&self) -> TimerStoreType {
        TimerStoreType::Wheel
    }

    fn recovered(&self) -> Option<Progress> {
        self.recovered
    }

    fn put(&self, entries: &[TimerEntry]) -> Result<(), TimerError> {
        for e in entries {
            self.check(e)?;
        }
        let mut guard = self.inner.lock();
        let inner = &mut *guard;
        inner.writable()?;
        let file_size = inner.log.file_size();
        let mut pos = inner.log.next_unit_pos();
        let mut buf = Vec::with_capacity(entries.len() * UNIT_SIZE);
        let mut updated: HashMap<i64, Slot> = HashMap::new();
        let mut net = 0i64;
        for e in entries {
            // The same placement rule as TimerLog::append.
            let within = pos.rem_euclid(file_size);
            if within + (UNIT_SIZE + log::BLANK_SIZE) as i64 > file_size {
                pos += file_size - within;
            }
            let mut slot = updated
                .get(&(e.slot_ms / self.precision))
                .copied()
                .unwrap_or_else(|| inner.wheel.get(e.slot_ms));
            let unit = encode_unit(e, slot.last_pos).ok_or_else(|| {
                TimerError::BadEntry(format!(
                    "slot {} ms is more than 2^31 ms after its write time {} ms",
                    e.slot_ms, e.write_ms
                ))
            })?;
            buf.extend_from_slice(&unit);
            if slot.first_pos < 0 {
                slot.first_pos = pos;
            }
            slot.last_pos = pos;
            slot.num = slot.num.saturating_add(e.counts() as i32);
            updated.insert(slot.time, slot);
            net += e.counts();
            pos += UNIT_SIZE as i64;
        }
        if let Err(e) = inner.log.append(&buf) {
            inner.poisoned = Some(e.to_string());
            return Err(e);
        }
        for s in updated.values() {
            inner.wheel.set(s);
        }
        self.backlog.fetch_add(net, Ordering::Relaxed);
        Ok(())
    }

    fn read_slot(&self, slot_ms: i64, out: &mut Vec<TimerEntry>) -> Result<(), TimerError> {
        let inner = self.inner.lock();
        let slot = inner.wheel.get(slot_ms);
        if slot.last_pos < 0 {
            return Ok(());
        }
        let start = out.len();
        let mut pos = slot.last_pos;
        loop {
            let Some((e, prev)) = inner.log.read(pos)?.and_then(|u| decode_unit(&u)) else {
                tracing::warn!(slot_ms, pos, "timer slot chain ends at an unreadable unit");
                break;
            };
            if e.slot_ms != slot_ms {
                tracing::warn!(
                    slot_ms,
                    pos,
                    unit_slot_ms = e.slot_ms,
                    "timer slot chain reaches a unit of another slot"
                );
                break;
            }
            out.push(e);
            if pos == slot.first_pos || prev < 0 || prev >= pos {
                break;
            }
            pos = prev;
        }
        out[start..].reverse();
        let mut seen = HashSet::with_capacity(out.len() - start);
        let mut i = start;
        while i < out.len() {
            if seen.insert((out[i].commit_log_offset, out[i].kind)) {
                i += 1;
            } else {
                out.remove(i);
            }
        }
        Ok(())
    }

    fn advance(&self, read_ms: i64) {
        let before = self.advanced_to.swap(read_ms, Ordering::AcqRel);
        let inner = self.inner.lock();
        if before == UNSET || read_ms - before > FILE_SLOTS * self.precision || read_ms < before {
            self.backlog
                .store(inner.wheel.count_from(read_ms), Ordering::Relaxed);
            return;
        }
        let mut gone = 0i64;
        let mut t = before - before.rem_euclid(self.precision);
        while t < read_ms {
            let s = inner.wheel.get(t);
            if s.last_pos >= 0 {
                gone += i64::from(s.num);
            }
            t += self.precision;
        }
        self.backlog.fetch_sub(gone, Ordering::Relaxed);
    }

    fn checkpoint(&self, progress: Progress) -> Result<(), TimerError> {
        let mut inner = self.inner.lock();
        inner.writable()?;
        let flushed = inner.log.flush()?;
        inner.wheel.flush()?;
        inner.counter += 1;
        let c = TimerCheckpoint {
            last_read_time_ms: progress.read_ms,
            last_timer_log_flush_pos: flushed,
            last_timer_queue_offset: progress.enqueue_offset,
            master_timer_queue_offset: progress.enqueue_offset,
            state_version: 0,
            timestamp: rmq_common::time::now_ms(),
            counter: inner.counter,
        };
        c.store(&self.root.join(CHECKPOINT_FILE))
    }

    fn backlog(&self) -> i64 {
        self.backlog.load(Ordering::Relaxed)
    }

    fn pending_in(&self, from_ms: i64, to_ms: i64) -> Result<i64, TimerError> {
        Ok(self.inner.lock().wheel.count_between(from_ms, to_ms))
    }

    fn horizon_ms(&self) -> Option<i64> {
        Some((SLOTS_TOTAL - BLANK_SLOTS) * self.precision)
    }

    fn release(&self, commit_log_min: i64) -> Result<usize, TimerError> {
        let mut inner = self.inner.lock();
        let mut removed = 0;
        for start in inner.log.sealed_files() {
            let last = inner.log.last_unit_pos(start);
            let done = match inner.log.read(last)?.and_then(|u| decode_unit(&u)) {
                Some((e, _)) => e.commit_log_offset < commit_log_min,
                None => true,
            };
            if !done {
                break;
            }
            inner.log.remove(start)?;
            removed += 1;
        }
        Ok(removed)
    }

    fn disk_bytes(&self) -> u64 {
        let inner = self.inner.lock();
        slots::WHEEL_BYTES as u64 + inner.log.disk_bytes()
    }
}
