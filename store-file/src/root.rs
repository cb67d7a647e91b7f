//! Files at the root of a store: the single-instance `lock`, the `abort`
//! marker of an unclean shutdown, and RocketMQ's `checkpoint`.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};

use crate::error::{Result, StoreError};

/// Holds the store root's `lock` file for the life of the process, so a second
/// broker on the same root fails with [`StoreError::Locked`].
#[derive(Debug)]
pub struct RootLock {
    _file: File,
    path: PathBuf,
}

impl RootLock {
    /// Takes the lock, creating the root if needed.
    pub fn acquire(root: &Path) -> Result<Self> {
        rmq_common::meta_file::create_dir_all_durable(root)
            .map_err(|e| StoreError::io(format!("create store root {}", root.display()), e))?;
        let path = root.join("lock");
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| StoreError::io(format!("open {}", path.display()), e))?;
        match file.try_lock() {
            Ok(()) => Ok(Self { _file: file, path }),
            Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::Locked { path }),
            Err(std::fs::TryLockError::Error(e)) => {
                Err(StoreError::io(format!("lock {}", path.display()), e))
            }
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The `abort` marker: present while the store runs, removed by a clean
/// shutdown. Found at start, it means the last run crashed.
#[derive(Debug)]
pub struct AbortFile {
    path: PathBuf,
}

impl AbortFile {
    /// Whether the previous run ended without a clean shutdown.
    pub fn previous_run_crashed(root: &Path) -> bool {
        root.join("abort").exists()
    }

    /// Creates the marker (durably) for this run.
    pub fn create(root: &Path) -> Result<Self> {
        let path = root.join("abort");
        let file = File::create(&path)
            .map_err(|e| StoreError::io(format!("create {}", path.display()), e))?;
        file.sync_all()
            .map_err(|e| StoreError::io(format!("sync {}", path.display()), e))?;
        sync_dir(root)?;
        Ok(Self { path })
    }

    /// Removes the marker: the run ended cleanly.
    pub fn remove(self) -> Result<()> {
        std::fs::remove_file(&self.path)
            .map_err(|e| StoreError::io(format!("remove {}", self.path.display()), e))
    }
}

/// RocketMQ's `checkpoint` file: three i64 millisecond timestamps (physic,
/// logics, index) at offsets 0, 8 and 16, Java's `masterFlushedOffset` at 24
/// (kept as read, never used here) and the confirm offset of controller
/// mode at 32, rewritten and synced on flush.
#[derive(Debug)]
pub struct Checkpoint {
    path: PathBuf,
    physic_ms: AtomicI64,
    logics_ms: AtomicI64,
    index_ms: AtomicI64,
    master_flushed: AtomicI64,
    confirm_offset: AtomicI64,
}

/// Size RocketMQ gives the checkpoint file (one page).
const CHECKPOINT_FILE_SIZE: usize = 4096;

impl Checkpoint {
    /// Loads the file, or starts at zeros when there is none.
    pub fn open(root: &Path) -> Result<Self> {
        let path = root.join("checkpoint");
        let mut vals = [0i64; 5];
        if path.exists() {
            let mut buf = Vec::new();
            File::open(&path)
                .and_then(|mut f| f.read_to_end(&mut buf))
                .map_err(|e| StoreError::io(format!("read {}", path.display()), e))?;
            if buf.len() < 24 {
                return Err(StoreError::Corrupt {
                    path,
                    offset: 0,
                    detail: format!("checkpoint is {} bytes, expected at least 24", buf.len()),
                });
            }
            // Files written before the last two slots existed are 24 bytes
            // long at least; they read as 0.
            for (i, v) in vals.iter_mut().enumerate().take(buf.len() / 8) {
                let mut a = [0u8; 8];
                a.copy_from_slice(&buf[i * 8..i * 8 + 8]);
                *v = i64::from_be_bytes(a);
            }
        }
        Ok(Self {
            path,
            physic_ms: AtomicI64::new(vals[0]),
            logics_ms: AtomicI64::new(vals[1]),
            index_ms: AtomicI64::new(vals[2]),
            master_flushed: AtomicI64::new(vals[3]),
            confirm_offset: AtomicI64::new(vals[4]),
        })
    }

    /// Store time of the last message known flushed in the CommitLog.
    pub fn physic_ms(&self) -> i64 {
        self.physic_ms.load(Ordering::Acquire)
    }
    /// Store time of the last message known flushed in the consume queues.
    pub fn logics_ms(&self) -> i64 {
        self.logics_ms.load(Ordering::Acquire)
    }
    /// Time of the last IndexFile flush.
    pub fn index_ms(&self) -> i64 {
        self.index_ms.load(Ordering::Acquire)
    }
    /// Raises the physic timestamp.
    pub fn set_physic_ms(&self, v: i64) {
        self.physic_ms.fetch_max(v, Ordering::AcqRel);
    }
    /// Raises the logics timestamp.
    pub fn set_logics_ms(&self, v: i64) {
        self.logics_ms.fetch_max(v, Ordering::AcqRel);
    }
    /// Raises the index timestamp.
    pub fn set_index_ms(&self, v: i64) {
        self.index_ms.fetch_max(v, Ordering::AcqRel);
    }

    /// The confirm offset last set (0: never).
    pub fn confirm_offset(&self) -> i64 {
        self.confirm_offset.load(Ordering::Acquire)
    }
    /// Sets the confirm offset (it may go down: a truncation lowers it).
    pub fn set_confirm_offset(&self, v: i64) {
        self.confirm_offset.store(v, Ordering::Release);
    }

    /// Writes the values and syncs the file (temp file + rename, so a
    /// crash never leaves a half-written checkpoint).
    pub fn flush(&self) -> Result<()> {
        let mut buf = vec![0u8; CHECKPOINT_FILE_SIZE];
        buf[0..8].copy_from_slice(&self.physic_ms().to_be_bytes());
        buf[8..16].copy_from_slice(&self.logics_ms().to_be_bytes());
        buf[16..24].copy_from_slice(&self.index_ms().to_be_bytes());
        buf[24..32].copy_from_slice(&self.master_flushed.load(Ordering::Acquire).to_be_bytes());
        buf[32..40].copy_from_slice(&self.confirm_offset().to_be_bytes());
        write_atomically(&self.path, &buf)
    }
}

/// Writes `data` to `path` atomically ([`rmq_common::meta_file::write_atomically`]).
pub fn write_atomically(path: &Path, data: &[u8]) -> Result<()> {
    rmq_common::meta_file::write_atomically(path, data).map_err(StoreError::from)
}

/// Makes a folder's entries (created, renamed, removed files) durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    rmq_common::meta_file::sync_dir(dir).map_err(StoreError::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_fails_with_named_error() {
        let dir = tempfile::tempdir().unwrap();
        let first = RootLock::acquire(dir.path()).unwrap();
        let second = RootLock::acquire(dir.path());
        assert!(matches!(second, Err(StoreError::Locked { .. })));
        let msg = second.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("locked by another process"), "{msg}");
        drop(first);
        RootLock::acquire(dir.path()).unwrap();
    }

    #[test]
    fn abort_marker() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!AbortFile::previous_run_crashed(dir.path()));
        let a = AbortFile::create(dir.path()).unwrap();
        assert!(AbortFile::previous_run_crashed(dir.path()));
        a.remove().unwrap();
        assert!(!AbortFile::previous_run_crashed(dir.path()));
    }

    #[test]
    fn checkpoint_layout() {
        let dir = tempfile::tempdir().unwrap();
        let c = Checkpoint::open(dir.path()).unwrap();
        c.set_physic_ms(1);
        c.set_logics_ms(0x0203);
        c.set_index_ms(3);
        c.set_index_ms(2); // never goes back
        c.flush().unwrap();
        let raw = std::fs::read(dir.path().join("checkpoint")).unwrap();
        assert_eq!(raw.len(), 4096);
        assert_eq!(
            &raw[..24],
            &[0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 2, 3, 0, 0, 0, 0, 0, 0, 0, 3]
        );
        let c = Checkpoint::open(dir.path()).unwrap();
        assert_eq!((c.physic_ms(), c.logics_ms(), c.index_ms()), (1, 0x0203, 3));
        // Java's confirmPhyOffset at byte 32.
        c.set_confirm_offset(0x0102);
        c.flush().unwrap();
        let raw = std::fs::read(dir.path().join("checkpoint")).unwrap();
        assert_eq!(
            &raw[24..40],
            &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2]
        );
        assert_eq!(
            Checkpoint::open(dir.path()).unwrap().confirm_offset(),
            0x0102
        );
        std::fs::write(dir.path().join("checkpoint"), [1u8; 5]).unwrap();
        assert!(matches!(
            Checkpoint::open(dir.path()),
            Err(StoreError::Corrupt { .. })
        ));
    }
}
