//! GET_BROKER_RUNTIME_INFO (mqadmin brokerStatus, clusterList) and
//! UPDATE_BROKER_CONFIG (mqadmin updateBrokerConfig).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rmq_common::remoting::{RemotingCommand, ResponseCode};

use super::parts::Admin;
use super::{blocking, json_success, Handled, Refusal};
use crate::ha::BrokerRole;
use rmq_store::clean::{DiskUsage, FsDiskUsage};

/// The version this broker speaks and reports (Java's `MQVersion` ordinal
/// and name of 4.9.8).
pub(crate) const BROKER_VERSION: i32 = 409;
/// [`BROKER_VERSION`]'s name.
pub(crate) const BROKER_VERSION_DESC: &str = "V4_9_8";

/// GET_BROKER_RUNTIME_INFO: the `KVTable` of Java's broker, with the keys
/// mqadmin brokerStatus and clusterList print, from this broker's own state.
/// Thread-pool keys are 0: requests are not queued in Java's pools here.
/// `pageCacheLockTimeMills` is how long the append holding the CommitLog
/// put lock has held it; `putMessageFailedTimes` counts puts the store
/// refused.
pub(crate) async fn runtime_info(admin: &Arc<Admin>) -> Handled {
    let admin = Arc::clone(admin);
    let table = blocking(move || table(&admin)).await??;
    json_success(&serde_json::json!({ "table": table }))
}

fn table(admin: &Admin) -> Result<BTreeMap<&'static str, String>, Refusal> {
    let store = &admin.store;
    let totals = store.metrics().totals();
    let put = totals.put_messages.load(Ordering::Relaxed);
    let get = totals.get_messages.load(Ordering::Relaxed);
    let marks = admin.stats.day_marks();
    let now = store.clock().now_ms();
    let commit_log_dir = admin.settings.store.commit_log_dir();
    let disk_ratio = FsDiskUsage(commit_log_dir.clone())
        .used_ratio()
        .unwrap_or(0.0);
    let (total, free) = disk_space(&commit_log_dir);
    let earliest = store.store_time_at(store.min_phy_offset()).unwrap_or(0);
    let put_times = totals.put_times.load(Ordering::Relaxed);
    let mut t = BTreeMap::new();
    let mut set = |k: &'static str, v: String| {
        t.insert(k, v);
    };
    set("brokerVersionDesc", BROKER_VERSION_DESC.into());
    set("brokerVersion", BROKER_VERSION.to_string());
    set(
        "msgPutTotalYesterdayMorning",
        marks.put_yesterday_morning.to_string(),
    );
    set(
        "msgPutTotalTodayMorning",
        marks.put_today_morning.to_string(),
    );
    set("msgPutTotalTodayNow", put.to_string());
    set(
        "msgGetTotalYesterdayMorning",
        marks.get_yesterday_morning.to_string(),
    );
    set(
        "msgGetTotalTodayMorning",
        marks.get_today_morning.to_string(),
    );
    set("msgGetTotalTodayNow", get.to_string());
    for k in [
        "sendThreadPoolQueueSize",
        "pullThreadPoolQueueSize",
        "queryThreadPoolQueueSize",
        "EndTransactionQueueSize",
        "sendThreadPoolQueueHeadWaitTimeMills",
        "pullThreadPoolQueueHeadWaitTimeMills",
        "queryThreadPoolQueueHeadWaitTimeMills",
    ] {
        set(k, "0".into());
    }
    set(
        "putMessageFailedTimes",
        totals.put_failed.load(Ordering::Relaxed).to_string(),
    );
    set(
        "pageCacheLockTimeMills",
        store.commit_log().put_lock_held_ms().to_string(),
    );
    set(
        "dispatchBehindBytes",
        store.dispatch_behind_bytes().to_string(),
    );
    set("earliestMessageTimeStamp", earliest.to_string());
    set("startAcceptSendRequestTimeStamp", "0".into());
    set("bootTimestamp", admin.boot_ms.to_string());
    set("runtime", runtime_text(now - admin.boot_ms));
    set("putMessageTimesTotal", put_times.to_string());
    set("putTps", admin.stats.tps_text(true));
    set("getTransferedTps", admin.stats.tps_text(false));
    set("commitLogDiskRatio", format!("{disk_ratio}"));
    set(
        "commitLogDirCapacity",
        format!("Total : {total}, Free : {free}."),
    );
    set("commitLogMinOffset", store.min_phy_offset().to_string());
    set("commitLogMaxOffset", store.max_phy_offset().to_string());
    set(
        "remainHowManyDataToFlush",
        (store.max_phy_offset() - store.commit_log().flushed_offset())
            .max(0)
            .to_string(),
    );
    replication(admin, &mut set);
    Ok(t)
}

/// Keys Java's 4.9 runtime info lacks: the broker's role and, on a
/// master, its slaves and the largest replication lag; on a slave, the
/// master it streams from now ("" when not connected).
fn replication(admin: &Admin, set: &mut impl FnMut(&'static str, String)) {
    let role = admin.role.broker_role();
    set("brokerRole", role.name().into());
    if role == BrokerRole::Slave {
        set(
            "haMasterAddress",
            admin.ha_link.master().unwrap_or_default(),
        );
        return;
    }
    let acks = &admin.ha_acks;
    let end = admin.store.max_phy_offset();
    let lag = acks
        .per_slave()
        .iter()
        .map(|(_, acked)| (end - acked).max(0))
        .max()
        .unwrap_or(0);
    set("haSlaveCount", acks.slaves().to_string());
    set("haInSyncSlaveCount", acks.in_sync(end).to_string());
    set("haMaxLagBytes", lag.to_string());
}

/// Java's `[ d days, h hours, m minutes, s seconds ]`.
fn runtime_text(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    format!(
        "[ {} days, {} hours, {} minutes, {} seconds ]",
        s / 86_400,
        s % 86_400 / 3_600,
        s % 3_600 / 60,
        s % 60
    )
}

/// Total and free bytes of the file system under `path`, in Java's
/// human form (`12.5 GiB`).
fn disk_space(path: &std::path::Path) -> (String, String) {
    match fs4::available_space(path)
        .ok()
        .zip(fs4::total_space(path).ok())
    {
        Some((free, total)) => (human(total), human(free)),
        None => ("0".into(), "0".into()),
    }
}

fn human(bytes: u64) -> String {
    let gib = bytes as f64 / (1u64 << 30) as f64;
    format!("{gib:.1} GiB")
}

/// UPDATE_BROKER_CONFIG: the keys that can change while running apply
/// at once and are kept for the next start; any other key refuses the
/// whole update by name. A new `brokerPermission` reaches the NameServers
/// at once (the topic table's version moves, as in Java).
pub(crate) fn update_config(admin: &Admin, req: &RemotingCommand) -> Handled {
    let text = String::from_utf8_lossy(req.body.as_deref().unwrap_or_default()).into_owned();
    let perm_changed = admin
        .runtime
        .update(&text)
        .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
    tracing::info!(update = %text.trim(), "broker settings updated at runtime");
    if perm_changed {
        admin.topics.touch();
        admin.topics_changed.notify_one();
    }
    Ok(super::success())
}
