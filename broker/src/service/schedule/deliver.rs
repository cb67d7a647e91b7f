//! Turning a due schedule-topic record back into the message its producer
//! sent, and the put it goes through.

use rmq_common::constants::property;
use rmq_common::message::record::RecordView;
use rmq_common::message::MessageToStore;
use rmq_common::names::{is_not_allowed_send_topic, validate_topic};

use rmq_store::MessageStore;

/// Why a delivery's put stored nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct PutFailure {
    /// The message can never be stored as it is (illegal, too large): it
    /// is passed over. Otherwise (disk full, store refusing writes, ...)
    /// it is tried again later.
    pub permanent: bool,
    /// What failed.
    pub reason: String,
}

impl From<&str> for PutFailure {
    /// A transient failure.
    fn from(reason: &str) -> Self {
        Self {
            permanent: false,
            reason: reason.to_owned(),
        }
    }
}

/// Where delivered messages are put: the store's normal put path, or a
/// test double that fails on demand.
pub trait DeliverySink: Send + Sync + std::fmt::Debug {
    /// Stores `msg`; an error means nothing was stored.
    fn put(&self, msg: &MessageToStore) -> Result<(), PutFailure>;
}

impl DeliverySink for MessageStore {
    fn put(&self, msg: &MessageToStore) -> Result<(), PutFailure> {
        // FLUSH_DISK_TIMEOUT still means stored: retrying would duplicate.
        self.put_message(msg).map(|_| ()).map_err(|e| PutFailure {
            permanent: rmq_store::is_permanent(&e),
            reason: e.to_string(),
        })
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
    /// REAL_TOPIC is not a topic a client could send to (an illegal name,
    /// or one of the topics only the broker writes).
    #[error("record at {offset} targets topic {topic:?}, which cannot be written: {why}")]
    IllegalTarget {
        /// CommitLog offset of the record.
        offset: i64,
        /// The REAL_TOPIC.
        topic: String,
        /// Which rule it breaks.
        why: String,
    },
}

/// The message to put for the schedule record `view`: its real topic and
/// queue, DELAY cleared, every other property kept (as RocketMQ does, so
/// REAL_TOPIC/REAL_QID stay), plus the original store time.
pub fn restore(view: &RecordView<'_>) -> Result<MessageToStore, Undeliverable> {
    let mut msg = view.to_message();
    let (topic, queue_id) = real_target(&msg, view.physical_offset(), None)?;
    msg.properties.remove(property::DELAY_TIME_LEVEL);
    msg.properties.insert(
        property::ORIGIN_STORE_TIMESTAMP,
        view.store_timestamp().to_string(),
    );
    msg.topic = topic;
    msg.queue_id = queue_id;
    Ok(msg)
}

/// The REAL_TOPIC and REAL_QID of `msg` (the record at `offset`), checked
/// as a target a client could send to; `also_forbidden` is one more topic
/// the caller must not write back into. Shared by the schedule and timer
/// deliveries.
pub(crate) fn real_target(
    msg: &MessageToStore,
    offset: i64,
    also_forbidden: Option<&str>,
) -> Result<(String, i32), Undeliverable> {
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
    if let Err(e) = validate_topic(&topic) {
        return Err(Undeliverable::IllegalTarget {
            offset,
            topic,
            why: e.to_string(),
        });
    }
    if is_not_allowed_send_topic(&topic) || also_forbidden == Some(topic.as_str()) {
        return Err(Undeliverable::IllegalTarget {
            offset,
            topic,
            why: "only the broker writes it".into(),
        });
    }
    Ok((topic, queue_id))
}
