//! The controller's replicated log on openraft (0.9): one Raft group of 1
//! or 3 controller replicas whose entries are [`crate::Event`]s, applied in
//! order to each replica's [`crate::ReplicaState`].
//!
//! - [`types`]: openraft's type configuration.
//! - [`record`]: the checked record framing of every store file.
//! - [`log_store`]: the durable log (entries, vote, committed id).
//! - [`state_machine`]: the state and its snapshots.
//! - [`network`]: the [`Transport`] trait and openraft's network over it;
//!   [`router`]: an in-process transport for tests.
//! - [`node`]: [`ControllerRaft`], the handle the controller uses.

pub mod config;
pub mod error;
pub mod log_store;
pub mod network;
pub mod node;
pub mod record;
pub mod router;
pub mod state_machine;
pub mod types;

#[cfg(test)]
mod cluster_tests;
#[cfg(test)]
mod log_store_tests;

pub use config::RaftSettings;
pub use error::{InitError, ProposeError, ShutdownError, StartError, StoreError};
pub use log_store::FileLogStore;
pub use network::{Network, Transport};
pub use node::{ControllerRaft, Initialized};
pub use router::{Router, RouterTransport};
pub use state_machine::{SharedState, StateMachineStore};
pub use types::{Applied, NodeId, TypeConfig};
