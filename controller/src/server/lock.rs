//! The store folder's `lock` file, held (flock, exclusive) from before the
//! Raft log is opened until the replica has stopped, so a second replica on
//! the same folder fails at start instead of writing the same log.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

/// Why the folder could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process (or replica) holds the lock.
    #[error("controller store {dir} is in use by another controller (its `lock` file is held)")]
    Held {
        /// The store folder.
        dir: PathBuf,
    },
    /// The folder or the file could not be made or locked.
    #[error("locking controller store {dir}: {source}")]
    Io {
        /// The store folder.
        dir: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// The held lock; dropping it releases it.
#[derive(Debug)]
pub struct StoreLock {
    _file: File,
}

impl StoreLock {
    /// Creates `dir` if needed and takes its `lock` file.
    pub fn acquire(dir: &Path) -> Result<Self, LockError> {
        let io = |source| LockError::Io {
            dir: dir.to_owned(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join("lock"))
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => Ok(Self { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(LockError::Held {
                dir: dir.to_owned(),
            }),
            Err(std::fs::TryLockError::Error(e)) => Err(io(e)),
        }
    }
}
