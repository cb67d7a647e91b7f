//! Consumer offsets and queue offsets: QUERY/UPDATE_CONSUMER_OFFSET,
//! GET_MAX/MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME,
//! and the tables a slave copies (GET_ALL_CONSUMER_OFFSET,
//! GET_ALL_DELAY_OFFSET).

use std::sync::Arc;

use rmq_common::cq::Boundary;
use rmq_common::remoting::header::{
    QueryConsumerOffsetRequestHeader, QueueRequestHeader, SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
};
use rmq_common::remoting::{RemotingCommand, ResponseCode};

use super::{blocking, json_success, success, Handled, Refusal};
use crate::meta::{ConsumerOffsetManager, TopicConfigManager};
use crate::service::schedule::Scheduler;
use rmq_store::MessageStore;

/// QUERY_CONSUMER_OFFSET.
pub(crate) async fn query(
    offsets: &ConsumerOffsetManager,
    store: &Arc<MessageStore>,
    h: QueryConsumerOffsetRequestHeader,
) -> Handled {
    let QueryConsumerOffsetRequestHeader {
        topic,
        queue_id,
        consumer_group,
    } = h;
    if let Some(offset) = offsets.query(&consumer_group, &topic, queue_id) {
        return Ok(with(success(), "offset", offset));
    }
    // A new group starts at 0 while the queue's first message is still
    // stored; otherwise the client decides (QUERY_NOT_FOUND).
    let store = Arc::clone(store);
    let min = blocking(move || store.min_offset_in_queue(&topic, queue_id)).await??;
    if min <= 0 {
        Ok(with(success(), "offset", 0))
    } else {
        Err(Refusal::new(
            ResponseCode::QueryNotFound,
            "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
        ))
    }
}

/// UPDATE_CONSUMER_OFFSET.
pub(crate) fn update(
    topics: &TopicConfigManager,
    offsets: &ConsumerOffsetManager,
    h: UpdateConsumerOffsetRequestHeader,
) -> Handled {
    // As RocketMQ 5.x: offsets are kept only for topics that exist,
    // so a client cannot grow the table with made-up names.
    if topics.get(&h.topic).is_none() {
        return Err(Refusal::new(
            ResponseCode::TopicNotExist,
            format!("Topic {} not exist!", h.topic),
        ));
    }
    // -1 is stored as sent, as Java 4.9.7 does (ali-ons commits it for a
    // queue it has not consumed yet); it reads as no offset. Any other
    // negative value is no offset a client means, and is refused (Java
    // stores it too).
    let offset = h.commit_offset;
    if offset < -1 {
        return Err(Refusal::new(
            ResponseCode::SystemError,
            format!("commitOffset {offset} is negative"),
        ));
    }
    offsets.commit(&h.consumer_group, &h.topic, h.queue_id, offset);
    Ok(success())
}

/// GET_MAX_OFFSET.
pub(crate) async fn max(store: &Arc<MessageStore>, h: QueueRequestHeader) -> Handled {
    let store = Arc::clone(store);
    let v = blocking(move || store.max_offset_in_queue(&h.topic, h.queue_id)).await??;
    Ok(with(success(), "offset", v))
}

/// GET_MIN_OFFSET.
pub(crate) async fn min(store: &Arc<MessageStore>, h: QueueRequestHeader) -> Handled {
    let store = Arc::clone(store);
    let v = blocking(move || store.min_offset_in_queue(&h.topic, h.queue_id)).await??;
    Ok(with(success(), "offset", v))
}

/// SEARCH_OFFSET_BY_TIMESTAMP.
pub(crate) async fn search(store: &Arc<MessageStore>, h: SearchOffsetRequestHeader) -> Handled {
    let boundary = match h.boundary_type.as_deref() {
        Some(b) if b.eq_ignore_ascii_case("UPPER") => Boundary::Upper,
        _ => Boundary::Lower,
    };
    let store = Arc::clone(store);
    let v = blocking(move || store.offset_by_time(&h.topic, h.queue_id, h.timestamp, boundary))
        .await??;
    Ok(with(success(), "offset", v))
}

/// GET_EARLIEST_MSG_STORETIME.
pub(crate) async fn earliest(store: &Arc<MessageStore>, h: QueueRequestHeader) -> Handled {
    let store = Arc::clone(store);
    let v = blocking(move || store.earliest_message_time(&h.topic, h.queue_id)).await??;
    match v {
        Some(ts) => Ok(with(success(), "timestamp", ts)),
        None => Err(Refusal::new(
            ResponseCode::SystemError,
            "no message in the queue",
        )),
    }
}

/// GET_ALL_CONSUMER_OFFSET: what a slave copies from its master.
pub(crate) fn all(offsets: &ConsumerOffsetManager) -> Handled {
    offsets
        .table_json()
        .map(|body| success().with_body(body))
        .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))
}

/// GET_ALL_DELAY_OFFSET: what a slave copies from its master.
pub(crate) fn all_delay(scheduler: &Scheduler) -> Handled {
    json_success(&scheduler.offsets_json())
}

fn with(mut resp: RemotingCommand, key: &str, value: i64) -> RemotingCommand {
    resp.put_ext(key, value);
    resp
}
