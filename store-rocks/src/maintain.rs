//! Maintenance of the index: the lazy min-offset correction, truncation
//! beyond the valid CommitLog tail, topic deletion, and the min/max and
//! checkpoint keys every write path shares.

use std::sync::atomic::Ordering;

use rmq_common::constants::{CHECKPOINT_TOPIC, LMQ_QUEUE_ID};
use rmq_common::cq::{AsQueueKey, CqError, QueueKey};
use rmq_common::names::is_lmq;
use rocksdb::{ColumnFamily, WriteBatch};

use crate::db::Db;
use crate::key::{self, OffsetKind, OffsetValue};
use crate::offsets::{self, LastUnit, QueueState};
use crate::search;
use crate::shared::Shared;

/// What a min correction did to a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Correction {
    /// Nothing to change.
    Unchanged,
    /// The min offset moved up to the first unit at or above the CommitLog min.
    MinRaised,
    /// Every unit lies below the CommitLog min: the queue holds no unit and
    /// its min (= max) is one past its old last unit.
    Emptied,
}

/// Corrects `q`'s min offset against `commit_log_min` if it was not yet:
/// the new min is the first unit whose record starts at or above it (binary
/// search by queue offset), or the max offset if none does. Only the state
/// changes; callers write the keys (see [`put_min_key`]).
pub(crate) fn correct_min(
    db: &Db,
    k: &QueueKey,
    q: &mut QueueState,
    commit_log_min: i64,
) -> Result<Correction, CqError> {
    if q.min_checked >= commit_log_min {
        return Ok(Correction::Unchanged);
    }
    let Some(last) = q.last else {
        q.min_checked = commit_log_min;
        return Ok(Correction::Unchanged);
    };
    let first = search::first_where(db, k, q.min, last.offset + 1, |v| {
        v.phy_offset >= commit_log_min
    })?;
    q.min_checked = commit_log_min;
    Ok(match first {
        Some((offset, v)) if offset > q.min => {
            q.min = offset;
            q.min_phy = v.phy_offset;
            Correction::MinRaised
        }
        Some(_) => Correction::Unchanged,
        None => {
            q.min = last.offset + 1;
            // Where the next record of the queue can start at the earliest.
            q.min_phy = last.phy_end;
            q.last = None;
            Correction::Emptied
        }
    })
}

/// Adds the keys a correction changed to `batch`.
fn stage_correction(
    batch: &mut WriteBatch,
    cf: &ColumnFamily,
    k: &QueueKey,
    q: &QueueState,
    c: Correction,
) {
    if c != Correction::Unchanged {
        put_min_key(batch, cf, k, q);
    }
    if c == Correction::Emptied {
        put_or_delete_max_key(batch, cf, k, q);
    }
}

/// Writes the min key of `q`.
pub(crate) fn put_min_key(batch: &mut WriteBatch, cf: &ColumnFamily, k: &QueueKey, q: &QueueState) {
    let v = OffsetValue {
        phy_offset: q.min_phy,
        queue_offset: q.min,
    };
    batch.put_cf(
        cf,
        key::offset_key(&k.topic, OffsetKind::Min, k.queue_id),
        v.encode(),
    );
}

/// Writes the max key of `q` (its last unit), or deletes it when `q` holds
/// no unit; the min key then keeps the min offset, which is also the max.
pub(crate) fn put_or_delete_max_key(
    batch: &mut WriteBatch,
    cf: &ColumnFamily,
    k: &QueueKey,
    q: &QueueState,
) {
    let key = key::offset_key(&k.topic, OffsetKind::Max, k.queue_id);
    match q.last {
        Some(l) => {
            let v = OffsetValue {
                phy_offset: l.phy,
                queue_offset: l.offset,
            };
            batch.put_cf(cf, key, v.encode());
        }
        None => batch.delete_cf(cf, key),
    }
}

/// Writes the dispatch checkpoint: the max key of the checkpoint topic.
pub(crate) fn put_checkpoint(batch: &mut WriteBatch, cf: &ColumnFamily, dispatched: i64) {
    batch.put_cf(
        cf,
        key::offset_key(CHECKPOINT_TOPIC, OffsetKind::Max, 0),
        key::encode_checkpoint(dispatched),
    );
}

/// Persists the CommitLog min as the checkpoint topic's min key, so the
/// compaction filter and the lazy correction resume after a restart.
pub(crate) fn put_commit_log_min(batch: &mut WriteBatch, cf: &ColumnFamily, commit_log_min: i64) {
    batch.put_cf(
        cf,
        key::offset_key(CHECKPOINT_TOPIC, OffsetKind::Min, 0),
        key::encode_checkpoint(commit_log_min),
    );
}

/// The state of a queue for a reader, after any pending min correction
/// (which is persisted here, lazily, on first use). `None`: unknown queue.
pub(crate) fn queue_for_read(
    shared: &Shared,
    db: &Db,
    k: &QueueKey,
) -> Result<Option<QueueState>, CqError> {
    let commit_log_min = shared.commit_log_min.load(Ordering::Acquire);
    let cached = shared.offsets.read().queues.get(k).copied();
    match cached {
        None if !is_lmq(&k.topic) => return Ok(None),
        None => match offsets::load_lmq(&shared.lmqs, db, k)? {
            None => return Ok(None),
            Some(q) if q.min_checked >= commit_log_min => return Ok(Some(q)),
            Some(_) => {}
        },
        Some(q) if q.min_checked >= commit_log_min => return Ok(Some(q)),
        Some(_) => {}
    }
    let _w = shared.write_lock.lock();
    // Again under the lock, which every write holds: an LMQ read from the
    // database now is what the writer left.
    let cached = shared.offsets.read().queues.get(k).copied();
    let in_cache = cached.is_some();
    let Some(mut q) = (match cached {
        Some(q) => Some(q),
        None if is_lmq(&k.topic) => offsets::load_lmq(&shared.lmqs, db, k)?,
        None => None,
    }) else {
        return Ok(None);
    };
    let c = correct_min(db, k, &mut q, commit_log_min)?;
    // A poisoned store still answers reads; the corrected min then lives in
    // memory only and is found again after a restart.
    if c != Correction::Unchanged && shared.check_writable().is_ok() {
        let mut batch = WriteBatch::default();
        stage_correction(&mut batch, db.offsets()?, k, &q, c);
        if let Err(e) = db.write(batch, "persist a corrected min offset") {
            shared.poison(&e);
            return Err(e);
        }
    }
    // An LMQ the writer does not hold stays out of the cache.
    if in_cache {
        shared.offsets.write().insert(k.clone(), q);
    }
    Ok(Some(q))
}

/// Records a higher CommitLog min for the compaction filter and the lazy
/// correction. Returns whether it rose.
pub(crate) fn raise_commit_log_min(
    shared: &Shared,
    db: &Db,
    commit_log_min: i64,
) -> Result<bool, CqError> {
    let _w = shared.write_lock.lock();
    if shared
        .commit_log_min
        .fetch_max(commit_log_min, Ordering::AcqRel)
        >= commit_log_min
    {
        return Ok(false);
    }
    if shared.check_writable().is_ok() {
        let mut batch = WriteBatch::default();
        put_commit_log_min(&mut batch, db.offsets()?, commit_log_min);
        if let Err(e) = db.write(batch, "persist the CommitLog min offset") {
            shared.poison(&e);
            return Err(e);
        }
    }
    Ok(true)
}

/// Removes every unit whose record starts at or beyond `phy`, and lowers the
/// checkpoint to at most `phy`, in one batch. The caller drained the writer.
pub(crate) fn truncate_from_phy(shared: &Shared, db: &Db, phy: i64) -> Result<(), CqError> {
    let _w = shared.write_lock.lock();
    shared.check_writable()?;
    let commit_log_min = shared.commit_log_min.load(Ordering::Acquire);
    let (entries, offsets) = (db.entries()?, db.offsets()?);
    let (mut candidates, old_dispatched): (Vec<(QueueKey, QueueState)>, i64) = {
        let cache = shared.offsets.read();
        let c = cache
            .queues
            .iter()
            .filter(|(_, q)| q.last.is_some_and(|l| l.phy >= phy))
            .map(|(k, q)| (k.clone(), *q))
            .collect();
        (c, cache.dispatched)
    };
    if old_dispatched > phy {
        // Units at or past `phy` may sit in LMQs the cache does not hold:
        // read every LMQ from the database (only after a crash that left the
        // consume queue ahead of the CommitLog).
        let cached: Vec<QueueKey> = {
            let cache = shared.offsets.read();
            offsets::lmq_keys(db)?
                .into_iter()
                .filter(|k| !cache.queues.contains_key(k))
                .collect()
        };
        for k in cached {
            if let Some(q) = offsets::load_queue(db, &k)? {
                if q.last.is_some_and(|l| l.phy >= phy) {
                    candidates.push((k, q));
                }
            }
        }
    }
    let mut batch = WriteBatch::default();
    let mut changed = Vec::with_capacity(candidates.len());
    for (k, mut q) in candidates {
        // The model drops units below a corrected min eagerly; they must not
        // count as survivors here.
        let c = correct_min(db, &k, &mut q, commit_log_min)?;
        stage_correction(&mut batch, offsets, &k, &q, c);
        if let Some(last) = q.last.filter(|l| l.phy >= phy) {
            let keep = search::last_where(db, &k, q.min, last.offset + 1, |v| v.phy_offset < phy)?;
            let end = key::queue_entries_end(&k.topic, k.queue_id);
            let from = keep.map_or(0, |(offset, _)| offset + 1);
            batch.delete_range_cf(entries, key::entry_key(&k.topic, k.queue_id, from), end);
            q.last = keep.map(|(offset, v)| LastUnit {
                offset,
                phy: v.phy_offset,
                phy_end: v.phy_end(),
            });
            put_or_delete_max_key(&mut batch, offsets, &k, &q);
        }
        changed.push((k, q));
    }
    let dispatched = old_dispatched.min(phy);
    if dispatched != old_dispatched {
        put_checkpoint(&mut batch, offsets, dispatched);
    }
    if !batch.is_empty() {
        if let Err(e) = db.write(batch, "truncate the rocksdb consume queue") {
            shared.poison(&e);
            return Err(e);
        }
    }
    let mut cache = shared.offsets.write();
    for (k, q) in changed {
        cache.insert(k, q);
    }
    cache.dispatched = dispatched;
    Ok(())
}

/// Removes every key of `topic` from both column families (two range
/// deletes) and forgets its queues. The caller drained the writer.
pub(crate) fn delete_topic(shared: &Shared, db: &Db, topic: &str) -> Result<(), CqError> {
    if topic == CHECKPOINT_TOPIC {
        // Not a queue topic: it has no queue to delete, and its keys are the
        // checkpoints.
        return Ok(());
    }
    let _w = shared.write_lock.lock();
    shared.check_writable()?;
    // An LMQ has one queue; it counts if it has keys (in the cache or not).
    let lmq_existed = is_lmq(topic)
        && (shared
            .offsets
            .read()
            .queues
            .contains_key(&(topic, LMQ_QUEUE_ID) as &dyn AsQueueKey)
            || offsets::load_lmq(&shared.lmqs, db, &QueueKey::new(topic, LMQ_QUEUE_ID))?.is_some());
    let (start, end) = (key::topic_start(topic), key::topic_end(topic));
    let mut batch = WriteBatch::default();
    batch.delete_range_cf(db.entries()?, &start, &end);
    batch.delete_range_cf(db.offsets()?, &start, &end);
    if let Err(e) = db.write(batch, "delete a topic from the rocksdb consume queue") {
        shared.poison(&e);
        return Err(e);
    }
    let mut cache = shared.offsets.write();
    cache.remove_topic(topic);
    if lmq_existed {
        cache.lmq_total = cache.lmq_total.saturating_sub(1);
    }
    Ok(())
}
