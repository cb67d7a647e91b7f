//! A fixed-size file mapped into memory, written append-only by one writer and
//! read concurrently below its published write position. This is the only
//! module of the workspace with `unsafe` code.
#![allow(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use memmap2::{Advice, MmapOptions, MmapRaw};

/// How a flush makes mapped pages durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlushMethod {
    /// `fdatasync(2)` on the file: on Linux it also writes back pages dirtied
    /// through the mapping, and measured about twice as fast as `msync`.
    #[default]
    Fdatasync,
    /// `msync(MS_SYNC)` of the dirty range.
    Msync,
}

/// `ENOSPC` on Linux and the BSDs.
const ENOSPC: i32 = 28;

/// A mapped segment of a CommitLog or consume queue.
///
/// Invariant: bytes below [`MappedFile::wrote_position`] are never modified
/// while any reader may hold a slice of them; only recovery (before the store
/// serves reads) moves the position backwards.
#[derive(Debug)]
pub struct MappedFile {
    path: PathBuf,
    file: File,
    map: MmapRaw,
    file_from_offset: i64,
    file_size: usize,
    wrote_position: AtomicUsize,
    flushed_position: AtomicUsize,
}

impl MappedFile {
    /// Creates (or reuses) the file at `path` with `size` bytes and maps it.
    /// The file is sparse until written. A new file is made whole under a
    /// temporary `.tmp` name and then linked to `path`, so a crash during
    /// creation leaves a `.tmp` file (which loading removes), never a short
    /// file under the real name; the link never replaces a file another
    /// thread made first (that one is mapped instead). The folder is synced
    /// once the name is in place, so the file outlives a power cut.
    pub fn create(path: &Path, file_from_offset: i64, size: usize) -> io::Result<Self> {
        Self::create_with(path, file_from_offset, size, false)
    }

    /// [`MappedFile::create`] with every block allocated up front
    /// (fallocate), so writes through the map cannot meet a full disk (a
    /// full disk under a sparse map kills the process with SIGBUS): a full
    /// disk fails here, as an error. Where the file system cannot allocate
    /// ahead the file stays sparse.
    pub fn create_allocated(path: &Path, file_from_offset: i64, size: usize) -> io::Result<Self> {
        Self::create_with(path, file_from_offset, size, true)
    }

    fn create_with(path: &Path, from: i64, size: usize, allocate: bool) -> io::Result<Self> {
        static NEXT_TMP: AtomicU64 = AtomicU64::new(0);
        if path.exists() {
            return Self::reuse(path, from, size, allocate);
        }
        let mut tmp_name = path.file_name().unwrap_or_default().to_owned();
        tmp_name.push(format!(
            ".{}-{}.tmp",
            std::process::id(),
            NEXT_TMP.fetch_add(1, Ordering::Relaxed)
        ));
        let tmp = path.with_file_name(tmp_name);
        let made = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .and_then(|file| Self::make_whole(&tmp, file, size, allocate))
            // Its length is durable before its name is: a power cut never
            // leaves a short file under the real name.
            .and_then(|file| file.sync_all().map(|()| file));
        let linked = made.and_then(|file| std::fs::hard_link(&tmp, path).map(|()| file));
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(file) => {
                // The new name must survive a power cut before anything
                // written into the file is promised.
                rmq_common::meta_file::sync_parent(path)?;
                Self::map(path, file, from, size, 0)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                Self::reuse(path, from, size, allocate)
            }
            Err(e) => Err(e),
        }
    }

    /// Maps an existing file for writing from its start, sized to `size`.
    fn reuse(path: &Path, from: i64, size: usize, allocate: bool) -> io::Result<Self> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        let file = Self::make_whole(path, file, size, allocate)?;
        Self::map(path, file, from, size, 0)
    }

    /// Sets `file`'s length to `size` and, with `allocate`, allocates its
    /// blocks where the file system can; ENOSPC is an error.
    fn make_whole(path: &Path, file: File, size: usize, allocate: bool) -> io::Result<File> {
        if file.metadata()?.len() != size as u64 {
            file.set_len(size as u64)?;
        }
        if allocate {
            if let Err(e) = fs4::fs_std::FileExt::allocate(&file, size as u64) {
                if e.raw_os_error() == Some(ENOSPC) {
                    return Err(e);
                }
                tracing::debug!(path = %path.display(), error = %e, "cannot allocate ahead; the file stays sparse");
            }
        }
        Ok(file)
    }

    /// Maps an existing file, which must be exactly `size` bytes. The write
    /// position starts at the end; recovery sets the real one.
    pub fn open(path: &Path, file_from_offset: i64, size: usize) -> io::Result<Self> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        let len = file.metadata()?.len();
        if len != size as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} is {len} bytes, expected {size}", path.display()),
            ));
        }
        Self::map(path, file, file_from_offset, size, size)
    }

    fn map(path: &Path, file: File, from: i64, size: usize, pos: usize) -> io::Result<Self> {
        let map = MmapOptions::new().len(size).map_raw(&file)?;
        Ok(Self {
            path: path.to_owned(),
            file,
            map,
            file_from_offset: from,
            file_size: size,
            wrote_position: AtomicUsize::new(pos),
            flushed_position: AtomicUsize::new(pos),
        })
    }

    /// Tells the kernel accesses are random, so a first write does not read
    /// ahead the whole sparse file (this thrashes the page cache when
    /// thousands of consume-queue files are open).
    pub fn advise_random(&self) -> io::Result<()> {
        self.map.advise(Advice::Random)
    }

    /// Path of the file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Log offset of byte 0 of this file.
    pub fn file_from_offset(&self) -> i64 {
        self.file_from_offset
    }

    /// Size in bytes.
    pub fn file_size(&self) -> usize {
        self.file_size
    }

    /// Bytes written and visible to readers.
    pub fn wrote_position(&self) -> usize {
        self.wrote_position.load(Ordering::Acquire)
    }

    /// Bytes known durable.
    pub fn flushed_position(&self) -> usize {
        self.flushed_position.load(Ordering::Acquire)
    }

    /// Free bytes after the write position.
    pub fn remaining(&self) -> usize {
        self.file_size - self.wrote_position()
    }

    /// Whether the write position reached the end.
    pub fn is_full(&self) -> bool {
        self.wrote_position() == self.file_size
    }

    /// Writes `data` at the write position and publishes it. Only one thread
    /// may append to a file at a time (callers hold their put lock).
    /// Returns the position the data was written at, or `None` if it does not
    /// fit.
    pub fn append(&self, data: &[u8]) -> Option<usize> {
        let pos = self.wrote_position.load(Ordering::Acquire);
        let end = pos
            .checked_add(data.len())
            .filter(|e| *e <= self.file_size)?;
        // SAFETY: `pos..end` lies inside the mapping (checked above). It is
        // above the published write position, so no reader holds a slice of
        // it, and the single-writer rule means no other thread writes it.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.map.as_mut_ptr().add(pos),
                data.len(),
            );
        }
        self.wrote_position.store(end, Ordering::Release);
        Some(pos)
    }

    /// Overwrites `pos..pos+data.len()` anywhere in the file, for formats that
    /// update fields in place (the IndexFile header and hash slots). Does not
    /// move the write position; lowers the flushed position to `pos` so that
    /// the next [`MappedFile::flush`] covers the bytes. Fails with
    /// `InvalidInput` if the range is outside the file.
    ///
    /// `&mut self` is the whole concurrency contract: while it is held, no
    /// slice returned by [`MappedFile::slice`] is alive and no other thread
    /// reads or writes through this handle. Callers that share the file keep
    /// it behind a lock (the IndexFile uses a `RwLock`).
    pub fn write_at(&mut self, pos: usize, data: &[u8]) -> io::Result<()> {
        let in_bounds = pos
            .checked_add(data.len())
            .is_some_and(|end| end <= self.file_size);
        if !in_bounds {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "write of {} bytes at {pos} is outside {} ({} bytes)",
                    data.len(),
                    self.path.display(),
                    self.file_size
                ),
            ));
        }
        // SAFETY: `pos..pos + data.len()` lies inside the mapping (checked
        // above). The exclusive borrow of `self` means no slice of the mapping
        // handed out by `slice` is alive and no other writer exists, so
        // nothing observes the bytes while they change.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.map.as_mut_ptr().add(pos),
                data.len(),
            );
        }
        self.flushed_position.fetch_min(pos, Ordering::AcqRel);
        Ok(())
    }

    /// The bytes `pos..pos+len`, if they lie below the write position.
    pub fn slice(&self, pos: usize, len: usize) -> Option<&[u8]> {
        let end = pos.checked_add(len)?;
        if end > self.wrote_position() {
            return None;
        }
        // SAFETY: the range is inside the mapping and below the published
        // write position, whose bytes are not modified while readers exist
        // (type invariant). The slice borrows `self`, which keeps the mapping
        // alive.
        Some(unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(pos), len) })
    }

    /// Moves the write position back (truncation). Bytes from `pos` to the
    /// old position are zeroed so that a later scan cannot mistake them for
    /// data. `&mut self`: no slice of this mapping can be alive meanwhile.
    pub fn truncate_to(&mut self, pos: usize) {
        let pos = pos.min(self.file_size);
        let old = self.wrote_position();
        if old > pos {
            // SAFETY: `pos..old` is inside the mapping; slices borrow `self`,
            // so with `&mut self` none is alive, and the writer (which needs
            // `&self`) is not active either.
            unsafe {
                std::ptr::write_bytes(self.map.as_mut_ptr().add(pos), 0, old - pos);
            }
        }
        self.wrote_position.store(pos, Ordering::Release);
        if self.flushed_position() > pos {
            self.flushed_position.store(pos, Ordering::Release);
        }
    }

    /// Declares the file full after its closing blank record: the bytes
    /// after the blank header are padding and never written. The flushed
    /// position is untouched, so the blank still gets flushed.
    pub fn mark_full(&self) {
        self.wrote_position.store(self.file_size, Ordering::Release);
    }

    /// Sets the write position without touching bytes (used after loading a
    /// file whose valid length was found by a scan).
    pub fn set_wrote_position(&self, pos: usize) {
        let pos = pos.min(self.file_size);
        self.wrote_position.store(pos, Ordering::Release);
        self.flushed_position.store(pos, Ordering::Release);
    }

    /// Number of 4 KiB pages written but not yet flushed.
    pub fn dirty_pages(&self) -> usize {
        let w = self.wrote_position();
        let f = self.flushed_position();
        w.saturating_sub(f) / PAGE_SIZE
    }

    /// Makes everything written so far durable when at least `least_pages`
    /// pages are dirty (0 = always, if anything is dirty). Returns the flushed
    /// position.
    pub fn flush(&self, least_pages: usize, method: FlushMethod) -> io::Result<usize> {
        let target = self.wrote_position();
        let flushed = self.flushed_position();
        if target <= flushed {
            return Ok(flushed);
        }
        // A full file is flushed even below the page threshold, so the tail
        // of a finished segment never waits for the thorough flush.
        let full = target == self.file_size;
        if least_pages > 0 && !full && (target / PAGE_SIZE) - (flushed / PAGE_SIZE) < least_pages {
            return Ok(flushed);
        }
        match method {
            FlushMethod::Fdatasync => self.file.sync_data()?,
            FlushMethod::Msync => self.map.flush_range(flushed, target - flushed)?,
        }
        self.flushed_position.fetch_max(target, Ordering::AcqRel);
        Ok(target)
    }

    /// Unmaps and deletes the file.
    pub fn destroy(self) -> io::Result<()> {
        let path = self.path.clone();
        drop(self);
        std::fs::remove_file(path)
    }
}

impl MappedFile {
    /// Faults every page of the mapping in for writing ahead of use
    /// (`MADV_POPULATE_WRITE`), so appends do not pay the kernel's page
    /// allocation and zeroing. The pages become dirty zeroes that the kernel
    /// writes back, which costs disk bandwidth: RocketMQ's
    /// `warmMappedFileEnable`, off by default there too.
    pub fn populate_write(&self) -> io::Result<()> {
        // SAFETY: the range is exactly this mapping; MADV_POPULATE_WRITE
        // only faults pages in (their content stays zero) and touches no
        // memory Rust code reads or writes.
        let rc = unsafe {
            libc::madvise(
                self.map.as_mut_ptr().cast(),
                self.file_size,
                libc::MADV_POPULATE_WRITE,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// Runtime truncation, while readers may hold slices of this file.
impl MappedFile {
    /// A new file in this one's place holding only its first `keep` bytes
    /// (at most the write position): they are copied to `<name>.truncate.tmp`,
    /// which is synced and renamed over this file's path, and the folder is
    /// synced. This mapping is left as it was, so slices readers hold stay
    /// valid (they read the unlinked old file); new readers must be given the
    /// returned file. A crash leaves the old file or the new one, plus at
    /// most a `.tmp` file that loading removes. The new file's write and
    /// flushed positions are `keep`.
    pub fn rewrite_prefix(&self, keep: usize) -> io::Result<MappedFile> {
        use std::os::unix::fs::FileExt as _;
        let keep = keep.min(self.wrote_position());
        let bytes = self.slice(0, keep).ok_or_else(|| {
            io::Error::other(format!(
                "{}: {keep} bytes are not below the write position",
                self.path.display()
            ))
        })?;
        let mut tmp_name = self.path.file_name().unwrap_or_default().to_owned();
        tmp_name.push(".truncate.tmp");
        let tmp = self.path.with_file_name(tmp_name);
        let written = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .and_then(|file| Self::make_whole(&tmp, file, self.file_size, true))
            .and_then(|file| {
                file.write_all_at(bytes, 0)?;
                file.sync_all()?;
                Ok(file)
            });
        let file = match written.and_then(|f| std::fs::rename(&tmp, &self.path).map(|()| f)) {
            Ok(f) => f,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        };
        rmq_common::meta_file::sync_parent(&self.path)?;
        Self::map(
            &self.path,
            file,
            self.file_from_offset,
            self.file_size,
            keep,
        )
    }
}

/// Recovery-only operations.
impl MappedFile {
    /// Sets the write position to `pos` and zeroes every non-zero byte from
    /// there to the end of the file, so that bytes left by a crash past the
    /// valid tail can never be read as records later. Only extents that hold
    /// data are read (`SEEK_DATA`), so a sparse 1 GiB segment costs little.
    /// `&mut self`: no reader or writer can be active. Returns the number of
    /// bytes zeroed.
    pub fn truncate_and_scrub(&mut self, pos: usize) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        let pos = pos.min(self.file_size);
        let fd = self.file.as_raw_fd();
        let mut zeroed = 0usize;
        let mut cursor = pos;
        while cursor < self.file_size {
            // SAFETY: lseek on a descriptor this struct owns; no memory is
            // passed, and the result is checked.
            let data = unsafe { libc::lseek(fd, cursor as libc::off_t, libc::SEEK_DATA) };
            if data < 0 {
                let err = io::Error::last_os_error();
                if err.raw_os_error() == Some(libc::ENXIO) {
                    break; // no data after `cursor`
                }
                return Err(err);
            }
            let start = (data as usize).max(cursor);
            // SAFETY: as above.
            let hole = unsafe { libc::lseek(fd, start as libc::off_t, libc::SEEK_HOLE) };
            let end = if hole < 0 {
                self.file_size
            } else {
                (hole as usize).min(self.file_size)
            };
            let mut page = start;
            while page < end {
                let len = (PAGE_SIZE - page % PAGE_SIZE).min(end - page);
                // SAFETY: `page..page+len` is inside the mapping; `&mut self`
                // means no reader or writer is active.
                let bytes = unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(page), len) };
                if bytes.iter().any(|b| *b != 0) {
                    // SAFETY: same range, same exclusivity.
                    unsafe { std::ptr::write_bytes(self.map.as_mut_ptr().add(page), 0, len) };
                    zeroed += len;
                }
                page += len;
            }
            cursor = end.max(start + 1);
        }
        self.wrote_position.store(pos, Ordering::Release);
        self.flushed_position.store(pos, Ordering::Release);
        Ok(zeroed)
    }
}

/// Page size used for the least-pages flush rule.
pub const PAGE_SIZE: usize = 4096;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_read_flush_truncate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000");
        let mut f = MappedFile::create(&path, 0, 8192).unwrap();
        assert_eq!(f.append(b"hello"), Some(0));
        assert_eq!(f.append(b"world"), Some(5));
        assert_eq!(f.slice(0, 10), Some(&b"helloworld"[..]));
        assert_eq!(f.slice(5, 6), None, "beyond the write position");
        assert_eq!(f.append(&[1u8; 8192]), None, "does not fit");
        assert_eq!(
            f.flush(4, FlushMethod::Fdatasync).unwrap(),
            0,
            "below least pages"
        );
        assert_eq!(f.flush(0, FlushMethod::Msync).unwrap(), 10);
        f.truncate_to(5);
        assert_eq!(f.wrote_position(), 5);
        assert_eq!(f.flushed_position(), 5);
        drop(f);
        let f = MappedFile::open(&path, 0, 8192).unwrap();
        assert_eq!(f.slice(0, 10), Some(&b"hello\0\0\0\0\0"[..]));
        f.advise_random().unwrap();
        assert!(MappedFile::open(&path, 0, 4096).is_err(), "size mismatch");
        f.destroy().unwrap();
        assert!(!path.exists());
    }

    #[test]
    fn a_rewritten_prefix_leaves_old_readers_their_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000");
        let f = MappedFile::create(&path, 0, 8192).unwrap();
        f.append(b"keepdrop").unwrap();
        let held = f.slice(0, 8).unwrap();
        let g = f.rewrite_prefix(4).unwrap();
        assert_eq!((g.wrote_position(), g.flushed_position()), (4, 4));
        assert_eq!(g.append(b"new!"), Some(4));
        assert_eq!(g.slice(0, 8), Some(&b"keepnew!"[..]));
        assert_eq!(held, b"keepdrop", "the old mapping is untouched");
        drop(g);
        let reopened = MappedFile::open(&path, 0, 8192).unwrap();
        assert_eq!(reopened.slice(0, 9), Some(&b"keepnew!\0"[..]));
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no .tmp left"
        );
    }
}
