//! What one controller replica is started with.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmq_common::time::{Clock, SystemClock};

use crate::raft::{NodeId, RaftSettings};

/// RocketMQ's default `scanNotActiveBrokerInterval`, ms.
pub const DEFAULT_SCAN_INTERVAL_MS: u64 = 5000;

/// The default controller group name (`controllerDLegerGroup` has no
/// default in Java; its examples use `group1`).
pub const DEFAULT_GROUP: &str = "group1";

/// How long the Raft transport waits to connect to a peer.
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 1000;

/// RocketMQ's default `electMasterMaxRetryCount`.
pub const DEFAULT_ELECT_MASTER_MAX_RETRY_COUNT: u32 = 3;

/// How long one try of a controller-triggered election may take, and the
/// pause before the next try after a failed one, ms (RocketMQ waits 3 s
/// for each try).
pub const DEFAULT_ELECT_RETRY_PAUSE_MS: u64 = 3000;

/// One controller replica's settings. Every replica of a group lists the
/// same `peers` and Raft timings.
#[derive(Debug, Clone)]
pub struct ControllerSettings {
    /// This replica's id; a key of `peers`.
    pub id: NodeId,
    /// Every replica of the group, this one included: id to the
    /// `host:port` it serves controller requests and Raft on.
    pub peers: BTreeMap<NodeId, String>,
    /// Where the Raft log, vote and snapshot live.
    pub store_dir: PathBuf,
    /// Raft timings and compaction.
    pub raft: RaftSettings,
    /// `scanNotActiveBrokerInterval`: how often brokers whose heartbeats
    /// stopped are dropped (and, on the leader, a set whose master was
    /// dropped re-elected at once), ms.
    pub scan_interval_ms: u64,
    /// `scanInactiveMasterInterval`: how often the leader re-elects every
    /// set whose master is not alive, ms.
    pub scan_inactive_master_interval_ms: u64,
    /// `enableElectUncleanMaster`: the controller's own elections may pick
    /// a member outside the SyncStateSet.
    pub elect_unclean_master: bool,
    /// `notifyBrokerRoleChanged`: after a successful election, every alive
    /// member of the set is told (NOTIFY_BROKER_ROLE_CHANGED).
    pub notify_broker_role_changed: bool,
    /// `electMasterMaxRetryCount`: tries of one controller-triggered
    /// election.
    pub elect_master_max_retry_count: u32,
    /// Bound of one such try and the pause after a failed one, ms.
    pub elect_retry_pause_ms: u64,
    /// The group name GET_METADATA_INFO answers (`controllerDLegerGroup`).
    pub group: String,
    /// Each replica's id as `controllerDLegerPeers` names it (`n0`), shown
    /// by GET_METADATA_INFO; a replica missing here shows its number.
    pub names: BTreeMap<NodeId, String>,
    /// `configStorePath`: where UPDATE_CONTROLLER_CONFIG writes the
    /// settings; `None` keeps them in memory.
    pub config_store_path: Option<PathBuf>,
    /// `configBlackList`: keys UPDATE_CONTROLLER_CONFIG refuses (besides
    /// `configBlackList`, `configStorePath` and `rocketmqHome`, always).
    pub config_black_list: Vec<String>,
    /// How long connecting to a Raft peer may take, ms.
    pub connect_timeout_ms: u64,
    /// The clock broker liveness is measured with.
    pub clock: Arc<dyn Clock>,
}

impl ControllerSettings {
    /// A replica `id` of the group `peers` storing under `store_dir`, with
    /// RocketMQ's defaults for the rest.
    pub fn new(id: NodeId, peers: BTreeMap<NodeId, String>, store_dir: PathBuf) -> Self {
        Self {
            id,
            peers,
            store_dir,
            raft: RaftSettings::default(),
            scan_interval_ms: DEFAULT_SCAN_INTERVAL_MS,
            scan_inactive_master_interval_ms: DEFAULT_SCAN_INTERVAL_MS,
            elect_unclean_master: false,
            notify_broker_role_changed: true,
            elect_master_max_retry_count: DEFAULT_ELECT_MASTER_MAX_RETRY_COUNT,
            elect_retry_pause_ms: DEFAULT_ELECT_RETRY_PAUSE_MS,
            group: DEFAULT_GROUP.to_owned(),
            names: BTreeMap::new(),
            config_store_path: None,
            config_black_list: crate::config::DEFAULT_CONFIG_BLACK_LIST
                .split(';')
                .map(str::to_owned)
                .collect(),
            connect_timeout_ms: DEFAULT_CONNECT_TIMEOUT_MS,
            clock: Arc::new(SystemClock),
        }
    }

    /// The name GET_METADATA_INFO gives replica `id`.
    pub fn name_of(&self, id: NodeId) -> String {
        peer_name(&self.names, id)
    }

    /// The connect timeout of the Raft transport.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms.max(1))
    }
}

/// Replica `id`'s name in `names`, or its number when it has none.
pub fn peer_name(names: &BTreeMap<NodeId, String>, id: NodeId) -> String {
    names.get(&id).cloned().unwrap_or_else(|| id.to_string())
}
