//! The message a due timer entry puts (RocketMQ 5.x
//! `TimerMessageStore.convertMessage`): a new record with the stored
//! body, flag, sysFlag, born time and host, reconsume times and
//! properties; for a delivery, the real topic and queue with REAL_TOPIC /
//! REAL_QID removed; for a roll, the timer topic again with
//! TIMER_ROLL_TIMES + 1. TIMER_OUT_MS and the client's timer properties
//! stay, so the send path never times the delivery again.

use rmq_common::constants::{property, TIMER_TOPIC};
use rmq_common::message::record::RecordView;
use rmq_common::message::MessageToStore;

use crate::service::schedule::{real_target, Undeliverable};

/// TIMER_ENQUEUE_MS of a message that never entered the wheel (it was due
/// when it was read): Java's Long.MAX_VALUE.
pub const NEVER_ENQUEUED: i64 = i64::MAX;

/// The delivery of the stored timer message `view` to its real topic.
pub fn delivery(
    view: &RecordView<'_>,
    enqueue_ms: i64,
    now_ms: i64,
) -> Result<MessageToStore, Undeliverable> {
    let mut msg = view.to_message();
    let (topic, queue_id) = real_target(&msg, view.physical_offset(), Some(TIMER_TOPIC))?;
    msg.properties.remove(property::REAL_TOPIC);
    msg.properties.remove(property::REAL_QUEUE_ID);
    stamp(&mut msg, enqueue_ms, now_ms);
    msg.topic = topic;
    msg.queue_id = queue_id;
    Ok(msg)
}

/// The roll of `view`: back into the timer topic, to be filed again at its
/// own TIMER_OUT_MS once that is within reach.
pub fn roll(view: &RecordView<'_>, enqueue_ms: i64, now_ms: i64) -> MessageToStore {
    let mut msg = view.to_message();
    let times = msg
        .properties
        .get(property::TIMER_ROLL_TIMES)
        .and_then(|t| t.parse::<i64>().ok())
        .unwrap_or(0);
    msg.properties
        .insert(property::TIMER_ROLL_TIMES, (times + 1).to_string());
    stamp(&mut msg, enqueue_ms, now_ms);
    msg.topic = TIMER_TOPIC.to_owned();
    msg.queue_id = 0;
    msg
}

fn stamp(msg: &mut MessageToStore, enqueue_ms: i64, now_ms: i64) {
    msg.properties
        .insert(property::TIMER_ENQUEUE_MS, enqueue_ms.to_string());
    msg.properties
        .insert(property::TIMER_DEQUEUE_MS, now_ms.to_string());
    // 5.x puts deliveries with waitStoreMsgOK false.
    msg.properties.insert(property::WAIT_STORE_MSG_OK, "false");
}
