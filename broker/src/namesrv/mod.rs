//! Embedded NameServer.
pub mod route;
