//! The broker: the message store facade over the CommitLog and a
//! consume-queue backend, its services, and (later) the remoting server,
//! processors and embedded NameServer.
#![forbid(unsafe_code)]

pub mod store;

pub use store::MessageStore;
