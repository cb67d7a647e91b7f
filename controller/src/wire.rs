//! The controller's requests and answers as RocketMQ 5.3.3's brokers and
//! mqadmin send and read them (`docs/controller-facts.md`, sections 2, 3
//! and 5): request codes, header fields, JSON bodies.

use std::collections::{BTreeMap, BTreeSet};

use rmq_common::remoting::{HeaderError, RemotingCommand, ResponseCode};
use serde::{Deserialize, Serialize};

use crate::alive::{Heartbeat, DEFAULT_ELECTION_PRIORITY, DEFAULT_HEARTBEAT_TIMEOUT_MS};
use crate::ops::{AlterRequest, Elected, MasterView, Refusal, Trigger};
use crate::state::BrokerId;

/// The controller's request codes (RocketMQ's `RequestCode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum ControllerCode {
    /// `BROKER_HEARTBEAT`, oneway from each broker.
    BrokerHeartbeat = 904,
    /// `CONTROLLER_ALTER_SYNC_STATE_SET`, from a master.
    AlterSyncStateSet = 1001,
    /// `CONTROLLER_ELECT_MASTER`, from a broker or mqadmin.
    ElectMaster = 1002,
    /// `CONTROLLER_REGISTER_BROKER`.
    RegisterBroker = 1003,
    /// `CONTROLLER_GET_REPLICA_INFO`.
    GetReplicaInfo = 1004,
    /// `CONTROLLER_GET_METADATA_INFO`, answered by any replica.
    GetMetadataInfo = 1005,
    /// `CONTROLLER_GET_SYNC_STATE_DATA`, from mqadmin.
    GetSyncStateData = 1006,
    /// `UPDATE_CONTROLLER_CONFIG`, from mqadmin, answered by any replica.
    UpdateControllerConfig = 1009,
    /// `GET_CONTROLLER_CONFIG`, from mqadmin, answered by any replica.
    GetControllerConfig = 1010,
    /// `CLEAN_BROKER_DATA`, from mqadmin.
    CleanBrokerData = 1011,
    /// `CONTROLLER_GET_NEXT_BROKER_ID`.
    GetNextBrokerId = 1012,
    /// `CONTROLLER_APPLY_BROKER_ID`.
    ApplyBrokerId = 1013,
}

impl ControllerCode {
    /// The code with this wire value, if it is one of the controller's.
    pub fn from_i32(code: i32) -> Option<Self> {
        use ControllerCode as C;
        Some(match code {
            904 => C::BrokerHeartbeat,
            1001 => C::AlterSyncStateSet,
            1002 => C::ElectMaster,
            1003 => C::RegisterBroker,
            1004 => C::GetReplicaInfo,
            1005 => C::GetMetadataInfo,
            1006 => C::GetSyncStateData,
            1009 => C::UpdateControllerConfig,
            1010 => C::GetControllerConfig,
            1011 => C::CleanBrokerData,
            1012 => C::GetNextBrokerId,
            1013 => C::ApplyBrokerId,
            _ => return None,
        })
    }

    /// Java's name of the code (`RequestCode`), as Apache's controller
    /// metrics label requests (`ControllerMetricsConstant.RequestType`).
    pub fn name(self) -> &'static str {
        use ControllerCode as C;
        match self {
            C::BrokerHeartbeat => "BROKER_HEARTBEAT",
            C::AlterSyncStateSet => "CONTROLLER_ALTER_SYNC_STATE_SET",
            C::ElectMaster => "CONTROLLER_ELECT_MASTER",
            C::RegisterBroker => "CONTROLLER_REGISTER_BROKER",
            C::GetReplicaInfo => "CONTROLLER_GET_REPLICA_INFO",
            C::GetMetadataInfo => "CONTROLLER_GET_METADATA_INFO",
            C::GetSyncStateData => "CONTROLLER_GET_SYNC_STATE_DATA",
            C::UpdateControllerConfig => "UPDATE_CONTROLLER_CONFIG",
            C::GetControllerConfig => "GET_CONTROLLER_CONFIG",
            C::CleanBrokerData => "CLEAN_BROKER_DATA",
            C::GetNextBrokerId => "CONTROLLER_GET_NEXT_BROKER_ID",
            C::ApplyBrokerId => "CONTROLLER_APPLY_BROKER_ID",
        }
    }
}

/// A controller request, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// A broker's heartbeat.
    Heartbeat {
        /// Its cluster.
        cluster: String,
        /// What it says.
        heartbeat: Heartbeat,
    },
    /// Which id should a new member of the set apply for?
    NextBrokerId {
        /// Its cluster.
        cluster: String,
        /// Its set.
        broker_name: String,
    },
    /// A broker takes an id.
    ApplyBrokerId {
        /// Its cluster.
        cluster: String,
        /// Its set.
        broker_name: String,
        /// The id.
        broker_id: BrokerId,
        /// `<addr>;<ms>`.
        check_code: String,
    },
    /// A member says where it is.
    RegisterBroker {
        /// Its cluster.
        cluster: String,
        /// Its set.
        broker_name: String,
        /// Its id.
        broker_id: BrokerId,
        /// Its client address.
        addr: String,
    },
    /// An election, asked by a broker for itself or by an operator.
    ElectMaster {
        /// The set's cluster.
        cluster: String,
        /// The set.
        broker_name: String,
        /// Who asks, or whom the operator designates.
        trigger: Trigger,
    },
    /// A master's new SyncStateSet.
    AlterSyncStateSet(AlterRequest),
    /// The master and SyncStateSet of a set.
    GetReplicaInfo {
        /// The set.
        broker_name: String,
    },
    /// The controller group's leader and peers.
    GetMetadataInfo,
    /// Replicas of the named sets, in sync or not (mqadmin getSyncStateSet).
    GetSyncStateData {
        /// The sets.
        broker_names: Vec<String>,
    },
    /// An operator changes this replica's settings (properties text).
    UpdateControllerConfig {
        /// The body, `key=value` lines.
        body: String,
    },
    /// An operator reads this replica's settings.
    GetControllerConfig,
    /// An operator removes members or a set.
    CleanBrokerData {
        /// The set.
        broker_name: String,
        /// `1;2`, or none for the whole set.
        ids: Option<String>,
        /// Even living ones.
        clean_living: bool,
    },
}

/// The `SyncStateSet` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncStateSetBody {
    /// The members in sync.
    #[serde(default)]
    pub sync_state_set: BTreeSet<BrokerId>,
    /// Its epoch.
    #[serde(default)]
    pub sync_state_set_epoch: i32,
}

/// `BrokerMemberGroup`: every member of a set by id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerMemberGroup {
    /// Member addresses by id.
    pub broker_addrs: BTreeMap<BrokerId, String>,
    /// The set.
    pub broker_name: String,
    /// Its cluster.
    pub cluster: String,
}

/// `ElectMasterResponseBody`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElectMasterBody {
    /// The members (a new master only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub broker_member_group: Option<BrokerMemberGroup>,
    /// The SyncStateSet after the election.
    pub sync_state_set: BTreeSet<BrokerId>,
}

/// `ReplicaIdentity`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaIdentity {
    /// Alive by its heartbeats.
    pub alive: bool,
    /// Its address.
    pub broker_address: String,
    /// Its id.
    pub broker_id: BrokerId,
    /// Its set.
    pub broker_name: String,
}

/// `ReplicasInfo`: one set as mqadmin getSyncStateSet prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicasInfo {
    /// Members in the SyncStateSet.
    pub in_sync_replicas: Vec<ReplicaIdentity>,
    /// The master's address.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub master_address: Option<String>,
    /// The master's id.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub master_broker_id: Option<BrokerId>,
    /// The master epoch.
    pub master_epoch: i32,
    /// The other members.
    pub not_in_sync_replicas: Vec<ReplicaIdentity>,
    /// The SyncStateSet epoch.
    pub sync_state_set_epoch: i32,
}

/// `BrokerReplicasInfo`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerReplicasInfo {
    /// By set.
    pub replicas_info_table: BTreeMap<String, ReplicasInfo>,
}

fn bad(e: HeaderError) -> Refusal {
    Refusal {
        code: ResponseCode::SystemError,
        remark: e.to_string(),
    }
}

fn system_error(remark: impl Into<String>) -> Refusal {
    Refusal {
        code: ResponseCode::SystemError,
        remark: remark.into(),
    }
}

/// Decodes a controller request; `None` for a code that is not one (the
/// caller answers REQUEST_CODE_NOT_SUPPORTED). Missing required fields are
/// refused with SYSTEM_ERROR naming the field, as Java's header decoding.
pub fn decode(req: &RemotingCommand) -> Option<Result<Request, Refusal>> {
    let code = ControllerCode::from_i32(req.code)?;
    Some(decode_known(code, req))
}

fn decode_known(code: ControllerCode, req: &RemotingCommand) -> Result<Request, Refusal> {
    use ControllerCode as C;
    let ext = req.ext();
    let text = |k: &'static str| ext.get_str(k).unwrap_or_default().to_owned();
    Ok(match code {
        C::BrokerHeartbeat => {
            let broker_name = ext.req_str("brokerName").map_err(bad)?.to_owned();
            let addr = ext.req_str("brokerAddr").map_err(bad)?.to_owned();
            let cluster = ext.req_str("clusterName").map_err(bad)?.to_owned();
            let Some(broker_id) = ext.get_i64("brokerId").map_err(bad)? else {
                return Err(Refusal {
                    code: ResponseCode::ControllerInvalidRequest,
                    remark: "Heart beat with empty brokerId".into(),
                });
            };
            Request::Heartbeat {
                cluster,
                heartbeat: Heartbeat {
                    broker_name,
                    broker_id,
                    addr,
                    epoch: ext.get_i32("epoch").map_err(bad)?.unwrap_or(-1),
                    max_offset: ext.get_i64("maxOffset").map_err(bad)?.unwrap_or(-1),
                    confirm_offset: ext.get_i64("confirmOffset").map_err(bad)?.unwrap_or(-1),
                    timeout_ms: ext
                        .get_i64("heartbeatTimeoutMills")
                        .map_err(bad)?
                        .unwrap_or(DEFAULT_HEARTBEAT_TIMEOUT_MS),
                    election_priority: ext
                        .get_i32("electionPriority")
                        .map_err(bad)?
                        .unwrap_or(DEFAULT_ELECTION_PRIORITY),
                },
            }
        }
        C::GetNextBrokerId => Request::NextBrokerId {
            cluster: text("clusterName"),
            broker_name: text("brokerName"),
        },
        C::ApplyBrokerId => Request::ApplyBrokerId {
            cluster: text("clusterName"),
            broker_name: text("brokerName"),
            broker_id: ext
                .get_i64("appliedBrokerId")
                .map_err(bad)?
                .ok_or_else(|| system_error("appliedBrokerId is missing"))?,
            check_code: ext
                .get_str("registerCheckCode")
                .ok_or_else(|| system_error("registerCheckCode is missing"))?
                .to_owned(),
        },
        C::RegisterBroker => Request::RegisterBroker {
            cluster: text("clusterName"),
            broker_name: text("brokerName"),
            broker_id: ext
                .get_i64("brokerId")
                .map_err(bad)?
                .ok_or_else(|| system_error("brokerId is missing"))?,
            addr: text("brokerAddress"),
        },
        C::ElectMaster => {
            let cluster = ext.req_str("clusterName").map_err(bad)?.to_owned();
            let broker_name = ext.req_str("brokerName").map_err(bad)?.to_owned();
            let id = ext.req_i64("brokerId").map_err(bad)?;
            let designate = ext.req_bool("designateElect").map_err(bad)?;
            let trigger = match (id, designate) {
                (id, _) if id < 0 => Trigger::Controller,
                (id, true) => Trigger::Designate(id),
                (id, false) => Trigger::Broker(id),
            };
            Request::ElectMaster {
                cluster,
                broker_name,
                trigger,
            }
        }
        C::AlterSyncStateSet => {
            let body: SyncStateSetBody =
                rmq_common::json::from_slice(req.body.as_deref().unwrap_or_default())
                    .map_err(|e| system_error(format!("SyncStateSet body: {e}")))?;
            Request::AlterSyncStateSet(AlterRequest {
                broker_name: text("brokerName"),
                master: ext
                    .get_i64("masterBrokerId")
                    .map_err(bad)?
                    .ok_or_else(|| system_error("masterBrokerId is missing"))?,
                master_epoch: ext.get_i32("masterEpoch").map_err(bad)?.unwrap_or(-1),
                sync_state_set: body.sync_state_set,
                sync_state_set_epoch: body.sync_state_set_epoch,
            })
        }
        C::GetReplicaInfo => Request::GetReplicaInfo {
            broker_name: text("brokerName"),
        },
        C::GetMetadataInfo => Request::GetMetadataInfo,
        C::GetSyncStateData => {
            let names: Vec<String> = match req.body.as_deref() {
                Some(b) if !b.is_empty() => rmq_common::json::from_slice(b)
                    .map_err(|e| system_error(format!("broker names body: {e}")))?,
                _ => Vec::new(),
            };
            if names.is_empty() {
                return Err(system_error("not set any response code"));
            }
            Request::GetSyncStateData {
                broker_names: names,
            }
        }
        C::UpdateControllerConfig => Request::UpdateControllerConfig {
            body: String::from_utf8_lossy(req.body.as_deref().unwrap_or_default()).into_owned(),
        },
        C::GetControllerConfig => Request::GetControllerConfig,
        C::CleanBrokerData => Request::CleanBrokerData {
            broker_name: ext.req_str("brokerName").map_err(bad)?.to_owned(),
            ids: ext.get_str("brokerControllerIdsToClean").map(str::to_owned),
            clean_living: ext
                .get_bool("isCleanLivingBroker")
                .map_err(bad)?
                .unwrap_or(false),
        },
    })
}

/// A refusal as a response.
pub fn refusal(r: &Refusal) -> RemotingCommand {
    RemotingCommand::response(r.code, Some(r.remark.clone()))
}

/// A JSON body; serializing these types cannot fail, and an empty body
/// stands in if it ever did.
fn json<T: Serialize>(body: &T) -> Vec<u8> {
    serde_json::to_vec(body).unwrap_or_default()
}

/// The master fields of REGISTER_BROKER, GET_REPLICA_INFO and ELECT_MASTER
/// answers; a set with no master leaves out its id and address.
fn put_master(resp: &mut RemotingCommand, v: &MasterView) {
    if let Some(id) = v.master {
        resp.put_ext("masterBrokerId", id);
    }
    if let Some(addr) = &v.master_addr {
        resp.put_ext("masterAddress", addr);
    }
    resp.put_ext("masterEpoch", v.master_epoch);
    resp.put_ext("syncStateSetEpoch", v.sync_state_set_epoch);
}

fn sync_state_set(v: &MasterView) -> SyncStateSetBody {
    SyncStateSetBody {
        sync_state_set: v.sync_state_set.clone(),
        sync_state_set_epoch: v.sync_state_set_epoch,
    }
}

/// CONTROLLER_REGISTER_BROKER's or CONTROLLER_GET_REPLICA_INFO's answer.
pub fn master_view(cluster: &str, broker_name: &str, v: &MasterView) -> RemotingCommand {
    let mut resp = RemotingCommand::response(ResponseCode::Success, None);
    resp.put_ext("clusterName", cluster);
    resp.put_ext("brokerName", broker_name);
    put_master(&mut resp, v);
    resp.with_body(json(&sync_state_set(v)))
}

/// CONTROLLER_ELECT_MASTER's answer (SUCCESS or MASTER_STILL_EXIST).
pub fn elected(cluster: &str, broker_name: &str, e: &Elected) -> RemotingCommand {
    let mut resp = RemotingCommand::response(e.code, None);
    put_master(&mut resp, &e.view);
    let body = ElectMasterBody {
        broker_member_group: e.members.as_ref().map(|m| BrokerMemberGroup {
            broker_addrs: m.clone(),
            broker_name: broker_name.to_owned(),
            cluster: cluster.to_owned(),
        }),
        sync_state_set: e.view.sync_state_set.clone(),
    };
    resp.with_body(json(&body))
}

/// CONTROLLER_ALTER_SYNC_STATE_SET's answer.
pub fn altered(sync_state_set: &BTreeSet<BrokerId>, epoch: i32) -> RemotingCommand {
    let mut resp = RemotingCommand::response(ResponseCode::Success, None);
    resp.put_ext("newSyncStateSetEpoch", epoch);
    resp.with_body(json(&SyncStateSetBody {
        sync_state_set: sync_state_set.clone(),
        sync_state_set_epoch: epoch,
    }))
}

/// CONTROLLER_GET_NEXT_BROKER_ID's answer.
pub fn next_broker_id(cluster: &str, broker_name: &str, id: BrokerId) -> RemotingCommand {
    let mut resp = RemotingCommand::response(ResponseCode::Success, None);
    resp.put_ext("clusterName", cluster);
    resp.put_ext("brokerName", broker_name);
    resp.put_ext("nextBrokerId", id);
    resp
}

/// CONTROLLER_GET_SYNC_STATE_DATA's answer.
pub fn sync_state_data(info: &BrokerReplicasInfo) -> RemotingCommand {
    RemotingCommand::response(ResponseCode::Success, None).with_body(json(info))
}
