//! ReceiveMessage: one POP on the broker's own POP path (POP_MESSAGE on
//! the client's connection), long-polling as the proxy computes it, and
//! the answer as a stream: a status, then each message with its receipt
//! handle, then the delivery timestamp (`ReceiveMessageActivity`,
//! `ReceiveMessageResponseStreamWriter`). As the proxy does, a popped
//! message whose tag does not match is acked, and one that has used up its
//! attempts goes to the group's DLQ, instead of being handed out.

use std::time::Duration;

use rmq_common::message::record::RecordView;
use rmq_common::remoting::{PopMessageResponseHeader, RemotingCommand, RequestCode, ResponseCode};
use rmq_grpc::pb;

use super::ack;
use super::convert::{duration_ms, message_of_record, timestamp};
use super::receipt::ReceiptHandle;
use super::renew::Held;
use super::service::Caller;
use super::service::Inner;
use super::settings::{MAX_LONG_POLLING_MS, MIN_LONG_POLLING_MS};
use super::status::{self, Failure};

/// The proxy's `minInvisibleTimeMillsForRecv` and `maxInvisibleTimeMills`
/// (an auto-renewing client's is `defaultInvisibleTimeMills`, a setting).
pub(crate) const MIN_INVISIBLE_MS: i64 = 10_000;
pub(crate) const MAX_INVISIBLE_MS: i64 = 12 * 3600 * 1000;
/// `ProxyUtils.MAX_MSG_NUMS_FOR_POP_REQUEST`.
const MAX_BATCH: i32 = 32;
/// What the client's request timeout is taken to be when its settings do
/// not say (the SDKs' default).
const DEFAULT_REQUEST_TIMEOUT_MS: i64 = 3_000;

/// ILLEGAL_INVISIBLE_TIME outside `[min, MAX_INVISIBLE_MS]`.
pub(crate) fn check_invisible(ms: i64, min: i64) -> Result<(), Failure> {
    if ms < min {
        return Err(Failure::new(
            pb::Code::IllegalInvisibleTime,
            format!("the invisibleTime is too small. min is {min}"),
        ));
    }
    if ms > MAX_INVISIBLE_MS {
        return Err(Failure::new(
            pb::Code::IllegalInvisibleTime,
            format!("the invisibleTime is too large. max is {MAX_INVISIBLE_MS}"),
        ));
    }
    Ok(())
}

/// How long the broker may hold the receive: the request's own timeout,
/// or what its deadline leaves after half the client's request timeout,
/// clamped to `[5 s, 20 s]` and to the deadline.
pub(crate) fn polling_ms(
    requested: Option<i64>,
    deadline: Option<Duration>,
    request_timeout_ms: i64,
    client_version: &str,
) -> Result<i64, Failure> {
    let remaining = deadline.map_or(i64::MAX, |d| d.as_millis().min(i64::MAX as u128) as i64);
    let mut polling = requested.unwrap_or_else(|| remaining.saturating_sub(request_timeout_ms / 2));
    polling = polling.clamp(MIN_LONG_POLLING_MS, MAX_LONG_POLLING_MS);
    if polling > remaining {
        if remaining >= MIN_LONG_POLLING_MS {
            polling = remaining;
        } else {
            // Clients before 5.0.3 do not know ILLEGAL_POLLING_TIME.
            let code = if client_version.is_empty() || client_version < "5.0.3" {
                pb::Code::BadRequest
            } else {
                pb::Code::IllegalPollingTime
            };
            return Err(Failure::new(
                code,
                "The deadline time remaining is not enough for polling, please check network condition",
            ));
        }
    }
    Ok(polling)
}

/// Whether a message tagged `tag` matches a TAG expression.
fn tag_matches(expression: &str, tag: Option<&str>) -> bool {
    let wanted: Vec<&str> = expression
        .split("||")
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    wanted.is_empty() || wanted.contains(&"*") || tag.is_some_and(|t| wanted.contains(&t))
}

/// The whole answer to one ReceiveMessage.
pub(crate) async fn receive(
    inner: &Inner,
    caller: &Caller,
    req: pb::ReceiveMessageRequest,
) -> Vec<pb::ReceiveMessageResponse> {
    let mut out = match pop(inner, caller, &req).await {
        Ok(answer) => answer,
        Err(f) => vec![pb::ReceiveMessageResponse {
            content: Some(pb::receive_message_response::Content::Status(f.status())),
        }],
    };
    out.push(pb::ReceiveMessageResponse {
        content: Some(pb::receive_message_response::Content::DeliveryTimestamp(
            timestamp(rmq_common::time::now_ms()),
        )),
    });
    out
}

async fn pop(
    inner: &Inner,
    caller: &Caller,
    req: &pb::ReceiveMessageRequest,
) -> Result<Vec<pb::ReceiveMessageResponse>, Failure> {
    let settings = caller.client.settings().unwrap_or_default();
    let request_timeout = settings
        .request_timeout
        .as_ref()
        .map_or(DEFAULT_REQUEST_TIMEOUT_MS, duration_ms);
    let polling = polling_ms(
        req.long_polling_timeout.as_ref().map(duration_ms),
        caller.meta.deadline,
        request_timeout,
        &caller.client.version,
    )?;
    let mq = req.message_queue.clone().unwrap_or_default();
    let topic = inner.check_topic(&mq.topic.unwrap_or_default())?;
    let group = inner.check_group(&req.group.clone().unwrap_or_default())?;
    let invisible = if req.auto_renew {
        inner.ctx.settings.broker.grpc.default_invisible_time_ms
    } else {
        let ms = req.invisible_duration.as_ref().map_or(0, duration_ms);
        check_invisible(ms, MIN_INVISIBLE_MS)?;
        ms
    };
    let filter = req.filter_expression.clone().unwrap_or_default();
    let (exp_type, exp) = match filter.r#type() {
        pb::FilterType::Sql => ("SQL92", filter.expression.clone()),
        _ if filter.expression.trim().is_empty() => ("TAG", "*".to_owned()),
        _ => ("TAG", filter.expression.clone()),
    };
    let group_config = inner.ctx.groups.get(&group);
    let fifo = group_config
        .as_ref()
        .is_some_and(|g| g.consume_message_orderly);
    let max_attempts = match &settings.backoff_policy {
        Some(p) if p.max_attempts > 0 => p.max_attempts,
        _ => group_config.as_ref().map_or(17, |g| g.retry_max_times + 1),
    };
    let mut cmd = RemotingCommand::request(RequestCode::PopMessage);
    cmd.put_ext("consumerGroup", &group);
    cmd.put_ext("topic", &topic);
    cmd.put_ext("queueId", -1);
    cmd.put_ext("maxMsgNums", req.batch_size.clamp(1, MAX_BATCH));
    cmd.put_ext("invisibleTime", invisible);
    cmd.put_ext("pollTime", polling);
    cmd.put_ext("bornTime", rmq_common::time::now_ms());
    cmd.put_ext("initMode", 1);
    cmd.put_ext("expType", exp_type);
    cmd.put_ext("exp", &exp);
    cmd.put_ext("order", fifo);
    if let Some(attempt) = &req.attempt_id {
        cmd.put_ext("attemptId", attempt);
    }
    let resp = inner.call(caller, cmd).await?;
    let code = ResponseCode::from_i32(resp.code);
    let not_found = |m: &str| {
        vec![pb::ReceiveMessageResponse {
            content: Some(pb::receive_message_response::Content::Status(
                status::status(pb::Code::MessageNotFound, m),
            )),
        }]
    };
    if resp.code == i32::from(ResponseCode::POLLING_FULL) {
        return Ok(vec![pb::ReceiveMessageResponse {
            content: Some(pb::receive_message_response::Content::Status(
                status::status(pb::Code::TooManyRequests, "polling full"),
            )),
        }]);
    }
    if resp.code == i32::from(ResponseCode::POLLING_TIMEOUT)
        || code == Some(ResponseCode::PullNotFound)
    {
        return Ok(not_found("no new message"));
    }
    if code != Some(ResponseCode::Success) {
        return Err(Failure::remoting(resp.code, resp.remark.as_deref()));
    }
    let header = PopMessageResponseHeader::from_ext(&resp.ext())
        .map_err(|e| Failure::internal(format!("the broker's POP answer: {e}")))?;
    // A POP answer's records may ride in `body_parts` (the zero-copy
    // form of the remoting writer); they are read as one run here.
    let joined;
    let body: &[u8] = if resp.body_parts.is_empty() {
        resp.body.as_deref().unwrap_or_default()
    } else {
        joined = resp
            .body
            .iter()
            .chain(resp.body_parts.iter())
            .flat_map(|b| b.iter().copied())
            .collect::<Vec<u8>>();
        &joined
    };
    let mut views = Vec::new();
    let mut pos = 0;
    while pos < body.len() {
        let v = RecordView::parse(&body[pos..], false).map_err(|e| {
            Failure::internal(format!("the broker's POP answer, record at {pos}: {e}"))
        })?;
        pos += v.total_size();
        views.push(v);
    }
    let stored: Vec<_> = views.iter().map(RecordView::to_message).collect();
    let offsets: Vec<i64> = views.iter().map(RecordView::queue_offset).collect();
    let infos = rmq_client::pop::extra_infos(
        &header,
        &inner.ctx.settings.broker.broker_name,
        &stored,
        &offsets,
    )
    .map_err(|e| Failure::internal(e.to_string()))?;
    let now = rmq_common::time::now_ms();
    let mut messages = Vec::new();
    for (view, info) in views.iter().zip(infos) {
        let handle = ReceiptHandle::encode(&info, view.physical_offset());
        let tag = view.property(rmq_common::constants::property::TAGS);
        let message_id = view
            .property(rmq_common::constants::property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
            .map(|c| c.into_owned())
            .unwrap_or_default();
        if exp_type == "TAG" && !tag_matches(&exp, tag.as_deref()) {
            let _ = ack::ack_handle(inner, caller, &group, &topic, &handle).await;
            continue;
        }
        if view.reconsume_times() >= max_attempts {
            let _ = ack::to_dlq(inner, caller, &group, &topic, &message_id, &handle).await;
            continue;
        }
        if req.auto_renew && inner.ctx.settings.broker.grpc.enable_proxy_auto_renew {
            let held = Held::new(topic.clone(), handle.clone(), now, view.reconsume_times());
            inner
                .renewals
                .add(&caller.client.id, &group, &message_id, held);
        }
        messages.push(pb::ReceiveMessageResponse {
            content: Some(pb::receive_message_response::Content::Message(
                message_of_record(view, &topic, Some(handle), now),
            )),
        });
    }
    if messages.is_empty() {
        return Ok(not_found("no match message"));
    }
    let mut out = Vec::with_capacity(messages.len() + 1);
    out.push(pb::ReceiveMessageResponse {
        content: Some(pb::receive_message_response::Content::Status(status::ok())),
    });
    out.extend(messages);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polling_time_as_the_proxy_computes_it() {
        let d = |s| Some(Duration::from_secs(s));
        assert_eq!(polling_ms(None, d(30), 3_000, "5.0.7").unwrap(), 20_000);
        assert_eq!(
            polling_ms(Some(1_000), d(30), 3_000, "5.0.7").unwrap(),
            5_000
        );
        assert_eq!(
            polling_ms(Some(15_000), d(10), 3_000, "5.0.7").unwrap(),
            10_000
        );
        let e = polling_ms(Some(15_000), d(2), 3_000, "5.0.7").unwrap_err();
        assert_eq!(e.code, pb::Code::IllegalPollingTime);
        let old = polling_ms(Some(15_000), d(2), 3_000, "5.0.2").unwrap_err();
        assert_eq!(old.code, pb::Code::BadRequest);
        assert_eq!(polling_ms(None, None, 3_000, "").unwrap(), 20_000);
    }

    #[test]
    fn invisible_time_bounds() {
        assert!(check_invisible(10_000, MIN_INVISIBLE_MS).is_ok());
        assert_eq!(
            check_invisible(9_999, MIN_INVISIBLE_MS).unwrap_err().code,
            pb::Code::IllegalInvisibleTime
        );
        assert!(check_invisible(MAX_INVISIBLE_MS + 1, 0).is_err());
    }

    #[test]
    fn tags() {
        assert!(tag_matches("*", None));
        assert!(tag_matches("", Some("A")));
        assert!(tag_matches("A || B", Some("B")));
        assert!(!tag_matches("A || B", Some("C")));
        assert!(!tag_matches("A", None));
    }
}
