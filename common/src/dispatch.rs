//! What reput extracts from each CommitLog record for the dispatchers.

use crate::constants::{property, LMQ_QUEUE_ID};
use crate::message::lmq::{self, LmqTarget};
use crate::message::record::RecordView;
use crate::message::{sysflag, tags_code};
use crate::names::topic_allows_lmq;

/// One record as the consume-queue and index dispatchers see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchRequest {
    /// Topic of the record.
    pub topic: String,
    /// Queue of the record.
    pub queue_id: i32,
    /// CommitLog offset where the record starts.
    pub commit_log_offset: i64,
    /// TOTALSIZE of the record.
    pub msg_size: i32,
    /// Filter code stored in the consume queue (tag hash, or delivery time in
    /// the schedule topic).
    pub tags_code: i64,
    /// STORETIMESTAMP, ms.
    pub store_timestamp: i64,
    /// QUEUEOFFSET assigned at append.
    pub consume_queue_offset: i64,
    /// Space-separated KEYS property, empty when absent.
    pub keys: String,
    /// UNIQ_KEY property, if any.
    pub uniq_key: Option<String>,
    /// SYSFLAG.
    pub sys_flag: i32,
    /// PREPAREDTRANSACTIONOFFSET.
    pub prepared_transaction_offset: i64,
    /// The light message queues the record is also dispatched into, with
    /// its offset in each (from INNER_MULTI_DISPATCH and
    /// INNER_MULTI_QUEUE_OFFSET); empty for most records.
    pub lmq: Vec<LmqTarget>,
}

impl DispatchRequest {
    /// Builds the request for a parsed record. `tags_code` is the Java hash of
    /// TAGS; callers that keep something else there (the schedule topic) set
    /// it afterwards.
    pub fn from_record(view: &RecordView<'_>) -> Self {
        let tags = view.property(property::TAGS);
        Self {
            topic: view.topic().to_owned(),
            queue_id: view.queue_id(),
            commit_log_offset: view.physical_offset(),
            // A parsed record's size fits in i32 (TOTALSIZE is an i32).
            msg_size: i32::try_from(view.total_size()).unwrap_or(i32::MAX),
            tags_code: tags_code(tags.as_deref()),
            store_timestamp: view.store_timestamp(),
            consume_queue_offset: view.queue_offset(),
            keys: view
                .property(property::KEYS)
                .map(|k| k.into_owned())
                .unwrap_or_default(),
            uniq_key: view
                .property(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
                .map(|k| k.into_owned()),
            sys_flag: view.sys_flag(),
            prepared_transaction_offset: view.prepared_transaction_offset(),
            lmq: lmq_targets(view),
        }
    }

    /// The consume-queue units of this record: its own queue's, then one per
    /// light message queue, in list order.
    pub fn units(&self) -> impl Iterator<Item = (&str, i32, i64)> {
        std::iter::once((
            self.topic.as_str(),
            self.queue_id,
            self.consume_queue_offset,
        ))
        .chain(
            self.lmq
                .iter()
                .map(|t| (t.queue.as_str(), LMQ_QUEUE_ID, t.offset)),
        )
    }

    /// CommitLog offset just past the record.
    pub fn end_offset(&self) -> i64 {
        self.commit_log_offset + i64::from(self.msg_size)
    }

    /// Whether the consume queue gets a unit for this record.
    pub fn goes_to_consume_queue(&self) -> bool {
        sysflag::is_consumable(self.sys_flag)
    }

    /// Whether the IndexFile gets this record's keys.
    pub fn goes_to_index(&self) -> bool {
        sysflag::is_indexable(self.sys_flag)
    }
}

/// The light message queues a record names, or none when its topic takes no
/// multi-dispatch or the lists are missing. Malformed lists (only a
/// corrupted record or a hand-made one has them) dispatch nothing and are
/// logged.
fn lmq_targets(view: &RecordView<'_>) -> Vec<LmqTarget> {
    if !topic_allows_lmq(view.topic()) {
        return Vec::new();
    }
    let (Some(names), Some(offsets)) = (
        view.property(property::INNER_MULTI_DISPATCH),
        view.property(property::INNER_MULTI_QUEUE_OFFSET),
    ) else {
        return Vec::new();
    };
    match lmq::targets(&names, &offsets) {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(offset = view.physical_offset(), error = %e, "record's multi-dispatch lists are unusable; dispatched to its own queue only");
            Vec::new()
        }
    }
}
