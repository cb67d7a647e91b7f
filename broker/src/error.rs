//! The broker's errors, each naming what failed with its cause behind
//! `#[source]`: a meta file ([`MetaError`]), a service ([`ServiceError`]),
//! or start-up ([`BrokerError`]). The store keeps its own `StoreError`.

use rmq_store_file::StoreError;

use rmq_namesrv::RegisterError;

pub use rmq_common::meta_file::MetaError;

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
    /// The timer store failed.
    #[error(transparent)]
    Timer(#[from] rmq_timer::TimerError),
}

/// Why the broker could not start.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    /// POP state could not be opened.
    #[error("POP: {0}")]
    Pop(#[from] crate::pop::PopOpenError),
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
    /// The controller's keys cannot start a controller.
    #[error(transparent)]
    ControllerConfig(#[from] rmq_controller::config::ControllerConfigError),
    /// The controller replica did not start (boxed: openraft's errors
    /// are large).
    #[error("controller: {0}")]
    Controller(#[from] Box<rmq_controller::server::ServerError>),
    /// Registration with the NameServers failed at start.
    #[error("registration with the NameServer failed: {0}")]
    Register(#[source] RegisterError),
    /// A NameServer with ACL refused the registration: it takes only
    /// those signed by an admin account.
    #[error(
        "registration with the NameServer was refused by its ACL: {0}; a NameServer with ACL \
         takes only registrations signed by an admin account of its plain_acl.yml: set \
         innerClientAuthenticationCredentials={{\"accessKey\":\"...\",\"secretKey\":\"...\"}}"
    )]
    RegisterRefusedByAcl(#[source] RegisterError),
}
