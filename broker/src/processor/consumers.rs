//! Requests the broker answers by asking the consumers themselves:
//! INVOKE_BROKER_TO_GET_CONSUMER_STATUS (each member's offsets, through
//! GET_CONSUMER_STATUS_FROM_CLIENT), GET_CONSUMER_RUNNING_INFO and
//! CONSUME_MESSAGE_DIRECTLY (forwarded to the one client named, its answer
//! relayed as it came). mqadmin consumerStatus, consumerProgress -s and
//! the dashboard's "consume directly" use them.

use std::sync::Arc;
use std::time::Duration;

use rmq_common::json::write::object_keyed_map;
use rmq_common::message::msg_id::decode_offset_msg_id;
use rmq_common::remoting::body::MessageQueue;
use rmq_common::remoting::header::{
    ConsumeMessageDirectlyRequestHeader, ConsumerRunningInfoRequestHeader,
    ConsumerStatusRequestHeader,
};
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};

use super::parts::Consumption;
use super::{blocking, success, Handled, Refusal};
use crate::clients::CallError;

/// How long a member has to report its offsets (Java: 5 s).
const STATUS_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the named client has to answer a forwarded request (Java: 10 s).
const FORWARD_TIMEOUT: Duration = Duration::from_secs(10);
/// `CONSUME_MSG_TIMEOUT`: the client did not answer in time.
const CONSUME_MSG_TIMEOUT: i32 = 207;

/// GET_CONSUMER_RUNNING_INFO: forwarded with the caller's body.
pub(crate) async fn running_info(
    cons: &Arc<Consumption>,
    req: &RemotingCommand,
    h: ConsumerRunningInfoRequestHeader,
) -> Handled {
    let to = Forward {
        code: RequestCode::GetConsumerRunningInfo,
        with_broker_name: false,
        group: &h.consumer_group,
        client_id: h.client_id.as_deref().unwrap_or_default(),
    };
    forward(cons, to, req, req.body.clone()).await
}

/// CONSUME_MESSAGE_DIRECTLY: forwarded with the stored message as body.
pub(crate) async fn consume_directly(
    cons: &Arc<Consumption>,
    req: &RemotingCommand,
    h: ConsumeMessageDirectlyRequestHeader,
) -> Handled {
    let body = stored_message(cons, &h.msg_id).await?;
    let to = Forward {
        code: RequestCode::ConsumeMessageDirectly,
        with_broker_name: true,
        group: &h.consumer_group,
        client_id: h.client_id.as_deref().unwrap_or_default(),
    };
    forward(cons, to, req, Some(body.into())).await
}

/// Java's `Broker2Client.getConsumeStatus`: asks every member (or only the
/// one whose client id is `clientAddr`) for its offsets of `topic`; a
/// member that does not answer is left out.
pub(crate) async fn status(cons: &Arc<Consumption>, h: ConsumerStatusRequestHeader) -> Handled {
    let (topic, group) = (h.topic.as_str(), h.group.as_str());
    let only = h.client_addr.as_deref();
    let members = cons.clients.consumer_members(group);
    if members.is_empty() {
        return Err(Refusal::new(
            ResponseCode::SystemError,
            format!("No Any Consumer online in the consumer group: [{group}]"),
        ));
    }
    let mut table: Vec<(String, String)> = Vec::new();
    for (client_id, conn) in members {
        if only.is_some_and(|c| c != client_id) {
            continue;
        }
        let mut ask = RemotingCommand::request(RequestCode::GetConsumerStatusFromClient);
        ask.put_ext("topic", topic);
        ask.put_ext("group", group);
        match cons.calls.call(&conn, ask, STATUS_TIMEOUT).await {
            Ok(answer) if answer.code == ResponseCode::Success.code() => {
                match status_queues(answer.body.as_deref().unwrap_or_default()) {
                    Some(queues) => table.push((client_id.clone(), queues)),
                    None => tracing::warn!(
                        group,
                        client_id,
                        "GET_CONSUMER_STATUS_FROM_CLIENT answer is not a GetConsumerStatusBody"
                    ),
                }
            }
            Ok(answer) => tracing::warn!(
                group,
                client_id,
                code = answer.code,
                remark = answer.remark.as_deref().unwrap_or(""),
                "consumer refused GET_CONSUMER_STATUS_FROM_CLIENT"
            ),
            Err(e) => tracing::warn!(group, client_id, error = %e, "consumer status not read"),
        }
        if only.is_some() {
            break;
        }
    }
    let mut body = String::from("{\"consumerTable\":{");
    for (i, (client_id, queues)) in table.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(&serde_json::Value::from(client_id.as_str()).to_string());
        body.push(':');
        body.push_str(queues);
    }
    body.push_str("},\"messageQueueTable\":{}}");
    Ok(success().with_body(body.into_bytes()))
}

/// The `messageQueueTable` of a client's GetConsumerStatusBody, written
/// back as fastjson writes it (queues as object keys).
fn status_queues(body: &[u8]) -> Option<String> {
    let value = rmq_common::json::parse::parse(body).ok()?;
    let table = value.get("messageQueueTable")?.as_object()?;
    let mut entries = Vec::new();
    for (key, offset) in table {
        let queue: MessageQueue = rmq_common::json::from_str(key).ok()?;
        entries.push((queue, offset.as_i64()?));
    }
    object_keyed_map(entries).ok()
}

/// The stored record CONSUME_MESSAGE_DIRECTLY hands the client: the
/// message its offset message id names.
async fn stored_message(cons: &Arc<Consumption>, msg_id: &str) -> Result<Vec<u8>, Refusal> {
    let msg_id = msg_id.to_owned();
    let (_, offset) = decode_offset_msg_id(&msg_id).map_err(|e| {
        Refusal::new(
            ResponseCode::SystemError,
            format!("msgId {msg_id:?} is not an offset message id: {e}"),
        )
    })?;
    let store = Arc::clone(&cons.store);
    blocking(move || store.record_at(offset).map(|s| s.bytes().to_vec()))
        .await?
        .ok_or_else(|| {
            Refusal::new(
                ResponseCode::SystemError,
                format!("no message at CommitLog offset {offset} (msgId {msg_id})"),
            )
        })
}

/// Where a request answered by one consumer goes.
struct Forward<'a> {
    /// The code it is forwarded with (the caller's).
    code: RequestCode,
    /// Whether `brokerName` is added to the fields.
    with_broker_name: bool,
    /// `consumerGroup`.
    group: &'a str,
    /// `clientId`.
    client_id: &'a str,
}

/// Java's `callConsumer`: the request goes to the client `clientId` of
/// `consumerGroup` with the caller's fields; its answer comes back whole.
async fn forward(
    cons: &Arc<Consumption>,
    to: Forward<'_>,
    req: &RemotingCommand,
    body: Option<bytes::Bytes>,
) -> Handled {
    let Forward {
        code,
        with_broker_name,
        group,
        client_id,
    } = to;
    let conn = cons
        .clients
        .consumer_members(group)
        .into_iter()
        .find(|(id, _)| id == client_id)
        .map(|(_, conn)| conn)
        .ok_or_else(|| {
            Refusal::new(
                ResponseCode::SystemError,
                format!("The Consumer {group} {client_id} not online"),
            )
        })?;
    let mut ask = RemotingCommand::request(code);
    ask.ext_fields.clone_from(&req.ext_fields);
    if with_broker_name {
        ask.put_ext("brokerName", cons.broker_name.clone());
    }
    ask.body = body;
    match cons.calls.call(&conn, ask, FORWARD_TIMEOUT).await {
        Ok(answer) => {
            let mut out = RemotingCommand::response(
                ResponseCode::from_i32(answer.code).unwrap_or(ResponseCode::SystemError),
                answer.remark.clone(),
            );
            out.code = answer.code;
            out.ext_fields = answer.ext_fields;
            out.body = answer.body;
            Ok(out)
        }
        Err(CallError::Timeout { .. }) => {
            let mut out = RemotingCommand::response(
                ResponseCode::SystemError,
                Some(format!(
                    "consumer {group} {client_id} Timeout: no answer within {FORWARD_TIMEOUT:?}"
                )),
            );
            out.code = CONSUME_MSG_TIMEOUT;
            Ok(out)
        }
        Err(e) => Err(Refusal::new(
            ResponseCode::SystemError,
            format!("invoke consumer {group} {client_id} Exception: {e}"),
        )),
    }
}
