//! AckMessage, ChangeInvisibleDuration and ForwardMessageToDeadLetterQueue:
//! each receipt handle is decoded, refused once expired, and sent to the
//! broker's own POP path (ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME) or
//! send-back (CONSUMER_SEND_MSG_BACK with delay level -1, then an ack), as
//! the proxy's `ConsumerProcessor` and `ProducerProcessor` do. A handle
//! the broker renews for the client (`renew`) is swapped for its latest.

use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};
use rmq_grpc::pb;

use super::convert::duration_ms;
use super::receipt::ReceiptHandle;
use super::receive::check_invisible;
use super::service::Caller;
use super::service::Inner;
use super::status::{self, Failure};

fn success(resp: &RemotingCommand) -> Result<(), Failure> {
    if resp.code == i32::from(ResponseCode::Success) {
        Ok(())
    } else {
        Err(Failure::remoting(resp.code, resp.remark.as_deref()))
    }
}

/// Acks the message `handle` names.
pub(crate) async fn ack_handle(
    inner: &Inner,
    caller: &Caller,
    group: &str,
    topic: &str,
    handle: &str,
) -> Result<(), Failure> {
    let h = ReceiptHandle::decode(handle)?;
    h.check_fresh(rmq_common::time::now_ms())?;
    let mut cmd = RemotingCommand::request(RequestCode::AckMessage);
    cmd.put_ext("consumerGroup", group);
    cmd.put_ext("topic", h.real_topic(topic, group));
    cmd.put_ext("queueId", h.queue_id);
    cmd.put_ext("extraInfo", &h.text);
    cmd.put_ext("offset", h.queue_offset);
    success(&inner.call(caller, cmd).await?)
}

pub(crate) async fn ack(
    inner: &Inner,
    caller: &Caller,
    req: pb::AckMessageRequest,
) -> Result<pb::AckMessageResponse, Failure> {
    let topic = inner.check_topic(&req.topic.unwrap_or_default())?;
    let group = inner.check_group(&req.group.unwrap_or_default())?;
    let results = futures::future::join_all(req.entries.iter().map(|e| async {
        let handle = latest(inner, caller, &group, &e.message_id, &e.receipt_handle).await;
        ack_handle(inner, caller, &group, &topic, &handle).await
    }))
    .await;
    let mut codes = Vec::with_capacity(results.len());
    let entries = req
        .entries
        .into_iter()
        .zip(results)
        .map(|(e, r)| {
            let status = match r {
                Ok(()) => status::ok(),
                Err(f) => f.status(),
            };
            codes.push(pb::Code::try_from(status.code).unwrap_or(pb::Code::InternalServerError));
            pb::AckMessageResultEntry {
                message_id: e.message_id,
                receipt_handle: e.receipt_handle,
                status: Some(status),
            }
        })
        .collect();
    Ok(pb::AckMessageResponse {
        status: Some(status::of_entries(&codes, "ack message result is empty")),
        entries,
    })
}

pub(crate) async fn change_invisible(
    inner: &Inner,
    caller: &Caller,
    req: pb::ChangeInvisibleDurationRequest,
) -> Result<pb::ChangeInvisibleDurationResponse, Failure> {
    let topic = inner.check_topic(&req.topic.unwrap_or_default())?;
    let group = inner.check_group(&req.group.unwrap_or_default())?;
    let invisible = req.invisible_duration.as_ref().map_or(0, duration_ms);
    check_invisible(invisible, 0)?;
    let handle = latest(inner, caller, &group, &req.message_id, &req.receipt_handle).await;
    let h = ReceiptHandle::decode(&handle)?;
    h.check_fresh(rmq_common::time::now_ms())?;
    let cmd = change_invisible_cmd(&group, &topic, &h, invisible);
    let resp = inner.call(caller, cmd).await?;
    Ok(pb::ChangeInvisibleDurationResponse {
        status: Some(status::ok()),
        receipt_handle: renewed_handle(&resp, &h)?,
    })
}

/// The broker's own ChangeInvisibleDuration (a renewal, or a message let
/// go): no caller, so no ACL check. Returns the new handle.
pub(crate) async fn change_invisible_internal(
    inner: &Inner,
    group: &str,
    topic: &str,
    handle: &str,
    invisible_ms: i64,
) -> Result<String, Failure> {
    let h = ReceiptHandle::decode(handle)?;
    h.check_fresh(rmq_common::time::now_ms())?;
    let resp = inner
        .run_internal(change_invisible_cmd(group, topic, &h, invisible_ms))
        .await?;
    renewed_handle(&resp, &h)
}

/// The handle the client is to use for the message `handle` names: the
/// latest one if the broker renews it (and it stops renewing it now).
async fn latest(
    inner: &Inner,
    caller: &Caller,
    group: &str,
    message_id: &str,
    handle: &str,
) -> String {
    inner
        .renewals
        .take(&caller.client.id, group, message_id, handle)
        .await
        .unwrap_or_else(|| handle.to_owned())
}

fn change_invisible_cmd(
    group: &str,
    topic: &str,
    h: &ReceiptHandle,
    invisible_ms: i64,
) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(RequestCode::ChangeMessageInvisibletime);
    cmd.put_ext("consumerGroup", group);
    cmd.put_ext("topic", h.real_topic(topic, group));
    cmd.put_ext("queueId", h.queue_id);
    cmd.put_ext("extraInfo", &h.text);
    cmd.put_ext("offset", h.queue_offset);
    cmd.put_ext("invisibleTime", invisible_ms);
    cmd
}

/// The new handle after a change of invisible time, as the proxy builds
/// it: the message's own queue offset as the checkpoint offset, the
/// answer's pop time, invisible time and revive queue.
fn renewed_handle(resp: &RemotingCommand, h: &ReceiptHandle) -> Result<String, Failure> {
    success(resp)?;
    let ext = resp.ext();
    let number = |k: &'static str| ext.get_i64(k).ok().flatten();
    let (Some(pop_time), Some(invisible_time), Some(revive_qid)) = (
        number("popTime"),
        number("invisibleTime"),
        number("reviveQid").and_then(|q| i32::try_from(q).ok()),
    ) else {
        return Err(Failure::internal(
            "changeInvisibleDuration failed: status is abnormal",
        ));
    };
    let info = rmq_common::pop::ExtraInfo {
        ck_offset: h.queue_offset,
        pop_time,
        invisible_time,
        revive_qid,
        retry: h.info.retry,
        broker_name: h.info.broker_name.clone(),
    }
    .with_queue(h.queue_id, h.queue_offset);
    Ok(ReceiptHandle::encode(&info, h.commit_log_offset))
}

/// Sends the message `handle` names to `group`'s DLQ, then acks it.
pub(crate) async fn to_dlq(
    inner: &Inner,
    caller: &Caller,
    group: &str,
    topic: &str,
    message_id: &str,
    handle: &str,
) -> Result<(), Failure> {
    let h = ReceiptHandle::decode(handle)?;
    h.check_fresh(rmq_common::time::now_ms())?;
    if h.commit_log_offset < 0 {
        return Err(Failure::new(
            pb::Code::InvalidReceiptHandle,
            "commit log offset is empty",
        ));
    }
    let mut cmd = RemotingCommand::request(RequestCode::ConsumerSendMsgBack);
    cmd.put_ext("offset", h.commit_log_offset);
    cmd.put_ext("group", group);
    cmd.put_ext("delayLevel", -1);
    cmd.put_ext("originMsgId", message_id);
    cmd.put_ext("originTopic", h.real_topic(topic, group));
    cmd.put_ext("maxReconsumeTimes", 0);
    success(&inner.call(caller, cmd).await?)?;
    ack_handle(inner, caller, group, topic, handle).await
}

pub(crate) async fn forward_to_dlq(
    inner: &Inner,
    caller: &Caller,
    req: pb::ForwardMessageToDeadLetterQueueRequest,
) -> Result<pb::ForwardMessageToDeadLetterQueueResponse, Failure> {
    let topic = inner.check_topic(&req.topic.unwrap_or_default())?;
    let group = inner.check_group(&req.group.unwrap_or_default())?;
    let handle = latest(inner, caller, &group, &req.message_id, &req.receipt_handle).await;
    to_dlq(inner, caller, &group, &topic, &req.message_id, &handle).await?;
    Ok(pb::ForwardMessageToDeadLetterQueueResponse {
        status: Some(status::ok()),
    })
}
