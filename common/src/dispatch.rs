//! What reput extracts from each CommitLog record for the dispatchers.

use crate::constants::property;
use crate::message::record::RecordView;
use crate::message::{sysflag, tags_code};

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
        }
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
