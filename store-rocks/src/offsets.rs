//! The in-memory min/max cache and how it is loaded from the `offset` column
//! family at open.
//!
//! Readers take min and max from here, never from the database, and the
//! writer updates it only after its batch was written: a unit is visible
//! exactly when its write succeeded.

use std::collections::HashMap;

use rustc_hash::FxHashMap;

use rmq_common::constants::CHECKPOINT_TOPIC;
use rmq_common::cq::{CqError, QueueKey};
use rmq_common::names::is_lmq;
use rocksdb::IteratorMode;

use crate::db::Db;
use crate::error::{engine, engine_ctx};
use crate::key::{self, EntryValue, OffsetKind, OffsetValue};
use crate::lmq_filter::{queue_hash, LmqFilter};

/// The last unit written to a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LastUnit {
    /// Its queue offset (the max key's queue offset; max offset = this + 1).
    pub offset: i64,
    /// Its CommitLog offset.
    pub phy: i64,
    /// Its CommitLog end (phy + size): the idempotency bound of the queue.
    pub phy_end: i64,
}

/// What is known about one queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QueueState {
    /// Lowest readable queue offset.
    pub min: i64,
    /// CommitLog offset stored with the min key.
    pub min_phy: i64,
    /// The last unit, or `None` when the queue holds no unit (then max = min).
    pub last: Option<LastUnit>,
    /// The CommitLog min the min offset was last corrected against; a larger
    /// `commit_log_min` means the min may be stale (corrected lazily).
    pub min_checked: i64,
}

impl QueueState {
    /// A queue without units whose min is already correct for `commit_log_min`.
    pub fn empty(min: i64, commit_log_min: i64) -> Self {
        Self {
            min,
            min_phy: 0,
            last: None,
            min_checked: commit_log_min,
        }
    }

    /// Next queue offset to be written.
    pub fn max_offset(&self) -> i64 {
        self.last.map_or(self.min, |l| l.offset + 1)
    }

    /// Highest record end in the queue; -1 when it holds no unit, as the model.
    pub fn max_phy_end(&self) -> i64 {
        self.last.map_or(-1, |l| l.phy_end)
    }
}

/// Every known queue and the dispatched offset.
///
/// Light message queues (`%LMQ%` topics) are the exception: they are not
/// loaded at open, and only the writer keeps them here, for those it wrote
/// lately (at most [`LMQ_CACHED`], beyond which clean ones are dropped). An
/// LMQ missing here is read from the `offset` and `default` column families
/// ([`load_queue`]), so a million idle LMQs cost no memory and no start-up
/// time.
#[derive(Debug, Default)]
pub(crate) struct OffsetCache {
    pub queues: FxHashMap<QueueKey, QueueState>,
    /// CommitLog offset dispatched up to, as written with the last batch.
    pub dispatched: i64,
    /// LMQ entries in `queues`.
    pub lmq_cached: usize,
    /// LMQ queues in the database (each has a min or a max key).
    pub lmq_total: u64,
}

/// LMQ states the cache keeps before the writer drops clean ones.
pub(crate) const LMQ_CACHED: usize = 100_000;

impl OffsetCache {
    /// Inserts or replaces a queue's state.
    pub fn insert(&mut self, k: QueueKey, q: QueueState) {
        let lmq = is_lmq(&k.topic);
        if self.queues.insert(k, q).is_none() && lmq {
            self.lmq_cached += 1;
        }
    }

    /// Forgets every queue of `topic`.
    pub fn remove_topic(&mut self, topic: &str) {
        let before = self.queues.len();
        self.queues.retain(|k, _| k.topic != topic);
        if is_lmq(topic) {
            self.lmq_cached -= before - self.queues.len();
        }
    }

    /// Drops LMQ states beyond [`LMQ_CACHED`] (down to three quarters of
    /// it). Their keys are written with each group, so nothing is lost.
    pub fn drop_lmqs(&mut self) {
        if self.lmq_cached <= LMQ_CACHED {
            return;
        }
        let mut excess = self.lmq_cached - LMQ_CACHED * 3 / 4;
        let mut dropped = 0;
        self.queues.retain(|k, _| {
            if excess == 0 || !is_lmq(&k.topic) {
                return true;
            }
            excess -= 1;
            dropped += 1;
            false
        });
        self.lmq_cached -= dropped;
    }
}

/// What the `offset` column family held at open.
pub(crate) struct Loaded {
    pub cache: OffsetCache,
    /// Every LMQ with a min or max key.
    pub lmqs: LmqFilter,
    /// The persisted CommitLog min (0 if `correct_min_offset` never ran).
    pub commit_log_min: i64,
}

#[derive(Default)]
struct RawQueue {
    min: Option<OffsetValue>,
    max: Option<OffsetValue>,
}

/// Reads every min/max key and the checkpoints, and the last entry of each
/// queue. The last entry, not the max key, says where a queue ends: the
/// writer persists max keys lazily (see `writer.rs`), so after a crash they
/// may lag behind the entries the same consistent prefix holds.
pub(crate) fn load(db: &Db) -> Result<Loaded, CqError> {
    let cf = db.offsets()?;
    let mut raw: HashMap<QueueKey, RawQueue> = HashMap::new();
    let mut dispatched = 0;
    let mut commit_log_min = 0;
    // Each LMQ's hash (an LMQ's max key, then its min key, are adjacent):
    // the names are not kept.
    let mut lmqs: Vec<u64> = Vec::new();
    let mut last_lmq: Option<(String, i32)> = None;
    for item in db.db.iterator_cf(cf, IteratorMode::Start) {
        let (k, v) = item.map_err(engine_ctx("iterate the offset column family"))?;
        let (topic, kind, queue_id) = key::decode_offset_key(&k)?;
        if topic == CHECKPOINT_TOPIC {
            // Queue 0's max key is the dispatch checkpoint, its min key the
            // CommitLog min; nothing else is ever written under this topic.
            if queue_id == 0 {
                let value = key::decode_checkpoint(&v)?;
                match kind {
                    OffsetKind::Max => dispatched = value,
                    OffsetKind::Min => commit_log_min = value,
                }
            }
            continue;
        }
        if is_lmq(&topic) {
            // Read when first used (see `OffsetCache`); only counted and
            // put in the filter here.
            if last_lmq
                .as_ref()
                .is_none_or(|(t, q)| *t != topic || *q != queue_id)
            {
                lmqs.push(queue_hash(&topic, queue_id));
                last_lmq = Some((topic, queue_id));
            }
            continue;
        }
        let value = OffsetValue::decode(&v)?;
        let q = raw.entry(QueueKey::new(topic, queue_id)).or_default();
        match kind {
            OffsetKind::Min => q.min = Some(value),
            OffsetKind::Max => q.max = Some(value),
        }
    }

    let lasts = last_entries(db, raw.keys())?;
    let mut queues = FxHashMap::with_capacity_and_hasher(raw.len(), Default::default());
    for (k, q) in raw {
        let from_entries = lasts.get(&k).copied();
        if let Some(state) = derive(db, &k, q, from_entries)? {
            queues.insert(k, state);
        }
    }
    let lmq_total = lmqs.len() as u64;
    Ok(Loaded {
        lmqs: LmqFilter::build(&lmqs),
        cache: OffsetCache {
            queues,
            dispatched,
            lmq_cached: 0,
            lmq_total,
        },
        commit_log_min,
    })
}

/// A queue's state from its min and max keys and its last entry; `None`
/// when it has neither.
fn derive(
    db: &Db,
    k: &QueueKey,
    q: RawQueue,
    from_entries: Option<LastUnit>,
) -> Result<Option<QueueState>, CqError> {
    // A max key without its entry: the compaction filter dropped units
    // below the CommitLog min (the lazy min correction empties such a
    // queue), and the record start is a safe lower bound of its end.
    let from_key = q.max.map(|m| LastUnit {
        offset: m.queue_offset,
        phy: m.phy_offset,
        phy_end: m.phy_offset,
    });
    let mut last = match (from_entries, from_key) {
        (Some(e), Some(m)) if m.offset > e.offset => {
            // Only truncation (which rewrites the max key in the same
            // batch) and the compaction filter remove entries.
            tracing::warn!(topic = %k.topic, queue_id = k.queue_id, max_key = m.offset, last_entry = e.offset, "max key beyond the last entry; the queue resumes after the max key");
            Some(m)
        }
        (Some(e), _) => Some(e),
        (None, m) => m,
    };
    if let (Some(min), Some(l)) = (q.min, last) {
        // An emptied queue (every unit below the CommitLog min) has its
        // min key one past its old units, which stay until compaction
        // drops them, and its max key deleted, perhaps not yet on disk.
        if l.offset < min.queue_offset {
            last = None;
        }
    }
    let (min, min_phy) = match (q.min, last) {
        (Some(m), _) => (m.queue_offset, m.phy_offset),
        // The writer leaves out the min key of an LMQ whose first unit is
        // at 0 (the min's CommitLog offset is then unknown; only the lazy
        // correction reads the min, by queue offset).
        (None, Some(_)) if is_lmq(&k.topic) => (0, 0),
        (None, Some(l)) => first_entry(db, k)?.unwrap_or((l.offset, l.phy)),
        (None, None) => return Ok(None),
    };
    Ok(Some(QueueState {
        min,
        min_phy,
        last,
        // Not yet checked against the persisted CommitLog min: the first
        // access corrects it.
        min_checked: 0,
    }))
}

/// One queue's state read from the database (an LMQ not in the cache);
/// `None` when the queue has no keys.
pub(crate) fn load_queue(db: &Db, k: &QueueKey) -> Result<Option<QueueState>, CqError> {
    let cf = db.offsets()?;
    let read = |kind: OffsetKind| -> Result<Option<OffsetValue>, CqError> {
        let v = db
            .db
            .get_cf(cf, key::offset_key(&k.topic, kind, k.queue_id))
            .map_err(engine_ctx("read a queue's min or max key"))?;
        v.map(|v| OffsetValue::decode(&v))
            .transpose()
            .map_err(Into::into)
    };
    let raw = RawQueue {
        min: read(OffsetKind::Min)?,
        max: read(OffsetKind::Max)?,
    };
    if raw.min.is_none() && raw.max.is_none() {
        return Ok(None);
    }
    let last = last_entries(db, std::iter::once(k))?.remove(k);
    derive(db, k, raw, last)
}

/// [`load_queue`] for an LMQ, without a read when `lmqs` says it has no
/// keys.
pub(crate) fn load_lmq(
    lmqs: &LmqFilter,
    db: &Db,
    k: &QueueKey,
) -> Result<Option<QueueState>, CqError> {
    if !lmqs.may_hold(&k.topic, k.queue_id) {
        return Ok(None);
    }
    load_queue(db, k)
}

/// Every LMQ queue in the database (those with a min or max key), by a
/// walk of the `offset` column family.
pub(crate) fn lmq_keys(db: &Db) -> Result<Vec<QueueKey>, CqError> {
    let mut out: Vec<QueueKey> = Vec::new();
    for item in db.db.iterator_cf(db.offsets()?, IteratorMode::Start) {
        let (k, _) = item.map_err(engine_ctx("iterate the offset column family"))?;
        let (topic, _, queue_id) = key::decode_offset_key(&k)?;
        // A queue's keys are adjacent: its max key, then its min key.
        let seen = out
            .last()
            .is_some_and(|l| l.topic == topic && l.queue_id == queue_id);
        if is_lmq(&topic) && !seen {
            out.push(QueueKey::new(topic, queue_id));
        }
    }
    Ok(out)
}

/// The last entry of every queue in `queues`, by one seek each on one
/// iterator, in key order so the seeks move forward through the files.
fn last_entries<'a>(
    db: &Db,
    queues: impl Iterator<Item = &'a QueueKey>,
) -> Result<HashMap<QueueKey, LastUnit>, CqError> {
    let mut order: Vec<(Vec<u8>, &QueueKey)> = queues
        .map(|k| (key::queue_entries_end(&k.topic, k.queue_id), k))
        .collect();
    order.sort_unstable();
    let mut lasts = HashMap::with_capacity(order.len());
    let mut it = db.db.raw_iterator_cf(db.entries()?);
    for (end, k) in order {
        // The greatest key below the queue's end; it belongs to the queue
        // when it has an entry key's length and the queue's prefix (the end
        // key with its last byte, the separator, put back).
        it.seek_for_prev(&end);
        let prefix = &end[..end.len() - 1];
        if let (Some(found), Some(value)) = (it.key(), it.value()) {
            let in_queue = found.len() == end.len() + 8
                && found.starts_with(prefix)
                && found[prefix.len()] == key::SEP;
            if in_queue {
                let offset = key::entry_key_offset(found).unwrap_or(0);
                let v = EntryValue::decode(value)?;
                lasts.insert(
                    k.clone(),
                    LastUnit {
                        offset,
                        phy: v.phy_offset,
                        phy_end: v.phy_end(),
                    },
                );
            }
        }
    }
    it.status()
        .map_err(engine_ctx("read the last entries at open"))?;
    Ok(lasts)
}

/// The first entry of a queue (queue offset, CommitLog offset). Only used for
/// a max key without its min key, which the write path never leaves behind
/// outside LMQs.
fn first_entry(db: &Db, k: &QueueKey) -> Result<Option<(i64, i64)>, CqError> {
    tracing::warn!(topic = %k.topic, queue_id = k.queue_id, "max key without min key; scanning for the first entry");
    let mut it = db.db.raw_iterator_cf(db.entries()?);
    it.seek(key::entry_key(&k.topic, k.queue_id, 0));
    let end = key::queue_entries_end(&k.topic, k.queue_id);
    let found = match (it.key(), it.value()) {
        (Some(key), Some(value)) if key < end.as_slice() => {
            let offset = key::entry_key_offset(key).unwrap_or(0);
            Some((offset, EntryValue::decode(value)?.phy_offset))
        }
        _ => None,
    };
    it.status().map_err(|e| {
        engine(
            format!("find the first entry of {}/{}", k.topic, k.queue_id),
            e,
        )
    })?;
    Ok(found)
}
