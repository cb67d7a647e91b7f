//! The read path: consume-queue units by queue offset, filtered by tag, then
//! the CommitLog bytes they point at.

use rmq_common::cq::{ConsumeQueueStore, CqError, CqUnit};
use rmq_common::message::record::RecordView;
use rmq_common::names::is_lmq;
use rmq_store_file::commitlog::Selected;
use rmq_store_file::StoreError;

use super::filter::MessageFilter;
use super::MessageStore;

/// Units a pull may look at beyond what it returns (filtered ones included),
/// at least; RocketMQ's `maxFilterMessageCount`.
const MAX_FILTER_MESSAGE_COUNT: usize = 16_000;
/// Units read from the consume queue per call.
const CQ_READ_CHUNK: usize = 256;

/// RocketMQ's `GetMessageStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GetStatus {
    /// Messages are returned.
    Found,
    /// Units were there but none matched the filter.
    NoMatchedMessage,
    /// The CommitLog bytes were deleted under the unit.
    MessageWasRemoving,
    /// The unit at the offset could not be read.
    OffsetFoundNull,
    /// Offset is beyond the max offset by more than one.
    OffsetOverflowBadly,
    /// Offset equals the max offset (nothing new yet).
    OffsetOverflowOne,
    /// Offset is below the min offset.
    OffsetTooSmall,
    /// The queue does not exist.
    NoMatchedLogicQueue,
    /// The queue exists but is empty.
    NoMessageInQueue,
}

/// A pull's answer.
#[derive(Debug, Clone)]
pub struct GetMessageResult {
    /// Outcome.
    pub status: GetStatus,
    /// Record bytes, in queue order.
    pub messages: Vec<Selected>,
    /// Queue offset of each returned message.
    pub queue_offsets: Vec<i64>,
    /// Where the next pull should start.
    pub next_begin_offset: i64,
    /// Queue min offset.
    pub min_offset: i64,
    /// Queue max offset (exclusive).
    pub max_offset: i64,
    /// Bytes returned.
    pub total_bytes: usize,
    /// The last message looked at is further behind the CommitLog's end
    /// than the in-memory window: a pull under transfer limits suggests a
    /// slave (RocketMQ's `suggestPullingFromSlave`).
    pub far_behind: bool,
}

impl GetMessageResult {
    fn empty(status: GetStatus, next: i64, min: i64, max: i64) -> Self {
        Self {
            status,
            messages: Vec::new(),
            queue_offsets: Vec::new(),
            next_begin_offset: next,
            min_offset: min,
            max_offset: max,
            total_bytes: 0,
            far_behind: false,
        }
    }
}

/// RocketMQ's transfer limits of one pull (`isTheBatchFull`): messages
/// still likely in the page cache may go out in larger batches than ones
/// that must be read from disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferCaps {
    /// Most messages of a batch read from memory.
    pub memory_count: usize,
    /// Most bytes of a batch read from memory.
    pub memory_bytes: usize,
    /// Most messages of a batch that reaches messages on disk.
    pub disk_count: usize,
    /// Most bytes of a batch that reaches messages on disk.
    pub disk_bytes: usize,
    /// A message this many bytes or more behind the CommitLog's end is
    /// taken to be on disk (RocketMQ: `accessMessageInMemoryMaxRatio` of
    /// the physical memory).
    pub memory_window_bytes: u64,
}

impl TransferCaps {
    /// The caps of `config`, the memory window taken from this machine's
    /// physical memory.
    pub fn from_config(config: &rmq_common::StoreConfig) -> Self {
        let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        let ratio = u64::from(config.access_message_in_memory_max_ratio_pct.min(100));
        Self {
            memory_count: size(u64::from(config.max_transfer_count_on_message_in_memory)),
            memory_bytes: size(config.max_transfer_bytes_on_message_in_memory_bytes),
            disk_count: size(u64::from(config.max_transfer_count_on_message_in_disk)),
            disk_bytes: size(config.max_transfer_bytes_on_message_in_disk_bytes),
            memory_window_bytes: physical_memory_bytes() / 100 * ratio,
        }
    }

    /// Whether a batch of `count` messages and `bytes` bytes is full before
    /// a message of `next_size` bytes, `behind` bytes behind the CommitLog's
    /// end. An empty batch is never full.
    pub fn is_full(&self, count: usize, bytes: usize, next_size: usize, behind: u64) -> bool {
        if count == 0 {
            return false;
        }
        let (max_count, max_bytes) = if behind > self.memory_window_bytes {
            (self.disk_count, self.disk_bytes)
        } else {
            (self.memory_count, self.memory_bytes)
        };
        count >= max_count || bytes.saturating_add(next_size) > max_bytes
    }
}

/// Physical memory of this machine (`MemTotal` of /proc/meminfo), read
/// once; without it every message counts as in memory.
fn physical_memory_bytes() -> u64 {
    static TOTAL: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TOTAL.get_or_init(|| {
        std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
                let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
                Some(kib.saturating_mul(1024))
            })
            .unwrap_or(u64::MAX / 2)
    })
}

/// Bytes a [`GetRequest::new`] returns at most (RocketMQ's
/// `maxTransferBytesOnMessageInMemory` is lower; pulls set their own).
pub const DEFAULT_MAX_BYTES: usize = 1 << 20;

/// What a pull asks of the store: up to `max_count` messages (and about
/// `max_bytes`) of one queue from `offset`, keeping those `filter` accepts.
#[derive(Clone, Copy)]
pub struct GetRequest<'a> {
    /// The consumer group (kept for parity with RocketMQ's signature).
    pub group: &'a str,
    /// Topic.
    pub topic: &'a str,
    /// Queue id.
    pub queue_id: i32,
    /// First queue offset to read.
    pub offset: i64,
    /// Most messages returned (at least one is looked for).
    pub max_count: usize,
    /// About the most bytes returned; the first message is always returned.
    pub max_bytes: usize,
    /// Which messages are returned.
    pub filter: &'a dyn MessageFilter,
    /// The broker's transfer limits, applied on top of `max_count` and
    /// `max_bytes` (pulls set them; `None` for internal reads).
    pub caps: Option<TransferCaps>,
}

impl<'a> GetRequest<'a> {
    /// Up to `max_count` messages of `topic`/`queue_id` from `offset`, at
    /// most [`DEFAULT_MAX_BYTES`], for no group in particular.
    pub fn new(
        topic: &'a str,
        queue_id: i32,
        offset: i64,
        max_count: usize,
        filter: &'a dyn MessageFilter,
    ) -> Self {
        Self {
            group: "",
            topic,
            queue_id,
            offset,
            max_count,
            max_bytes: DEFAULT_MAX_BYTES,
            filter,
            caps: None,
        }
    }

    /// The same request under the transfer limits of `config`
    /// (`maxTransfer{Count,Bytes}OnMessageIn{Memory,Disk}`), whatever the
    /// client asked for.
    pub fn transfer_limits(self, config: &rmq_common::StoreConfig) -> Self {
        Self {
            caps: Some(TransferCaps::from_config(config)),
            ..self
        }
    }

    /// The same request with a byte limit.
    pub fn max_bytes(self, max_bytes: usize) -> Self {
        Self { max_bytes, ..self }
    }

    /// The same request on behalf of `group`.
    pub fn group(self, group: &'a str) -> Self {
        Self { group, ..self }
    }
}

impl std::fmt::Debug for GetRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GetRequest")
            .field("group", &self.group)
            .field("topic", &self.topic)
            .field("queue_id", &self.queue_id)
            .field("offset", &self.offset)
            .field("max_count", &self.max_count)
            .field("max_bytes", &self.max_bytes)
            .field("caps", &self.caps)
            .finish_non_exhaustive()
    }
}

impl MessageStore {
    /// Answers `req`: the messages, where the next pull starts, and the
    /// queue's min and max.
    pub fn get_message(&self, req: &GetRequest<'_>) -> Result<GetMessageResult, StoreError> {
        let started = std::time::Instant::now();
        let r = self.get_message_inner(req);
        if let Ok(r) = &r {
            self.metrics.get(r.messages.len() as u64, started.elapsed());
        }
        r
    }

    fn get_message_inner(&self, req: &GetRequest<'_>) -> Result<GetMessageResult, StoreError> {
        let (topic, queue_id, offset) = (req.topic, req.queue_id, req.offset);
        if is_lmq(topic) {
            self.check_lmq_limit()?;
        }
        // One backend for the whole read, even if a flip happens meanwhile
        // (both hold the same units up to where it happened).
        let cq = self.consume_queue();
        let known = cq.max_offset(topic, queue_id)? > 0 || cq.min_offset(topic, queue_id)? > 0;
        if !known {
            // Unknown queue and empty queue look alike to the backends.
            let status = if self.queue_exists(&*cq, topic, queue_id)? {
                GetStatus::NoMessageInQueue
            } else {
                GetStatus::NoMatchedLogicQueue
            };
            return Ok(GetMessageResult::empty(status, 0, 0, 0));
        }
        let min = cq.min_offset(topic, queue_id)?;
        let max = cq.max_offset(topic, queue_id)?;
        if max == 0 {
            return Ok(GetMessageResult::empty(
                GetStatus::NoMessageInQueue,
                0,
                min,
                max,
            ));
        }
        if offset < min {
            return Ok(GetMessageResult::empty(
                GetStatus::OffsetTooSmall,
                min,
                min,
                max,
            ));
        }
        if offset == max {
            return Ok(GetMessageResult::empty(
                GetStatus::OffsetOverflowOne,
                offset,
                min,
                max,
            ));
        }
        if offset > max {
            let next = if min == 0 { min } else { max };
            return Ok(GetMessageResult::empty(
                GetStatus::OffsetOverflowBadly,
                next,
                min,
                max,
            ));
        }
        self.read_units(&*cq, req, min, max)
    }

    fn queue_exists(
        &self,
        cq: &dyn ConsumeQueueStore,
        topic: &str,
        queue_id: i32,
    ) -> Result<bool, StoreError> {
        Ok(cq.has_queue(topic, queue_id)?)
    }

    fn read_units(
        &self,
        cq: &dyn ConsumeQueueStore,
        req: &GetRequest<'_>,
        min: i64,
        max: i64,
    ) -> Result<GetMessageResult, StoreError> {
        let (topic, queue_id, offset) = (req.topic, req.queue_id, req.offset);
        let (max_count, max_bytes, filter) = (req.max_count.max(1), req.max_bytes, req.filter);
        let scan_limit = MAX_FILTER_MESSAGE_COUNT.max(max_count.saturating_mul(20));
        let mut result = GetMessageResult::empty(GetStatus::NoMatchedMessage, offset, min, max);
        let mut units: Vec<CqUnit> = Vec::with_capacity(CQ_READ_CHUNK);
        let mut cursor = offset;
        let mut scanned = 0usize;
        let mut skip_below_phy = i64::MIN;
        let end_phy = self.commit_log.max_offset();
        let mut last_phy = end_phy;
        'outer: while scanned < scan_limit && cursor < max {
            units.clear();
            let read_started = std::time::Instant::now();
            let read = cq.get(
                topic,
                queue_id,
                cursor,
                CQ_READ_CHUNK.min(scan_limit - scanned),
                &mut units,
            );
            self.metrics.cq_read(read_started.elapsed());
            match read {
                Ok(()) => {}
                Err(CqError::Compacted { min_offset, .. }) => {
                    // Min moved under us (retention): tell the client where to go.
                    if result.messages.is_empty() {
                        return Ok(GetMessageResult::empty(
                            GetStatus::OffsetTooSmall,
                            min_offset,
                            min_offset,
                            max,
                        ));
                    }
                    break;
                }
                Err(e) => return Err(e.into()),
            }
            if units.is_empty() {
                if cursor == offset {
                    // A hole where a unit should be: step over it.
                    result.status = GetStatus::OffsetFoundNull;
                    result.next_begin_offset = offset + 1;
                    return Ok(result);
                }
                break;
            }
            for unit in &units {
                let next_size = unit.size.max(0) as usize;
                let full = !result.messages.is_empty()
                    && (result.messages.len() >= max_count
                        || result.total_bytes + next_size > max_bytes
                        || req.caps.is_some_and(|c| {
                            let behind = u64::try_from(end_phy - unit.phy_offset).unwrap_or(0);
                            c.is_full(result.messages.len(), result.total_bytes, next_size, behind)
                        }));
                if full {
                    break 'outer;
                }
                scanned += 1;
                cursor = unit.queue_offset + 1;
                result.next_begin_offset = cursor;
                last_phy = unit.phy_offset;
                if unit.phy_offset < skip_below_phy {
                    continue;
                }
                if !filter.matches_tags_code(unit.tags_code) {
                    continue;
                }
                let size = usize::try_from(unit.size).unwrap_or(0);
                let Some(sel) = self.commit_log.select(unit.phy_offset, size) else {
                    if result.messages.is_empty() {
                        result.status = GetStatus::MessageWasRemoving;
                    }
                    skip_below_phy = self.commit_log.roll_next(unit.phy_offset);
                    continue;
                };
                match RecordView::parse(sel.bytes(), false) {
                    Ok(view) if filter.matches_record(&view) => {}
                    Ok(_) => continue,
                    Err(e) => {
                        tracing::error!(topic, queue_id, queue_offset = unit.queue_offset,
                            phy_offset = unit.phy_offset, error = %e,
                            "consume-queue unit points at an unreadable record; skipping it");
                        continue;
                    }
                }
                result.status = GetStatus::Found;
                result.total_bytes += size;
                result.queue_offsets.push(unit.queue_offset);
                result.messages.push(sel);
            }
        }
        result.far_behind = req.caps.is_some_and(|c| {
            u64::try_from(end_phy - last_phy).unwrap_or(0) > c.memory_window_bytes
        });
        Ok(result)
    }
}

#[cfg(test)]
mod transfer_caps_tests {
    use super::TransferCaps;

    const CAPS: TransferCaps = TransferCaps {
        memory_count: 32,
        memory_bytes: 256 * 1024,
        disk_count: 8,
        disk_bytes: 64 * 1024,
        memory_window_bytes: 1 << 30,
    };

    #[test]
    fn the_first_message_always_goes() {
        assert!(!CAPS.is_full(0, 0, 4 << 20, u64::MAX));
    }

    #[test]
    fn memory_limits_apply_within_the_window_disk_limits_beyond_it() {
        let near = 1 << 20;
        let far = (1 << 30) + 1;
        assert!(!CAPS.is_full(8, 8 * 1024, 1024, near));
        assert!(CAPS.is_full(8, 8 * 1024, 1024, far), "8 on disk is full");
        assert!(CAPS.is_full(32, 32 * 1024, 1024, near));
        assert!(!CAPS.is_full(1, 255 * 1024, 1024, near));
        assert!(CAPS.is_full(1, 255 * 1024, 1025, near));
        assert!(CAPS.is_full(1, 63 * 1024, 1025, far));
    }
}
