//! The openraft type configuration of the controller's log: nodes are
//! numbered `u64` with an address string ([`BasicNode`]), an entry carries
//! one [`Event`], and applying it answers with the log index it took.

use std::io::Cursor;

use openraft::BasicNode;
use serde::{Deserialize, Serialize};

use crate::event::Event;

/// A controller replica's id in the Raft group.
pub type NodeId = u64;

/// What applying one entry answers: where it landed in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// The log index of the entry.
    pub index: u64,
}

openraft::declare_raft_types!(
    /// The controller's Raft types.
    pub TypeConfig:
        D = Event,
        R = Applied,
        NodeId = NodeId,
        Node = BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

/// A running Raft node of the controller.
pub type Raft = openraft::Raft<TypeConfig>;
/// One entry of the controller's log.
pub type Entry = openraft::Entry<TypeConfig>;
/// A log position (leader id and index).
pub type LogId = openraft::LogId<NodeId>;
/// A membership as stored with the log position it came from.
pub type StoredMembership = openraft::StoredMembership<NodeId, BasicNode>;
/// What openraft's storage calls fail with.
pub type StorageError = openraft::StorageError<NodeId>;
/// A vote (term, candidate, committed).
pub type Vote = openraft::Vote<NodeId>;
