//! Errors of the controller's Raft log: its files, its start and its
//! proposals.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use openraft::error::{ClientWriteError, Fatal};
use openraft::BasicNode;

use crate::raft::types::NodeId;

/// A failure of the files under the controller's store folder.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done (open, write, fsync, rename, ...).
        op: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A record that is not the torn tail of the file fails its checks.
    #[error("{path}: damaged record at offset {offset}: {why}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Where the damaged record starts.
        offset: u64,
        /// Which check failed.
        why: &'static str,
    },
    /// A record passes its CRC but its payload does not decode.
    #[error("{path}: record at offset {offset} does not decode: {source}")]
    Decode {
        /// The file.
        path: PathBuf,
        /// Where the record starts.
        offset: u64,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// A value could not be encoded as a record.
    #[error("encoding a record for {path}: {source}")]
    Encode {
        /// The file it was meant for.
        path: PathBuf,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// Log entries are not consecutive (in the file or in an append).
    #[error("{path}: log index {found} where {expected} was expected (offset {offset})")]
    Gap {
        /// The log file.
        path: PathBuf,
        /// Where the entry is or would have been written.
        offset: u64,
        /// The index that would keep the log without a hole.
        expected: u64,
        /// The index found.
        found: u64,
    },
    /// A write failed earlier; the store takes no more writes, since what
    /// reached the disk is unknown.
    #[error("{path}: the log store stopped taking writes after a failed write")]
    Poisoned {
        /// The log file.
        path: PathBuf,
    },
    /// A blocking file task did not finish (it panicked or was cancelled).
    #[error("blocking file task for {path} did not finish")]
    TaskLost {
        /// The file.
        path: PathBuf,
    },
}

/// Why a controller Raft node could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The store folder could not be opened.
    #[error("opening the controller store: {0}")]
    Store(#[from] StoreError),
    /// The Raft settings are not valid.
    #[error("raft settings: {0}")]
    Config(#[from] Box<openraft::ConfigError>),
    /// openraft could not start its core.
    #[error("starting raft: {0}")]
    Fatal(#[from] Fatal<NodeId>),
}

/// Why a proposal was not applied.
#[derive(Debug, thiserror::Error)]
pub enum ProposeError {
    /// This node is not the leader; `leader` is the one it knows, if any
    /// (a client retries there).
    #[error("not the leader; leader: {leader:?} at {addr:?}")]
    NotLeader {
        /// The leader's id, if known.
        leader: Option<NodeId>,
        /// The leader's address, if known.
        addr: Option<String>,
    },
    /// No answer within the proposal timeout: the event may or may not be
    /// committed later (a partitioned leader's entry is usually discarded).
    #[error("no answer within {0:?}; the outcome is unknown")]
    Timeout(Duration),
    /// openraft refused the write for another reason.
    #[error("write refused: {0}")]
    Refused(#[source] ClientWriteError<NodeId, BasicNode>),
    /// The Raft node has stopped.
    #[error("raft stopped: {0}")]
    Fatal(#[source] Fatal<NodeId>),
}

/// Why initializing the group failed.
#[derive(Debug, thiserror::Error)]
#[error("initializing the raft group: {0}")]
pub struct InitError(
    #[source]
    pub  openraft::error::RaftError<NodeId, openraft::error::InitializeError<NodeId, BasicNode>>,
);

/// Why a node did not stop cleanly.
#[derive(Debug, thiserror::Error)]
#[error("raft core task ended abnormally: {0}")]
pub struct ShutdownError(#[source] pub tokio::task::JoinError);
