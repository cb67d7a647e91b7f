//! The broker's errors, each naming what failed with its cause behind
//! `#[source]`: a meta file ([`MetaError`]), a service ([`ServiceError`]),
//! or start-up ([`BrokerError`]). The store keeps its own `StoreError`.

use std::path::PathBuf;

use rmq_store_file::StoreError;

use crate::namesrv::RegisterError;

/// A broker meta file (`config/topics.json`, `consumerOffset.json`,
/// `subscriptionGroup.json`, `delayOffset.json`) could not be read or
/// written.
#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    /// The file exists but is not the JSON it should hold.
    #[error("meta file {path} is not valid: {source}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What the parser found.
        #[source]
        source: rmq_common::json::JsonError,
    },
    /// Reading it, or creating its folder, failed.
    #[error("cannot {action} meta file {path}: {source}")]
    Io {
        /// `read` or `create the folder of`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Writing it (temporary file, sync, rename) failed.
    #[error("cannot write meta file {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The write's error.
        #[source]
        source: StoreError,
    },
    /// A journal line other than the last is damaged.
    #[error("meta journal {path} is damaged at line {line}: {why}")]
    Journal {
        /// The journal file.
        path: PathBuf,
        /// Its line, from 1.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// The table could not be encoded.
    #[error("cannot encode meta file {path}: {source}")]
    Encode {
        /// The file.
        path: PathBuf,
        /// The encoder's error.
        #[source]
        source: serde_json::Error,
    },
}

/// A broker service (schedule, transaction check) failed: in the store it
/// reads and writes, or in the meta file that holds its progress.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The message store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Its progress file failed.
    #[error(transparent)]
    Meta(#[from] MetaError),
}

/// Why the broker could not start.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    /// The store could not be opened.
    #[error("message store: {0}")]
    Store(#[from] StoreError),
    /// A meta file could not be loaded.
    #[error(transparent)]
    Meta(#[from] MetaError),
    /// A service could not load its state.
    #[error("{service}: {source}")]
    Service {
        /// The service.
        service: &'static str,
        /// Why.
        #[source]
        source: ServiceError,
    },
    /// A service's thread could not be started.
    #[error("cannot start the {service} threads: {source}")]
    Spawn {
        /// The service.
        service: &'static str,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A setting cannot be used (validated settings only fail here when
    /// built by hand).
    #[error(transparent)]
    Config(#[from] rmq_common::ConfigError),
    /// TLS is on and its certificate, key or CA cannot be used.
    #[error("TLS: {0}")]
    Tls(String),
    /// `aclEnable` is set and the ACL file cannot be used.
    #[error("ACL: {0}")]
    Acl(String),
    /// A start-up task panicked or was cancelled.
    #[error("the {task} task failed: {source}")]
    Join {
        /// The task.
        task: &'static str,
        /// Why.
        #[source]
        source: tokio::task::JoinError,
    },
    /// A listener could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Registration with the NameServers failed at start.
    #[error("registration with the NameServer failed: {0}")]
    Register(#[source] RegisterError),
}
