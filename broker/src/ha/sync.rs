//! A slave copies its master's metadata every 10 s (first after 3 s), as
//! RocketMQ's SlaveSynchronize does: the topic table (GET_ALL_TOPIC_CONFIG)
//! and the subscription groups (GET_ALL_SUBSCRIPTIONGROUP_CONFIG) when
//! their data version differs, the consumer offsets (GET_ALL_CONSUMER_OFFSET,
//! each `topic@group` of the master replacing the slave's) and the delay
//! progress (GET_ALL_DELAY_OFFSET). The master is the one the NameServers'
//! register answers name. A failed step is logged and tried next round.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rmq_client::RemotingClient;
use rmq_common::remoting::body::{
    DataVersion, SubscriptionGroupConfig, TopicConfigSerializeWrapper,
};
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};
use serde::Deserialize;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use rmq_namesrv::MasterInfo;
use tokio::sync::Notify;

use crate::meta::{ConsumerOffsetManager, SubscriptionGroupManager, TopicConfigManager};
use crate::service::schedule::Scheduler;

/// What a slave copies its master's metadata into, and how it reaches it.
#[derive(Debug, Clone)]
pub struct SlaveTables {
    /// Opens the connection to the master (signed, TLS when configured).
    pub connector: rmq_client::Connector,
    /// The topic table.
    pub topics: Arc<TopicConfigManager>,
    /// Signalled when the topic table changed, so NameServers hear of it.
    pub topics_changed: Arc<Notify>,
    /// Consumer offsets.
    pub offsets: Arc<ConsumerOffsetManager>,
    /// Delay-level progress.
    pub scheduler: Arc<Scheduler>,
    /// Subscription groups.
    pub groups: Arc<SubscriptionGroupManager>,
}

/// Wait before the first round.
pub const FIRST_SYNC: Duration = Duration::from_secs(3);
/// Wait between rounds.
pub const SYNC_PERIOD: Duration = Duration::from_secs(10);
/// Longest one request to the master may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct OffsetTable {
    offset_table: BTreeMap<String, BTreeMap<i32, i64>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct DelayTable {
    offset_table: BTreeMap<i32, i64>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct GroupTable {
    subscription_group_table: BTreeMap<String, SubscriptionGroupConfig>,
    data_version: DataVersion,
}

/// Copies from the master `master` names until `cancel`.
pub async fn run(
    ctx: SlaveTables,
    mut master: watch::Receiver<Option<MasterInfo>>,
    cancel: CancellationToken,
) {
    let mut wait = FIRST_SYNC;
    let mut client: Option<(String, RemotingClient)> = None;
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
        wait = SYNC_PERIOD;
        let Some(addr) = master
            .borrow_and_update()
            .as_ref()
            .map(|m| m.broker_addr.clone())
        else {
            continue;
        };
        if client
            .as_ref()
            .is_none_or(|(a, c)| *a != addr || c.is_closed())
        {
            match addr.parse().map(|a| ctx.connector.connect(a)) {
                Ok(connect) => match tokio::time::timeout(CALL_TIMEOUT, connect).await {
                    Ok(Ok(c)) => client = Some((addr.clone(), c)),
                    _ => {
                        tracing::warn!(master = %addr, "cannot reach the master to copy its metadata");
                        continue;
                    }
                },
                Err(e) => {
                    tracing::warn!(master = %addr, error = %e, "master address not usable");
                    continue;
                }
            }
        }
        if let Some((_, c)) = &client {
            sync_once(&ctx, c, &addr).await;
        }
    }
}

/// One round: each step on its own.
pub async fn sync_once(ctx: &SlaveTables, c: &RemotingClient, master: &str) {
    match fetch::<TopicConfigSerializeWrapper>(c, RequestCode::GetAllTopicConfig).await {
        Ok(t) => {
            if ctx.topics.take_from_master(t) {
                tracing::info!(%master, "slave topic table updated from the master");
                ctx.topics_changed.notify_one();
            }
        }
        Err(e) => tracing::warn!(%master, error = %e, "topic table not copied"),
    }
    match fetch::<OffsetTable>(c, RequestCode::GetAllConsumerOffset).await {
        Ok(t) => ctx.offsets.take_from_master(t.offset_table),
        Err(e) => tracing::warn!(%master, error = %e, "consumer offsets not copied"),
    }
    match fetch::<DelayTable>(c, RequestCode::GetAllDelayOffset).await {
        Ok(t) => {
            if let Err(e) = ctx.scheduler.replace_offsets(&t.offset_table) {
                tracing::warn!(error = %e, "delay progress not kept");
            }
        }
        Err(e) => tracing::warn!(%master, error = %e, "delay progress not copied"),
    }
    match fetch::<GroupTable>(c, RequestCode::GetAllSubscriptiongroupConfig).await {
        Ok(g) => {
            if ctx
                .groups
                .take_from_master(g.subscription_group_table, g.data_version)
            {
                tracing::info!(%master, "slave subscription groups updated from the master");
            }
        }
        Err(e) => tracing::warn!(%master, error = %e, "subscription groups not copied"),
    }
}

async fn fetch<T: serde::de::DeserializeOwned>(
    c: &RemotingClient,
    code: RequestCode,
) -> Result<T, String> {
    let resp = c
        .invoke(RemotingCommand::request(code), CALL_TIMEOUT)
        .await
        .map_err(|e| e.to_string())?;
    if resp.code != ResponseCode::Success.code() {
        return Err(format!(
            "{code} answered {}: {}",
            resp.code,
            resp.remark.unwrap_or_default()
        ));
    }
    rmq_common::json::from_slice(resp.body.as_deref().unwrap_or_default())
        .map_err(|e| format!("{code}: {e}"))
}
