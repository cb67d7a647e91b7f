//! The broker: the message store facade over the CommitLog and a
//! consume-queue backend, its services, and (later) the remoting server,
//! processors and embedded NameServer.
#![forbid(unsafe_code)]

pub mod admin;
pub mod bench;
#[cfg(test)]
mod body_tests;
pub mod broker;
pub mod client;
pub mod config;
pub mod context;
pub mod logging;
pub mod meta;
pub mod metrics;
pub mod namesrv;
pub mod processor;
pub mod pull_hold;
pub mod remoting;
pub mod sdk;
pub mod service;
pub mod store;

pub use store::MessageStore;
