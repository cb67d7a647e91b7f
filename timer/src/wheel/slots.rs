//! The `timerwheel` file: `2 * SLOTS_TOTAL` slots of 32 bytes (RocketMQ
//! 5.x's `TimerWheel`). The whole file is held in memory; only
//! [`Wheel::flush`] writes it, page by page for the pages that changed, so
//! the file on disk only ever points at timer-log units flushed before it.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::TimerError;

/// Logical slots: 7 days of precision steps (`TIMER_WHEEL_TTL_DAY`).
pub const SLOTS_TOTAL: i64 = 7 * 86_400;
/// Slots in the file (twice the logical count).
pub const FILE_SLOTS: i64 = 2 * SLOTS_TOTAL;
/// Bytes in a slot.
pub const SLOT_SIZE: usize = 32;
/// Bytes in the file: 38,707,200.
pub const WHEEL_BYTES: usize = FILE_SLOTS as usize * SLOT_SIZE;
/// Slots kept free ahead of the read time (`TIMER_BLANK_SLOTS`).
pub const BLANK_SLOTS: i64 = 60;
/// Write granularity of a flush.
const PAGE: usize = 4096;

/// One slot: which time it holds, and its first and last timer-log unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// `slot_ms / precision`.
    pub time: i64,
    /// First unit filed in the slot (-1: none).
    pub first_pos: i64,
    /// Last unit filed in the slot (-1: none); units chain back from it.
    pub last_pos: i64,
    /// Units in the slot; delete markers count -1.
    pub num: i32,
    /// Unused (kept as RocketMQ keeps it).
    pub magic: i32,
}

impl Slot {
    /// A slot holding nothing for `time`.
    pub const fn empty(time: i64) -> Self {
        Self {
            time,
            first_pos: -1,
            last_pos: -1,
            num: 0,
            magic: 0,
        }
    }
}

/// The wheel, in memory, with its file.
#[derive(Debug)]
pub struct Wheel {
    path: PathBuf,
    file: File,
    bytes: Vec<u8>,
    /// One bit per page changed since the last flush.
    dirty: Vec<u64>,
    precision: i64,
}

impl Wheel {
    /// Opens (or creates) `path`. A file of another non-zero length is
    /// refused, as RocketMQ refuses it.
    pub fn open(path: &Path, precision: i64) -> Result<Self, TimerError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(TimerError::io("open", path))?;
        let len = file.metadata().map_err(TimerError::io("stat", path))?.len();
        let mut bytes = vec![0u8; WHEEL_BYTES];
        if len == 0 {
            file.set_len(WHEEL_BYTES as u64)
                .map_err(TimerError::io("size", path))?;
        } else if len != WHEEL_BYTES as u64 {
            return Err(TimerError::Corrupt {
                path: path.to_owned(),
                what: format!("timer wheel length {len} != expected {WHEEL_BYTES}"),
            });
        } else {
            file.read_exact_at(&mut bytes, 0)
                .map_err(TimerError::io("read", path))?;
        }
        let pages = WHEEL_BYTES.div_ceil(PAGE);
        Ok(Self {
            path: path.to_owned(),
            file,
            bytes,
            dirty: vec![0; pages.div_ceil(64)],
            precision,
        })
    }

    /// The slot width, ms.
    pub fn precision(&self) -> i64 {
        self.precision
    }

    fn index(&self, slot_ms: i64) -> usize {
        // rem_euclid keeps it in range for any time; FILE_SLOTS fits usize.
        (slot_ms / self.precision).rem_euclid(FILE_SLOTS) as usize
    }

    /// The slot for `slot_ms`: empty unless the stored slot is for that
    /// very time.
    pub fn get(&self, slot_ms: i64) -> Slot {
        let time = slot_ms / self.precision;
        let s = self.raw(self.index(slot_ms));
        if s.time == time {
            s
        } else {
            Slot::empty(time)
        }
    }

    fn raw(&self, index: usize) -> Slot {
        let at = index * SLOT_SIZE;
        let b = &self.bytes[at..at + SLOT_SIZE];
        let i64_at = |o: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[o..o + 8]);
            i64::from_be_bytes(x)
        };
        let i32_at = |o: usize| i32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        Slot {
            time: i64_at(0),
            first_pos: i64_at(8),
            last_pos: i64_at(16),
            num: i32_at(24),
            magic: i32_at(28),
        }
    }

    /// Stores `slot` at its time's index.
    pub fn set(&mut self, slot: &Slot) {
        let index = (slot.time.rem_euclid(FILE_SLOTS)) as usize;
        let at = index * SLOT_SIZE;
        let b = &mut self.bytes[at..at + SLOT_SIZE];
        b[0..8].copy_from_slice(&slot.time.to_be_bytes());
        b[8..16].copy_from_slice(&slot.first_pos.to_be_bytes());
        b[16..24].copy_from_slice(&slot.last_pos.to_be_bytes());
        b[24..28].copy_from_slice(&slot.num.to_be_bytes());
        b[28..32].copy_from_slice(&slot.magic.to_be_bytes());
        let page = at / PAGE;
        self.dirty[page / 64] |= 1 << (page % 64);
    }

    /// Sum of `num` over every slot holding a time at or after `from_ms`.
    pub fn count_from(&self, from_ms: i64) -> i64 {
        let from = from_ms / self.precision;
        (0..FILE_SLOTS as usize)
            .map(|i| self.raw(i))
            .filter(|s| s.time >= from && s.last_pos >= 0)
            .map(|s| i64::from(s.num))
            .sum()
    }

    /// Sum of `num` over the slots of `[from_ms, to_ms)` (at most one
    /// wheel's worth of slots: the wheel holds no more).
    pub fn count_between(&self, from_ms: i64, to_ms: i64) -> i64 {
        let (from, to) = (from_ms / self.precision, to_ms / self.precision);
        let to = to.min(from.saturating_add(FILE_SLOTS));
        (from..to)
            .map(|t| self.get(t * self.precision))
            .filter(|s| s.last_pos >= 0)
            .map(|s| i64::from(s.num))
            .sum()
    }

    /// Slots holding a time at or after `from_ms` whose last unit lies at
    /// or past `end` (units a crash lost): for recovery's check. A slot
    /// never written reads as zeros (time 0) and holds nothing to lose.
    pub fn beyond(&self, from_ms: i64, end: i64) -> Vec<Slot> {
        let from = from_ms / self.precision;
        (0..FILE_SLOTS as usize)
            .map(|i| self.raw(i))
            .filter(|s| s.time > 0 && s.time >= from && s.last_pos >= end)
            .collect()
    }

    /// Writes the changed pages and syncs the file.
    pub fn flush(&mut self) -> Result<(), TimerError> {
        self.flush_pages(usize::MAX)?;
        self.file
            .sync_data()
            .map_err(TimerError::io("sync", &self.path))
    }

    /// Writes at most `limit` changed pages without syncing (a crash test
    /// stops a flush half way with it). Returns the pages written.
    pub fn flush_pages(&mut self, limit: usize) -> Result<usize, TimerError> {
        let mut written = 0;
        for word in 0..self.dirty.len() {
            while self.dirty[word] != 0 {
                if written == limit {
                    return Ok(written);
                }
                let bit = self.dirty[word].trailing_zeros() as usize;
                let page = word * 64 + bit;
                let at = page * PAGE;
                let end = (at + PAGE).min(WHEEL_BYTES);
                self.file
                    .write_all_at(&self.bytes[at..end], at as u64)
                    .map_err(TimerError::io("write", &self.path))?;
                self.dirty[word] &= !(1 << bit);
                written += 1;
            }
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_only_valid_for_their_time_and_survive_a_flush() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("timerwheel");
        let mut w = Wheel::open(&path, 1_000).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 38_707_200);
        let s = Slot {
            time: 5,
            first_pos: 0,
            last_pos: 52,
            num: 2,
            magic: 0,
        };
        w.set(&s);
        assert_eq!(w.get(5_000), s);
        // Same index, another lap of the wheel: empty.
        let lap = (5 + FILE_SLOTS) * 1_000;
        assert_eq!(w.get(lap), Slot::empty(5 + FILE_SLOTS));
        w.flush().unwrap();
        drop(w);
        let w = Wheel::open(&path, 1_000).unwrap();
        assert_eq!(w.get(5_999), s);
        assert_eq!(w.count_from(0), 2);
        assert_eq!(w.count_from(6_000), 0);
    }

    #[test]
    fn a_new_wheel_has_no_slot_past_an_empty_log() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Wheel::open(&dir.path().join("timerwheel"), 1_000).unwrap();
        assert_eq!(w.beyond(0, 0), Vec::new());
        let s = Slot {
            time: 7,
            first_pos: 0,
            last_pos: 52,
            num: 1,
            magic: 0,
        };
        w.set(&s);
        assert_eq!(w.beyond(0, 52), vec![s]);
        assert_eq!(w.beyond(0, 104), Vec::new());
        assert_eq!(w.beyond(8_000, 0), Vec::new());
    }

    #[test]
    fn a_wheel_of_another_size_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("timerwheel");
        std::fs::write(&path, [0u8; 100]).unwrap();
        let e = Wheel::open(&path, 1_000).unwrap_err();
        assert!(e.to_string().contains("timer wheel length 100"), "{e}");
    }
}
