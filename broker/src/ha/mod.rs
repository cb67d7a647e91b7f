//! Master/slave replication on RocketMQ 4.9's HA protocol: the wire format
//! (`wire`), what slaves acknowledged and the SYNC_MASTER waits (`acks`),
//! the master's side (`master`) and the slave's (`slave`). The frames of
//! RocketMQ 5.x's auto-switch protocol (controller mode) are in
//! `switch_wire`.

pub mod acks;
pub mod master;
pub mod slave;
pub mod switch_wire;
pub mod sync;
pub mod wire;

use std::time::Duration;

pub use acks::{ReplicaAcks, ReplicaStatus};

/// A broker's part in replication (`brokerRole`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BrokerRole {
    /// Answers sends without waiting for a slave (RocketMQ's default).
    #[default]
    AsyncMaster,
    /// Answers a send once a slave has its bytes.
    SyncMaster,
    /// Follows a master; refuses sends, serves pulls.
    Slave,
}

impl BrokerRole {
    /// RocketMQ's name of the role (`brokerRole`).
    pub fn name(self) -> &'static str {
        match self {
            Self::AsyncMaster => "ASYNC_MASTER",
            Self::SyncMaster => "SYNC_MASTER",
            Self::Slave => "SLAVE",
        }
    }
}

/// Timings and sizes of the HA links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HaSettings {
    /// `haSendHeartbeatInterval`: a slave reports, and a master sends an
    /// empty frame, after this much silence.
    pub heartbeat: Duration,
    /// `haHousekeepingInterval`: a link silent this long is dropped.
    pub housekeeping: Duration,
    /// `haTransferBatchSize`: most CommitLog bytes per frame.
    pub batch_bytes: usize,
}

impl Default for HaSettings {
    fn default() -> Self {
        Self {
            heartbeat: Duration::from_millis(5_000),
            housekeeping: Duration::from_millis(20_000),
            batch_bytes: 32 * 1024,
        }
    }
}
