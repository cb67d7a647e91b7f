//! Binary searches over the entries of one queue, by queue offset, reading
//! values. Each probe is one iterator seek, so entries missing from the range
//! (holes, or entries the compaction filter already dropped) are skipped
//! rather than misread: a probe at `mid` sees the nearest existing entry.

use rmq_common::cq::{CqError, QueueKey};
use rocksdb::{DBRawIterator, ReadOptions};

use crate::db::Db;
use crate::error::engine;
use crate::key::{self, EntryValue};

/// An existing entry: its queue offset and value.
pub(crate) type Found = (i64, EntryValue);

/// Iterator over the entries of `q` with queue offsets in `[lo, hi)`.
struct Probe<'a> {
    it: DBRawIterator<'a>,
    q: &'a QueueKey,
}

impl<'a> Probe<'a> {
    fn new(db: &'a Db, q: &'a QueueKey, lo: i64, hi: i64) -> Result<Self, CqError> {
        let mut ro = ReadOptions::default();
        ro.set_iterate_lower_bound(key::entry_key(&q.topic, q.queue_id, lo));
        ro.set_iterate_upper_bound(key::entry_key(&q.topic, q.queue_id, hi));
        // Searches touch few blocks once; do not evict what pulls need.
        ro.fill_cache(false);
        Ok(Self {
            it: db.db.raw_iterator_cf_opt(db.entries()?, ro),
            q,
        })
    }

    /// The first existing entry at or after `offset`.
    fn at_or_after(&mut self, offset: i64) -> Result<Option<Found>, CqError> {
        self.it
            .seek(key::entry_key(&self.q.topic, self.q.queue_id, offset));
        self.current()
    }

    /// The last existing entry at or before `offset`.
    fn at_or_before(&mut self, offset: i64) -> Result<Option<Found>, CqError> {
        self.it
            .seek_for_prev(key::entry_key(&self.q.topic, self.q.queue_id, offset));
        self.current()
    }

    fn current(&self) -> Result<Option<Found>, CqError> {
        if !self.it.valid() {
            self.it
                .status()
                .map_err(|e| engine(format!("search {}/{}", self.q.topic, self.q.queue_id), e))?;
            return Ok(None);
        }
        let (Some(k), Some(v)) = (self.it.key(), self.it.value()) else {
            return Ok(None);
        };
        let offset = key::entry_key_offset(k).ok_or_else(|| CqError::Corrupt {
            detail: format!("short entry key {k:02x?}"),
        })?;
        Ok(Some((offset, EntryValue::decode(v)?)))
    }
}

/// The existing entry with the smallest queue offset in `[lo, hi)` for which
/// `pred` holds, assuming `pred` is false then true along the queue.
pub(crate) fn first_where(
    db: &Db,
    q: &QueueKey,
    mut lo: i64,
    mut hi: i64,
    pred: impl Fn(&EntryValue) -> bool,
) -> Result<Option<Found>, CqError> {
    let mut probe = Probe::new(db, q, lo, hi)?;
    let mut best = None;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match probe.at_or_after(mid)? {
            // Nothing exists in [mid, hi).
            Some((off, _)) if off >= hi => hi = mid,
            None => hi = mid,
            // The answer is this entry or lies before mid (no entry exists
            // between mid and it).
            Some((off, v)) if pred(&v) => {
                best = Some((off, v));
                hi = mid;
            }
            // Every entry up to this one fails.
            Some((off, _)) => lo = off + 1,
        }
    }
    Ok(best)
}

/// The existing entry with the largest queue offset in `[lo, hi)` for which
/// `pred` holds, assuming `pred` is true then false along the queue.
pub(crate) fn last_where(
    db: &Db,
    q: &QueueKey,
    mut lo: i64,
    mut hi: i64,
    pred: impl Fn(&EntryValue) -> bool,
) -> Result<Option<Found>, CqError> {
    let mut probe = Probe::new(db, q, lo, hi)?;
    let mut best = None;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match probe.at_or_before(mid)? {
            // Nothing exists in [lo, mid].
            Some((off, _)) if off < lo => lo = mid + 1,
            None => lo = mid + 1,
            // The answer is this entry or lies after mid.
            Some((off, v)) if pred(&v) => {
                best = Some((off, v));
                lo = mid + 1;
            }
            // Every entry from this one on fails.
            Some((off, _)) => hi = off,
        }
    }
    Ok(best)
}
