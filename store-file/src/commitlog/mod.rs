//! The CommitLog: every message of every topic appended to one log of
//! fixed-size mapped segments, in RocketMQ's V1 record layout.

mod append;
mod flush;
mod lmq;
mod recovery;
mod replica;
mod segments;
mod truncate;

pub use append::AppendResult;
pub use flush::{FlushCallback, FlushFailed, FlushService, FlushSettings};
pub use lmq::{LmqOffsetSource, LMQ_OFFSETS_KEPT};
pub use recovery::{RecoverOptions, RecoveryReport};
pub use segments::{parse_segment_name, segment_name, SegmentQueue};

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use rmq_common::cq::QueueKey;
use rmq_common::service::Signal;
use rmq_common::time::Clock;
use rmq_common::{FlushDiskType, StoreConfig};

use crate::error::{Result, StoreError};
use crate::mapped_file::{FlushMethod, MappedFile};

/// Next queue offset of every (topic, queue), assigned under the put lock.
#[derive(Debug, Default)]
struct PutState {
    queue_offsets: HashMap<String, HashMap<i32, i64>>,
    /// Light message queues (`enableLmq`), kept apart and loaded lazily.
    lmq: lmq::LmqOffsets,
}

/// Pending SYNC_FLUSH waiters, and whether the flush thread has stopped
/// taking them.
#[derive(Default)]
struct FlushQueue {
    requests: Vec<(i64, FlushCallback)>,
    stopping: bool,
}

impl std::fmt::Debug for FlushQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlushQueue")
            .field("requests", &self.requests.len())
            .field("stopping", &self.stopping)
            .finish()
    }
}

/// The shared, append-only message log.
#[derive(Debug)]
pub struct CommitLog {
    segments: SegmentQueue,
    segment_size: usize,
    max_message_size: usize,
    /// `enableLmq`: multi-dispatched messages take LMQ offsets at append.
    enable_lmq: bool,
    flush_disk_type: FlushDiskType,
    flush_method: FlushMethod,
    clock: Arc<dyn Clock>,
    put: Mutex<PutState>,
    /// When the append holding the put lock took it, ms (0: none holds
    /// it); Java's `pageCacheLockTimeMills` is now minus this.
    put_locked_since: AtomicI64,
    flushed_where: AtomicI64,
    last_store_timestamp: AtomicI64,
    flushed_store_timestamp: AtomicI64,
    poisoned: Mutex<Option<String>>,
    flush_queue: Mutex<FlushQueue>,
    /// Wakes the flush service; replaced each time one is started.
    flush_signal: Mutex<Arc<Signal>>,
    /// Told how long each flush pass that wrote something took (metrics).
    flush_observer: ObserverCell,
    /// Held by a flush pass and by a runtime truncation, so a pass that
    /// read the segments before a cut cannot raise the flushed offset past
    /// it afterwards.
    flush_pass: Mutex<()>,
}

/// Holds the flush observer; `Debug` without showing the closure.
#[derive(Default)]
struct ObserverCell(std::sync::OnceLock<FlushObserver>);

impl std::fmt::Debug for ObserverCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "ObserverCell(set)"
        } else {
            "ObserverCell(unset)"
        })
    }
}

/// Receives the duration of each flush pass that synced data.
pub type FlushObserver = Box<dyn Fn(std::time::Duration) + Send + Sync>;

impl CommitLog {
    /// Opens the CommitLog under `config.commit_log_dir()` and recovers its
    /// valid tail (see [`RecoverOptions`]).
    pub fn open(
        config: &StoreConfig,
        clock: Arc<dyn Clock>,
        options: RecoverOptions,
    ) -> Result<(Self, RecoveryReport)> {
        // Both sizes were range-checked by `StoreConfig::validate`.
        let segment_size = config.mapped_file_size_commit_log_bytes as usize;
        let segments = SegmentQueue::load(&config.commit_log_dir(), segment_size)?;
        let log = Self {
            segments,
            segment_size,
            max_message_size: config.max_message_size_bytes as usize,
            enable_lmq: config.enable_lmq,
            flush_disk_type: config.flush_disk_type,
            flush_method: FlushMethod::Fdatasync,
            clock,
            put: Mutex::new(PutState::default()),
            put_locked_since: AtomicI64::new(0),
            flushed_where: AtomicI64::new(0),
            last_store_timestamp: AtomicI64::new(0),
            flushed_store_timestamp: AtomicI64::new(0),
            poisoned: Mutex::new(None),
            flush_queue: Mutex::new(FlushQueue::default()),
            flush_signal: Mutex::new(Signal::new()),
            flush_observer: ObserverCell::default(),
            flush_pass: Mutex::new(()),
        };
        let report = log.recover(options)?;
        log.segments.start_allocator(config.warm_mapped_file_enable);
        Ok((log, report))
    }

    /// Chooses how flushes sync (for the msync/fdatasync comparison bench).
    pub fn set_flush_method(&mut self, method: FlushMethod) {
        self.flush_method = method;
    }

    /// Sets the observer of flush durations (once; later calls are ignored).
    pub fn set_flush_observer(&self, observer: FlushObserver) {
        let _ = self.flush_observer.0.set(observer);
    }

    /// ASYNC_FLUSH or SYNC_FLUSH.
    pub fn flush_disk_type(&self) -> FlushDiskType {
        self.flush_disk_type
    }

    /// Lowest offset still stored.
    pub fn min_offset(&self) -> i64 {
        self.segments.min_offset()
    }

    /// Offset just past the last complete record; readers may read below it.
    pub fn max_offset(&self) -> i64 {
        self.segments.max_offset()
    }

    /// Offset up to which the log is known durable.
    pub fn flushed_offset(&self) -> i64 {
        self.flushed_where.load(Ordering::Acquire)
    }

    /// Store time of the newest record covered by the last flush.
    pub fn flushed_store_timestamp(&self) -> i64 {
        self.flushed_store_timestamp.load(Ordering::Acquire)
    }

    /// Segment size in bytes.
    pub fn segment_size(&self) -> usize {
        self.segment_size
    }

    /// Start of the segment after the one holding `offset`.
    pub fn roll_next(&self, offset: i64) -> i64 {
        let size = self.segment_size as i64;
        (offset / size + 1) * size
    }

    /// The bytes `offset..offset+size`, if they lie within one segment below
    /// the max offset.
    pub fn select(&self, offset: i64, size: usize) -> Option<Selected> {
        let seg = self.segments.find(offset)?;
        let pos = usize::try_from(offset - seg.file_from_offset()).ok()?;
        seg.slice(pos, size)?;
        Some(Selected {
            seg,
            pos,
            len: size,
        })
    }

    /// Everything written from `offset` to the end of its segment's data.
    pub fn select_from(&self, offset: i64) -> Option<Selected> {
        let seg = self.segments.find(offset)?;
        let pos = usize::try_from(offset - seg.file_from_offset()).ok()?;
        let len = seg.wrote_position().checked_sub(pos)?;
        Some(Selected { seg, pos, len })
    }

    /// The next queue offset of a queue.
    pub fn queue_offset(&self, topic: &str, queue_id: i32) -> i64 {
        self.put
            .lock()
            .queue_offsets
            .get(topic)
            .and_then(|q| q.get(&queue_id))
            .copied()
            .unwrap_or(0)
    }

    /// Replaces the queue offset table (rebuilt from the consume queues'
    /// max offsets after recovery, once dispatch has caught up).
    pub fn set_queue_offsets(&self, offsets: impl IntoIterator<Item = (QueueKey, i64)>) {
        let mut table: HashMap<String, HashMap<i32, i64>> = HashMap::new();
        for (k, v) in offsets {
            table.entry(k.topic).or_default().insert(k.queue_id, v);
        }
        self.put.lock().queue_offsets = table;
    }

    /// Forgets the queue offsets of a deleted topic (or LMQ).
    pub fn remove_topic_offsets(&self, topic: &str) {
        let mut put = self.put.lock();
        put.queue_offsets.remove(topic);
        put.lmq.forget(topic);
    }

    /// Forgets `topic`'s next queue offsets unless an append took an
    /// offset at or past `max` (its consume queue's max offset, by queue)
    /// that dispatch has not written yet; true if forgotten. A topic whose
    /// queues all expired is removed only then.
    pub fn forget_topic_unless_ahead(&self, topic: &str, max: &HashMap<i32, i64>) -> bool {
        let mut put = self.put.lock();
        let ahead = put.queue_offsets.get(topic).is_some_and(|next| {
            next.iter()
                .any(|(q, n)| *n > max.get(q).copied().unwrap_or(0))
        });
        if !ahead {
            put.queue_offsets.remove(topic);
        }
        !ahead
    }

    /// Where an LMQ's next offset comes from the first time it is appended
    /// to (the serving consume queue's max offset).
    pub fn set_lmq_offset_source(&self, source: Arc<dyn LmqOffsetSource>) {
        self.put.lock().lmq.set_source(source);
    }

    /// Forgets LMQ `queue` unless appends took offsets at or past `max`
    /// (the consume queue's max offset) that dispatch has not written yet;
    /// true if forgotten or never held. An expired LMQ is removed only then.
    pub fn forget_lmq_unless_ahead(&self, queue: &str, max: i64) -> bool {
        self.put.lock().lmq.forget_unless_ahead(queue, max)
    }

    /// LMQs whose next offset the put path holds.
    pub fn lmq_offsets_held(&self) -> usize {
        self.put.lock().lmq.len()
    }

    /// Refuses further writes, remembering why.
    pub fn poison(&self, reason: String) {
        tracing::error!(%reason, "CommitLog refuses further writes until restarted");
        self.poisoned.lock().get_or_insert(reason);
    }

    fn check_poisoned(&self) -> Result<()> {
        match self.poisoned.lock().as_ref() {
            Some(reason) => Err(StoreError::Poisoned {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// The segments, oldest first (retention, metrics).
    pub fn segments(&self) -> &SegmentQueue {
        &self.segments
    }

    /// Deletes the oldest segment if it lies wholly below `keep_from`.
    /// Returns the new min offset when one was deleted.
    pub fn delete_oldest_below(&self, keep_from: i64) -> Result<Option<i64>> {
        let snapshot = self.segments.snapshot();
        match snapshot.first() {
            Some(first)
                if snapshot.len() > 1
                    && first.file_from_offset() + self.segment_size as i64 <= keep_from =>
            {
                drop(snapshot);
                self.segments.delete_first()?;
                Ok(Some(self.min_offset()))
            }
            _ => Ok(None),
        }
    }

    /// Stops background threads; call after the flush service has stopped.
    pub fn shutdown(&self) {
        self.segments.stop_allocator();
    }
}

/// A range of one segment, kept mapped while held.
#[derive(Debug, Clone)]
pub struct Selected {
    seg: Arc<MappedFile>,
    pos: usize,
    len: usize,
}

impl Selected {
    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        self.seg.slice(self.pos, self.len).unwrap_or_default()
    }

    /// CommitLog offset of the first byte.
    pub fn offset(&self) -> i64 {
        self.seg.file_from_offset() + self.pos as i64
    }
}

/// The bytes, so a `bytes::Bytes` can own a `Selected` (`Bytes::from_owner`)
/// and a pull answer can go to the socket straight from the mapping.
impl AsRef<[u8]> for Selected {
    fn as_ref(&self) -> &[u8] {
        self.bytes()
    }
}

#[cfg(test)]
mod tests;
