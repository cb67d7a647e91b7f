//! RocketMQ 5.x's gRPC API: package `apache.rocketmq.v2`, service
//! `MessagingService`, the protocol the stock 5.x SDKs speak to a proxy.
//!
//! This crate owns only the protocol: the `.proto` files and the Rust
//! generated from them. No server logic lives here; the broker implements
//! [`MessagingService`] and `rmq-bench` and the tests use
//! [`MessagingServiceClient`].
//!
//! # Where the protos come from
//!
//! `proto/apache/rocketmq/v2/{definition,service}.proto` were written for this
//! project from the published API of apache/rocketmq-apis v2.0.4, the version
//! Apache RocketMQ 5.3.3 uses (it already has `RecallMessage`). Every message,
//! field name and number, `oneof`, `optional`, map and rpc is as published, so
//! the wire matches the stock clients; `admin.proto` is left out.
//!
//! # How the code is generated
//!
//! `build.rs` parses the protos with `protox` (pure Rust, no `protoc`) and
//! generates with `tonic-prost-build` into `OUT_DIR`; nothing generated is
//! committed. Well-known types (`Timestamp`, `Duration`) are
//! [`prost_types`]'s.
//!
//! # Layout
//!
//! - [`pb`]: every generated message and enum, plus the
//!   `messaging_service_server` and `messaging_service_client` modules.
//! - [`codec`]: the codec the generated code uses (prost's, with 256 B
//!   starting buffers per call).
//! - [`fuzz_harness`]: the `grpc_request` fuzz target's input layout and
//!   its in-process half (prost round trips), shared with the corpus
//!   replay test.
//! - Re-exports at the root: the service trait, server, client and
//!   [`SERVICE_NAME`], and the `tonic`, `prost` and `prost_types` crates
//!   (so users build against the same versions).

#![forbid(unsafe_code)]

/// The generated `apache.rocketmq.v2` package.
///
/// Generated code is not linted as ours: today only
/// `clippy::large_enum_variant` fires (the `oneof` enums of
/// `ReceiveMessageResponse`, `PullMessageResponse`), but the generator's output
/// changes with its version.
#[allow(clippy::all)]
pub mod pb {
    tonic::include_proto!("apache.rocketmq.v2");
}

pub mod codec;
pub mod fuzz_harness;

pub use pb::messaging_service_client::MessagingServiceClient;
pub use pb::messaging_service_server::{MessagingService, MessagingServiceServer, SERVICE_NAME};
pub use prost;
pub use prost_types;
pub use tonic;

#[cfg(test)]
mod service_tests;
#[cfg(test)]
mod wire_tests;
