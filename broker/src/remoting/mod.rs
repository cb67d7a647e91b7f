//! The remoting server over tokio: accepts connections, frames them with
//! [`rmq_client::RemotingCodec`] (the same codec the client uses), and hands
//! each request to a [`RequestHandler`].

mod frame;
pub mod limits;
pub mod server;
pub mod tls;
mod writer;

pub use server::{serve, serve_tls, ConnId, Connection, RequestHandler, ServerOptions};

#[cfg(test)]
mod server_tests;
