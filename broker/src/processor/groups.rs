//! Group administration: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
//! DELETE_SUBSCRIPTIONGROUP, GET_CONSUMER_CONNECTION_LIST,
//! GET_PRODUCER_CONNECTION_LIST and INVOKE_BROKER_TO_RESET_OFFSET (mqadmin
//! updateSubGroup, deleteSubGroup, consumerConnection, producerConnection,
//! resetOffsetByTime).

use std::sync::Arc;

use rmq_common::cq::Boundary;
use rmq_common::names::validate_group;
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};

use super::stats::{keyed_body, queue};
use super::{blocking, json_success, success, Handled, Refusal};
use crate::context::BrokerContext;
use rmq_common::remoting::body::SubscriptionGroupConfig;

/// Handles group administration.
pub async fn handle(ctx: &Arc<BrokerContext>, code: RequestCode, req: &RemotingCommand) -> Handled {
    let ext = req.ext();
    match code {
        RequestCode::UpdateAndCreateSubscriptionGroup => {
            let config: SubscriptionGroupConfig = rmq_common::json::from_slice(
                req.body.as_deref().unwrap_or_default(),
            )
            .map_err(|e| {
                Refusal::new(
                    ResponseCode::SystemError,
                    format!("subscription group body is not valid: {e}"),
                )
            })?;
            validate_group(&config.group_name)
                .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
            if config.retry_queue_nums != 0 {
                super::validate::queue_nums("retryQueueNums", config.retry_queue_nums)?;
            }
            let name = config.group_name.clone();
            let groups = Arc::clone(&ctx.groups);
            blocking(move || groups.upsert(config)).await??;
            tracing::info!(group = name, "subscription group created or updated");
            Ok(success())
        }
        RequestCode::DeleteSubscriptionGroup => {
            let group = ext.req_str("groupName")?.to_owned();
            let remove_offset = ext.get_bool("removeOffset")?.unwrap_or(false);
            let groups = Arc::clone(&ctx.groups);
            let g = group.clone();
            // Java deletes a group that does not exist without complaint.
            blocking(move || groups.delete(&g)).await??;
            if remove_offset {
                ctx.offsets.remove_group(&group);
            }
            tracing::info!(group, remove_offset, "subscription group deleted");
            Ok(success())
        }
        RequestCode::GetConsumerConnectionList => {
            let group = ext.req_str("consumerGroup")?;
            let conn = ctx.clients.consumer_connection(group).ok_or_else(|| {
                Refusal::new(
                    ResponseCode::ConsumerNotOnline,
                    format!("the consumer group[{group}] not online"),
                )
            })?;
            json_success(&conn)
        }
        RequestCode::GetProducerConnectionList => {
            let group = ext.req_str("producerGroup")?;
            let set = ctx.clients.producer_connection(group);
            if set.is_empty() {
                return Err(Refusal::new(
                    ResponseCode::SystemError,
                    format!("the producer group[{group}] not exist"),
                ));
            }
            json_success(&serde_json::json!({ "connectionSet": set }))
        }
        RequestCode::InvokeBrokerToResetOffset => {
            let topic = ext.req_str("topic")?.to_owned();
            let group = ext.req_str("group")?.to_owned();
            let timestamp = ext.req_i64("timestamp")?;
            let force = ext.get_bool("isForce")?.unwrap_or(true);
            let ctx2 = Arc::clone(ctx);
            blocking(move || reset_offset(&ctx2, &topic, &group, timestamp, force)).await?
        }
        _ => Err(Refusal::new(
            ResponseCode::RequestCodeNotSupported,
            "not a group request",
        )),
    }
}

/// Java's `Broker2Client.resetOffset`: the offsets a timestamp (-1: the
/// queue's end) names, sent to every online consumer of the group as
/// RESET_CONSUMER_CLIENT_OFFSET, which resets and commits them. With no
/// consumer online the answer is CONSUMER_NOT_ONLINE, on which mqadmin
/// resets through the stored offsets itself.
fn reset_offset(
    ctx: &BrokerContext,
    topic: &str,
    group: &str,
    timestamp: i64,
    force: bool,
) -> Handled {
    let config = ctx.topics.get(topic).ok_or_else(|| {
        Refusal::new(
            ResponseCode::SystemError,
            format!("[reset-offset] reset offset failed, no topic in this broker. topic={topic}"),
        )
    })?;
    let store = &ctx.store;
    let mut table = Vec::new();
    for q in 0..config.write_queue_nums {
        let Some(consumer_offset) = ctx.offsets.query(group, topic, q) else {
            return Err(Refusal::new(
                ResponseCode::SystemError,
                format!("THe consumer group <{group}> not exist"),
            ));
        };
        let target = if timestamp == -1 {
            store.max_offset_in_queue(topic, q)?
        } else {
            store.offset_by_time(topic, q, timestamp, Boundary::Lower)?
        }
        .max(0);
        let offset = if force || target < consumer_offset {
            target
        } else {
            consumer_offset
        };
        table.push((queue(ctx, topic, q), offset));
    }
    let members = ctx.clients.consumer_connections(group);
    if members.is_empty() {
        return Err(Refusal::new(
            ResponseCode::ConsumerNotOnline,
            format!(
                "Consumer not online, so can not reset offset, Group: {group} Topic: {topic} Timestamp: {timestamp}"
            ),
        ));
    }
    let body = keyed_body("offsetTable", table, None)?;
    for conn in members {
        let mut cmd = RemotingCommand::request(RequestCode::ResetConsumerClientOffset);
        cmd.put_ext("topic", topic);
        cmd.put_ext("group", group);
        cmd.put_ext("timestamp", timestamp.to_string());
        cmd.put_ext("isForce", "false");
        cmd.body.clone_from(&body.body);
        cmd.mark_oneway();
        if !conn.send(cmd) {
            tracing::warn!(peer = %conn.peer, group, "could not queue RESET_CONSUMER_CLIENT_OFFSET");
        }
    }
    tracing::info!(
        group,
        topic,
        timestamp,
        force,
        "consumer offsets reset through the clients"
    );
    Ok(body)
}
