//! The Raft timing and log-compaction settings of a controller replica.

use std::sync::Arc;
use std::time::Duration;

use openraft::{Config, SnapshotPolicy};

/// The largest snapshot chunk sent in one RPC.
pub const SNAPSHOT_CHUNK_BYTES: u64 = 1024 * 1024;

/// Timing and compaction of the controller's Raft group. Every replica of
/// a group should use the same values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaftSettings {
    /// How often the leader sends heartbeats, in milliseconds.
    pub heartbeat_interval_ms: u64,
    /// The shortest wait without a leader before a follower stands for
    /// election, in milliseconds.
    pub election_timeout_min_ms: u64,
    /// The longest such wait (each wait is drawn between the two).
    pub election_timeout_max_ms: u64,
    /// A snapshot is taken once this many entries were applied since the
    /// last one.
    pub snapshot_every_logs: u64,
    /// Entries kept in the log behind a snapshot (for lagging followers).
    pub logs_kept_after_snapshot: u64,
    /// How long [`crate::raft::ControllerRaft::propose`] waits for its
    /// entry to be applied, in milliseconds.
    pub propose_timeout_ms: u64,
}

impl Default for RaftSettings {
    /// A group across hosts: heartbeat 100 ms, elections after 300-600 ms
    /// without one (the tests use the same), snapshots every 5000 entries.
    fn default() -> Self {
        Self {
            heartbeat_interval_ms: 100,
            election_timeout_min_ms: 300,
            election_timeout_max_ms: 600,
            snapshot_every_logs: 5000,
            logs_kept_after_snapshot: 1000,
            propose_timeout_ms: 3000,
        }
    }
}

impl RaftSettings {
    /// The proposal timeout.
    pub fn propose_timeout(&self) -> Duration {
        Duration::from_millis(self.propose_timeout_ms)
    }

    /// openraft's configuration, checked.
    pub fn openraft_config(&self) -> Result<Arc<Config>, Box<openraft::ConfigError>> {
        Config {
            cluster_name: "rmq-controller".to_owned(),
            heartbeat_interval: self.heartbeat_interval_ms,
            election_timeout_min: self.election_timeout_min_ms,
            election_timeout_max: self.election_timeout_max_ms,
            snapshot_policy: SnapshotPolicy::LogsSinceLast(self.snapshot_every_logs),
            max_in_snapshot_log_to_keep: self.logs_kept_after_snapshot,
            // Snapshot chunks travel as JSON arrays of numbers (up to four
            // bytes a byte) in one remoting frame of at most 16 MiB.
            snapshot_max_chunk_size: SNAPSHOT_CHUNK_BYTES,
            ..Config::default()
        }
        .validate()
        .map(Arc::new)
        .map_err(Box::new)
    }
}
