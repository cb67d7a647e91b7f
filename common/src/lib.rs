//! Engine-free building blocks shared by every crate of the broker: the message
//! model and its CommitLog record codec (RocketMQ's V1 layout), name validation,
//! the dispatch request, the store configuration and the [`cq::ConsumeQueueStore`]
//! trait with its in-memory model.
//!
//! This crate must not depend on any storage engine (no RocksDB, no mmap): the
//! backends depend on it, never the other way round.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod acl;
pub mod attributes;
pub mod config;
mod config_error;
pub mod constants;
pub mod cq;
pub mod delay;
pub mod dispatch;
#[doc(hidden)]
pub mod fuzz_harness;
pub mod json;
pub mod message;
pub mod meta_file;
pub mod names;
pub mod pop;
pub mod properties;
pub mod remoting;
pub mod service;
pub mod sql92;
pub mod time;

pub use config::{ConfigError, CqBackend, FlushDiskType, StoreConfig, TimerStoreType};
pub use delay::DelayLevels;
pub use dispatch::DispatchRequest;
