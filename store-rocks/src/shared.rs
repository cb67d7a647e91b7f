//! The state the store, its writer thread and its compaction thread share:
//! the database (until closed), the min/max cache, the write lock, the
//! poison flag.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use rmq_common::cq::CqError;

use crate::db::Db;
use crate::lmq_filter::LmqFilter;
use crate::offsets::{Loaded, OffsetCache};

/// State shared by the store, its writer thread and its compaction thread.
///
/// Lock order: never wait for the writer thread while holding `db`; take
/// `write_lock` before `offsets`. `db` is only write-locked by `close`, after
/// both threads were stopped.
pub(crate) struct Shared {
    /// The database; `None` once closed (which releases its files and lock).
    pub db: RwLock<Option<Db>>,
    /// Per-queue min/max and the dispatched offset, as last written.
    pub offsets: RwLock<OffsetCache>,
    /// The LMQs that may have keys (those not in `offsets` are read from
    /// the database only if this says so).
    pub lmqs: LmqFilter,
    /// Serializes every database mutation with the cache update that follows
    /// it, so idempotency checks see the state the next write builds on.
    pub write_lock: Mutex<()>,
    /// The CommitLog min offset (`correct_min_offset`); read by the
    /// compaction filter, never lowered.
    pub commit_log_min: Arc<AtomicI64>,
    /// Why writes are refused, once one failed.
    pub poison: Mutex<Option<String>>,
    /// `close` was called.
    pub closed: AtomicBool,
    /// Units queued for the writer thread and not yet written.
    pub pending_units: AtomicU64,
    /// The database folder, for messages.
    pub dir: PathBuf,
    /// Test hook: the next group commit fails as if RocksDB refused it.
    #[cfg(test)]
    pub fail_next_write: AtomicBool,
    /// Test hook: the writer writes max keys only at a barrier or its end.
    #[cfg(test)]
    pub hold_max_keys: AtomicBool,
}

impl Shared {
    pub fn new(db: Db, loaded: Loaded, commit_log_min: Arc<AtomicI64>, dir: PathBuf) -> Self {
        Self {
            db: RwLock::new(Some(db)),
            offsets: RwLock::new(loaded.cache),
            lmqs: loaded.lmqs,
            write_lock: Mutex::new(()),
            commit_log_min,
            poison: Mutex::new(None),
            closed: AtomicBool::new(false),
            pending_units: AtomicU64::new(0),
            dir,
            #[cfg(test)]
            fail_next_write: AtomicBool::new(false),
            #[cfg(test)]
            hold_max_keys: AtomicBool::new(false),
        }
    }

    /// `Err(Closed)` after `close`.
    pub fn check_open(&self) -> Result<(), CqError> {
        if self.closed.load(Ordering::Acquire) {
            Err(CqError::Closed)
        } else {
            Ok(())
        }
    }

    /// `Err(Poisoned)` after a failed write.
    pub fn check_writable(&self) -> Result<(), CqError> {
        match self.poison.lock().as_ref() {
            Some(reason) => Err(CqError::Poisoned {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Refuses every later write, remembering the first reason.
    pub fn poison(&self, err: &CqError) {
        let mut poison = self.poison.lock();
        if poison.is_none() {
            tracing::error!(dir = %self.dir.display(), error = %err, "rocksdb consume queue refuses writes from now on");
            *poison = Some(err.to_string());
        }
    }

    /// Runs `f` on the database, or fails with `Closed` once it was closed.
    /// Does not look at `closed`: `close` itself still flushes through here.
    pub fn with_db<T>(&self, f: impl FnOnce(&Db) -> Result<T, CqError>) -> Result<T, CqError> {
        let guard = self.db.read();
        match guard.as_ref() {
            Some(db) => f(db),
            None => Err(CqError::Closed),
        }
    }
}
