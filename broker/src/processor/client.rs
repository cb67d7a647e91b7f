//! HEART_BEAT (v1, and RocketMQ 5.x's v2: a fingerprint, and heartbeats
//! without subscriptions while it is unchanged), UNREGISTER_CLIENT,
//! GET_CONSUMER_LIST_BY_GROUP and CHECK_CLIENT_CONFIG.

use std::sync::Arc;

use rmq_common::constants::RETRY_GROUP_TOPIC_PREFIX;
use rmq_common::remoting::header::{
    GetConsumerListByGroupRequestHeader, UnregisterClientRequestHeader,
};
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};

use super::{success, Handled, Refusal};
use rmq_common::remoting::body::{CheckClientBody, HeartbeatData};

use super::parts::ClientTable;
use crate::clients::{ClientManager, GroupChange};
use rmq_remoting::Connection;

/// Every group and subscribed topic a heartbeat names follows the naming
/// rules; a heartbeat that breaks them registers nothing.
fn check_names(hb: &HeartbeatData) -> Result<(), Refusal> {
    let groups = hb
        .consumer_data_set
        .iter()
        .map(|c| &c.group_name)
        .chain(hb.producer_data_set.iter().map(|p| &p.group_name));
    for g in groups {
        super::validate::group(g).map_err(|r| r.context("heartbeat"))?;
    }
    for c in &hb.consumer_data_set {
        for s in &c.subscription_data_set {
            super::validate::topic(&s.topic).map_err(|r| {
                r.context(&format!(
                    "heartbeat of group {}: subscribed topic {:?}",
                    c.group_name, s.topic
                ))
            })?;
        }
    }
    Ok(())
}

/// UNREGISTER_CLIENT.
pub(crate) fn unregister(
    table: &ClientTable,
    conn: &Connection,
    h: UnregisterClientRequestHeader,
) -> Handled {
    let change = table.clients.unregister(
        conn.id,
        h.producer_group.as_deref(),
        h.consumer_group.as_deref(),
    );
    notify_group_changes(&table.clients, &change);
    Ok(success())
}

/// GET_CONSUMER_LIST_BY_GROUP.
pub(crate) fn consumer_list(
    table: &ClientTable,
    h: GetConsumerListByGroupRequestHeader,
) -> Handled {
    let group = h.consumer_group;
    let ids = table.clients.consumer_ids(&group);
    if ids.is_empty() {
        return Err(Refusal::new(
            ResponseCode::SystemError,
            format!("no consumer for this group, {group}"),
        ));
    }
    let body = serde_json::json!({ "consumerIdList": ids }).to_string();
    Ok(success().with_body(body.into_bytes()))
}

/// CHECK_CLIENT_CONFIG: Java's push consumer asks before it starts whether
/// this broker can serve its subscription (SQL92 needs
/// enablePropertyFilter).
pub(crate) fn check_config(table: &ClientTable, req: &RemotingCommand) -> Handled {
    let body: CheckClientBody =
        rmq_common::json::from_slice(req.body.as_deref().unwrap_or_default()).map_err(|e| {
            Refusal::new(
                ResponseCode::SystemError,
                format!("CHECK_CLIENT_CONFIG body is not valid: {e}"),
            )
        })?;
    if let Some(sub) = body.subscription_data {
        super::pull::build_filter(
            table.enable_property_filter,
            sub.expression_type.as_deref(),
            &sub.sub_string,
        )?;
    }
    Ok(success())
}

/// A heartbeat body past this many bytes (a client with dozens of groups)
/// is handled on a blocking thread: a client with thousands of new groups
/// creates them all in one go, and the request threads go on serving
/// everyone else meanwhile.
pub(crate) const HEARTBEAT_INLINE_BYTES: usize = 16 * 1024;

/// HEART_BEAT: the client's groups and subscriptions, registered. Every
/// consumer group gets its subscription group and its retry topic, as
/// RocketMQ does: in memory, one journal line each for however many were
/// new (written behind, once for many), and one notice to the registrar
/// (which registers them off the request path, coalesced). The retry
/// topic's queue count is the group's retryQueueNums (a group is created
/// with the defaults on first sight, unless autoCreateSubscriptionGroup is
/// off).
pub(crate) fn heartbeat(
    table: &Arc<ClientTable>,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
) -> Handled {
    let body = req.body.as_deref().unwrap_or_default();
    let hb: HeartbeatData = rmq_common::json::from_slice(body).map_err(|e| {
        Refusal::new(
            ResponseCode::SystemError,
            format!("heartbeat body is not valid: {e}"),
        )
    })?;
    check_names(&hb)?;
    let names = hb.consumer_data_set.iter().map(|c| c.group_name.as_str());
    let configs = if table.auto_create_subscription_group {
        table.groups.get_or_create(names)
    } else {
        names.filter_map(|g| table.groups.get(g)).collect()
    };
    // One pass per distinct retry queue count (usually one).
    let mut retry: std::collections::BTreeMap<i32, Vec<String>> = Default::default();
    for g in configs {
        retry
            .entry(g.retry_queue_nums.max(1))
            .or_default()
            .push(format!("{RETRY_GROUP_TOPIC_PREFIX}{}", g.group_name));
    }
    let created: usize = retry
        .into_iter()
        .map(|(queues, topics)| table.topics.create_missing(topics, queues))
        .sum();
    if created > 0 {
        table.topics_changed.notify_one();
    }
    let sub_change = table.clients.fingerprint_changed(&hb);
    let change = table
        .clients
        .heartbeat(conn, &hb, req.language, req.version);
    notify_group_changes(&table.clients, &change);
    // Heartbeat v2: this broker takes heartbeats without subscriptions.
    let mut ok = success();
    ok.put_ext(IS_SUPPORT_HEART_BEAT_V2, true);
    ok.put_ext(IS_SUB_CHANGE, sub_change);
    Ok(ok)
}

/// The answer field saying the broker takes v2 heartbeats (Java's
/// `MixAll.IS_SUPPORT_HEART_BEAT_V2`).
pub(crate) const IS_SUPPORT_HEART_BEAT_V2: &str = "IS_SUPPORT_HEART_BEAT_V2";
/// The answer field asking for the full heartbeat next time (Java's
/// `MixAll.IS_SUB_CHANGE`).
pub(crate) const IS_SUB_CHANGE: &str = "IS_SUB_CHANGE";

/// Tells each member of a changed consumer group to rebalance.
pub(crate) fn notify_group_changes(clients: &ClientManager, change: &GroupChange) {
    for group in &change.groups {
        for conn in clients.consumer_connections(group) {
            let mut cmd = RemotingCommand::request(RequestCode::NotifyConsumerIdsChanged);
            cmd.put_ext("consumerGroup", group);
            cmd.mark_oneway();
            if !conn.send(cmd) {
                tracing::debug!(peer = %conn.peer, group, "could not queue NOTIFY_CONSUMER_IDS_CHANGED");
            }
        }
    }
}
