//! The broker: the message store facade over the CommitLog and a
//! consume-queue backend, its services, the remoting server with its
//! processors, the embedded NameServer and the metrics. Its one binary is
//! `rmq-broker`; the client lives in `rmq-client`, the tools in `rmq-tools`.
#![forbid(unsafe_code)]

pub mod acl;
#[cfg(test)]
mod body_tests;
pub mod broker;
pub mod clients;
pub mod config;
pub mod context;
pub mod error;
pub mod ha;
pub mod logging;
pub mod meta;
pub mod metrics;
pub mod namesrv;
pub mod processor;
pub mod pull_hold;
pub mod remoting;
pub mod runtime_config;
pub mod sampler;
pub mod service;
pub mod store;

pub use store::MessageStore;
