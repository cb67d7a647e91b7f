//! The controller's answers that [`crate::wire`] does not build: the ones
//! any replica gives (metadata, heartbeat, refusals) and the ones made of
//! the state and liveness together (GET_SYNC_STATE_DATA).

use std::collections::BTreeMap;

use rmq_common::remoting::{RemotingCommand, ResponseCode};

use crate::alive::Liveness;
use crate::raft::NodeId;
use crate::state::{BrokerSet, ReplicaState};
use crate::wire::{BrokerReplicasInfo, ReplicaIdentity, ReplicasInfo};

/// CONTROLLER_NOT_LEADER's remark, as Java's.
pub const NOT_LEADER_REMARK: &str = "The controller is not in leader state";

/// CONTROLLER_NOT_LEADER.
pub fn not_leader() -> RemotingCommand {
    RemotingCommand::response(
        ResponseCode::ControllerNotLeader,
        Some(NOT_LEADER_REMARK.to_owned()),
    )
}

/// REQUEST_CODE_NOT_SUPPORTED, with Java's remark.
pub fn not_supported(code: i32) -> RemotingCommand {
    RemotingCommand::response(
        ResponseCode::RequestCodeNotSupported,
        Some(format!(" request type {code} not supported")),
    )
}

/// SYSTEM_ERROR with `remark`.
pub fn system_error(remark: impl Into<String>) -> RemotingCommand {
    RemotingCommand::response(ResponseCode::SystemError, Some(remark.into()))
}

/// BROKER_HEARTBEAT's answer (only a two-way heartbeat is answered).
pub fn heartbeat() -> RemotingCommand {
    RemotingCommand::response(ResponseCode::Success, Some("Heart beat success".to_owned()))
}

/// CONTROLLER_APPLY_BROKER_ID's answer.
pub fn applied(cluster: &str, broker_name: &str) -> RemotingCommand {
    let mut resp = RemotingCommand::response(ResponseCode::Success, None);
    resp.put_ext("clusterName", cluster);
    resp.put_ext("brokerName", broker_name);
    resp
}

/// SUCCESS with nothing more (CLEAN_BROKER_DATA).
pub fn success() -> RemotingCommand {
    RemotingCommand::response(ResponseCode::Success, None)
}

/// The group as GET_METADATA_INFO tells it.
#[derive(Debug, Clone, Copy)]
pub struct Metadata<'a> {
    /// The group name.
    pub group: &'a str,
    /// The leader this replica knows of.
    pub leader: Option<NodeId>,
    /// Whether this replica leads.
    pub is_leader: bool,
    /// Every replica's address by id.
    pub peers: &'a BTreeMap<NodeId, String>,
    /// Every replica's name (`n0`) by id; an id missing here shows as its
    /// number.
    pub names: &'a BTreeMap<NodeId, String>,
}

impl Metadata<'_> {
    fn name(&self, id: NodeId) -> String {
        crate::server::settings::peer_name(self.names, id)
    }
}

/// GET_CONTROLLER_CONFIG's answer: SUCCESS with the settings as
/// `key=value` lines.
pub fn config_text(text: String) -> RemotingCommand {
    RemotingCommand::response(ResponseCode::Success, None).with_body(text.into_bytes())
}

/// CONTROLLER_GET_METADATA_INFO's answer (facts 3.8): `group`,
/// `controllerLeaderId` and `controllerLeaderAddress` (absent while no
/// leader is known), `isLeader`, and `peers` as `id:addr;` per replica.
pub fn metadata(m: &Metadata<'_>) -> RemotingCommand {
    let mut resp = RemotingCommand::response(ResponseCode::Success, None);
    resp.put_ext("group", m.group);
    if let Some(leader) = m.leader {
        resp.put_ext("controllerLeaderId", m.name(leader));
        if let Some(addr) = m.peers.get(&leader) {
            resp.put_ext("controllerLeaderAddress", addr);
        }
    }
    resp.put_ext("isLeader", m.is_leader);
    let peers: String = m
        .peers
        .iter()
        .map(|(id, addr)| format!("{}:{addr};", m.name(*id)))
        .collect();
    resp.put_ext("peers", peers);
    resp
}

fn replicas_info(set: &BrokerSet, live: &Liveness, now_ms: i64) -> ReplicasInfo {
    let (mut in_sync, mut not_in_sync) = (Vec::new(), Vec::new());
    for (id, member) in &set.members {
        let identity = ReplicaIdentity {
            alive: live.alive(&set.name, *id, now_ms),
            broker_address: member.addr.clone(),
            broker_id: *id,
            broker_name: set.name.clone(),
        };
        if set.sync_state_set.contains(id) {
            in_sync.push(identity);
        } else {
            not_in_sync.push(identity);
        }
    }
    ReplicasInfo {
        in_sync_replicas: in_sync,
        master_address: set.master_addr().map(str::to_owned),
        master_broker_id: set.master,
        master_epoch: set.master_epoch,
        not_in_sync_replicas: not_in_sync,
        sync_state_set_epoch: set.sync_state_set_epoch,
    }
}

/// CONTROLLER_GET_SYNC_STATE_DATA's body: the named sets (unknown names
/// are skipped, as Java does), each member marked alive by `live`.
pub fn sync_state_data(
    state: &ReplicaState,
    live: &Liveness,
    now_ms: i64,
    names: &[String],
) -> BrokerReplicasInfo {
    BrokerReplicasInfo {
        replicas_info_table: names
            .iter()
            .filter_map(|n| state.set(n))
            .map(|set| (set.name.clone(), replicas_info(set, live, now_ms)))
            .collect(),
    }
}
