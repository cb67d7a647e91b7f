//! The put path: validation and encoding outside the lock, then queue
//! offsets, physical offsets and the copy into the mapped segment inside it.

use std::sync::atomic::{AtomicI64, Ordering};

use rmq_common::message::record::{encode_blank, encode_record, patch_header, RecordHeader};
use rmq_common::message::{
    encode_offset_msg_id, sysflag, MessageToStore, END_FILE_MIN_BLANK_LENGTH,
};
use rmq_common::names::validate_topic;

use rmq_common::constants::LMQ_QUEUE_ID;
use rmq_common::names::is_lmq;

use super::lmq::{is_multi_dispatch, stamp_offsets, LmqTaken};
use super::CommitLog;
use crate::error::{Result, StoreError};

/// Where a message landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendResult {
    /// CommitLog offset of the record.
    pub phy_offset: i64,
    /// Record size in bytes.
    pub size: i32,
    /// Queue offset assigned (0 for prepared and rolled-back transactional
    /// records, which take no place in the consume queue).
    pub queue_offset: i64,
    /// Store timestamp written into the record, ms.
    pub store_timestamp: i64,
    /// offsetMsgId: store host + CommitLog offset in hex.
    pub msg_id: String,
}

impl AppendResult {
    /// Offset just past the record: what a SYNC_FLUSH waits for.
    pub fn end_offset(&self) -> i64 {
        self.phy_offset + i64::from(self.size)
    }
}

struct Encoded<'a> {
    msg: &'a MessageToStore,
    bytes: Vec<u8>,
}

impl CommitLog {
    fn encode<'a>(&self, msg: &'a MessageToStore) -> Result<Encoded<'a>> {
        validate_topic(&msg.topic)?;
        if msg.queue_id < 0 {
            return Err(StoreError::MessageIllegal {
                reason: format!("queue id {} is negative", msg.queue_id),
            });
        }
        let zero = RecordHeader {
            queue_offset: 0,
            physical_offset: 0,
            store_timestamp: 0,
        };
        let bytes = encode_record(msg, zero).map_err(|e| StoreError::MessageIllegal {
            reason: e.to_string(),
        })?;
        if bytes.len() > self.max_message_size {
            return Err(StoreError::MessageIllegal {
                reason: format!(
                    "message of {} bytes exceeds maxMessageSize {}",
                    bytes.len(),
                    self.max_message_size
                ),
            });
        }
        Ok(Encoded { msg, bytes })
    }

    /// Appends one message.
    pub fn append(&self, msg: &MessageToStore) -> Result<AppendResult> {
        let encoded = self.encode(msg)?;
        let mut results = self.append_encoded(vec![encoded])?;
        results.pop().ok_or_else(|| StoreError::MessageIllegal {
            reason: "empty append".into(),
        })
    }

    /// Appends messages as one contiguous run inside one segment, under one
    /// lock. Queue offsets are assigned per (topic, queue) in order.
    pub fn append_batch(&self, msgs: &[MessageToStore]) -> Result<Vec<AppendResult>> {
        if msgs.is_empty() {
            return Ok(Vec::new());
        }
        let encoded = msgs
            .iter()
            .map(|m| self.encode(m))
            .collect::<Result<Vec<_>>>()?;
        let total: usize = encoded.iter().map(|e| e.bytes.len()).sum();
        if total + END_FILE_MIN_BLANK_LENGTH > self.segment_size {
            return Err(StoreError::MessageIllegal {
                reason: format!(
                    "batch of {total} bytes does not fit a {}-byte CommitLog segment",
                    self.segment_size
                ),
            });
        }
        self.append_encoded(encoded)
    }

    /// How long the append now holding the put lock has held it, ms (0
    /// when none does): Java's `pageCacheLockTimeMills`.
    pub fn put_lock_held_ms(&self) -> i64 {
        match self.put_locked_since.load(Ordering::Relaxed) {
            0 => 0,
            since => (self.clock.now_ms() - since).max(0),
        }
    }

    fn append_encoded(&self, mut batch: Vec<Encoded<'_>>) -> Result<Vec<AppendResult>> {
        let mut put = self.put.lock();
        self.check_poisoned()?;
        let store_timestamp = self.clock.now_ms();
        let _held = LockHeld::new(&self.put_locked_since, store_timestamp);
        let put = &mut *put;

        // Offsets in light message queues, taken in batch order (and written
        // into each record) before the batch's size is known. A message
        // stored straight into an LMQ takes its own offset there first, from
        // the same table as multi-dispatched ones.
        let mut lmq_taken = LmqTaken::default();
        let mut own_lmq: Vec<Option<i64>> = Vec::new();
        if self.enable_lmq {
            for e in batch.iter_mut() {
                let msg = e.msg;
                let own = (sysflag::is_consumable(msg.sys_flag)
                    && msg.queue_id == LMQ_QUEUE_ID
                    && is_lmq(&msg.topic))
                .then(|| lmq_taken.take(&mut put.lmq, &msg.topic))
                .transpose()?;
                own_lmq.push(own);
                if is_multi_dispatch(msg) {
                    stamp_offsets(
                        msg,
                        &mut e.bytes,
                        &mut put.lmq,
                        &mut lmq_taken,
                        self.max_message_size,
                    )?;
                }
            }
        }
        let total: usize = batch.iter().map(|e| e.bytes.len()).sum();
        if batch.len() > 1 && total + END_FILE_MIN_BLANK_LENGTH > self.segment_size {
            return Err(StoreError::MessageIllegal {
                reason: format!(
                    "batch of {total} bytes does not fit a {}-byte CommitLog segment",
                    self.segment_size
                ),
            });
        }

        let mut seg = match self.segments.last() {
            Some(s) => s,
            None => self.segments.create_segment(0)?,
        };
        if seg.remaining() < total + END_FILE_MIN_BLANK_LENGTH {
            if seg.remaining() > 0 {
                // `remaining` is never below 8: every append leaves room for this.
                seg.append(&encode_blank(seg.remaining()));
                // The blank covers the rest of the segment: the segment is
                // full, so flushes and readers move on to the next one.
                seg.mark_full();
            }
            let next = seg.file_from_offset() + self.segment_size as i64;
            seg = self.segments.create_segment(next)?;
        }

        let mut phy = seg.file_from_offset() + seg.wrote_position() as i64;
        let mut results = Vec::with_capacity(batch.len());
        // Offsets this batch takes, applied to the table only once the bytes
        // are in the segment.
        let mut taken: Vec<(&str, i32, i64)> = Vec::new();
        for (i, e) in batch.iter_mut().enumerate() {
            let msg = e.msg;
            let (topic, queue_id) = (msg.topic.as_str(), msg.queue_id);
            let queue_offset = if !sysflag::is_consumable(msg.sys_flag) {
                0
            } else if let Some(own) = own_lmq.get(i).copied().flatten() {
                own
            } else {
                let next = match taken
                    .iter()
                    .rev()
                    .find(|(t, q, _)| *t == topic && *q == queue_id)
                {
                    Some((_, _, last)) => last + 1,
                    None => put
                        .queue_offsets
                        .get(topic)
                        .and_then(|q| q.get(&queue_id))
                        .copied()
                        .unwrap_or(0),
                };
                taken.push((topic, queue_id, next));
                next
            };
            patch_header(
                &mut e.bytes,
                RecordHeader {
                    queue_offset,
                    physical_offset: phy,
                    store_timestamp,
                },
            );
            results.push(AppendResult {
                phy_offset: phy,
                // Below maxMessageSize, itself below the segment size (< 2^31).
                size: e.bytes.len() as i32,
                queue_offset,
                store_timestamp,
                msg_id: encode_offset_msg_id(msg.store_host, phy),
            });
            phy += e.bytes.len() as i64;
        }

        let written = if batch.len() == 1 {
            seg.append(&batch[0].bytes)
        } else {
            let mut buf = Vec::with_capacity(total);
            for e in &batch {
                buf.extend_from_slice(&e.bytes);
            }
            seg.append(&buf)
        };
        if written.is_none() {
            // Unreachable by the checks above; refuse rather than misplace data.
            let reason =
                format!("append of {total} bytes did not fit the segment it was sized for");
            self.poison(reason.clone());
            return Err(StoreError::Poisoned { reason });
        }
        lmq_taken.apply(&mut put.lmq, phy);
        for (topic, queue_id, offset) in taken {
            // Look up by &str first: the topic String is only allocated for
            // a topic's first message.
            match put.queue_offsets.get_mut(topic) {
                Some(queues) => {
                    queues.insert(queue_id, offset + 1);
                }
                None => {
                    put.queue_offsets
                        .entry(topic.to_owned())
                        .or_default()
                        .insert(queue_id, offset + 1);
                }
            }
        }
        self.last_store_timestamp
            .store(store_timestamp, Ordering::Release);
        Ok(results)
    }
}

/// Marks the put lock held from `since` until dropped.
struct LockHeld<'a>(&'a AtomicI64);

impl<'a> LockHeld<'a> {
    fn new(cell: &'a AtomicI64, since: i64) -> Self {
        cell.store(since.max(1), Ordering::Relaxed);
        Self(cell)
    }
}

impl Drop for LockHeld<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Relaxed);
    }
}
