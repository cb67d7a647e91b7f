//! Embedded NameServer: the route tables, the request handler, the service
//! that serves and expires them, and the broker's registrar.

pub mod processor;
pub mod register;
pub mod route;
pub mod service;

pub use processor::NameServerHandler;
pub use register::{
    BrokerRegistrar, NameServerError, RegisterError, RegistrationProvider, DEFAULT_REGISTER_PERIOD,
};
pub use route::{
    BrokerData, BrokerIdentity, ClusterInfo, DataVersion, QueueData, RegisterBrokerBody,
    RouteInfoManager, TopicConfigSerializeWrapper, TopicRouteData,
};
pub use service::{NameServer, NameServerHandle, BROKER_EXPIRY_MS, SCAN_INTERVAL};
