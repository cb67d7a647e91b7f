//! Value types of the consume-queue contract.

use crate::DispatchRequest;

/// A (topic, queue id) pair.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueKey {
    /// Topic.
    pub topic: String,
    /// Queue id.
    pub queue_id: i32,
}

impl QueueKey {
    /// The pair.
    pub fn new(topic: impl Into<String>, queue_id: i32) -> Self {
        Self {
            topic: topic.into(),
            queue_id,
        }
    }
}

/// One unit to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CqPut {
    /// Topic.
    pub topic: String,
    /// Queue id.
    pub queue_id: i32,
    /// Queue offset the record was given at append.
    pub queue_offset: i64,
    /// CommitLog offset of the record.
    pub phy_offset: i64,
    /// Record size in bytes.
    pub size: i32,
    /// Filter code (tag hash, or delivery time in the schedule topic).
    pub tags_code: i64,
    /// Store timestamp of the record, ms.
    pub store_timestamp: i64,
}

impl From<&DispatchRequest> for CqPut {
    fn from(r: &DispatchRequest) -> Self {
        Self {
            topic: r.topic.clone(),
            queue_id: r.queue_id,
            queue_offset: r.consume_queue_offset,
            phy_offset: r.commit_log_offset,
            size: r.msg_size,
            tags_code: r.tags_code,
            store_timestamp: r.store_timestamp,
        }
    }
}

/// One unit read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CqUnit {
    /// Its queue offset.
    pub queue_offset: i64,
    /// CommitLog offset of the record.
    pub phy_offset: i64,
    /// Record size in bytes.
    pub size: i32,
    /// Filter code.
    pub tags_code: i64,
}

/// Which side of a timestamp [`super::ConsumeQueueStore::offset_by_time`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Boundary {
    /// The first unit stored at or after the time.
    #[default]
    Lower,
    /// The last unit stored at or before the time.
    Upper,
}

/// Reads a record's store timestamp from the CommitLog, for backends that do
/// not keep it in the unit.
pub trait StoreTimeSource {
    /// STORETIMESTAMP of the record at `phy_offset`, or `None` if unreadable.
    fn store_time(&self, phy_offset: i64, size: i32) -> Option<i64>;
}

/// Plain numbers about a backend; zero where a number does not apply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CqStats {
    /// Queues known.
    pub queues: u64,
    /// File descriptors the backend holds open.
    pub open_files: u64,
    /// Memory maps the backend holds.
    pub mapped_files: u64,
    /// Bytes mapped.
    pub mapped_bytes: u64,
    /// RocksDB: bytes in memtables.
    pub memtable_bytes: u64,
    /// RocksDB: estimated bytes compaction still has to rewrite.
    pub pending_compaction_bytes: u64,
    /// RocksDB: block cache bytes in use.
    pub block_cache_usage_bytes: u64,
    /// RocksDB: whether writes are stalled or stopped right now (0 or 1).
    pub write_stalled: u64,
    /// RocksDB: cumulative write-stall time, microseconds.
    pub write_stall_micros: u64,
    /// Units waiting in a group-commit queue.
    pub pending_writes: u64,
}
