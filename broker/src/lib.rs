//! The broker: the message store facade over the CommitLog and a
//! consume-queue backend, its services, and (later) the remoting server,
//! processors and embedded NameServer.
#![forbid(unsafe_code)]

pub mod config;
pub mod meta;
pub mod namesrv;
pub mod remoting;
pub mod store;

pub use store::MessageStore;
