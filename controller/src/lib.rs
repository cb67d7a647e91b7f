//! RocketMQ 5.x controller mode, the part every controller replica shares:
//! the replicated state of each broker set (its members and their ids, its
//! master, the master epoch, the SyncStateSet and its epoch), the events
//! that change it, broker liveness from heartbeats, the election policy,
//! and what each controller request may do (RocketMQ 5.3.3's rules; see
//! `docs/controller-facts.md`).
//!
//! A decision ([`ops`]) is made on the leader, its event appended to the
//! replicated log ([`raft`], on openraft), and every replica applies the
//! log in order ([`ReplicaState::apply`]).
//!
//! [`server`] puts a replica on the wire: RocketMQ's controller requests
//! and the peers' Raft RPCs on one port, and the scan that re-elects a
//! set whose master stopped heart-beating; [`config`] reads Apache
//! RocketMQ's controller keys into its settings; [`metrics`] records
//! elections, requests and liveness through the `metrics` facade.

pub mod alive;
pub mod config;
pub mod elect;
pub mod event;
pub mod metrics;
pub mod ops;
pub mod raft;
pub mod server;
pub mod state;
pub mod wire;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod wire_tests;

pub use alive::{Heartbeat, LiveInfo, Liveness};
pub use event::Event;
pub use state::{BrokerId, BrokerSet, Member, ReplicaState, FIRST_BROKER_ID};
