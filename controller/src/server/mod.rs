//! The controller on the wire: a replica serving RocketMQ 5.3.3's
//! controller requests and its peers' Raft RPCs on one port.
//!
//! - [`settings`]: what a replica is started with.
//! - [`service`]: the request handler; [`leader`]: the leader-only
//!   requests; [`answers`]: the answers [`crate::wire`] lacks.
//! - [`scan`]: liveness expiry and the controller's own elections, with
//!   their retries.
//! - [`notify`]: NOTIFY_BROKER_ROLE_CHANGED after an election.
//! - [`runtime`]: the settings UPDATE/GET_CONTROLLER_CONFIG change and show.
//! - [`lock`]: the store folder's `lock` file.
//! - [`raft_rpc`] and [`transport`]: Raft over remoting frames.
//! - [`start`]: [`ControllerServer::start`] and its handle.

pub mod answers;
pub mod error;
pub mod leader;
pub mod lock;
pub mod notify;
pub mod raft_rpc;
pub mod runtime;
pub mod scan;
pub mod service;
pub mod settings;
pub mod start;
pub mod transport;

pub use error::ServerError;
pub use scan::ScanOutcome;
pub use service::ControllerService;
pub use settings::ControllerSettings;
pub use start::{ControllerHandle, ControllerServer};
pub use transport::{TcpTransport, TransportError};

#[cfg(test)]
mod test_broker;
#[cfg(test)]
mod tests_cluster;
#[cfg(test)]
mod tests_metrics;
#[cfg(test)]
mod tests_runtime;
#[cfg(test)]
mod tests_single;
