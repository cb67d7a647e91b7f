//! The remoting server the broker and the NameServer share.
//!
//! Layout:
//! - [`server`]: accepts connections, frames them with
//!   [`rmq_client::RemotingCodec`] (the same codec the client uses), and
//!   hands each request to a [`RequestHandler`]; `frame`, [`limits`] and
//!   `writer` bound what one connection may hold and send.
//! - [`tls`]: TLS on the port (`tlsMode`), and the settings it is built from.
//! - [`acl`]: the plain ACL file in force, its reload and its edits; the
//!   format and the check are `rmq_common::acl`.
#![forbid(unsafe_code)]

pub mod acl;
mod frame;
pub mod limits;
pub mod server;
pub mod tls;
mod writer;

pub use server::{serve, serve_tls, ConnId, Connection, Outbox, RequestHandler, ServerOptions};

#[cfg(test)]
mod server_tests;
