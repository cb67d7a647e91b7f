//! Embedded NameServer: the route tables, the request handler, the service
//! that serves and expires them, and the broker's registrar.

mod admin;
pub mod config;
pub mod kv;
pub mod processor;
pub mod register;
pub mod route;
pub mod service;

pub use config::NamesrvOptions;
pub use processor::NameServerHandler;
pub use register::{
    BodyForm, BodyStats, BrokerRegistrar, Increment, IncrementProvider, MasterInfo,
    NameServerError, RegisterError, RegistrationProvider, AUTO_COMPRESS_BYTES,
    DEFAULT_REGISTER_PERIOD,
};
pub use route::{BrokerIdentity, RouteInfoManager};
pub use service::{NameServer, NameServerHandle, BROKER_EXPIRY_MS, SCAN_INTERVAL};
