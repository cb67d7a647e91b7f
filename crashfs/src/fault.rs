//! Failing disks: errors a test asks for, on writes or syncs under a path,
//! and the lying disk, whose fsync answers success and keeps nothing (what
//! a broker that skipped its syncs would get).

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

/// The operation a fault hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultOp {
    /// `write` (and the kernel's write-back of mapped pages).
    Write,
    /// `fsync`/`fdatasync`/`msync` of a file, and `fsync` of a directory.
    Sync,
}

/// One injected error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// What it hits.
    pub op: FaultOp,
    /// Paths under the mount it hits (`/store/commitlog`); `/` for all.
    pub path_prefix: String,
    /// The errno answered (`libc::EIO`, `libc::ENOSPC`).
    pub errno: i32,
    /// How many operations it fails; `None` until healed.
    pub times: Option<u32>,
}

impl Fault {
    /// `errno` on every `op` under `path_prefix` until healed.
    pub fn always(op: FaultOp, path_prefix: &str, errno: i32) -> Self {
        Self {
            op,
            path_prefix: path_prefix.to_owned(),
            errno,
            times: None,
        }
    }
}

/// The faults in force.
#[derive(Debug, Default)]
pub struct Faults {
    rules: Mutex<Vec<Fault>>,
    lying_sync: AtomicBool,
}

impl Faults {
    /// Adds `fault`.
    pub fn inject(&self, fault: Fault) {
        self.rules.lock().push(fault);
    }

    /// Removes every fault (the lying disk too).
    pub fn heal(&self) {
        self.rules.lock().clear();
        self.lying_sync.store(false, Ordering::Relaxed);
    }

    /// From now on (`on`) fsync answers success and makes nothing durable.
    pub fn lie_about_sync(&self, on: bool) {
        self.lying_sync.store(on, Ordering::Relaxed);
    }

    /// Whether fsync lies.
    pub fn sync_lies(&self) -> bool {
        self.lying_sync.load(Ordering::Relaxed)
    }

    /// The errno for `op` on `path` (`None` when unlinked), if a fault hits
    /// it; a counted fault is used up by one hit.
    pub fn hit(&self, op: FaultOp, path: Option<&str>) -> Option<i32> {
        let mut rules = self.rules.lock();
        let at = rules.iter().position(|f| {
            f.op == op && f.times != Some(0) && path.is_none_or(|p| under(p, &f.path_prefix))
        })?;
        let f = &mut rules[at];
        if let Some(n) = &mut f.times {
            *n -= 1;
        }
        Some(f.errno)
    }
}

/// Whether `path` is `prefix` or inside it.
fn under(path: &str, prefix: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    prefix.is_empty()
        || path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_hit_their_paths_and_counted_ones_are_used_up() {
        let f = Faults::default();
        f.inject(Fault {
            times: Some(1),
            ..Fault::always(FaultOp::Sync, "/store/commitlog", libc::EIO)
        });
        f.inject(Fault::always(FaultOp::Write, "/", libc::ENOSPC));
        assert_eq!(f.hit(FaultOp::Sync, Some("/store/commitlogx/1")), None);
        assert_eq!(
            f.hit(FaultOp::Sync, Some("/store/commitlog/1")),
            Some(libc::EIO)
        );
        assert_eq!(
            f.hit(FaultOp::Sync, Some("/store/commitlog/1")),
            None,
            "used up"
        );
        assert_eq!(f.hit(FaultOp::Write, Some("/a")), Some(libc::ENOSPC));
        assert_eq!(f.hit(FaultOp::Write, None), Some(libc::ENOSPC));
        f.heal();
        assert_eq!(f.hit(FaultOp::Write, Some("/a")), None);
    }
}
