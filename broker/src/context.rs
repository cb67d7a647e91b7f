//! Shared broker state, as `broker.rs` wires it and the services use it.
//! Request processors never take it whole: each handler gets the narrow
//! parts it uses (`processor::parts`), cut from it once when the handler
//! is built.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::Notify;

use crate::clients::{ClientManager, QueueLockManager};
use crate::config::Settings;
use crate::meta::{ConsumerOffsetManager, SubscriptionGroupManager, TopicConfigManager};
use crate::metrics::BrokerStats;
use crate::pull_hold::PullHoldService;
use crate::service::schedule::Scheduler;
use crate::service::transaction::Transactions;
use rmq_store::MessageStore;

/// Shared broker state.
#[derive(Debug)]
pub struct BrokerContext {
    /// Settings the broker runs with.
    pub settings: Settings,
    /// The message store.
    pub store: Arc<MessageStore>,
    /// Topic table.
    pub topics: Arc<TopicConfigManager>,
    /// Consumer offsets.
    pub offsets: Arc<ConsumerOffsetManager>,
    /// Client tables.
    pub clients: Arc<ClientManager>,
    /// Held pulls.
    pub pull_hold: Arc<PullHoldService>,
    /// Orderly-consumer queue locks.
    pub locks: Arc<QueueLockManager>,
    /// Requests sent to clients that wait for their answer.
    pub calls: Arc<crate::clients::ClientCalls>,
    /// This broker's address as clients and message ids see it.
    pub store_host: SocketAddr,
    /// Delay-level delivery (progress, pending counts).
    pub scheduler: Arc<Scheduler>,
    /// Half messages and their resolution.
    pub transactions: Arc<Transactions>,
    /// Timer messages (positions, backlog), when `timerWheelEnable`.
    pub timers: Option<Arc<crate::service::timer::Timers>>,
    /// Client connections open now.
    pub connections: Arc<std::sync::atomic::AtomicI64>,
    /// Signalled when topics change, so NameServers hear of it at once.
    pub topics_changed: Arc<Notify>,
    /// The NameServer registrar, once it runs (none without a NameServer):
    /// an admin's topic change waits for the NameServers to have it.
    pub registrar: Arc<std::sync::OnceLock<rmq_namesrv::WeakRegistrar>>,
    /// Subscription groups.
    pub groups: Arc<SubscriptionGroupManager>,
    /// Put/get rates and day totals (GET_BROKER_RUNTIME_INFO).
    pub stats: Arc<BrokerStats>,
    /// Per-topic and per-group counters (VIEW_BROKER_STATS_DATA,
    /// consumeTps, the per-topic gauges).
    pub items: Arc<crate::metrics::StatsItems>,
    /// RocketMQ 5.x's recorded series (message sizes, topic creation,
    /// per-request latency and processor watermarks).
    pub rocketmq: Arc<crate::metrics::RocketmqMeters>,
    /// What slaves acknowledged (SYNC_MASTER waits on it).
    pub ha_acks: Arc<crate::ha::ReplicaAcks>,
    /// The master a slave streams from now.
    pub ha_link: Arc<crate::ha::slave::SlaveLink>,
    /// Plain ACL, when `aclEnable`.
    pub acl: Option<Arc<rmq_remoting::acl::Acl>>,
    /// Opens this broker's own connections (to its NameServers and its
    /// master), signed with `innerClientAuthenticationCredentials`.
    pub connector: rmq_client::Connector,
    /// TLS on the broker's ports (and the HA port), when `tlsMode` is not
    /// disabled.
    pub tls_server: Option<Arc<rmq_remoting::tls::TlsServer>>,
    /// Where this broker takes slaves, once it listens.
    pub ha_addr: std::sync::OnceLock<SocketAddr>,
    /// Settings UPDATE_BROKER_CONFIG may change while running.
    pub runtime: Arc<crate::runtime_config::RuntimeConfig>,
    /// When the broker started, ms since the epoch.
    pub boot_ms: i64,
    /// POP consumption (RocketMQ 5.x).
    pub pop: Arc<crate::pop::PopRuntime>,
    /// PULL or POP per (topic, group), for QUERY_ASSIGNMENT
    /// (`config/messageRequestMode.json`).
    pub request_modes: Arc<crate::pop::request_mode::RequestModeTable>,
    /// Master or slave now (changes at runtime in controller mode).
    pub role: Arc<crate::role::RoleState>,
    /// Controller mode's manager, when `enableControllerMode`.
    pub replicas: Arc<std::sync::OnceLock<Arc<crate::replicas::ReplicasManager>>>,
    /// In controller mode, on the master: its SyncStateSet bookkeeping
    /// (allAckInSyncStateSet sends wait on it).
    pub in_sync: Arc<parking_lot::RwLock<Option<Arc<crate::ha::switch_sync::InSync>>>>,
}

impl BrokerContext {
    /// The tables a slave copies from its master (SlaveSynchronize), and
    /// the connector it reaches the master with.
    pub fn slave_tables(&self) -> crate::ha::sync::SlaveTables {
        crate::ha::sync::SlaveTables {
            connector: self.connector.clone(),
            topics: Arc::clone(&self.topics),
            topics_changed: Arc::clone(&self.topics_changed),
            offsets: Arc::clone(&self.offsets),
            scheduler: Arc::clone(&self.scheduler),
            groups: Arc::clone(&self.groups),
        }
    }
}
