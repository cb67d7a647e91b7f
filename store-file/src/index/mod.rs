//! IndexFile: query by message key and UNIQ_KEY (RocketMQ 4.x format).
//!
//! Each file is a fixed-size hash table mapping `abs(hashCode("topic#key"))`
//! to CommitLog offsets, with per-slot chains from the newest entry to older
//! ones ([`layout`] has the bytes). [`IndexService`] owns the files of
//! `<store>/index/`, appends to the newest one from the reput thread and
//! answers queries from any thread. A hit is only a candidate: the caller
//! reads the record and checks its topic and keys.

mod error;
mod file;
pub(crate) mod layout;
mod service;

pub use error::IndexError;
pub use service::IndexService;
