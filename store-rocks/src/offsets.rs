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
use rocksdb::IteratorMode;

use crate::db::Db;
use crate::error::{engine, engine_ctx};
use crate::key::{self, EntryValue, OffsetKind, OffsetValue};

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
#[derive(Debug, Default)]
pub(crate) struct OffsetCache {
    pub queues: FxHashMap<QueueKey, QueueState>,
    /// CommitLog offset dispatched up to, as written with the last batch.
    pub dispatched: i64,
}

/// What the `offset` column family held at open.
pub(crate) struct Loaded {
    pub cache: OffsetCache,
    /// The persisted CommitLog min (0 if `correct_min_offset` never ran).
    pub commit_log_min: i64,
}

#[derive(Default)]
struct RawQueue {
    min: Option<OffsetValue>,
    max: Option<OffsetValue>,
}

/// Reads every min/max key and the checkpoints, and the last entry of each
/// queue (for its record end, which the max key does not hold).
pub(crate) fn load(db: &Db) -> Result<Loaded, CqError> {
    let cf = db.offsets()?;
    let mut raw: HashMap<QueueKey, RawQueue> = HashMap::new();
    let mut dispatched = 0;
    let mut commit_log_min = 0;
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
        let value = OffsetValue::decode(&v)?;
        let q = raw.entry(QueueKey::new(topic, queue_id)).or_default();
        match kind {
            OffsetKind::Min => q.min = Some(value),
            OffsetKind::Max => q.max = Some(value),
        }
    }

    // One multi-get for the record sizes of every queue's last entry.
    let with_max: Vec<(&QueueKey, OffsetValue)> = raw
        .iter()
        .filter_map(|(k, q)| q.max.map(|m| (k, m)))
        .collect();
    let keys: Vec<Vec<u8>> = with_max
        .iter()
        .map(|(k, m)| key::entry_key(&k.topic, k.queue_id, m.queue_offset))
        .collect();
    let entries = db.entries()?;
    let mut ends = HashMap::with_capacity(keys.len());
    for ((k, max), got) in with_max
        .iter()
        .zip(db.db.batched_multi_get_cf(entries, &keys, false))
    {
        let got = got.map_err(engine_ctx("read the last entries at open"))?;
        let end = match got {
            Some(v) => EntryValue::decode(&v)?.phy_end(),
            // Only the compaction filter removes entries below a max key, and
            // only below the CommitLog min; the lazy min correction empties
            // such a queue. Until then, the record start is a safe lower bound.
            None => max.phy_offset,
        };
        ends.insert((*k).clone(), end);
    }

    let mut queues = FxHashMap::with_capacity_and_hasher(raw.len(), Default::default());
    for (k, q) in raw {
        let last = q.max.map(|m| LastUnit {
            offset: m.queue_offset,
            phy: m.phy_offset,
            phy_end: ends.get(&k).copied().unwrap_or(m.phy_offset),
        });
        let (min, min_phy) = match (q.min, last) {
            (Some(m), _) => (m.queue_offset, m.phy_offset),
            (None, Some(l)) => first_entry(db, &k)?.unwrap_or((l.offset, l.phy)),
            (None, None) => continue,
        };
        queues.insert(
            k,
            QueueState {
                min,
                min_phy,
                last,
                // Not yet checked against the persisted CommitLog min: the
                // first access corrects it.
                min_checked: 0,
            },
        );
    }
    Ok(Loaded {
        cache: OffsetCache { queues, dispatched },
        commit_log_min,
    })
}

/// The first entry of a queue (queue offset, CommitLog offset). Only used for
/// a max key without its min key, which the write path never leaves behind.
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
