//! The broker's calls to the controllers (RocketMQ 5.3.3's request codes and
//! headers, `docs/controller-facts.md` section 3): one connection per
//! controller address, kept while it works, and the leader's address as
//! GET_METADATA_INFO names it.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmq_client::{Connector, RemotingClient};
use rmq_common::remoting::{RemotingCommand, ResponseCode};
use rmq_controller::wire::{ElectMasterBody, SyncStateSetBody};
use tokio::sync::Mutex;

/// Broker → controller calls wait this long (Java: 3 s).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(3);

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    /// No connection, or no answer in time.
    #[error("controller {addr}: {reason}")]
    Unreachable {
        /// The controller.
        addr: String,
        /// Why.
        reason: String,
    },
    /// No controller names a leader.
    #[error("no controller names a leader (asked {0})")]
    NoLeader(String),
    /// The controller refused.
    #[error("controller {addr} answered {code} to {what}: {remark}")]
    Refused {
        /// The controller.
        addr: String,
        /// The request.
        what: &'static str,
        /// Its response code.
        code: i32,
        /// Its remark.
        remark: String,
    },
    /// The answer could not be read.
    #[error("controller {addr}'s answer to {what}: {reason}")]
    BadAnswer {
        /// The controller.
        addr: String,
        /// The request.
        what: &'static str,
        /// What is wrong.
        reason: String,
    },
}

impl RpcError {
    /// The controller's response code, when it refused.
    pub fn code(&self) -> Option<i32> {
        match self {
            Self::Refused { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// The set's master and epochs, as REGISTER_BROKER, GET_REPLICA_INFO,
/// ELECT_MASTER and NOTIFY_BROKER_ROLE_CHANGED tell them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MasterInfo {
    /// The master's controller id, if the set has one.
    pub master_id: Option<i64>,
    /// Its address (`brokerIP1:listenPort`).
    pub master_addr: Option<String>,
    /// The master epoch.
    pub master_epoch: i32,
    /// The SyncStateSet.
    pub sync_state_set: BTreeSet<i64>,
    /// Its epoch.
    pub sync_state_set_epoch: i32,
}

impl MasterInfo {
    /// Reads the header fields and the `SyncStateSet` (or elect) body.
    pub fn from_answer(resp: &RemotingCommand) -> Result<Self, String> {
        let e = resp.ext();
        let master_id = e.get_i64("masterBrokerId").map_err(|x| x.to_string())?;
        let master_addr = e
            .get_str("masterAddress")
            .filter(|a| !a.is_empty())
            .map(str::to_owned);
        let master_epoch = e
            .get_i32("masterEpoch")
            .map_err(|x| x.to_string())?
            .unwrap_or(0);
        let header_ss_epoch = e.get_i32("syncStateSetEpoch").map_err(|x| x.to_string())?;
        // Java writes these bodies with fastjson, whose maps keyed by
        // number have bare keys (`"brokerAddrs":{1:"…"}` in an election's
        // member group): read with the lenient decoder, as every other
        // body from Java is.
        let (sync_state_set, body_epoch) = match resp.body.as_deref() {
            None | Some([]) => (BTreeSet::new(), None),
            Some(b) => match rmq_common::json::from_slice::<SyncStateSetBody>(b) {
                Ok(s) => (s.sync_state_set, Some(s.sync_state_set_epoch)),
                Err(_) => {
                    let elect: ElectMasterBody =
                        rmq_common::json::from_slice(b).map_err(|x| x.to_string())?;
                    (elect.sync_state_set, None)
                }
            },
        };
        Ok(Self {
            master_id: master_id.filter(|id| *id >= 0),
            master_addr,
            master_epoch,
            sync_state_set,
            sync_state_set_epoch: header_ss_epoch.or(body_epoch).unwrap_or(0),
        })
    }

    /// Whether a master is named (id and address).
    pub fn has_master(&self) -> bool {
        self.master_id.is_some() && self.master_addr.is_some()
    }
}

/// What this broker says of itself in every call.
#[derive(Debug, Clone)]
pub struct Me {
    /// `brokerClusterName`.
    pub cluster: String,
    /// `brokerName`.
    pub broker_name: String,
    /// `brokerIP1:listenPort`.
    pub addr: String,
}

/// What a heartbeat carries besides the identity.
#[derive(Debug, Clone, Copy)]
pub struct Beat {
    /// The controller's id for this broker.
    pub broker_id: i64,
    /// Last epoch of the epoch file (-1: none).
    pub epoch: i32,
    /// CommitLog max offset.
    pub max_offset: i64,
    /// Confirm offset.
    pub confirm_offset: i64,
    /// `controllerHeartBeatTimeoutMills`.
    pub timeout_ms: u64,
    /// `brokerElectionPriority`.
    pub priority: i32,
}

/// The controllers of one broker.
pub struct Controllers {
    connector: Connector,
    me: Me,
    addrs: Vec<String>,
    conns: Mutex<HashMap<String, Arc<RemotingClient>>>,
    leader: parking_lot::Mutex<Option<String>>,
}

impl std::fmt::Debug for Controllers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controllers")
            .field("addrs", &self.addrs)
            .field("leader", &*self.leader.lock())
            .finish_non_exhaustive()
    }
}

impl Controllers {
    /// Talks to the controllers at `addrs` as `me`.
    pub fn new(connector: Connector, me: Me, addrs: Vec<String>) -> Self {
        Self {
            connector,
            me,
            addrs,
            conns: Mutex::default(),
            leader: parking_lot::Mutex::default(),
        }
    }

    /// The configured addresses.
    pub fn addrs(&self) -> &[String] {
        &self.addrs
    }

    /// The leader's address as last learned.
    pub fn leader(&self) -> Option<String> {
        self.leader.lock().clone()
    }

    /// Who this broker is.
    pub fn me(&self) -> &Me {
        &self.me
    }

    async fn client(&self, addr: &str) -> Result<Arc<RemotingClient>, RpcError> {
        let mut conns = self.conns.lock().await;
        if let Some(c) = conns.get(addr).filter(|c| !c.is_closed()) {
            return Ok(Arc::clone(c));
        }
        let unreachable = |reason: String| RpcError::Unreachable {
            addr: addr.to_owned(),
            reason,
        };
        let sock = resolve(addr).await.map_err(unreachable)?;
        let client = tokio::time::timeout(CALL_TIMEOUT, self.connector.connect(sock))
            .await
            .map_err(|_| unreachable(format!("no connection within {CALL_TIMEOUT:?}")))?
            .map_err(|e| unreachable(e.to_string()))?;
        let client = Arc::new(client);
        conns.insert(addr.to_owned(), Arc::clone(&client));
        Ok(client)
    }

    async fn call(
        &self,
        addr: &str,
        what: &'static str,
        cmd: RemotingCommand,
    ) -> Result<RemotingCommand, RpcError> {
        let client = self.client(addr).await?;
        let resp = client
            .invoke(cmd, CALL_TIMEOUT)
            .await
            .map_err(|e| RpcError::Unreachable {
                addr: addr.to_owned(),
                reason: format!("{what}: {e}"),
            })?;
        Ok(resp)
    }

    fn req(&self, code: i32) -> RemotingCommand {
        let mut r = RemotingCommand::request(code);
        r.put_ext("clusterName", &self.me.cluster);
        r.put_ext("brokerName", &self.me.broker_name);
        r
    }

    /// Asks each controller for the leader until one names it, and keeps it.
    pub async fn find_leader(&self) -> Result<String, RpcError> {
        for addr in &self.addrs {
            let Ok(resp) = self
                .call(addr, "GET_METADATA_INFO", RemotingCommand::request(1005))
                .await
            else {
                continue;
            };
            if resp.code != ResponseCode::Success as i32 {
                continue;
            }
            if let Some(leader) = resp
                .ext()
                .get_str("controllerLeaderAddress")
                .filter(|a| !a.is_empty())
            {
                *self.leader.lock() = Some(leader.to_owned());
                return Ok(leader.to_owned());
            }
        }
        Err(RpcError::NoLeader(self.addrs.join(";")))
    }

    /// Sends `cmd` to the leader (learning it first if need be); a
    /// CONTROLLER_NOT_LEADER answer or a dead connection forgets the leader.
    async fn to_leader(
        &self,
        what: &'static str,
        cmd: RemotingCommand,
    ) -> Result<RemotingCommand, RpcError> {
        let leader = match self.leader() {
            Some(l) => l,
            None => self.find_leader().await?,
        };
        let resp = match self.call(&leader, what, cmd).await {
            Ok(r) => r,
            Err(e) => {
                *self.leader.lock() = None;
                return Err(e);
            }
        };
        if resp.code == ResponseCode::ControllerNotLeader as i32 {
            *self.leader.lock() = None;
        }
        if resp.code != ResponseCode::Success as i32 {
            return Err(RpcError::Refused {
                addr: leader,
                what,
                code: resp.code,
                remark: resp.remark.clone().unwrap_or_default(),
            });
        }
        Ok(resp)
    }

    fn bad(&self, what: &'static str, reason: String) -> RpcError {
        RpcError::BadAnswer {
            addr: self.leader().unwrap_or_default(),
            what,
            reason,
        }
    }

    /// CONTROLLER_GET_NEXT_BROKER_ID.
    pub async fn next_broker_id(&self) -> Result<i64, RpcError> {
        const WHAT: &str = "GET_NEXT_BROKER_ID";
        let resp = self.to_leader(WHAT, self.req(1012)).await?;
        resp.ext()
            .req_i64("nextBrokerId")
            .map_err(|e| self.bad(WHAT, e.to_string()))
    }

    /// CONTROLLER_APPLY_BROKER_ID.
    pub async fn apply_broker_id(&self, id: i64, check_code: &str) -> Result<(), RpcError> {
        let mut r = self.req(1013);
        r.put_ext("appliedBrokerId", id);
        r.put_ext("registerCheckCode", check_code);
        self.to_leader("APPLY_BROKER_ID", r).await.map(drop)
    }

    /// CONTROLLER_REGISTER_BROKER: the set's master, if it has a live one.
    pub async fn register(&self, id: i64) -> Result<MasterInfo, RpcError> {
        const WHAT: &str = "REGISTER_BROKER";
        let mut r = self.req(1003);
        r.put_ext("brokerId", id);
        r.put_ext("brokerAddress", &self.me.addr);
        r.put_ext("invokeTime", rmq_common::time::now_ms());
        let resp = self.to_leader(WHAT, r).await?;
        MasterInfo::from_answer(&resp).map_err(|e| self.bad(WHAT, e))
    }

    /// CONTROLLER_ELECT_MASTER for this broker (SUCCESS and
    /// MASTER_STILL_EXIST both name the master).
    pub async fn elect(&self, id: i64) -> Result<MasterInfo, RpcError> {
        const WHAT: &str = "ELECT_MASTER";
        let mut r = self.req(1002);
        r.put_ext("brokerId", id);
        r.put_ext("designateElect", false);
        r.put_ext("invokeTime", rmq_common::time::now_ms());
        match self.to_leader(WHAT, r).await {
            Ok(resp) => MasterInfo::from_answer(&resp).map_err(|e| self.bad(WHAT, e)),
            Err(RpcError::Refused { code, .. })
                if code == ResponseCode::ControllerMasterStillExist as i32 =>
            {
                // The refusal carries the master; ask for it plainly.
                self.replica_info().await
            }
            Err(e) => Err(e),
        }
    }

    /// CONTROLLER_GET_REPLICA_INFO.
    pub async fn replica_info(&self) -> Result<MasterInfo, RpcError> {
        const WHAT: &str = "GET_REPLICA_INFO";
        let resp = self.to_leader(WHAT, self.req(1004)).await?;
        MasterInfo::from_answer(&resp).map_err(|e| self.bad(WHAT, e))
    }

    /// CONTROLLER_ALTER_SYNC_STATE_SET: the accepted set and its epoch.
    pub async fn alter_sync_state_set(
        &self,
        master_id: i64,
        master_epoch: i32,
        proposed: &BTreeSet<i64>,
        current_epoch: i32,
    ) -> Result<(BTreeSet<i64>, i32), RpcError> {
        const WHAT: &str = "ALTER_SYNC_STATE_SET";
        let mut r = self.req(1001);
        r.put_ext("masterBrokerId", master_id);
        r.put_ext("masterEpoch", master_epoch);
        r.put_ext("invokeTime", rmq_common::time::now_ms());
        let body = SyncStateSetBody {
            sync_state_set: proposed.clone(),
            sync_state_set_epoch: current_epoch,
        };
        let body = serde_json::to_vec(&body).map_err(|e| self.bad(WHAT, e.to_string()))?;
        let resp = self.to_leader(WHAT, r.with_body(body)).await?;
        let got: SyncStateSetBody = resp
            .body
            .as_deref()
            .ok_or_else(|| "no body".to_owned())
            .and_then(|b| rmq_common::json::from_slice(b).map_err(|e| e.to_string()))
            .map_err(|e| self.bad(WHAT, e))?;
        Ok((got.sync_state_set, got.sync_state_set_epoch))
    }

    /// BROKER_HEARTBEAT, oneway, to every controller (each keeps its own
    /// view of who is alive).
    pub async fn heartbeat(&self, beat: Beat) {
        for addr in &self.addrs {
            let mut r = self.req(904);
            r.put_ext("brokerAddr", &self.me.addr);
            r.put_ext("brokerId", beat.broker_id);
            r.put_ext("epoch", beat.epoch);
            r.put_ext("maxOffset", beat.max_offset);
            r.put_ext("confirmOffset", beat.confirm_offset);
            r.put_ext("heartbeatTimeoutMills", beat.timeout_ms);
            r.put_ext("electionPriority", beat.priority);
            let sent = match self.client(addr).await {
                Ok(c) => c.invoke_oneway(r).await.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            if let Err(e) = sent {
                self.conns.lock().await.remove(addr);
                tracing::debug!(controller = %addr, error = %e, "heartbeat not sent");
            }
        }
    }
}

/// `host:port` to a socket address (an IP, or a name looked up).
async fn resolve(addr: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = addr.parse() {
        return Ok(a);
    }
    tokio::net::lookup_host(addr)
        .await
        .map_err(|e| format!("cannot resolve {addr}: {e}"))?
        .next()
        .ok_or_else(|| format!("{addr} resolves to nothing"))
}
