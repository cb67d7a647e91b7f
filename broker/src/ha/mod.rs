//! Master/slave replication on RocketMQ 4.9's HA protocol: the wire format
//! (`wire`), what slaves acknowledged and the SYNC_MASTER waits (`acks`),
//! the master's side (`master`) and the slave's (`slave`).
//!
//! RocketMQ 5.x's auto-switch protocol (controller mode): the frames
//! (`switch_wire`), the master's link (`switch_master`), the slave's
//! (`switch_slave`) and the master's in-sync bookkeeping (`switch_sync`).
//! What the controller-mode broker calls:
//!
//! - Becoming master of epoch `E` (after stopping any `SwitchSlave` with
//!   `SwitchSlave::stop`): `MessageStore::become_master(E, timeout)` (on a
//!   blocking thread: it cuts a torn tail, records `(E, end)` in the epoch
//!   file and waits for dispatch); `InSync::new(store, clock, settings)`,
//!   `InSync::adopt(set, syncStateSetEpoch)` with the set the controller
//!   gave; `SwitchMaster::start(listener, SwitchMasterShared { .. })` on the
//!   HA port. Already master and re-elected: `become_master(E, ..)` again
//!   only records the epoch.
//! - SyncStateSet reports: `InSync::subscribe()` yields the set this master
//!   would report whenever it changes (a slave caught up: added; its
//!   connection closed or `InSync::shrink_check()`, which the caller runs
//!   every `checkSyncStateSetPeriod`, found it behind for longer than
//!   `haMaxTimeSlaveNotCatchup`: removed). When it differs from
//!   `InSync::accepted()`, send ALTER_SYNC_STATE_SET with the master epoch
//!   and the accepted set's epoch, then call `InSync::adopt(new, epoch)` on
//!   success or `InSync::proposal_refused()` on refusal. Adopting recomputes
//!   the confirm offset (and the store's dispatch bound).
//! - Sends with `allAckInSyncStateSet`: `InSync::wait_all_ack(end,
//!   slaveTimeout)` (`ReplicaStatus::TimedOut`: FLUSH_SLAVE_TIMEOUT);
//!   `InSync::in_sync_replicas()` for `minInSyncReplicas`.
//! - Becoming slave of HA address `A` (after `SwitchMaster::stop`):
//!   `SwitchSlave::start(store, rx, SwitchSlaveConfig { broker_id, .. })`
//!   with `rx` a watch holding `Some(A)`; later addresses (the NameServer's
//!   answer) go through the same watch. `SwitchSlave::status()` says whom
//!   it follows and why the last link ended.

pub mod acks;
pub mod heal;
pub mod master;
pub mod slave;
pub mod switch_master;
pub mod switch_slave;
pub mod switch_sync;
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
