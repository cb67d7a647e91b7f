//! The FUSE side: each kernel request becomes one [`Model`] operation
//! under the generation's lock, after the fault rules had their say. A
//! generation is one mount; after a power cut its model is gone and every
//! request it still gets (the kernel writing back a dead process's mapped
//! pages, say) fails with EIO.

use std::ffi::OsStr;
use std::sync::Arc;
use std::time::Duration;

use fuser::{
    FileAttr, FileType, Filesystem, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyStatfs, ReplyWrite, Request, TimeOrNow,
};
use parking_lot::Mutex;

use crate::fault::{FaultOp, Faults};
use crate::model::{Attr, Errno, Model};

/// How long the kernel may keep attributes and entries it was given.
const TTL: Duration = Duration::from_secs(1);
/// What statfs reports: 64 GiB of 4 KiB blocks, three quarters free (a
/// broker checks the disk's use before it takes writes).
const BLOCKS: u64 = 16 << 20;

/// One mount's live state; `None` from the power cut on.
#[derive(Debug, Default)]
pub struct Generation {
    pub(crate) model: Mutex<Option<Model>>,
}

/// The filesystem one mount serves.
pub struct CrashFilesystem {
    pub(crate) generation: Arc<Generation>,
    pub(crate) faults: Arc<Faults>,
    /// Owner shown on every node (the mounting user).
    pub(crate) owner: (u32, u32),
}

impl CrashFilesystem {
    fn with<T>(&self, f: impl FnOnce(&mut Model) -> Result<T, Errno>) -> Result<T, Errno> {
        match self.generation.model.lock().as_mut() {
            Some(m) => f(m),
            None => Err(libc::EIO),
        }
    }

    fn attr(&self, a: &Attr) -> FileAttr {
        FileAttr {
            ino: a.ino,
            size: a.size,
            blocks: a.size.div_ceil(512),
            atime: a.mtime,
            mtime: a.mtime,
            ctime: a.mtime,
            crtime: a.mtime,
            kind: if a.is_dir() {
                FileType::Directory
            } else {
                FileType::RegularFile
            },
            perm: u16::try_from(a.mode & 0o7777).unwrap_or(0o644),
            nlink: a.nlink,
            uid: self.owner.0,
            gid: self.owner.1,
            rdev: 0,
            blksize: crate::model::PAGE as u32,
            flags: 0,
        }
    }

    fn entry(&self, r: Result<Attr, Errno>, reply: ReplyEntry) {
        match r {
            Ok(a) => reply.entry(&TTL, &self.attr(&a), 0),
            Err(e) => reply.error(e),
        }
    }
}

fn name(n: &OsStr) -> Result<&str, Errno> {
    n.to_str().ok_or(libc::EINVAL)
}

fn empty(r: Result<(), Errno>, reply: ReplyEmpty) {
    match r {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(e),
    }
}

impl Filesystem for CrashFilesystem {
    fn lookup(&mut self, _req: &Request<'_>, parent: u64, n: &OsStr, reply: ReplyEntry) {
        let r = self.with(|m| m.lookup(parent, name(n)?));
        self.entry(r, reply);
    }

    fn forget(&mut self, _req: &Request<'_>, ino: u64, nlookup: u64) {
        let _ = self.with(|m| {
            m.forget(ino, nlookup);
            Ok(())
        });
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        match self.with(|m| m.getattr(ino)) {
            Ok(a) => reply.attr(&TTL, &self.attr(&a)),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<std::time::SystemTime>,
        _fh: Option<u64>,
        _crtime: Option<std::time::SystemTime>,
        _chgtime: Option<std::time::SystemTime>,
        _bkuptime: Option<std::time::SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        let r = self.with(|m| {
            if let Some(mode) = mode {
                m.chmod(ino, mode)?;
            }
            if let Some(size) = size {
                m.truncate(ino, size)?;
            }
            m.getattr(ino)
        });
        match r {
            Ok(a) => reply.attr(&TTL, &self.attr(&a)),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        n: &OsStr,
        mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        if mode & libc::S_IFMT != libc::S_IFREG {
            reply.error(libc::EPERM);
            return;
        }
        let r = self.with(|m| m.create(parent, name(n)?, mode));
        self.entry(r, reply);
    }

    fn mkdir(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        n: &OsStr,
        mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        let r = self.with(|m| m.mkdir(parent, name(n)?, mode));
        self.entry(r, reply);
    }

    fn link(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        newparent: u64,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let r = self.with(|m| m.link(ino, newparent, name(newname)?));
        self.entry(r, reply);
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, n: &OsStr, reply: ReplyEmpty) {
        empty(self.with(|m| m.unlink(parent, name(n)?)), reply);
    }

    fn rmdir(&mut self, _req: &Request<'_>, parent: u64, n: &OsStr, reply: ReplyEmpty) {
        empty(self.with(|m| m.rmdir(parent, name(n)?)), reply);
    }

    fn rename(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        n: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
        reply: ReplyEmpty,
    ) {
        let r = self.with(|m| {
            if flags & libc::RENAME_EXCHANGE != 0 {
                return Err(libc::EINVAL);
            }
            let no_replace = flags & libc::RENAME_NOREPLACE != 0;
            m.rename((parent, name(n)?), (newparent, name(newname)?), no_replace)
        });
        empty(r, reply);
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyData,
    ) {
        let offset = u64::try_from(offset).unwrap_or(0);
        match self.with(|m| m.read(ino, offset, size)) {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyWrite,
    ) {
        let faults = Arc::clone(&self.faults);
        let r = self.with(|m| {
            if let Some(errno) = faults.hit(FaultOp::Write, m.path(ino).as_deref()) {
                return Err(errno);
            }
            let offset = u64::try_from(offset).map_err(|_| libc::EINVAL)?;
            m.write(ino, offset, data)
        });
        match r {
            Ok(n) => reply.written(u32::try_from(n).unwrap_or(u32::MAX)),
            Err(e) => reply.error(e),
        }
    }

    fn fsync(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let faults = Arc::clone(&self.faults);
        empty(self.with(|m| sync(m, &faults, ino)), reply);
    }

    fn fsyncdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let faults = Arc::clone(&self.faults);
        empty(self.with(|m| sync(m, &faults, ino)), reply);
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        let entries = match self.with(|m| m.readdir(ino)) {
            Ok(e) => e,
            Err(e) => {
                reply.error(e);
                return;
            }
        };
        let dots = [
            (".".to_owned(), ino, libc::S_IFDIR),
            ("..".to_owned(), ino, libc::S_IFDIR),
        ];
        let skip = usize::try_from(offset).unwrap_or(0);
        for (i, (n, child, mode)) in dots.into_iter().chain(entries).enumerate().skip(skip) {
            let kind = if mode & libc::S_IFMT == libc::S_IFDIR {
                FileType::Directory
            } else {
                FileType::RegularFile
            };
            if reply.add(child, i64::try_from(i + 1).unwrap_or(i64::MAX), kind, n) {
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        let free = BLOCKS / 4 * 3;
        reply.statfs(BLOCKS, free, free, 1 << 20, 1 << 19, 4096, 255, 4096);
    }

    fn create(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        n: &OsStr,
        mode: u32,
        _umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        match self.with(|m| m.create(parent, name(n)?, mode)) {
            Ok(a) => reply.created(&TTL, &self.attr(&a), 0, 0, 0),
            Err(e) => reply.error(e),
        }
    }

    fn fallocate(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        length: i64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let r = self.with(|m| {
            let end = u64::try_from(offset.saturating_add(length)).map_err(|_| libc::EINVAL)?;
            match mode {
                0 if end > m.getattr(ino)?.size => m.truncate(ino, end),
                0 | libc::FALLOC_FL_KEEP_SIZE => Ok(()),
                _ => Err(libc::EOPNOTSUPP),
            }
        });
        empty(r, reply);
    }
}

/// fsync of a file or a directory: a fault fails it and, as Linux does
/// when write-back fails, drops a file's unsynced bytes; a lying disk
/// answers success and keeps nothing.
fn sync(m: &mut Model, faults: &Faults, ino: u64) -> Result<(), Errno> {
    if let Some(errno) = faults.hit(FaultOp::Sync, m.path(ino).as_deref()) {
        m.drop_unsynced(ino);
        return Err(errno);
    }
    if faults.sync_lies() {
        return Ok(());
    }
    m.fsync(ino)
}
