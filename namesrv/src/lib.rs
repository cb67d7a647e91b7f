//! The NameServer: the route tables brokers register into and clients ask,
//! the KV config, the request handler, the service that serves and expires
//! them, and the registrar a broker uses to register with NameServers. The
//! broker binary embeds it (`namesrvListenPort`) or runs it alone
//! (`--namesrv-only`).
//!
//! Layout: [`route`] (the tables), [`processor`] with `admin` (the request
//! codes), [`kv`], [`config`] (options, `namesrv.properties`), [`service`]
//! (listener and expiry scan), [`register`] (the broker's side).
#![forbid(unsafe_code)]

mod admin;
pub mod config;
pub mod kv;
pub mod processor;
pub mod register;
pub mod route;
pub mod service;

pub use config::{NamesrvFiles, NamesrvOptions, BROKER_EXPIRY_MS};
pub use processor::NameServerHandler;
pub use register::{
    BodyForm, BodyStats, BrokerRegistrar, Increment, IncrementProvider, MasterInfo,
    NameServerError, RegisterError, RegistrationProvider, WeakRegistrar, AUTO_COMPRESS_BYTES,
    DEFAULT_REGISTER_PERIOD,
};
pub use route::{BrokerIdentity, RouteInfoManager};
pub use service::{NameServer, NameServerHandle, SCAN_INTERVAL};
