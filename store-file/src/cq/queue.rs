//! One consume queue: its segment files, its offsets, and the lazy mapping of
//! its segments.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::{Mutex, RwLock};
use rmq_common::cq::{CqError, QueueKey};

use super::unit::UNIT_I64;
use super::{corrupt, io_err, Env};
use crate::mapped_file::MappedFile;

/// One segment file; mapped only while its slot holds a mapping.
#[derive(Debug)]
pub(crate) struct Segment {
    /// Byte offset of its first unit (its file name).
    pub(crate) start: i64,
    /// The mapping, while the pool allows it.
    pub(crate) slot: Mutex<Option<Arc<MappedFile>>>,
}

impl Segment {
    /// An unmapped segment.
    pub(crate) fn new(start: i64) -> Self {
        Self {
            start,
            slot: Mutex::new(None),
        }
    }

    /// The mapping, if there is one now.
    pub(crate) fn mapped(&self) -> Option<Arc<MappedFile>> {
        self.slot.lock().clone()
    }
}

/// What a queue's lock protects.
///
/// Invariants: `segments` are contiguous (each starts where the previous
/// ends); every segment but the last is full; `segments[0].start / 20 <= min
/// <= max <= end of the last segment / 20`; every unit in `[min, max)` is a
/// record or a blank filler, and the unit at `max - 1` is a record when
/// `min < max`.
#[derive(Debug)]
pub(crate) struct QueueState {
    /// Segment files, oldest first.
    pub(crate) segments: VecDeque<Segment>,
    /// Lowest readable queue offset.
    pub(crate) min: i64,
    /// Next queue offset to write.
    pub(crate) max: i64,
    /// CommitLog offset of the unit at `max - 1`; -1 when the queue is empty.
    pub(crate) last_phy: i64,
    /// End of that record in the CommitLog; -1 when the queue is empty.
    pub(crate) max_phy_end: i64,
    /// The last record unit still on disk below `min` (offset, CommitLog
    /// offset), when `min` was raised past it: lets a restart tell that a
    /// persisted min offset belongs to these files.
    pub(crate) min_pred: Option<(i64, i64)>,
    /// The topic was deleted; a writer holding this handle looks it up again.
    pub(crate) deleted: bool,
}

impl QueueState {
    /// A queue without files.
    pub(crate) fn new() -> Self {
        Self {
            segments: VecDeque::new(),
            min: 0,
            max: 0,
            last_phy: -1,
            max_phy_end: -1,
            min_pred: None,
            deleted: false,
        }
    }

    /// No readable unit.
    pub(crate) fn is_empty(&self) -> bool {
        self.min >= self.max
    }

    /// Index of the segment holding byte `byte`.
    pub(crate) fn index_of(&self, byte: i64, file_size: i64) -> Option<usize> {
        let first = self.segments.front()?.start;
        if byte < first {
            return None;
        }
        let idx = usize::try_from((byte - first) / file_size).ok()?;
        (idx < self.segments.len()).then_some(idx)
    }

    /// The segment starting at byte `start`.
    pub(crate) fn segment_at(&self, start: i64, file_size: i64) -> Option<&Segment> {
        let idx = self.index_of(start, file_size)?;
        self.segments.get(idx).filter(|s| s.start == start)
    }

    /// Lowest queue offset the files hold.
    pub(crate) fn files_lo(&self) -> i64 {
        self.segments
            .front()
            .map_or(self.min, |s| s.start / UNIT_I64)
    }
}

/// A queue and the bookkeeping its flush needs.
#[derive(Debug)]
pub(crate) struct QueueHandle {
    /// Topic and queue id.
    pub(crate) key: QueueKey,
    /// Identity in the mapping pool (a recreated queue gets a new one).
    pub(crate) uid: u64,
    /// `<root>/<topic>/<queueId>`.
    pub(crate) dir: PathBuf,
    /// Bytes per segment.
    pub(crate) file_size: i64,
    me: Weak<QueueHandle>,
    /// Units were appended since the last flush.
    pub(crate) dirty: AtomicBool,
    /// Files were created or removed since the last flush.
    pub(crate) dir_dirty: AtomicBool,
    /// The tail was loaded from disk and no unit was appended since: it may
    /// still sit unsynced in the page cache after a process crash, so a replay
    /// that hits it must sync it (see [`QueueHandle::note_replay`]).
    pub(crate) recovered: AtomicBool,
    /// Byte offset from which segments need an fsync through the file system
    /// (their mappings believe they are clean); `i64::MAX` when none.
    pub(crate) resync_from: AtomicI64,
    /// Offsets and segments.
    pub(crate) state: RwLock<QueueState>,
}

impl QueueHandle {
    /// A handle owning `state`.
    pub(crate) fn new(
        key: QueueKey,
        uid: u64,
        env: &Env,
        state: QueueState,
        recovered: bool,
    ) -> Arc<Self> {
        let dir = env.root.join(&key.topic).join(key.queue_id.to_string());
        Arc::new_cyclic(|me| Self {
            key,
            uid,
            dir,
            file_size: env.file_size,
            me: me.clone(),
            dirty: AtomicBool::new(false),
            dir_dirty: AtomicBool::new(false),
            recovered: AtomicBool::new(recovered),
            resync_from: AtomicI64::new(i64::MAX),
            state: RwLock::new(state),
        })
    }

    /// Path of the segment starting at byte `start`.
    pub(crate) fn path(&self, start: i64) -> PathBuf {
        Env::segment_path(&self.dir, start)
    }

    /// Bytes of segment `idx` below the queue's max.
    pub(crate) fn valid_len(&self, st: &QueueState, idx: usize) -> usize {
        let Some(seg) = st.segments.get(idx) else {
            return 0;
        };
        let end = st.max.saturating_mul(UNIT_I64) - seg.start;
        usize::try_from(end.clamp(0, self.file_size)).unwrap_or(0)
    }

    /// The mapping of segment `idx`, mapping it if needed (within the budget).
    pub(crate) fn map_segment(
        &self,
        st: &QueueState,
        idx: usize,
        env: &Env,
    ) -> Result<Arc<MappedFile>, CqError> {
        let seg = st
            .segments
            .get(idx)
            .ok_or_else(|| corrupt(&self.dir, format!("segment {idx} does not exist")))?;
        let mut slot = seg.slot.lock();
        if let Some(m) = slot.as_ref() {
            env.pool.touch((self.uid, seg.start));
            return Ok(m.clone());
        }
        env.pool.make_room(Some((self.uid, st)))?;
        let path = self.path(seg.start);
        let file = MappedFile::open(&path, seg.start, self.file_size as usize)
            .map_err(io_err("map", &path))?;
        file.set_wrote_position(self.valid_len(st, idx));
        file.advise_random().map_err(io_err("madvise", &path))?;
        let file = Arc::new(file);
        *slot = Some(file.clone());
        env.pool.insert((self.uid, seg.start), self.me.clone());
        Ok(file)
    }

    /// Creates, maps and appends the segment starting at byte `start`.
    pub(crate) fn create_segment(
        &self,
        st: &mut QueueState,
        start: i64,
        env: &Env,
    ) -> Result<Arc<MappedFile>, CqError> {
        if let Some(last) = st.segments.back() {
            if start != last.start + self.file_size {
                return Err(corrupt(
                    &self.dir,
                    format!("new segment at {start} does not follow {}", last.start),
                ));
            }
        } else if !self.dir.is_dir() {
            std::fs::create_dir_all(&self.dir).map_err(io_err("create", &self.dir))?;
            // Not synced here, on the dispatch path (a sync per new queue
            // made dispatch fall seconds behind 100 new LMQs): the new
            // folder's entry in its topic folder and a new topic folder's
            // entry in the root are synced by the next flush, before the
            // dispatched checkpoint can claim anything in them.
            let mut dirs = env.pending_dirs.lock();
            if let Some(topic_dir) = self.dir.parent() {
                dirs.insert(topic_dir.to_owned());
            }
            dirs.insert(env.root.clone());
        }
        env.pool.make_room(Some((self.uid, &*st)))?;
        let path = self.path(start);
        let file = MappedFile::create(&path, start, self.file_size as usize)
            .map_err(io_err("create", &path))?;
        file.advise_random().map_err(io_err("madvise", &path))?;
        let file = Arc::new(file);
        let seg = Segment::new(start);
        *seg.slot.lock() = Some(file.clone());
        st.segments.push_back(seg);
        env.pool.insert((self.uid, start), self.me.clone());
        self.dir_dirty.store(true, Ordering::Release);
        Ok(file)
    }

    /// Unmaps and deletes a segment that was taken out of the state.
    pub(crate) fn destroy_segment(&self, seg: Segment, env: &Env) -> Result<(), CqError> {
        let path = self.path(seg.start);
        let mapped = seg.slot.lock().take();
        if mapped.is_some() {
            env.pool.remove((self.uid, seg.start));
        }
        // Dropping the last reference unmaps; readers share the queue lock
        // that our caller holds exclusively, so none holds a clone now.
        drop(mapped);
        self.dir_dirty.store(true, Ordering::Release);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_err("delete", &path)(e)),
            _ => Ok(()),
        }
    }

    /// Drops every mapping of this queue (close, delete).
    pub(crate) fn unmap_all(&self, st: &QueueState, env: &Env) {
        for seg in &st.segments {
            if seg.slot.lock().take().is_some() {
                env.pool.remove((self.uid, seg.start));
            }
        }
    }
}
