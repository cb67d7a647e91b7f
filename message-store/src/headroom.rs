//! Room for what the broker's services add later. A delayed message is
//! written again by the schedule service with its real topic and queue and
//! its original store time; a half message is copied by the check walk with
//! a check count and may end in `TRANS_CHECK_MAX_TIME_TOPIC`. A message
//! that fits now but not in those forms would fail in the service, long
//! after its producer was told it was stored, so the send path refuses it
//! up front: the check is made on the largest form the message can take.
//! Called with the message as the send path stores it (a prepared message
//! already turned into its half).

use rmq_common::constants::{property, TRANS_CHECK_MAX_TIME_TOPIC, TRANS_HALF_TOPIC};
use rmq_common::message::record::encoded_len;
use rmq_common::message::MessageToStore;

use super::delay::{schedule_level, schedule_rewrite};
use super::MessageStore;

/// Why a message cannot be accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeadroomError {
    /// Its largest form is over maxMessageSize.
    #[error(
        "message of {stored} bytes would be {largest} bytes when the {service} writes it again, \
         over maxMessageSize {max}"
    )]
    TooLarge {
        /// Its size as stored now.
        stored: usize,
        /// Its largest later form.
        largest: usize,
        /// Which service writes that form.
        service: &'static str,
        /// The limit.
        max: usize,
    },
    /// It cannot be encoded at all.
    #[error("message cannot be encoded: {0}")]
    Encode(String),
}

/// Checks that every form `msg` can take in the broker fits maxMessageSize.
/// A message no service writes again (neither a half nor delayed) costs one
/// property lookup: this runs on every send.
pub fn check(store: &MessageStore, msg: &MessageToStore) -> Result<(), HeadroomError> {
    let half = msg.topic == TRANS_HALF_TOPIC;
    if !half && schedule_level(store.delay_levels(), msg).is_none() {
        return Ok(());
    }
    let max = store.config().max_message_size_bytes as usize;
    let body = msg.body.len();
    // The forms differ only in topic and properties: measure them bodiless.
    let mut bare = MessageToStore {
        topic: msg.topic.clone(),
        queue_id: msg.queue_id,
        flag: msg.flag,
        body: Vec::new(),
        properties: msg.properties.clone(),
        sys_flag: msg.sys_flag,
        born_timestamp: msg.born_timestamp,
        born_host: msg.born_host,
        store_host: msg.store_host,
        reconsume_times: msg.reconsume_times,
        prepared_transaction_offset: msg.prepared_transaction_offset,
    };
    let len = |m: &MessageToStore| {
        encoded_len(m)
            .map(|l| l + body)
            .map_err(|e| HeadroomError::Encode(e.to_string()))
    };
    let stored = len(&bare)?;
    let (largest, service) = if half {
        // The check walk's copy carries a check count; the move after the
        // last check renames the topic.
        bare.properties
            .insert(property::TRANSACTION_CHECK_TIMES, i32::MAX.to_string());
        bare.topic = TRANS_CHECK_MAX_TIME_TOPIC.to_owned();
        (len(&bare)?, "transaction check")
    } else {
        let scheduled = schedule_rewrite(store.delay_levels(), &bare).into_owned();
        let scheduled_len = len(&scheduled)?;
        // Delivered: the real topic back, REAL_* kept, DELAY dropped, the
        // original store time added.
        let mut delivered = scheduled;
        delivered.topic = bare.topic;
        delivered.properties.remove(property::DELAY_TIME_LEVEL);
        delivered
            .properties
            .insert(property::ORIGIN_STORE_TIMESTAMP, i64::MIN.to_string());
        (len(&delivered)?.max(scheduled_len), "schedule service")
    };
    if largest > max {
        return Err(HeadroomError::TooLarge {
            stored,
            largest,
            service,
            max,
        });
    }
    Ok(())
}
