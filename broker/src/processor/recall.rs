//! RECALL_MESSAGE (370, RocketMQ 5.x): cancels a timer message by the
//! recall handle its send answer carried. The checks run in 5.x's order
//! with its codes and remarks; what is written is a delete marker that the
//! timer rewrite files into the message's own slot, where the dequeue side
//! drops the message it names. Nothing checks that the message exists or
//! is still pending, as in 5.x.

use std::sync::Arc;

use rmq_common::constants::property;
use rmq_common::message::MessageToStore;
use rmq_common::remoting::header::RecallMessageRequestHeader;
use rmq_common::remoting::{RemotingCommand, ResponseCode};

use super::parts::SendPath;
use super::{Handled, Refusal};
use crate::service::timer::handle::RecallHandle;
use crate::service::timer::rewrite;
use rmq_remoting::Connection;

/// The tag of a delete marker.
const RECALL_TAG: &str = "_RECALL_TAG_";
/// 5.x's remark for a broker that cannot take it now.
const NOT_AVAILABLE: &str = "recall failed, broker service not available";

fn illegal(remark: &str) -> Refusal {
    Refusal::new(ResponseCode::IllegalOperation, remark)
}

/// RECALL_MESSAGE.
pub(crate) async fn recall(
    path: &Arc<SendPath>,
    conn: &Arc<Connection>,
    header: RecallMessageRequestHeader,
) -> Handled {
    let settings = &path.settings;
    if !settings.broker.recall_message_enable {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            "recall failed, operation is forbidden",
        ));
    }
    if path.role.is_slave() {
        return Err(Refusal::new(ResponseCode::SlaveNotAvailable, NOT_AVAILABLE));
    }
    if path.topics.get(&header.topic).is_none() {
        return Err(Refusal::new(
            ResponseCode::TopicNotExist,
            format!("recall failed, the topic[{}] not exist", header.topic),
        ));
    }
    let handle =
        RecallHandle::decode(&header.recall_handle).map_err(|e| illegal(&e.to_string()))?;
    if handle.topic != header.topic {
        return Err(illegal("recall failed, topic not match"));
    }
    if handle.broker_name != settings.broker.broker_name {
        return Err(illegal(NOT_AVAILABLE));
    }
    let now = path.store.clock().now_ms();
    let left = handle.timestamp_ms().saturating_sub(now);
    let max_ms = i64::try_from(settings.store.timer_max_delay_sec)
        .unwrap_or(i64::MAX / 1000)
        .saturating_mul(1000);
    if handle.timestamp_ms() < 0 || left <= 0 || left >= max_ms {
        return Err(illegal("recall failed, timestamp invalid"));
    }
    let mut marker = MessageToStore::new(header.topic.as_str(), 0, b"0".to_vec());
    let p = &mut marker.properties;
    p.insert(property::TAGS, RECALL_TAG);
    p.insert(
        property::TIMER_DEL_UNIQKEY,
        format!("{}+{}", handle.topic, handle.uniq_key),
    );
    p.insert(
        property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
        handle.uniq_key.as_str(),
    );
    p.insert(property::TIMER_DELIVER_MS, handle.timestamp.as_str());
    p.insert(property::BORN_TIMESTAMP, now.to_string());
    p.insert(property::TRACE_CONTEXT, "");
    if let Some(group) = &header.producer_group {
        p.insert(property::PRODUCER_GROUP, group.as_str());
    }
    marker.born_timestamp = now;
    marker.born_host = conn.peer;
    marker.store_host = path.store_host;
    let execute_error = || Refusal::new(ResponseCode::SystemError, "recall failed, execute error");
    match rewrite::apply(&mut marker, now, &settings.store) {
        Ok(true) => {}
        Ok(false) | Err(_) => return Err(execute_error()),
    }
    if let Err(e) = path.store.put_async(std::slice::from_ref(&marker)).await {
        tracing::warn!(topic = %header.topic, error = %e, "recall marker not stored");
        return Err(execute_error());
    }
    let mut resp = RemotingCommand::response(ResponseCode::Success, None);
    resp.put_ext("msgId", handle.uniq_key.as_str());
    resp.put_ext("MSG_REGION", "DefaultRegion");
    Ok(resp)
}
