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
    /// `scanNotActiveBrokerInterval`: how often dead brokers are expired
    /// and, on the leader, sets without a live master re-elected, ms.
    pub scan_interval_ms: u64,
    /// `enableElectUncleanMaster`: the controller's own elections may pick
    /// a member outside the SyncStateSet.
    pub elect_unclean_master: bool,
    /// The group name GET_METADATA_INFO answers (`controllerDLegerGroup`).
    pub group: String,
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
            elect_unclean_master: false,
            group: DEFAULT_GROUP.to_owned(),
            connect_timeout_ms: DEFAULT_CONNECT_TIMEOUT_MS,
            clock: Arc::new(SystemClock),
        }
    }

    /// The scan interval.
    pub fn scan_interval(&self) -> Duration {
        Duration::from_millis(self.scan_interval_ms.max(1))
    }

    /// The connect timeout of the Raft transport.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms.max(1))
    }
}
