//! The classic file consume queue (RocketMQ 4.x layout).
//!
//! `<store root>/consumequeue/<topic>/<queueId>/<20-digit start byte offset>`:
//! fixed-size files of 20-byte units (big-endian `i64` CommitLog offset, `i32`
//! size, `i64` tags code); unit `n` of a queue is at byte `n * 20`.
//!
//! Opening the store reads a few units of each queue with `pread`; files are
//! mapped only when read or written, and at most `maxMappedConsumeQueueFiles`
//! stay mapped ([`pool`]), so 100,000 queues never mean 100,000 mappings.
//!
//! Lock order, outermost first: the store's map of queues (held only to find
//! or insert a queue, never across I/O), a queue's state (`RwLock`: put,
//! truncation and deletion take it exclusively; get, time search and flush
//! share it), a segment's mapping slot, the mapping pool. Eviction walks the
//! other way, so it only ever *try*-locks queue states and slots.

mod api;
mod checkpoint;
mod load;
mod maintain;
mod pool;
mod queue;
mod read;
mod store;
mod unit;
mod write;

#[cfg(test)]
mod recovery_tests;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use parking_lot::Mutex;
use rmq_common::cq::CqError;

pub use store::FileConsumeQueueStore;

use pool::MappingPool;

/// What every queue of one store shares.
#[derive(Debug)]
pub(crate) struct Env {
    /// `<store root>/consumequeue`.
    pub(crate) root: PathBuf,
    /// Bytes per segment file (a multiple of the unit size).
    pub(crate) file_size: i64,
    /// The mapping budget.
    pub(crate) pool: MappingPool,
    /// Directories whose entries changed (a new queue or topic folder) and
    /// must be fsynced before the next dispatched checkpoint claims them.
    pub(crate) pending_dirs: Mutex<BTreeSet<PathBuf>>,
    /// A min offset changed since the min-offset snapshot was written.
    pub(crate) min_dirty: AtomicBool,
}

impl Env {
    /// Path of the segment starting at byte `start` of the queue in `dir`.
    pub(crate) fn segment_path(dir: &Path, start: i64) -> PathBuf {
        dir.join(unit::file_name(start))
    }
}

/// An `io::Error` with the path it concerns.
pub(crate) fn io_err(what: &str, path: &Path) -> impl FnOnce(std::io::Error) -> CqError {
    let context = format!("{what} {}", path.display());
    move |e| CqError::io(context, e)
}

/// A store-shape problem at `path`.
pub(crate) fn corrupt(path: &Path, what: impl std::fmt::Display) -> CqError {
    CqError::Corrupt {
        detail: format!("{}: {what}", path.display()),
    }
}
