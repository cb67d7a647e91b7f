//! The read path: consume-queue units by queue offset, filtered by tag, then
//! the CommitLog bytes they point at.

use rmq_common::cq::{CqError, CqUnit};
use rmq_common::message::record::RecordView;
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
        }
    }
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
        let known =
            self.cq.max_offset(topic, queue_id)? > 0 || self.cq.min_offset(topic, queue_id)? > 0;
        if !known {
            // Unknown queue and empty queue look alike to the backends.
            let status = if self.queue_exists(topic, queue_id)? {
                GetStatus::NoMessageInQueue
            } else {
                GetStatus::NoMatchedLogicQueue
            };
            return Ok(GetMessageResult::empty(status, 0, 0, 0));
        }
        let min = self.cq.min_offset(topic, queue_id)?;
        let max = self.cq.max_offset(topic, queue_id)?;
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
        self.read_units(req, min, max)
    }

    fn queue_exists(&self, topic: &str, queue_id: i32) -> Result<bool, StoreError> {
        Ok(self
            .cq
            .queues()?
            .iter()
            .any(|q| q.topic == topic && q.queue_id == queue_id))
    }

    fn read_units(
        &self,
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
        'outer: while scanned < scan_limit && cursor < max {
            units.clear();
            let read_started = std::time::Instant::now();
            let read = self.cq.get(
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
                let full = !result.messages.is_empty()
                    && (result.messages.len() >= max_count
                        || result.total_bytes + unit.size.max(0) as usize > max_bytes);
                if full {
                    break 'outer;
                }
                scanned += 1;
                cursor = unit.queue_offset + 1;
                result.next_begin_offset = cursor;
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
        Ok(result)
    }
}
