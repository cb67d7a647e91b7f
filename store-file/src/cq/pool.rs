//! The mapping budget: at most `maxMappedConsumeQueueFiles` segments stay
//! mapped; beyond it the least recently used one is flushed and unmapped.
//!
//! The pool only holds keys and weak references; a mapping itself lives in
//! its segment's slot. Callers reach the pool while holding a queue state and
//! a slot, so eviction, which goes from the pool to another queue, only
//! try-locks: a busy victim is skipped (it is in use, so not a good victim).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use rmq_common::cq::CqError;

use super::io_err;
use super::queue::{QueueHandle, QueueState};
use crate::mapped_file::{FlushMethod, MappedFile};

/// A mapped segment: (queue uid, segment start byte).
pub(crate) type SegKey = (u64, i64);

#[derive(Debug, Default)]
struct Lru {
    tick: u64,
    by_key: HashMap<SegKey, (u64, Weak<QueueHandle>)>,
    by_tick: BTreeMap<u64, SegKey>,
}

impl Lru {
    fn bump(&mut self, key: SegKey) {
        if let Some((t, _)) = self.by_key.get_mut(&key) {
            self.by_tick.remove(t);
            self.tick += 1;
            *t = self.tick;
            self.by_tick.insert(self.tick, key);
        }
    }

    fn remove(&mut self, key: SegKey) {
        if let Some((t, _)) = self.by_key.remove(&key) {
            self.by_tick.remove(&t);
        }
    }
}

/// The LRU of mapped consume-queue segments.
#[derive(Debug)]
pub(crate) struct MappingPool {
    budget: usize,
    file_size: u64,
    lru: Mutex<Lru>,
    /// Files unmapped with bytes not yet synced: unmapping loses nothing
    /// (the page cache keeps them), so the sync waits for the next store
    /// flush instead of costing an fdatasync per eviction.
    unsynced: Mutex<std::collections::BTreeSet<std::path::PathBuf>>,
}

impl MappingPool {
    /// A pool allowing `budget` mappings (at least 1) of `file_size` bytes.
    pub(crate) fn new(budget: usize, file_size: u64) -> Self {
        Self {
            budget: budget.max(1),
            file_size,
            lru: Mutex::new(Lru::default()),
            unsynced: Mutex::new(std::collections::BTreeSet::new()),
        }
    }

    /// Syncs every file unmapped with unsynced bytes. Called by the store
    /// flush before it writes the dispatched checkpoint.
    pub(crate) fn sync_unmapped(&self) -> Result<(), CqError> {
        let paths = std::mem::take(&mut *self.unsynced.lock());
        for (i, path) in paths.iter().enumerate() {
            let synced = std::fs::File::open(path).and_then(|f| f.sync_data());
            match synced {
                Ok(()) => {}
                // Deleted since (truncation, topic deletion): nothing to sync.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    self.unsynced.lock().extend(paths.iter().skip(i).cloned());
                    return Err(io_err("flush", path)(e));
                }
            }
        }
        Ok(())
    }

    /// Marks a mapped segment as just used.
    pub(crate) fn touch(&self, key: SegKey) {
        self.lru.lock().bump(key);
    }

    /// Records a new mapping (after [`MappingPool::make_room`]).
    pub(crate) fn insert(&self, key: SegKey, owner: Weak<QueueHandle>) {
        let mut lru = self.lru.lock();
        lru.remove(key);
        lru.tick += 1;
        let t = lru.tick;
        lru.by_key.insert(key, (t, owner));
        lru.by_tick.insert(t, key);
    }

    /// Forgets a mapping its owner dropped.
    pub(crate) fn remove(&self, key: SegKey) {
        self.lru.lock().remove(key);
    }

    /// Forgets every mapping (close).
    pub(crate) fn clear(&self) {
        let mut lru = self.lru.lock();
        lru.by_key.clear();
        lru.by_tick.clear();
    }

    /// Mappings held.
    pub(crate) fn len(&self) -> usize {
        self.lru.lock().by_key.len()
    }

    /// Bytes mapped.
    pub(crate) fn mapped_bytes(&self) -> u64 {
        self.len() as u64 * self.file_size
    }

    /// Unmaps least-recently-used segments until one more mapping fits in the
    /// budget. `own` is the caller's queue (uid and the state it has locked):
    /// its segments can be evicted without locking it again. A victim is
    /// unmapped while its queue is locked and its slot held, so no write
    /// races it; if it has unsynced bytes, its path is kept for the next
    /// store flush to sync (see [`MappingPool::sync_unmapped`]). If every candidate is busy the budget is exceeded
    /// for a moment rather than blocking.
    pub(crate) fn make_room(&self, own: Option<(u64, &QueueState)>) -> Result<(), CqError> {
        let mut attempts = 0usize;
        loop {
            let mut lru = self.lru.lock();
            if lru.by_key.len() < self.budget || attempts > lru.by_key.len() {
                return Ok(());
            }
            attempts += 1;
            let Some((_, &key)) = lru.by_tick.iter().next() else {
                return Ok(());
            };
            let Some(weak) = lru.by_key.get(&key).map(|(_, w)| w.clone()) else {
                return Ok(());
            };
            let owner: Arc<QueueHandle>;
            let guard;
            let state: &QueueState = match own {
                Some((uid, st)) if uid == key.0 => st,
                _ => {
                    let Some(o) = weak.upgrade() else {
                        lru.remove(key);
                        continue;
                    };
                    owner = o;
                    let Some(g) = owner.state.try_read() else {
                        lru.bump(key);
                        continue;
                    };
                    guard = g;
                    &guard
                }
            };
            let file_size = self.file_size as i64;
            let Some(seg) = state.segment_at(key.1, file_size) else {
                lru.remove(key);
                continue;
            };
            let Some(mut slot) = seg.slot.try_lock() else {
                lru.bump(key);
                continue;
            };
            lru.remove(key);
            drop(lru);
            let Some(file) = slot.take() else {
                continue;
            };
            if file.flushed_position() < file.wrote_position() {
                self.unsynced.lock().insert(file.path().to_owned());
            }
            drop(file);
        }
    }
}

/// Makes a mapping's written bytes durable.
pub(crate) fn flush_file(file: &MappedFile) -> Result<(), CqError> {
    file.flush(0, FlushMethod::Fdatasync)
        .map(drop)
        .map_err(io_err("flush", file.path()))
}
