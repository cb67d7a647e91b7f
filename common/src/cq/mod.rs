//! The consume-queue index: per (topic, queue), a dense sequence of units that
//! point into the CommitLog. Backends implement [`ConsumeQueueStore`]; the
//! in-memory [`MemoryConsumeQueueStore`] is the model both real backends are
//! tested against.
//!
//! The trait is synchronous: callers on async tasks use `spawn_blocking` or a
//! dedicated thread.

mod error;
mod memory;
mod types;

pub use error::CqError;
pub use memory::MemoryConsumeQueueStore;
pub use types::{AsQueueKey, Boundary, CqPut, CqStats, CqUnit, QueueKey, StoreTimeSource};

/// Told when an asynchronous put has been written (or failed).
pub type PutCallback = Box<dyn FnOnce(Result<(), CqError>) + Send>;

use crate::config::CqBackend;

/// A consume-queue backend.
///
/// Offsets are queue offsets (unit numbers) unless named `phy_*`, which are
/// CommitLog byte offsets. An unknown queue behaves as an empty one with
/// min = max = 0.
pub trait ConsumeQueueStore: Send + Sync + std::fmt::Debug {
    /// Which engine this is (for logs and metric labels).
    fn backend(&self) -> CqBackend;

    /// Appends units. Idempotent: a unit whose record ends at or before the
    /// highest record end already in its queue, or whose queue offset is
    /// below the queue's next offset, is skipped. A queue that receives its
    /// first unit at offset `k > 0` starts with min offset `k`.
    /// `dispatched_to` is the CommitLog offset reput has processed up to
    /// (including records that produce no unit); it becomes the
    /// [`ConsumeQueueStore::dispatched_phy_offset`] once this call returns.
    fn put(&self, batch: &[CqPut], dispatched_to: i64) -> Result<(), CqError>;

    /// Like [`ConsumeQueueStore::put`], but may return before the units are
    /// written: `done` is called once they are readable (or failed). Calls
    /// complete in the order they were made. A backend with a group-commit
    /// writer queues the batch (blocking while its bounded queue is full);
    /// the default writes at once.
    fn put_async(&self, batch: Vec<CqPut>, dispatched_to: i64, done: PutCallback) {
        done(self.put(&batch, dispatched_to));
    }

    /// Appends up to `max_count` units starting at queue offset `from` to
    /// `out`. Below the min offset: [`CqError::Compacted`] with the min. At or
    /// past the max offset: nothing (the normal long-polling case).
    fn get(
        &self,
        topic: &str,
        queue_id: i32,
        from: i64,
        max_count: usize,
        out: &mut Vec<CqUnit>,
    ) -> Result<(), CqError>;

    /// Lowest readable queue offset.
    fn min_offset(&self, topic: &str, queue_id: i32) -> Result<i64, CqError>;

    /// Next queue offset to be written (exclusive max).
    fn max_offset(&self, topic: &str, queue_id: i32) -> Result<i64, CqError>;

    /// CommitLog offset up to which records have been dispatched; where reput
    /// restarts.
    fn dispatched_phy_offset(&self) -> Result<i64, CqError>;

    /// Removes every unit whose CommitLog offset is at or beyond `phy_offset`
    /// (the valid CommitLog tail after recovery) and lowers the dispatched
    /// offset to it.
    fn truncate_from_phy(&self, phy_offset: i64) -> Result<(), CqError>;

    /// After CommitLog segments below `commit_log_min` are deleted: raises each
    /// queue's min offset to its first unit at or above that offset.
    fn correct_min_offset(&self, commit_log_min: i64) -> Result<(), CqError>;

    /// Queue offset for a store timestamp. [`Boundary::Lower`]: the first unit
    /// stored at or after `timestamp_ms` (the max offset if none is).
    /// [`Boundary::Upper`]: the last unit stored at or before it (the min
    /// offset if none is). `times` reads store times a backend does not keep.
    fn offset_by_time(
        &self,
        topic: &str,
        queue_id: i32,
        timestamp_ms: i64,
        boundary: Boundary,
        times: &dyn StoreTimeSource,
    ) -> Result<i64, CqError>;

    /// Makes everything put so far, and the dispatched offset, durable.
    fn flush(&self) -> Result<(), CqError>;

    /// Removes every queue of `topic`.
    fn delete_topic(&self, topic: &str) -> Result<(), CqError>;

    /// Every queue that has ever received a unit and was not deleted.
    fn queues(&self) -> Result<Vec<QueueKey>, CqError>;

    /// [`ConsumeQueueStore::queues`] without the light message queues (which
    /// a backend may keep on disk only); the put path's table at open.
    fn queues_except_lmq(&self) -> Result<Vec<QueueKey>, CqError> {
        let mut q = self.queues()?;
        q.retain(|k| !crate::names::is_lmq(&k.topic));
        Ok(q)
    }

    /// Whether `queues` would list (topic, queue_id), without listing them.
    fn has_queue(&self, topic: &str, queue_id: i32) -> Result<bool, CqError> {
        Ok(self
            .queues()?
            .iter()
            .any(|q| q.topic == topic && q.queue_id == queue_id))
    }

    /// Queues of light message queues (`%LMQ%` topics) known. Cheap: the
    /// put path reads it for `maxLmqConsumeQueueNum`.
    fn lmq_queues(&self) -> u64 {
        self.queues().map_or(0, |q| {
            q.iter().filter(|k| crate::names::is_lmq(&k.topic)).count() as u64
        })
    }

    /// Plain numbers about the backend; metrics read them.
    fn stats(&self) -> CqStats;

    /// Final flush and release of files and threads. Further calls fail with
    /// [`CqError::Closed`].
    fn close(&self) -> Result<(), CqError>;
}
