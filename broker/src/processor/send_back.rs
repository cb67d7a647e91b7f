//! CONSUMER_SEND_MSG_BACK: a consumer failed a message. The broker copies it
//! into the group's retry topic `%RETRY%<group>` with a delay level (so the
//! schedule service hands it back later), or, once the group's retries are
//! used up (or the client asks with a negative level), into the group's
//! dead-letter topic `%DLQ%<group>`.

use std::sync::Arc;

use rmq_common::constants::{property, DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX};
use rmq_common::message::encode_offset_msg_id;
use rmq_common::message::record::RecordView;
use rmq_common::names::validate_group;
use rmq_common::remoting::{ConsumerSendMsgBackRequestHeader, ResponseCode};

use super::parts::SendPath;
use super::{blocking, success, Handled, Refusal};

/// The delay level RocketMQ gives the first retry when the client leaves the
/// choice to the broker (level 3 = 10 s with the default table); each
/// further retry waits one level longer.
pub(crate) const FIRST_RETRY_LEVEL: i32 = 3;

/// Where a sent-back message goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SendBackTarget {
    /// `%RETRY%<group>` with this delay level.
    Retry {
        /// Delay level (before clamping to the table).
        delay_level: i32,
    },
    /// `%DLQ%<group>`.
    DeadLetter,
}

/// Decides between retry and DLQ: the DLQ once `reconsume_times` reached
/// `max_reconsume_times` or when the client asks with a negative level;
/// otherwise a retry at the client's level, or `3 + reconsume_times` when it
/// sent 0.
pub(crate) fn send_back_target(
    delay_level: i32,
    reconsume_times: i32,
    max_reconsume_times: i32,
) -> SendBackTarget {
    if reconsume_times >= max_reconsume_times || delay_level < 0 {
        return SendBackTarget::DeadLetter;
    }
    let delay_level = if delay_level == 0 {
        FIRST_RETRY_LEVEL.saturating_add(reconsume_times)
    } else {
        delay_level
    };
    SendBackTarget::Retry { delay_level }
}

/// Whose turn it is among a retry topic's queues.
static NEXT_RETRY_QUEUE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// CONSUMER_SEND_MSG_BACK.
pub(crate) async fn send_back(
    path: &Arc<SendPath>,
    h: ConsumerSendMsgBackRequestHeader,
) -> Handled {
    validate_group(&h.group).map_err(|e| {
        Refusal::new(
            ResponseCode::SubscriptionGroupNotExist,
            format!("consumer group {:?}: {e}", h.group),
        )
    })?;
    let store = Arc::clone(&path.store);
    let offset = h.offset;
    let original = blocking(move || store.record_at(offset).map(|s| s.bytes().to_vec()))
        .await?
        .ok_or_else(|| {
            Refusal::new(
                ResponseCode::SystemError,
                format!(
                    "look message by offset failed, {offset}: no message starts there \
                     (deleted by retention, or never stored)"
                ),
            )
        })?;
    let view = RecordView::parse(&original, false).map_err(|e| {
        Refusal::new(
            ResponseCode::SystemError,
            format!("look message by offset failed, {offset}: {e}"),
        )
    })?;
    // The group's retryMaxTimes and retryQueueNums, as Java reads them.
    let group = if path.settings.broker.auto_create_subscription_group {
        path.groups.get_or_create([h.group.as_str()]).pop()
    } else {
        path.groups.get(&h.group)
    }
    .ok_or_else(|| {
        Refusal::new(
            ResponseCode::SubscriptionGroupNotExist,
            format!("subscription group not exist, {}", h.group),
        )
    })?;
    if group.retry_queue_nums <= 0 {
        // Java: a group without retry queues drops what it sends back.
        tracing::info!(group = %h.group, offset = h.offset, "send-back dropped: the group has no retry queues");
        return Ok(success());
    }
    let max = h.max_reconsume_times.unwrap_or(group.retry_max_times);
    let reconsume = view.reconsume_times();
    let target = send_back_target(h.delay_level, reconsume, max);
    let topic = match target {
        SendBackTarget::Retry { .. } => format!("{RETRY_GROUP_TOPIC_PREFIX}{}", h.group),
        SendBackTarget::DeadLetter => format!("{DLQ_GROUP_TOPIC_PREFIX}{}", h.group),
    };
    let queues = match target {
        SendBackTarget::Retry { .. } => group.retry_queue_nums,
        SendBackTarget::DeadLetter => 1,
    };
    let config = match path.topics.get_or_create_deferred(&topic, queues) {
        Ok((config, created)) => {
            if let Some(generation) = created {
                tracing::info!(topic, "created topic for sent-back messages");
                path.topics_changed.notify_one();
                // A retry topic comes back with the group's next heartbeat
                // if a crash loses it; a DLQ topic has no one to recreate
                // it, so it is on disk before its first message is stored.
                if target == SendBackTarget::DeadLetter {
                    let topics = Arc::clone(&path.topics);
                    blocking(move || {
                        topics.wait_persisted(generation, crate::meta::PERSIST_WAIT_TIMEOUT)
                    })
                    .await?
                    .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
                }
            }
            config
        }
        Err(e) => return Err(Refusal::new(ResponseCode::SystemError, e.to_string())),
    };
    if !config.writable() {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!("the topic[{topic}] sending message is forbidden"),
        ));
    }

    // Java counts a send-back under the topic the message came from.
    let origin = view
        .property(property::RETRY_TOPIC)
        .map_or_else(|| view.topic().to_owned(), |t| t.into_owned());
    path.items.send_back(&origin, &h.group);
    let mut msg = view.to_message();
    if msg.properties.get(property::RETRY_TOPIC).is_none() {
        msg.properties.insert(property::RETRY_TOPIC, view.topic());
    }
    if msg.properties.get(property::ORIGIN_MESSAGE_ID).is_none() {
        let id = encode_offset_msg_id(view.store_host(), view.physical_offset());
        msg.properties.insert(property::ORIGIN_MESSAGE_ID, id);
    }
    msg.properties
        .insert(property::RECONSUME_TIME, (reconsume + 1).to_string());
    msg.properties
        .insert(property::MAX_RECONSUME_TIMES, max.to_string());
    msg.properties.remove(property::DELAY_TIME_LEVEL);
    if let SendBackTarget::Retry { delay_level } = target {
        msg.properties
            .insert(property::DELAY_TIME_LEVEL, delay_level.to_string());
    }
    msg.topic = topic.clone();
    // Java spreads sent-back messages over the retry queues at random;
    // turn by turn spreads them as evenly.
    let turn = NEXT_RETRY_QUEUE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    msg.queue_id = (turn % config.write_queue_nums.max(1).unsigned_abs()) as i32;
    msg.reconsume_times = reconsume + 1;
    msg.store_host = path.store_host;
    if target == SendBackTarget::DeadLetter {
        tracing::info!(
            group = %h.group,
            from_topic = %view.topic(),
            offset,
            reconsume_times = reconsume,
            max_reconsume_times = max,
            "message moved to the dead-letter queue"
        );
    }
    let store = Arc::clone(&path.store);
    blocking(move || store.put_message(&msg)).await??;
    if target == SendBackTarget::DeadLetter {
        // As RocketMQ: under the group and the topic the consumer names.
        let topic = h.origin_topic.as_deref().filter(|t| !t.is_empty());
        path.rocketmq
            .outcomes
            .sent_to_dlq(&h.group, topic.unwrap_or(&origin));
    }
    // FLUSH_DISK_TIMEOUT still stored it: answering an error would make the
    // client retry locally and consume it twice.
    Ok(success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_levels_and_the_dlq_rule() {
        assert_eq!(
            send_back_target(0, 0, 16),
            SendBackTarget::Retry { delay_level: 3 }
        );
        assert_eq!(
            send_back_target(0, 5, 16),
            SendBackTarget::Retry { delay_level: 8 }
        );
        assert_eq!(
            send_back_target(2, 5, 16),
            SendBackTarget::Retry { delay_level: 2 }
        );
        assert_eq!(send_back_target(0, 16, 16), SendBackTarget::DeadLetter);
        assert_eq!(send_back_target(0, 17, 16), SendBackTarget::DeadLetter);
        assert_eq!(send_back_target(-1, 0, 16), SendBackTarget::DeadLetter);
        assert_eq!(send_back_target(0, 0, 0), SendBackTarget::DeadLetter);
    }
}
