//! Lookups other than pulls: queue offsets, time search, query by key, view
//! by message id.

use std::net::SocketAddr;

use rmq_common::cq::{Boundary, StoreTimeSource};
use rmq_common::message::record::RecordView;
use rmq_common::message::{decode_offset_msg_id, MsgIdError};
use rmq_store_file::commitlog::{CommitLog, Selected};
use rmq_store_file::StoreError;

use super::MessageStore;

/// Reads store times from the CommitLog for backends that do not keep them.
struct CommitLogTimes<'a>(&'a CommitLog);

impl StoreTimeSource for CommitLogTimes<'_> {
    fn store_time(&self, phy_offset: i64, size: i32) -> Option<i64> {
        let sel = self.0.select(phy_offset, usize::try_from(size).ok()?)?;
        RecordView::parse(sel.bytes(), false)
            .ok()
            .map(|v| v.store_timestamp())
    }
}

impl MessageStore {
    /// Queue min offset.
    pub fn min_offset_in_queue(&self, topic: &str, queue_id: i32) -> Result<i64, StoreError> {
        Ok(self.consume_queue().min_offset(topic, queue_id)?)
    }

    /// Queue max offset (next to be written).
    pub fn max_offset_in_queue(&self, topic: &str, queue_id: i32) -> Result<i64, StoreError> {
        Ok(self.consume_queue().max_offset(topic, queue_id)?)
    }

    /// Queue offset for a store time (SEARCH_OFFSET_BY_TIMESTAMP).
    pub fn offset_by_time(
        &self,
        topic: &str,
        queue_id: i32,
        timestamp_ms: i64,
        boundary: Boundary,
    ) -> Result<i64, StoreError> {
        Ok(self.consume_queue().offset_by_time(
            topic,
            queue_id,
            timestamp_ms,
            boundary,
            &CommitLogTimes(&self.commit_log),
        )?)
    }

    /// Store time of the oldest message of a queue (GET_EARLIEST_MSG_STORETIME).
    pub fn earliest_message_time(
        &self,
        topic: &str,
        queue_id: i32,
    ) -> Result<Option<i64>, StoreError> {
        let min = self.consume_queue().min_offset(topic, queue_id)?;
        self.message_store_time(topic, queue_id, min)
    }

    /// Store time of the message at `offset` of a queue, if it is there
    /// (the admin answers' "last updated" and "last consumed" times).
    pub fn message_store_time(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
    ) -> Result<Option<i64>, StoreError> {
        let cq = self.consume_queue();
        if offset < cq.min_offset(topic, queue_id)? {
            return Ok(None);
        }
        let mut units = Vec::new();
        cq.get(topic, queue_id, offset, 1, &mut units)?;
        Ok(units
            .first()
            .and_then(|u| CommitLogTimes(&self.commit_log).store_time(u.phy_offset, u.size)))
    }

    /// Store time of the record starting at a CommitLog offset, if one does.
    pub fn store_time_at(&self, phy_offset: i64) -> Option<i64> {
        let sel = self.record_at(phy_offset)?;
        RecordView::parse(sel.bytes(), false)
            .ok()
            .map(|v| v.store_timestamp())
    }

    /// The whole record starting at a CommitLog offset, checked to be one.
    pub fn record_at(&self, phy_offset: i64) -> Option<Selected> {
        let head = self.commit_log.select(phy_offset, 4)?;
        let mut size = [0u8; 4];
        size.copy_from_slice(head.bytes());
        let size = usize::try_from(i32::from_be_bytes(size)).ok()?;
        let sel = self.commit_log.select(phy_offset, size)?;
        let ok =
            RecordView::parse(sel.bytes(), false).is_ok_and(|v| v.physical_offset() == phy_offset);
        ok.then_some(sel)
    }

    /// The message an offsetMsgId names (VIEW_MESSAGE_BY_ID). The store host
    /// in the id is returned for the caller to compare with its own.
    pub fn message_by_id(
        &self,
        msg_id: &str,
    ) -> Result<Option<(SocketAddr, Selected)>, MsgIdError> {
        let (host, offset) = decode_offset_msg_id(msg_id)?;
        Ok(self.record_at(offset).map(|s| (host, s)))
    }

    /// Messages of `topic` whose KEYS contain `key` or whose UNIQ_KEY is
    /// `key`, stored within `[begin_ms, end_ms]`, newest first, at most
    /// `max_num` (QUERY_MESSAGE).
    pub fn query_by_key(
        &self,
        topic: &str,
        key: &str,
        max_num: usize,
        begin_ms: i64,
        end_ms: i64,
    ) -> Result<Vec<Selected>, StoreError> {
        let Some(index) = &self.index else {
            return Ok(Vec::new());
        };
        let candidates = index.query(topic, key, max_num, begin_ms, end_ms)?;
        let mut found = Vec::new();
        for offset in candidates {
            let Some(sel) = self.record_at(offset) else {
                continue;
            };
            let matches = RecordView::parse(sel.bytes(), false).is_ok_and(|v| {
                v.topic() == topic
                    && (v.properties().keys().any(|k| k == key)
                        || v.property(
                            rmq_common::constants::property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
                        )
                        .is_some_and(|u| u == key))
            });
            if matches {
                found.push(sel);
            }
            if found.len() >= max_num {
                break;
            }
        }
        Ok(found)
    }
}
