//! A crash-consistency filesystem for tests, after Jepsen's LazyFS: a FUSE
//! mount whose writes reach its backing folder only when synced, so that a
//! simulated power cut loses exactly what a real one may. A SIGKILL test
//! cannot tell a broker that syncs from one that does not (the killed
//! process's writes are in the kernel's page cache and survive it); a cut
//! on this filesystem can.
//!
//! Layout:
//! - [`model`]: the filesystem between two cuts: synced state plus dirty
//!   pages and directory changes in memory. POSIX's rules: a file's bytes
//!   are durable once it is fsynced; a create, unlink or rename once its
//!   directory is.
//! - [`durable`]: the synced state in the backing folder.
//! - [`fault`]: EIO/ENOSPC on writes or syncs under a path, and a disk
//!   whose fsync lies (what a broker that skipped its syncs would get).
//! - [`fuse`]: the kernel's requests onto the model (`fuser`, no libfuse:
//!   it mounts with mount(2) as root).
//!
//! [`CrashFs`] is the handle a test holds: mount, [`CrashFs::power_cut`]
//! (everything unsynced is gone, and every request fails with EIO from
//! then on), [`CrashFs::restart`] (unmount, mount again on what was
//! synced), faults.

#![forbid(unsafe_code)]

pub mod durable;
pub mod fault;
pub mod fuse;
pub mod model;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use fault::{Fault, FaultOp, Faults};

/// Why the filesystem could not be mounted or restarted.
#[derive(Debug, thiserror::Error)]
pub enum CrashFsError {
    /// The backing folder could not be read or prepared.
    #[error("crashfs backing folder {path}: {source}")]
    Backing {
        /// The folder.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// mount(2) failed (root and /dev/fuse are needed).
    #[error("crashfs cannot mount on {path} (root and /dev/fuse are needed): {source}")]
    Mount {
        /// The mount point.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// A mounted crash-consistency filesystem.
pub struct CrashFs {
    backing: PathBuf,
    mountpoint: PathBuf,
    faults: Arc<Faults>,
    generation: Arc<fuse::Generation>,
    session: Option<fuser::BackgroundSession>,
}

impl std::fmt::Debug for CrashFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrashFs")
            .field("backing", &self.backing)
            .field("mountpoint", &self.mountpoint)
            .finish_non_exhaustive()
    }
}

impl CrashFs {
    /// Mounts on `mountpoint` (an existing empty folder) the state synced
    /// in `backing` (empty at first).
    pub fn mount(backing: &Path, mountpoint: &Path) -> Result<Self, CrashFsError> {
        let mut me = Self {
            backing: backing.to_owned(),
            mountpoint: mountpoint.to_owned(),
            faults: Arc::new(Faults::default()),
            generation: Arc::new(fuse::Generation::default()),
            session: None,
        };
        me.start()?;
        Ok(me)
    }

    /// Where it is mounted.
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// The fault rules (inject, heal, lie about sync).
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// The power cut: what was not synced is gone, and every request fails
    /// with EIO until [`CrashFs::restart`]. Kill the processes using the
    /// mount after this (or before: what they sync in between is synced).
    pub fn power_cut(&self) {
        let lost = self
            .generation
            .model
            .lock()
            .take()
            .map_or(0, |m| m.unsynced_bytes());
        tracing::info!(lost_bytes = lost, mount = %self.mountpoint.display(), "crashfs: power cut");
    }

    /// Bytes written and not yet synced.
    pub fn unsynced_bytes(&self) -> u64 {
        self.generation
            .model
            .lock()
            .as_ref()
            .map_or(0, model::Model::unsynced_bytes)
    }

    /// Unmounts (lazily: a process still holding a file keeps only the old,
    /// dead mount) and mounts again on what was synced. Implies a power
    /// cut.
    pub fn restart(&mut self) -> Result<(), CrashFsError> {
        self.power_cut();
        self.stop();
        self.generation = Arc::new(fuse::Generation::default());
        self.start()
    }

    fn start(&mut self) -> Result<(), CrashFsError> {
        let backing = |source| CrashFsError::Backing {
            path: self.backing.clone(),
            source,
        };
        let durable = durable::Durable::open(&self.backing).map_err(backing)?;
        *self.generation.model.lock() = Some(model::Model::new(durable));
        let meta = std::fs::metadata(&self.mountpoint).map_err(|source| CrashFsError::Mount {
            path: self.mountpoint.clone(),
            source,
        })?;
        let fs = fuse::CrashFilesystem {
            generation: Arc::clone(&self.generation),
            faults: Arc::clone(&self.faults),
            owner: (meta.uid(), meta.gid()),
        };
        let options = [
            fuser::MountOption::FSName("crashfs".into()),
            fuser::MountOption::RW,
        ];
        let session = fuser::spawn_mount2(fs, &self.mountpoint, &options).map_err(|source| {
            CrashFsError::Mount {
                path: self.mountpoint.clone(),
                source,
            }
        })?;
        self.session = Some(session);
        Ok(())
    }

    fn stop(&mut self) {
        if let Some(session) = self.session.take() {
            // Detached first, so that a file a dead process still holds
            // cannot keep the old mount in the way; dropping the session
            // then finds it unmounted, and its thread ends when the kernel
            // closes the connection.
            if let Err(e) = nix::mount::umount2(&self.mountpoint, nix::mount::MntFlags::MNT_DETACH)
            {
                tracing::warn!(mount = %self.mountpoint.display(), error = %e, "crashfs: lazy unmount failed");
            }
            drop(session);
        }
    }
}

impl Drop for CrashFs {
    fn drop(&mut self) {
        self.stop();
    }
}
