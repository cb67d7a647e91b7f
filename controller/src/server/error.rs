//! Why a controller replica could not start.

use crate::raft::{InitError, NodeId, StartError};

/// A controller server that did not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// `peers` does not list this replica's own id.
    #[error("controller id {0} is not among the peers")]
    NotAPeer(NodeId),
    /// The store folder is held by another replica, or cannot be locked.
    #[error(transparent)]
    Lock(#[from] crate::server::lock::LockError),
    /// The listener has no local address.
    #[error("listener address: {0}")]
    Listener(#[source] std::io::Error),
    /// The Raft node did not start.
    #[error(transparent)]
    Raft(#[from] StartError),
    /// The Raft group could not be formed.
    #[error(transparent)]
    Init(#[from] InitError),
}
