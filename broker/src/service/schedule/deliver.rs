//! Turning a due schedule-topic record back into the message its producer
//! sent, and the put it goes through.

use rmq_common::constants::{property, TRANS_HALF_TOPIC};
use rmq_common::message::record::RecordView;
use rmq_common::message::MessageToStore;

use crate::store::MessageStore;

/// Where delivered messages are put: the store's normal put path, or a
/// test double that fails on demand.
pub trait DeliverySink: Send + Sync + std::fmt::Debug {
    /// Stores `msg`; an error means nothing was stored and the entry must
    /// be tried again later.
    fn put(&self, msg: &MessageToStore) -> Result<(), String>;
}

impl DeliverySink for MessageStore {
    fn put(&self, msg: &MessageToStore) -> Result<(), String> {
        // FLUSH_DISK_TIMEOUT still means stored: retrying would duplicate.
        self.put_message(msg).map(|_| ()).map_err(|e| e.to_string())
    }
}

/// Why a schedule entry cannot be delivered at all (it is skipped, logged).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Undeliverable {
    /// The CommitLog no longer holds the record (cleaned) or it is not one.
    #[error("no record at CommitLog offset {0}")]
    Gone(i64),
    /// REAL_TOPIC / REAL_QID are missing or malformed.
    #[error("record at {offset} lacks a usable {what}")]
    NoRealTarget {
        /// CommitLog offset of the record.
        offset: i64,
        /// Which property.
        what: &'static str,
    },
    /// RocketMQ never delivers a delayed message into the half topic.
    #[error("record at {0} targets the transaction half topic")]
    HalfTopic(i64),
}

/// The message to put for the schedule record `view`: its real topic and
/// queue, DELAY cleared, every other property kept (as RocketMQ does, so
/// REAL_TOPIC/REAL_QID stay), plus the original store time.
pub fn restore(view: &RecordView<'_>) -> Result<MessageToStore, Undeliverable> {
    let offset = view.physical_offset();
    let mut msg = view.to_message();
    let topic = msg
        .properties
        .get(property::REAL_TOPIC)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .ok_or(Undeliverable::NoRealTarget {
            offset,
            what: property::REAL_TOPIC,
        })?;
    let queue_id: i32 = msg
        .properties
        .get(property::REAL_QUEUE_ID)
        .and_then(|q| q.parse().ok())
        .filter(|q| *q >= 0)
        .ok_or(Undeliverable::NoRealTarget {
            offset,
            what: property::REAL_QUEUE_ID,
        })?;
    if topic == TRANS_HALF_TOPIC {
        return Err(Undeliverable::HalfTopic(offset));
    }
    msg.properties.remove(property::DELAY_TIME_LEVEL);
    msg.properties.insert(
        property::ORIGIN_STORE_TIMESTAMP,
        view.store_timestamp().to_string(),
    );
    msg.topic = topic;
    msg.queue_id = queue_id;
    Ok(msg)
}
