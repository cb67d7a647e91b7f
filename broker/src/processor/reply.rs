//! SEND_REPLY_MESSAGE / SEND_REPLY_MESSAGE_V2: the reply half of
//! request-reply (`DefaultMQProducer.request`). A requester sends its
//! request with `CORRELATION_ID` and `REPLY_TO_CLIENT` (its client id); the
//! replier sends the reply, with those properties copied, to the cluster's
//! reply topic. The broker pushes the reply to the requester's connection
//! as PUSH_REPLY_MESSAGE_TO_CLIENT and waits for its answer, then (with
//! `storeReplyMessageEnable`, on by default) stores it in the reply topic
//! too. A reply whose requester is gone is stored and answered
//! SYSTEM_ERROR, as RocketMQ does; nothing retries it.

use std::sync::Arc;
use std::time::Duration;

use rmq_common::constants::property;
use rmq_common::message::Properties;
use rmq_common::remoting::{
    RemotingCommand, RequestCode, ResponseCode, SendMessageRequestHeader, SendMessageResponseHeader,
};

use super::parts::SendPath;
use super::{validate, Handled, Refusal};
use rmq_remoting::Connection;

/// How long the requester has to take a pushed reply (Java's
/// `Broker2Client.callClient`).
pub(crate) const PUSH_TIMEOUT: Duration = Duration::from_secs(3);

/// The reply topic of a cluster: `<cluster>_REPLY_TOPIC`.
pub(crate) fn reply_topic(cluster: &str) -> String {
    format!("{cluster}_REPLY_TOPIC")
}

/// SEND_REPLY_MESSAGE and SEND_REPLY_MESSAGE_V2; the body is `req`'s.
pub(crate) async fn reply(
    path: &Arc<SendPath>,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
    header: SendMessageRequestHeader,
) -> Handled {
    validate::send_topic(&header.topic)?;
    let topic = super::send::topic_for_send(path, &header, false).await?;
    let queues = topic.write_queue_nums.max(topic.read_queue_nums).max(1);
    let queue_id = if header.queue_id < 0 {
        0
    } else {
        header.queue_id
    };
    if queue_id >= queues {
        return Err(Refusal::new(
            ResponseCode::SystemError,
            format!(
                "request queueId[{queue_id}] is illegal: topic {} has {queues} queues",
                header.topic
            ),
        ));
    }
    let body = req.body.clone().unwrap_or_default().to_vec();
    let mut properties =
        Properties::decode(header.properties.as_deref().unwrap_or_default().as_bytes());
    let pushed = push_to_requester(path, conn, &header, &mut properties, &body).await;

    let mut answer = SendMessageResponseHeader {
        msg_id: "0".into(),
        queue_id,
        queue_offset: 0,
        transaction_id: None,
    };
    if path.runtime.store_reply_message_enable() {
        let msg = super::send::message_from(path, conn, &header, queue_id, properties, body);
        // As RocketMQ: the answer is the push's; a failed store is logged.
        match path.store.put_async(std::slice::from_ref(&msg)).await {
            Ok(r) => {
                if let Some(a) = r.appended.first() {
                    answer.msg_id = a.msg_id.clone();
                    answer.queue_offset = a.queue_offset;
                }
            }
            Err(e) => tracing::warn!(topic = %header.topic, error = %e, "storing a reply failed"),
        }
    }
    match pushed {
        Ok(()) => Ok(super::send::send_answer(ResponseCode::Success, &answer)),
        Err(remark) => Err(Refusal::new(ResponseCode::SystemError, remark)),
    }
}

/// Pushes the reply to the connection of the producer named by its
/// `REPLY_TO_CLIENT` property; the error is the remark RocketMQ answers.
async fn push_to_requester(
    path: &SendPath,
    conn: &Connection,
    header: &SendMessageRequestHeader,
    properties: &mut Properties,
    body: &[u8],
) -> Result<(), String> {
    let Some(sender) = properties.get(property::REPLY_TO_CLIENT).map(str::to_owned) else {
        tracing::warn!(peer = %conn.peer, "a reply without REPLY_TO_CLIENT cannot be pushed");
        return Err(format!(
            "reply message properties[{}] is null",
            property::REPLY_TO_CLIENT
        ));
    };
    let Some(target) = path.clients.producer_by_client_id(&sender) else {
        let remark = format!("push reply message fail, channel of <{sender}> not found.");
        tracing::warn!(requester = %sender, "{remark}");
        return Err(remark);
    };
    let now = rmq_common::time::now_ms();
    properties.insert(property::PUSH_REPLY_TIME, now.to_string());
    let encoded = properties
        .encode()
        .ok()
        .and_then(|p| String::from_utf8(p).ok())
        .unwrap_or_default();
    let mut push = RemotingCommand::request(RequestCode::PushReplyMessageToClient);
    for (k, v) in [
        ("producerGroup", header.producer_group.clone()),
        ("topic", header.topic.clone()),
        ("defaultTopic", header.default_topic.clone()),
        (
            "defaultTopicQueueNums",
            header.default_topic_queue_nums.to_string(),
        ),
        ("queueId", header.queue_id.to_string()),
        ("sysFlag", header.sys_flag.to_string()),
        ("bornTimestamp", header.born_timestamp.to_string()),
        ("flag", header.flag.to_string()),
        ("properties", encoded),
        ("reconsumeTimes", header.reconsume_times.to_string()),
        ("unitMode", header.unit_mode.to_string()),
        ("bornHost", conn.peer.to_string()),
        ("storeHost", path.store_host.to_string()),
        ("storeTimestamp", now.to_string()),
    ] {
        push.put_ext(k, v);
    }
    let push = push.with_body(body.to_vec());
    match path.calls.call(&target, push, PUSH_TIMEOUT).await {
        Ok(r) if r.code == i32::from(ResponseCode::Success) => Ok(()),
        Ok(r) => {
            tracing::warn!(requester = %sender, code = r.code,
                remark = r.remark.as_deref().unwrap_or(""), "the requester refused a pushed reply");
            Err(format!("push reply message to {sender}fail."))
        }
        Err(e) => {
            tracing::warn!(requester = %sender, error = %e, "pushing a reply failed");
            Err(format!("push reply message to {sender}fail."))
        }
    }
}
