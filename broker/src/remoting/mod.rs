//! The remoting layer over tokio: a frame codec wrapping the pure codec of
//! `rmq_common::remoting`, and an async client (used by tests, tools and the
//! broker's own calls to other nodes).

pub mod client;
pub mod codec;
pub mod server;

pub use client::{ClientError, RemotingClient};
pub use codec::{CodecError, RemotingCodec};
pub use server::{serve, ConnId, Connection, RequestHandler, ServerOptions};

#[cfg(test)]
mod server_tests;
