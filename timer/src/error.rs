//! The timer stores' errors: each names the file or database it concerns.

use std::path::PathBuf;

/// A timer-store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum TimerError {
    /// A file of the timer store could not be read or written.
    #[error("timer store {op} {}: {source}", path.display())]
    Io {
        /// What was being done (`open`, `write`, `sync`, ...).
        op: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A file holds something no version of the store writes.
    #[error("timer store file {} is corrupt: {what}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    /// The RocksDB timer database failed.
    #[error("timer RocksDB {} {op}: {source}", path.display())]
    Rocks {
        /// What was being done.
        op: &'static str,
        /// The database folder.
        path: PathBuf,
        /// RocksDB's error.
        #[source]
        source: rocksdb::Error,
    },
    /// An entry the store cannot file (a slot time that is not a multiple
    /// of the precision, a negative offset).
    #[error("timer entry refused: {0}")]
    BadEntry(String),
    /// A write failed earlier; the store takes no more writes until it is
    /// reopened (what reached disk is unknown).
    #[error("timer store refuses writes after an earlier failure: {0}")]
    Poisoned(String),
}

impl TimerError {
    /// An I/O error on `path` while doing `op`.
    pub(crate) fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { op, path, source }
    }
}
