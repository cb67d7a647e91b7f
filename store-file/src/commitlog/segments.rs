//! The CommitLog's segment files: named by their 20-digit start offset, all of
//! one size, contiguous. The next segment is created by a background thread
//! ahead of need, so a roll-over rarely waits for file creation.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Mutex, RwLock};

use crate::error::{Result, StoreError};
use crate::mapped_file::MappedFile;

/// File name of the segment starting at `offset`.
pub fn segment_name(offset: i64) -> String {
    format!("{offset:020}")
}

/// Parses a 20-digit segment name.
pub fn parse_segment_name(name: &str) -> Option<i64> {
    (name.len() == 20 && name.bytes().all(|b| b.is_ascii_digit()))
        .then(|| name.parse().ok())
        .flatten()
}

#[derive(Debug)]
struct Allocator {
    requests: mpsc::Sender<i64>,
    thread: Option<JoinHandle<()>>,
}

/// The ordered list of segments.
#[derive(Debug)]
pub struct SegmentQueue {
    dir: PathBuf,
    segment_size: usize,
    segments: RwLock<Vec<Arc<MappedFile>>>,
    prepared: Arc<Mutex<Option<Arc<MappedFile>>>>,
    /// Start of the newest segment listed (-1: none). Held while a
    /// segment file is created, so the allocator makes only the one right
    /// after it: a request that went stale while retention deleted that
    /// offset's segment, or a truncation deleted later ones, must not
    /// bring a file back.
    high: Arc<Mutex<i64>>,
    allocator: Mutex<Option<Allocator>>,
}

impl SegmentQueue {
    /// Loads the segments in `dir` (created if missing). Each must have a
    /// 20-digit name, be `segment_size` bytes, and follow the previous one.
    pub fn load(dir: &Path, segment_size: usize) -> Result<Self> {
        rmq_common::meta_file::create_dir_all_durable(dir)
            .map_err(|e| StoreError::io(format!("create {}", dir.display()), e))?;
        let mut found = Vec::new();
        let entries = std::fs::read_dir(dir)
            .map_err(|e| StoreError::io(format!("list {}", dir.display()), e))?;
        for entry in entries {
            let entry = entry.map_err(|e| StoreError::io(format!("list {}", dir.display()), e))?;
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".tmp") {
                // A segment whose creation a crash interrupted: never named,
                // never written.
                std::fs::remove_file(&path)
                    .map_err(|e| StoreError::io(format!("remove {}", path.display()), e))?;
                tracing::info!(path = %path.display(), "removed a CommitLog segment left half-created by a crash");
                continue;
            }
            let offset = parse_segment_name(&name).ok_or_else(|| StoreError::Corrupt {
                path: path.clone(),
                offset: -1,
                detail: "CommitLog file name is not a 20-digit offset".into(),
            })?;
            found.push((offset, path));
        }
        found.sort();
        // An empty last file is a segment whose creation a crash cut short
        // before its size was set (stores written before segments were
        // created under a `.tmp` name): nothing was ever written to it.
        if let Some((_, path)) = found.last() {
            let len = std::fs::metadata(path)
                .map_err(|e| StoreError::io(format!("stat {}", path.display()), e))?
                .len();
            if len == 0 {
                std::fs::remove_file(path)
                    .map_err(|e| StoreError::io(format!("remove {}", path.display()), e))?;
                tracing::warn!(path = %path.display(), "removed an empty last CommitLog segment left by a crash during its creation");
                found.pop();
            }
        }
        let mut segments = Vec::with_capacity(found.len());
        for (offset, path) in found {
            if offset % segment_size as i64 != 0 {
                return Err(StoreError::Corrupt {
                    path,
                    offset,
                    detail: format!(
                        "start offset is not a multiple of the segment size {segment_size}"
                    ),
                });
            }
            if let Some(prev) = segments
                .last()
                .map(|s: &Arc<MappedFile>| s.file_from_offset())
            {
                if offset != prev + segment_size as i64 {
                    return Err(StoreError::Corrupt {
                        path,
                        offset,
                        detail: format!("gap after the segment starting at {prev}"),
                    });
                }
            }
            let file =
                MappedFile::open(&path, offset, segment_size).map_err(|e| StoreError::Corrupt {
                    path: path.clone(),
                    offset,
                    detail: e.to_string(),
                })?;
            segments.push(Arc::new(file));
        }
        Ok(Self {
            dir: dir.to_owned(),
            segment_size,
            high: Arc::new(Mutex::new(
                segments
                    .last()
                    .map_or(-1, |s: &Arc<MappedFile>| s.file_from_offset()),
            )),
            segments: RwLock::new(segments),
            prepared: Arc::new(Mutex::new(None)),
            allocator: Mutex::new(None),
        })
    }

    /// Starts the thread that creates the next segment ahead of need (and,
    /// with `warm`, faults its pages in; see [`MappedFile::populate_write`]).
    pub fn start_allocator(&self, warm: bool) {
        let (tx, rx) = mpsc::channel::<i64>();
        let dir = self.dir.clone();
        let size = self.segment_size;
        let prepared = Arc::clone(&self.prepared);
        let high = Arc::clone(&self.high);
        let spawned = std::thread::Builder::new()
            .name("cl-allocate".into())
            .spawn(move || {
                while let Ok(mut offset) = rx.recv() {
                    // Only the newest request matters.
                    while let Ok(newer) = rx.try_recv() {
                        offset = offset.max(newer);
                    }
                    let high = high.lock();
                    // Only the segment right after the newest listed one: a
                    // request older than a deletion or a truncation names
                    // an offset that is no longer next.
                    if offset != *high + size as i64 {
                        continue;
                    }
                    let path = dir.join(segment_name(offset));
                    match MappedFile::create_allocated(&path, offset, size) {
                        Ok(f) => {
                            if warm {
                                if let Err(e) = f.populate_write() {
                                    tracing::warn!(path = %path.display(), error = %e, "could not warm the next CommitLog segment");
                                }
                            }
                            *prepared.lock() = Some(Arc::new(f));
                        }
                        Err(e) => tracing::warn!(path = %path.display(), error = %e,
                            "could not create the next CommitLog segment ahead of need; it will be created on demand"),
                    }
                }
            });
        match spawned {
            Ok(thread) => {
                *self.allocator.lock() = Some(Allocator {
                    requests: tx,
                    thread: Some(thread),
                })
            }
            Err(e) => {
                tracing::warn!(error = %e, "no CommitLog allocation thread; segments are created on demand")
            }
        }
    }

    /// Stops the allocation thread.
    pub fn stop_allocator(&self) {
        if let Some(mut a) = self.allocator.lock().take() {
            drop(a.requests);
            if let Some(t) = a.thread.take() {
                let _ = t.join();
            }
        }
    }

    /// Segment size in bytes.
    pub fn segment_size(&self) -> usize {
        self.segment_size
    }

    /// All segments, oldest first.
    pub fn snapshot(&self) -> Vec<Arc<MappedFile>> {
        self.segments.read().clone()
    }

    /// The newest segment.
    pub fn last(&self) -> Option<Arc<MappedFile>> {
        self.segments.read().last().cloned()
    }

    /// Runs `f` on the newest segment with exclusive access (recovery cuts
    /// its tail this way). `None` when there is no segment, or when another
    /// reference to it is alive, so a reader could hold a slice of it.
    pub fn with_last_exclusive<R>(&self, f: impl FnOnce(&mut MappedFile) -> R) -> Option<R> {
        let mut segs = self.segments.write();
        let last = segs.last_mut()?;
        Arc::get_mut(last).map(f)
    }

    /// The segment holding `offset`.
    pub fn find(&self, offset: i64) -> Option<Arc<MappedFile>> {
        let segs = self.segments.read();
        let first = segs.first()?.file_from_offset();
        if offset < first {
            return None;
        }
        let idx = usize::try_from((offset - first) / self.segment_size as i64).ok()?;
        segs.get(idx).cloned()
    }

    /// Lowest offset still stored.
    pub fn min_offset(&self) -> i64 {
        self.segments
            .read()
            .first()
            .map_or(0, |s| s.file_from_offset())
    }

    /// Offset just past the last written byte.
    pub fn max_offset(&self) -> i64 {
        self.segments
            .read()
            .last()
            .map_or(0, |s| s.file_from_offset() + s.wrote_position() as i64)
    }

    /// Appends a new, empty segment starting at `offset` (taking the one made
    /// ahead of need if it matches) and asks for the one after it.
    pub fn create_segment(&self, offset: i64) -> Result<Arc<MappedFile>> {
        let mut high = self.high.lock();
        let ready = self
            .prepared
            .lock()
            .take()
            .filter(|f| f.file_from_offset() == offset);
        let file = match ready {
            Some(f) => f,
            None => {
                let path = self.dir.join(segment_name(offset));
                Arc::new(
                    MappedFile::create_allocated(&path, offset, self.segment_size).map_err(
                        |e| StoreError::io(format!("create segment {}", path.display()), e),
                    )?,
                )
            }
        };
        self.segments.write().push(Arc::clone(&file));
        *high = (*high).max(offset);
        drop(high);
        if let Some(a) = self.allocator.lock().as_ref() {
            let _ = a.requests.send(offset + self.segment_size as i64);
        }
        Ok(file)
    }

    /// Deletes every segment that starts after `offset` (left behind by a
    /// crash, or made ahead of need) and returns how many went.
    pub fn delete_after(&self, offset: i64) -> Result<usize> {
        let removed: Vec<Arc<MappedFile>> = {
            let mut segs = self.segments.write();
            let keep = segs
                .iter()
                .take_while(|s| s.file_from_offset() <= offset)
                .count();
            segs.drain(keep..).collect()
        };
        let n = removed.len();
        for seg in removed {
            let path = seg.path().to_owned();
            // A segment made ahead of need was never written: its first
            // record's size field is still zero. Anything else is a crash's
            // leftover and worth a warning.
            let unused = never_written(&path);
            drop(seg);
            std::fs::remove_file(&path).map_err(|e| {
                StoreError::io(format!("delete dirty segment {}", path.display()), e)
            })?;
            if unused {
                tracing::debug!(path = %path.display(), "deleted unused pre-allocated CommitLog segment");
                continue;
            }
            tracing::warn!(path = %path.display(), "deleted CommitLog segment beyond the valid tail");
        }
        Ok(n)
    }

    /// Cuts the log at `offset` while readers may be reading it: the segment
    /// holding `offset` is replaced by a copy of its bytes below it
    /// ([`MappedFile::rewrite_prefix`]; readers holding the old one keep
    /// their bytes), every later segment and the one made ahead of need are
    /// deleted. `offset` at the end of a full last segment cuts nothing.
    /// The caller holds the put lock (no append meanwhile) and checked that
    /// `offset` is a record boundary within `[min, max]`.
    pub fn truncate_to(&self, offset: i64) -> Result<()> {
        let size = self.segment_size as i64;
        let mut high = self.high.lock();
        // The allocator holds `high` while it creates a file, so none is in
        // the making; the prepared one lies past every listed segment.
        if let Some(p) = self.prepared.lock().take() {
            let path = p.path().to_owned();
            drop(p);
            std::fs::remove_file(&path)
                .map_err(|e| StoreError::io(format!("delete {}", path.display()), e))?;
        }
        let holding = self
            .snapshot()
            .into_iter()
            .find(|s| s.file_from_offset() <= offset && offset < s.file_from_offset() + size);
        if let Some(seg) = holding {
            let keep = usize::try_from(offset - seg.file_from_offset()).unwrap_or(0);
            let fresh = Arc::new(seg.rewrite_prefix(keep).map_err(|e| {
                StoreError::io(
                    format!("truncate {} to {keep} bytes", seg.path().display()),
                    e,
                )
            })?);
            let mut segs = self.segments.write();
            if let Some(slot) = segs
                .iter_mut()
                .find(|s| s.file_from_offset() == seg.file_from_offset())
            {
                *slot = fresh;
            }
        }
        let removed: Vec<Arc<MappedFile>> = {
            let mut segs = self.segments.write();
            // The segment holding `offset` stays (empty when `offset` is
            // its start).
            let keep = segs
                .iter()
                .take_while(|s| s.file_from_offset() <= offset)
                .count();
            segs.drain(keep..).collect()
        };
        for seg in removed {
            let path = seg.path().to_owned();
            drop(seg);
            std::fs::remove_file(&path).map_err(|e| {
                StoreError::io(format!("delete truncated segment {}", path.display()), e)
            })?;
            tracing::info!(path = %path.display(), offset, "deleted a CommitLog segment past the truncation point");
        }
        crate::root::sync_dir(&self.dir)?;
        *high = self
            .segments
            .read()
            .last()
            .map_or(-1, |s| s.file_from_offset());
        Ok(())
    }

    /// Removes the oldest segment from the list (retention) and deletes its
    /// file once no reader holds it.
    pub fn delete_first(&self) -> Result<Option<i64>> {
        let first = {
            let mut segs = self.segments.write();
            if segs.len() <= 1 {
                return Ok(None);
            }
            segs.remove(0)
        };
        let from = first.file_from_offset();
        let path = first.path().to_owned();
        drop(first);
        std::fs::remove_file(&path)
            .map_err(|e| StoreError::io(format!("delete segment {}", path.display()), e))?;
        Ok(Some(from))
    }
}

impl Drop for SegmentQueue {
    fn drop(&mut self) {
        self.stop_allocator();
    }
}

/// Whether the segment's first record slot is still zero (read through
/// the file, which sees the same page cache as the mapping).
fn never_written(path: &Path) -> bool {
    use std::io::Read as _;
    let mut first = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut first))
        .is_ok()
        && first == [0; 4]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(segment_name(1 << 30), "00000000001073741824");
        assert_eq!(parse_segment_name("00000000001073741824"), Some(1 << 30));
        assert_eq!(parse_segment_name("0000000000107374182"), None);
        assert_eq!(parse_segment_name("0000000000107374182x"), None);
    }

    #[test]
    fn create_find_and_preallocate() {
        let dir = tempfile::tempdir().unwrap();
        let q = SegmentQueue::load(dir.path(), 4096).unwrap();
        q.start_allocator(false);
        let a = q.create_segment(0).unwrap();
        // The allocator makes the next one; wait for it (bounded).
        let next = dir.path().join(segment_name(4096));
        for _ in 0..500 {
            if q.prepared.lock().is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert!(next.exists(), "next segment created ahead of need");
        let b = q.create_segment(4096).unwrap();
        assert_eq!(b.file_from_offset(), 4096);
        assert!(Arc::ptr_eq(&q.find(5000).unwrap(), &b));
        assert!(Arc::ptr_eq(&q.find(0).unwrap(), &a));
        assert!(q.find(8192).is_none());
        q.stop_allocator();
        drop((a, b));
        assert_eq!(q.delete_after(0).unwrap(), 1);
        drop(q);
        // Junk in the folder is a named error.
        std::fs::write(dir.path().join("junk"), b"x").unwrap();
        assert!(matches!(
            SegmentQueue::load(dir.path(), 4096),
            Err(StoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn wrong_size_and_gaps_are_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(segment_name(0)), vec![0u8; 4096]).unwrap();
        std::fs::write(dir.path().join(segment_name(8192)), vec![0u8; 4096]).unwrap();
        assert!(matches!(
            SegmentQueue::load(dir.path(), 4096),
            Err(StoreError::Corrupt { offset: 8192, .. })
        ));
        std::fs::write(dir.path().join(segment_name(8192)), vec![0u8; 100]).unwrap();
        std::fs::rename(
            dir.path().join(segment_name(8192)),
            dir.path().join(segment_name(4096)),
        )
        .unwrap();
        assert!(matches!(
            SegmentQueue::load(dir.path(), 4096),
            Err(StoreError::Corrupt { offset: 4096, .. })
        ));
    }

    /// What a crash during segment creation leaves: a `.tmp` file (now) or
    /// an empty last segment (older versions). Both go at load; an empty
    /// segment that is not the last is still corruption.
    #[test]
    fn half_created_segments_are_removed_at_load() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(segment_name(0)), vec![0u8; 4096]).unwrap();
        let tmp = dir.path().join(format!("{}.tmp", segment_name(4096)));
        std::fs::write(&tmp, b"").unwrap();
        let empty = dir.path().join(segment_name(4096));
        std::fs::write(&empty, b"").unwrap();
        let q = SegmentQueue::load(dir.path(), 4096).unwrap();
        assert_eq!(q.segments.read().len(), 1);
        assert!(!tmp.exists() && !empty.exists());
        drop(q);

        std::fs::write(&empty, b"").unwrap();
        std::fs::write(dir.path().join(segment_name(8192)), vec![0u8; 4096]).unwrap();
        assert!(matches!(
            SegmentQueue::load(dir.path(), 4096),
            Err(StoreError::Corrupt { offset: 4096, .. })
        ));
    }

    /// Retention deleted a segment while a request for it still waited in
    /// the allocator's queue: the file must not come back.
    #[test]
    fn a_stale_allocation_request_does_not_bring_back_a_deleted_segment() {
        let dir = tempfile::tempdir().unwrap();
        let q = SegmentQueue::load(dir.path(), 4096).unwrap();
        q.start_allocator(false);
        for offset in [0, 4096, 8192] {
            drop(q.create_segment(offset).unwrap());
        }
        assert_eq!(q.delete_first().unwrap(), Some(0));
        if let Some(a) = q.allocator.lock().as_ref() {
            a.requests.send(0).unwrap();
            a.requests.send(4096).unwrap();
        }
        // Joins the thread after it has handled every queued request.
        q.stop_allocator();
        assert!(!dir.path().join(segment_name(0)).exists());
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    }

    /// A created segment has its full size under its real name and no
    /// `.tmp` file is left behind.
    #[test]
    fn created_segments_are_whole_under_their_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(segment_name(0));
        let f = MappedFile::create_allocated(&path, 0, 4096).unwrap();
        assert_eq!(f.path(), path.as_path());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 4096);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
