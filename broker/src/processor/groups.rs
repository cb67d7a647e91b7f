//! Group administration: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (and its
//! `_LIST`, RocketMQ 5.x's batch create),
//! DELETE_SUBSCRIPTIONGROUP, GET_CONSUMER_CONNECTION_LIST,
//! GET_PRODUCER_CONNECTION_LIST and INVOKE_BROKER_TO_RESET_OFFSET (mqadmin
//! updateSubGroup, deleteSubGroup, consumerConnection, producerConnection,
//! resetOffsetByTime), with GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
//! GET_ALL_PRODUCER_INFO, CLONE_GROUP_OFFSET and QUERY_CORRECTION_OFFSET.

use std::sync::Arc;

use rmq_common::cq::Boundary;
use rmq_common::names::validate_group;
use rmq_common::remoting::header::{
    CloneGroupOffsetRequestHeader, ConsumerConnectionRequestHeader, CorrectionOffsetRequestHeader,
    DeleteGroupRequestHeader, ProducerConnectionRequestHeader, ResetOffsetRequestHeader,
};
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};

use super::parts::Consumption;
use super::stats::{keyed_body, queue};
use super::{blocking, json_success, success, Handled, Refusal};
use rmq_common::remoting::body::{SubscriptionGroupConfig, SubscriptionGroupList};

/// A group config as an admin sent it, checked; its `attributes` (signed
/// keys, RocketMQ 5.x) applied to what the group has, as Java's
/// `AttributeUtil` does. 5.3.3 knows no group attribute, so naming one is
/// refused (`unsupported key: <k>`).
fn checked_group(cons: &Consumption, config: &mut SubscriptionGroupConfig) -> Result<(), Refusal> {
    validate_group(&config.group_name)
        .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
    if config.retry_queue_nums != 0 {
        super::validate::queue_nums("retryQueueNums", config.retry_queue_nums)?;
    }
    let changes: Vec<(String, String)> =
        std::mem::take(&mut config.attributes).into_iter().collect();
    let current = cons.groups.get(&config.group_name);
    let empty = std::collections::BTreeMap::new();
    config.attributes = rmq_common::attributes::alter(
        current.is_none(),
        &rmq_common::attributes::GROUP_ATTRIBUTES,
        current.as_ref().map_or(&empty, |c| &c.attributes),
        &changes,
    )
    .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
    Ok(())
}

/// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP.
pub(crate) async fn create(cons: &Arc<Consumption>, req: &RemotingCommand) -> Handled {
    let started = std::time::Instant::now();
    let config: SubscriptionGroupConfig =
        rmq_common::json::from_slice(req.body.as_deref().unwrap_or_default()).map_err(|e| {
            Refusal::new(
                ResponseCode::SystemError,
                format!("subscription group body is not valid: {e}"),
            )
        })?;
    let mut config = config;
    checked_group(cons, &mut config)?;
    let name = config.group_name.clone();
    let groups = Arc::clone(&cons.groups);
    let stored = blocking(move || groups.upsert(config)).await?;
    cons.rocketmq.group_created(stored.is_ok(), started);
    stored?;
    tracing::info!(group = name, "subscription group created or updated");
    Ok(success())
}

/// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST: all or nothing, one bad group
/// and none is applied.
pub(crate) async fn create_list(cons: &Arc<Consumption>, req: &RemotingCommand) -> Handled {
    let started = std::time::Instant::now();
    let list: SubscriptionGroupList =
        rmq_common::json::from_slice(req.body.as_deref().unwrap_or_default()).map_err(|e| {
            Refusal::new(
                ResponseCode::SystemError,
                format!(
                "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST body is not a groupConfigList JSON: {e}"
            ),
            )
        })?;
    let mut list = list;
    for config in &mut list.group_config_list {
        checked_group(cons, config)?;
    }
    let count = list.group_config_list.len();
    let groups = Arc::clone(&cons.groups);
    let stored = blocking(move || groups.upsert_many(list.group_config_list)).await?;
    cons.rocketmq.group_created(stored.is_ok(), started);
    stored?;
    tracing::info!(
        count,
        "subscription groups created or updated in one request"
    );
    Ok(success())
}

/// DELETE_SUBSCRIPTIONGROUP. Java deletes a group that does not exist
/// without complaint. With `removeOffset` (4.x) or `cleanOffset` (5.x)
/// every offset the group holds goes too, those on light message queues
/// included (5.3.3's `LmqConsumerOffsetManager.removeOffset`).
pub(crate) async fn delete(cons: &Arc<Consumption>, h: DeleteGroupRequestHeader) -> Handled {
    let group = h.group_name;
    let remove_offset = h.remove_offset.unwrap_or(false) || h.clean_offset.unwrap_or(false);
    let groups = Arc::clone(&cons.groups);
    let g = group.clone();
    blocking(move || groups.delete(&g)).await??;
    if remove_offset {
        cons.offsets.remove_group(&group);
    }
    tracing::info!(group, remove_offset, "subscription group deleted");
    Ok(success())
}

/// GET_CONSUMER_CONNECTION_LIST.
pub(crate) fn consumer_connections(
    cons: &Consumption,
    h: ConsumerConnectionRequestHeader,
) -> Handled {
    let group = h.consumer_group;
    let conn = cons.clients.consumer_connection(&group).ok_or_else(|| {
        Refusal::new(
            ResponseCode::ConsumerNotOnline,
            format!("the consumer group[{group}] not online"),
        )
    })?;
    json_success(&conn)
}

/// GET_PRODUCER_CONNECTION_LIST.
pub(crate) fn producer_connections(
    cons: &Consumption,
    h: ProducerConnectionRequestHeader,
) -> Handled {
    let group = h.producer_group;
    let set = cons.clients.producer_connection(&group);
    if set.is_empty() {
        return Err(Refusal::new(
            ResponseCode::SystemError,
            format!("the producer group[{group}] not exist"),
        ));
    }
    json_success(&serde_json::json!({ "connectionSet": set }))
}

/// INVOKE_BROKER_TO_RESET_OFFSET.
pub(crate) async fn reset_offset(cons: &Arc<Consumption>, h: ResetOffsetRequestHeader) -> Handled {
    let force = h.is_force.unwrap_or(true);
    let cons2 = Arc::clone(cons);
    blocking(move || reset_offsets(&cons2, &h.topic, &h.group, h.timestamp, force)).await?
}

/// GET_ALL_SUBSCRIPTIONGROUP_CONFIG.
pub(crate) fn all(cons: &Consumption) -> Handled {
    Ok(success().with_body(
        cons.groups
            .wrapper_json()
            .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?,
    ))
}

/// GET_ALL_PRODUCER_INFO.
pub(crate) fn producers(cons: &Consumption) -> Handled {
    json_success(&serde_json::json!({ "data": cons.clients.producer_table() }))
}

/// CLONE_GROUP_OFFSET.
pub(crate) fn clone_offset(cons: &Consumption, h: CloneGroupOffsetRequestHeader) -> Handled {
    let (src, dest) = (h.src_group.as_str(), h.dest_group.as_str());
    validate_group(dest).map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
    let topic = h.topic.as_deref();
    let offline = h.offline.unwrap_or(false);
    let cloned = clone_offsets(cons, src, dest, topic, offline);
    tracing::info!(src, dest, topic, cloned, "group offsets cloned");
    Ok(success())
}

/// QUERY_CORRECTION_OFFSET.
pub(crate) async fn correction_offset(
    cons: &Arc<Consumption>,
    h: CorrectionOffsetRequestHeader,
) -> Handled {
    let filter: Vec<String> = h
        .filter_groups
        .as_deref()
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .map(str::to_owned)
        .collect();
    let cons2 = Arc::clone(cons);
    blocking(move || correction_offsets(&cons2, &h.topic, &h.compare_group, &filter)).await?
}

/// CLONE_GROUP_OFFSET: `dest` takes `src`'s committed offsets of `topic`
/// (of every topic `src` has offsets for when `None`), except, unless
/// `offline`, topics an online `src` no longer subscribes to. Returns the
/// queues copied. (Java 4.9 copies only the named topic whatever the loop
/// finds, so with no topic it copies nothing; this copies what it says.)
fn clone_offsets(
    cons: &Consumption,
    src: &str,
    dest: &str,
    topic: Option<&str>,
    offline: bool,
) -> usize {
    let online = cons.clients.consumer_connection(src);
    let mut copied = 0;
    for (t, q, offset) in cons.offsets.group_offsets(src) {
        if topic.is_some_and(|want| want != t) || cons.topics.get(&t).is_none() {
            continue;
        }
        if !offline
            && online.as_ref().is_some_and(|c| {
                !c.subscription_table.is_empty() && !c.subscription_table.contains_key(&t)
            })
        {
            continue;
        }
        cons.offsets.commit(dest, &t, q, offset);
        copied += 1;
    }
    copied
}

/// QUERY_CORRECTION_OFFSET: per queue of `topic`, the lowest offset any
/// group (but those in `filter`) has committed that is still stored; where
/// `compare` has committed less than that, `i64::MAX` ("no correction").
/// Java 4.9 also deletes the filtered groups' offsets as a side effect of
/// leaving them out; this leaves them alone.
fn correction_offsets(
    cons: &Consumption,
    topic: &str,
    compare: &str,
    filter: &[String],
) -> Handled {
    let mut min: std::collections::BTreeMap<i32, i64> = std::collections::BTreeMap::new();
    for (group, t, q, offset) in cons.offsets.all() {
        if t != topic || filter.contains(&group) {
            continue;
        }
        if offset >= cons.store.min_offset_in_queue(topic, q)? {
            let e = min.entry(q).or_insert(offset);
            *e = (*e).min(offset);
        }
    }
    for (q, v) in &mut min {
        if let Some(c) = cons.offsets.query(compare, topic, *q) {
            if *v > c {
                *v = i64::MAX;
            }
        }
    }
    let entries: Vec<String> = min.iter().map(|(q, v)| format!("{q}:{v}")).collect();
    let body = format!("{{\"correctionOffsets\":{{{}}}}}", entries.join(","));
    Ok(success().with_body(body.into_bytes()))
}

/// Java's `Broker2Client.resetOffset`: the offsets a timestamp (-1: the
/// queue's end) names, sent to every online consumer of the group as
/// RESET_CONSUMER_CLIENT_OFFSET, which resets and commits them. With no
/// consumer online the answer is CONSUMER_NOT_ONLINE, on which mqadmin
/// resets through the stored offsets itself.
fn reset_offsets(
    cons: &Consumption,
    topic: &str,
    group: &str,
    timestamp: i64,
    force: bool,
) -> Handled {
    let config = cons.topics.get(topic).ok_or_else(|| {
        Refusal::new(
            ResponseCode::SystemError,
            format!("[reset-offset] reset offset failed, no topic in this broker. topic={topic}"),
        )
    })?;
    let store = &cons.store;
    let mut table = Vec::new();
    for q in 0..config.write_queue_nums {
        let Some(consumer_offset) = cons.offsets.query(group, topic, q) else {
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
        table.push((queue(cons, topic, q), offset));
    }
    let members = cons.clients.consumer_connections(group);
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
