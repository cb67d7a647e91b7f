//! The broker: what turns the message store into a RocketMQ broker. It
//! wires the crates below it together and owns the request processors, the
//! broker's own tables and its services. Its one binary is `rmq-broker`.
//!
//! Layout:
//! - [`broker`]: start-up, the services it spawns, and a clean stop;
//!   [`config`]: every broker.conf key ([`config::Settings`]);
//!   [`runtime_config`]: the keys UPDATE_BROKER_CONFIG changes live.
//! - [`processor`]: one typed dispatch and one file per request family.
//! - [`meta`]: topics, subscription groups and consumer offsets, journaled
//!   and written behind; [`clients`]: producer and consumer tables, queue
//!   locks, calls to clients; [`pull_hold`]: long polling.
//! - [`service`]: delay-level delivery, the transaction check, poison
//!   records; [`ha`]: master/slave replication and the slave's metadata copy,
//!   and RocketMQ 5.x's auto-switch links.
//! - [`replicas`]: controller mode (id, registration, heartbeats, role
//!   changes at runtime); [`role`]: the role now, which everything reads;
//!   `duties`: the master-only services, started and stopped with the role;
//!   [`controller`]: the controller replica the binary can start.
//! - [`metrics`]: the Prometheus recorder and names; [`sampler`]: the
//!   gauges read from the broker's state.
//! - [`controller`]: a controller replica (`rmq-controller`) started by
//!   this process: standalone (`--controller-only`) or beside the
//!   NameServer (`enableControllerInNamesrv`).
//!
//! Below it: `rmq-store` (the message store), `rmq-remoting` (the server,
//! TLS and ACL), `rmq-namesrv` (the NameServer, embedded here),
//! `rmq-controller` (the controller, embedded or alone), `rmq-client`
//! and `rmq-common`. `docs/architecture.md` draws the whole house.
#![forbid(unsafe_code)]

pub(crate) mod acl_setup;
#[cfg(test)]
mod body_tests;
pub mod broker;
pub(crate) mod clients;
pub mod config;
pub mod context;
pub mod controller;
pub(crate) mod duties;
pub mod error;
pub(crate) mod grpc;
pub use grpc::GrpcConfig;
pub mod ha;
pub mod logging;
pub mod meta;
pub mod metrics;
pub mod pop;
pub(crate) mod processor;
pub(crate) mod pull_hold;
pub mod replicas;
pub mod role;
pub(crate) mod runtime_config;
pub(crate) mod sampler;
pub mod service;
