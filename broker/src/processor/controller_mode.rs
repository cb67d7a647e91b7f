//! Controller mode's requests to the broker: NOTIFY_BROKER_ROLE_CHANGED
//! from the controller after an election, and GET_BROKER_EPOCH_CACHE
//! (mqadmin getBrokerEpoch).

use std::sync::Arc;

use rmq_common::remoting::{RemotingCommand, ResponseCode};

use super::parts::Admin;
use super::{Handled, Refusal};
use crate::replicas::rpc::MasterInfo;

/// NOTIFY_BROKER_ROLE_CHANGED: handed to the manager, which acts on it
/// when its master epoch is newer than the broker's (as Java, the answer
/// is SUCCESS either way; the controller sends it oneway).
pub(crate) fn notify_role_changed(admin: &Arc<Admin>, req: &RemotingCommand) -> Handled {
    let Some(manager) = admin.replicas.get() else {
        return Err(Refusal::new(
            ResponseCode::SystemError,
            "this broker is not in controller mode (enableControllerMode=false)",
        ));
    };
    let info = MasterInfo::from_answer(req)
        .map_err(|e| Refusal::new(ResponseCode::SystemError, format!("bad role notice: {e}")))?;
    manager.notify(info);
    Ok(RemotingCommand::response(ResponseCode::Success, None))
}

/// One epoch as GET_BROKER_EPOCH_CACHE lists it.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct EpochEntryBody {
    epoch: i32,
    start_offset: i64,
    end_offset: i64,
}

/// GET_BROKER_EPOCH_CACHE's body (Java's `EpochEntryCache`).
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct EpochCacheBody {
    cluster_name: String,
    broker_name: String,
    broker_id: i64,
    epoch_list: Vec<EpochEntryBody>,
    max_offset: i64,
}

/// GET_BROKER_EPOCH_CACHE: this broker's epochs (the last one open-ended,
/// as Java's `Long.MAX_VALUE`), its id as the NameServers see it and its
/// CommitLog's end.
pub(crate) fn epoch_cache(admin: &Arc<Admin>) -> Handled {
    if !admin.settings.broker.controller.enable_controller_mode {
        return Err(Refusal::new(
            ResponseCode::SystemError,
            "this request only for controllerMode ",
        ));
    }
    let entries = admin.store.epoch_entries();
    let last = entries.len().saturating_sub(1);
    let body = EpochCacheBody {
        cluster_name: admin.settings.broker.broker_cluster_name.clone(),
        broker_name: admin.settings.broker.broker_name.clone(),
        broker_id: admin.role.broker_id(),
        epoch_list: entries
            .iter()
            .enumerate()
            .map(|(i, e)| EpochEntryBody {
                epoch: e.epoch,
                start_offset: e.start,
                end_offset: if i == last { i64::MAX } else { e.end },
            })
            .collect(),
        max_offset: admin.store.max_phy_offset(),
    };
    super::json_success(&body)
}
