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

/// A (topic, queue id) seen through a borrow: maps keyed by [`QueueKey`] can
/// be searched with `&(topic, queue_id) as &dyn AsQueueKey` without building
/// (and allocating) a key. Hashes and compares exactly as `QueueKey` does.
pub trait AsQueueKey {
    /// Topic.
    fn topic(&self) -> &str;
    /// Queue id.
    fn queue_id(&self) -> i32;
}

impl AsQueueKey for QueueKey {
    fn topic(&self) -> &str {
        &self.topic
    }
    fn queue_id(&self) -> i32 {
        self.queue_id
    }
}

impl AsQueueKey for (&str, i32) {
    fn topic(&self) -> &str {
        self.0
    }
    fn queue_id(&self) -> i32 {
        self.1
    }
}

impl<'a> std::borrow::Borrow<dyn AsQueueKey + 'a> for QueueKey {
    fn borrow(&self) -> &(dyn AsQueueKey + 'a) {
        self
    }
}

impl std::hash::Hash for dyn AsQueueKey + '_ {
    // The derived `Hash` of `QueueKey`: the topic, then the queue id.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.topic().hash(state);
        self.queue_id().hash(state);
    }
}

impl PartialEq for dyn AsQueueKey + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.queue_id() == other.queue_id() && self.topic() == other.topic()
    }
}

impl Eq for dyn AsQueueKey + '_ {}

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
    /// Of those, light message queues (`%LMQ%` topics).
    pub lmq_queues: u64,
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
    /// RocksDB: compactions running now.
    pub running_compactions: u64,
    /// RocksDB: block cache bytes in use.
    pub block_cache_usage_bytes: u64,
    /// RocksDB: memory of its table readers held outside the block cache,
    /// estimated (index and filter blocks are kept in the cache).
    pub table_readers_bytes: u64,
    /// RocksDB: whether writes are stalled or stopped right now (0 or 1).
    pub write_stalled: u64,
    /// RocksDB: cumulative write-stall time, microseconds.
    pub write_stall_micros: u64,
    /// Units waiting in a group-commit queue.
    pub pending_writes: u64,
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::{AsQueueKey, QueueKey};

    #[test]
    fn a_borrowed_key_finds_what_an_owned_key_stored() {
        let mut m: HashMap<QueueKey, u32> = HashMap::new();
        m.insert(QueueKey::new("TopicA", 3), 1);
        m.insert(QueueKey::new("TopicA", 4), 2);
        m.insert(QueueKey::new("TopicB", 3), 3);
        assert_eq!(m.get(&("TopicA", 4) as &dyn AsQueueKey), Some(&2));
        assert_eq!(m.get(&("TopicB", 3) as &dyn AsQueueKey), Some(&3));
        assert_eq!(m.get(&("TopicB", 4) as &dyn AsQueueKey), None);
        assert_eq!(m.get(&("Topic", 3) as &dyn AsQueueKey), None);
    }
}
