//! Errors of the IndexFile and the IndexService.

use std::io;
use std::path::PathBuf;

use rmq_common::ConfigError;

/// Why an index operation failed. Every variant tied to a file names it.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// `maxHashSlotNum` / `maxIndexNum` cannot describe a file.
    #[error("invalid index configuration")]
    Config(#[from] ConfigError),
    /// A file-system call on `path` failed.
    #[error("index file {}: cannot {op}", path.display())]
    Io {
        /// File or folder the call was about.
        path: PathBuf,
        /// What was being done ("open", "sync", "delete", ...).
        op: &'static str,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A file does not have the size the configured geometry gives.
    #[error(
        "index file {} is {len} bytes, expected {expected} (maxHashSlotNum/maxIndexNum changed?)",
        path.display()
    )]
    BadSize {
        /// The file.
        path: PathBuf,
        /// Its length on disk.
        len: u64,
        /// `40 + maxHashSlotNum*4 + maxIndexNum*20`.
        expected: u64,
    },
    /// A file's header fails the consistency checks.
    #[error("index file {} has a bad header: {reason}", path.display())]
    BadHeader {
        /// The file.
        path: PathBuf,
        /// Which check failed.
        reason: String,
    },
    /// An earlier flush failed; the service accepts no more writes because
    /// pages it already handed to the kernel may be lost.
    #[error("index writes stopped after a failed flush of {}", path.display())]
    Poisoned {
        /// The file whose flush failed.
        path: PathBuf,
    },
    /// [`crate::index::IndexService::close`] was called.
    #[error("index service is closed")]
    Closed,
}

impl IndexError {
    /// An [`IndexError::Io`] for `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, op: &'static str, source: io::Error) -> Self {
        Self::Io {
            path: path.into(),
            op,
            source,
        }
    }
}
