//! The parts of the broker each processor family reaches, cut from the
//! [`BrokerContext`] once when the handler is built: a handler takes the
//! part it uses (or single tables: the store, the topic table, ...), never
//! the whole context.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::Notify;

use crate::clients::{ClientCalls, ClientManager, QueueLockManager};
use crate::config::Settings;
use crate::context::BrokerContext;
use crate::ha::slave::SlaveLink;
use crate::ha::ReplicaAcks;
use crate::meta::{ConsumerOffsetManager, SubscriptionGroupManager, TopicConfigManager};
use crate::metrics::{BrokerStats, StatsItems};
use crate::pull_hold::PullHoldService;
use crate::runtime_config::RuntimeConfig;
use crate::service::schedule::Scheduler;
use crate::service::transaction::Transactions;
use rmq_remoting::acl::Acl;
use rmq_store::MessageStore;

/// What the send path reaches: SEND_MESSAGE(_V2), SEND_BATCH_MESSAGE,
/// SEND_REPLY_MESSAGE(_V2), CONSUMER_SEND_MSG_BACK and END_TRANSACTION.
#[derive(Debug)]
pub(crate) struct SendPath {
    pub settings: Arc<Settings>,
    pub runtime: Arc<RuntimeConfig>,
    pub store: Arc<MessageStore>,
    pub store_host: SocketAddr,
    pub topics: Arc<TopicConfigManager>,
    pub topics_changed: Arc<Notify>,
    pub groups: Arc<SubscriptionGroupManager>,
    pub items: Arc<StatsItems>,
    pub ha_acks: Arc<ReplicaAcks>,
    /// Who sent a request (a reply goes back to it).
    pub clients: Arc<ClientManager>,
    pub calls: Arc<ClientCalls>,
    pub transactions: Arc<Transactions>,
    pub rocketmq: Arc<crate::metrics::RocketmqMeters>,
    /// Master or slave now.
    pub role: Arc<crate::role::RoleState>,
    /// Controller mode, on the master: the SyncStateSet's acks.
    pub in_sync: Arc<parking_lot::RwLock<Option<Arc<crate::ha::switch_sync::InSync>>>>,
}

/// What the pull path reaches: PULL_MESSAGE and LITE_PULL_MESSAGE.
#[derive(Debug)]
pub(crate) struct PullPath {
    pub settings: Arc<Settings>,
    pub runtime: Arc<RuntimeConfig>,
    pub store: Arc<MessageStore>,
    pub store_host: SocketAddr,
    pub topics: Arc<TopicConfigManager>,
    pub groups: Arc<SubscriptionGroupManager>,
    pub offsets: Arc<ConsumerOffsetManager>,
    pub clients: Arc<ClientManager>,
    pub items: Arc<StatsItems>,
    pub pull_hold: Arc<PullHoldService>,
    /// Master or slave now.
    pub role: Arc<crate::role::RoleState>,
}

/// What POP consumption reaches: POP_MESSAGE, PEEK_MESSAGE, ACK_MESSAGE,
/// BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME, NOTIFICATION,
/// POLLING_INFO, and the server-side assignment: QUERY_ASSIGNMENT,
/// SET_MESSAGE_REQUEST_MODE and GET_ALL_MESSAGE_REQUEST_MODE.
#[derive(Debug)]
pub(crate) struct PopPath {
    pub settings: Arc<Settings>,
    pub runtime: Arc<RuntimeConfig>,
    pub store: Arc<MessageStore>,
    pub store_host: SocketAddr,
    pub topics: Arc<TopicConfigManager>,
    pub groups: Arc<SubscriptionGroupManager>,
    pub offsets: Arc<ConsumerOffsetManager>,
    pub clients: Arc<ClientManager>,
    pub items: Arc<StatsItems>,
    pub pop: Arc<crate::pop::PopRuntime>,
    /// QUERY_ASSIGNMENT's modes.
    pub request_modes: Arc<crate::pop::request_mode::RequestModeTable>,
}

impl PopPath {
    /// Runs an ack's store work (queue bounds, then an ack record into the
    /// revive topic or RocksDB). Under ASYNC_FLUSH it runs on the request's
    /// task, as a send's append does: a copy into mapped memory or a
    /// RocksDB write without a sync, where handing it to a blocking thread
    /// and back cost more than the work. Under SYNC_FLUSH a put waits for
    /// its flush, so the work leaves the async workers.
    pub(crate) async fn ack_work<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, super::Refusal> {
        if self.store.config().flush_disk_type == rmq_common::FlushDiskType::SyncFlush {
            super::blocking(f).await
        } else {
            Ok(f())
        }
    }
}

/// What the client-table requests reach: HEART_BEAT, UNREGISTER_CLIENT,
/// GET_CONSUMER_LIST_BY_GROUP and CHECK_CLIENT_CONFIG.
#[derive(Debug)]
pub(crate) struct ClientTable {
    pub clients: Arc<ClientManager>,
    pub groups: Arc<SubscriptionGroupManager>,
    pub topics: Arc<TopicConfigManager>,
    pub topics_changed: Arc<Notify>,
    /// `autoCreateSubscriptionGroup`.
    pub auto_create_subscription_group: bool,
    /// `enablePropertyFilter`.
    pub enable_property_filter: bool,
}

/// What the operators' views of consumption reach: the group, statistics,
/// inspection and consumer-forwarding requests.
#[derive(Debug)]
pub(crate) struct Consumption {
    /// This broker's name, as answers name its queues.
    pub broker_name: String,
    pub store: Arc<MessageStore>,
    pub store_host: SocketAddr,
    pub topics: Arc<TopicConfigManager>,
    pub offsets: Arc<ConsumerOffsetManager>,
    pub groups: Arc<SubscriptionGroupManager>,
    pub clients: Arc<ClientManager>,
    pub calls: Arc<ClientCalls>,
    pub items: Arc<StatsItems>,
    /// `rocketmq_consumer_group_create_execution_time`.
    pub rocketmq: Arc<crate::metrics::RocketmqMeters>,
}

/// What topic and store administration reaches (admin.rs, runtime.rs).
#[derive(Debug)]
pub(crate) struct Admin {
    pub rocketmq: Arc<crate::metrics::RocketmqMeters>,
    pub settings: Arc<Settings>,
    pub runtime: Arc<RuntimeConfig>,
    pub store: Arc<MessageStore>,
    pub store_host: SocketAddr,
    pub topics: Arc<TopicConfigManager>,
    pub topics_changed: Arc<Notify>,
    /// Set once the registrar runs: see [`Admin::topics_registered`].
    pub registrar: Arc<std::sync::OnceLock<rmq_namesrv::WeakRegistrar>>,
    pub offsets: Arc<ConsumerOffsetManager>,
    pub items: Arc<StatsItems>,
    pub stats: Arc<BrokerStats>,
    pub ha_acks: Arc<ReplicaAcks>,
    pub ha_link: Arc<SlaveLink>,
    /// When the broker started, ms since the epoch.
    pub boot_ms: i64,
    /// Master or slave now.
    pub role: Arc<crate::role::RoleState>,
    /// Controller mode's manager, once it runs.
    pub replicas: Arc<std::sync::OnceLock<Arc<crate::replicas::ReplicasManager>>>,
}

/// Longest an admin's topic change waits for the NameServers to have it
/// (Java's registration timeout is 6 s per NameServer).
const REGISTER_SYNC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl Admin {
    /// Tells the NameServers of the topic changes made so far and waits
    /// until they have them, as Java registers before it answers
    /// UPDATE_AND_CREATE_TOPIC: the 5.x proxy reads the route at once after
    /// the answer. Without a NameServer (or before the registrar runs) it
    /// only signals.
    pub async fn topics_registered(&self) {
        self.topics_changed.notify_one();
        if let Some(registrar) = self.registrar.get() {
            if !registrar.sync(REGISTER_SYNC_TIMEOUT).await {
                tracing::warn!(
                    timeout = ?REGISTER_SYNC_TIMEOUT,
                    "topic change answered before every NameServer had it"
                );
            }
        }
    }
}

/// What the ACL administration codes reach.
#[derive(Debug)]
pub(crate) struct AclAdmin {
    /// Plain ACL, when `aclEnable`.
    pub acl: Option<Arc<Acl>>,
    pub broker_name: String,
    pub cluster_name: String,
    pub store_host: SocketAddr,
}

/// Every part, built once per handler.
#[derive(Debug)]
pub(crate) struct Parts {
    pub store: Arc<MessageStore>,
    pub topics: Arc<TopicConfigManager>,
    pub offsets: Arc<ConsumerOffsetManager>,
    pub locks: Arc<QueueLockManager>,
    pub scheduler: Arc<Scheduler>,
    pub send: Arc<SendPath>,
    pub pull: Arc<PullPath>,
    pub pop: Arc<PopPath>,
    pub client_table: Arc<ClientTable>,
    pub consumption: Arc<Consumption>,
    pub admin: Arc<Admin>,
    pub acl_admin: Arc<AclAdmin>,
}

impl Parts {
    /// The parts of `ctx`.
    pub fn new(ctx: &BrokerContext) -> Self {
        let settings = Arc::new(ctx.settings.clone());
        let broker = &ctx.settings.broker;
        Self {
            store: Arc::clone(&ctx.store),
            topics: Arc::clone(&ctx.topics),
            offsets: Arc::clone(&ctx.offsets),
            locks: Arc::clone(&ctx.locks),
            scheduler: Arc::clone(&ctx.scheduler),
            send: Arc::new(SendPath {
                settings: Arc::clone(&settings),
                runtime: Arc::clone(&ctx.runtime),
                store: Arc::clone(&ctx.store),
                store_host: ctx.store_host,
                topics: Arc::clone(&ctx.topics),
                topics_changed: Arc::clone(&ctx.topics_changed),
                groups: Arc::clone(&ctx.groups),
                items: Arc::clone(&ctx.items),
                ha_acks: Arc::clone(&ctx.ha_acks),
                clients: Arc::clone(&ctx.clients),
                calls: Arc::clone(&ctx.calls),
                transactions: Arc::clone(&ctx.transactions),
                rocketmq: Arc::clone(&ctx.rocketmq),
                role: Arc::clone(&ctx.role),
                in_sync: Arc::clone(&ctx.in_sync),
            }),
            pull: Arc::new(PullPath {
                settings: Arc::clone(&settings),
                runtime: Arc::clone(&ctx.runtime),
                store: Arc::clone(&ctx.store),
                store_host: ctx.store_host,
                topics: Arc::clone(&ctx.topics),
                groups: Arc::clone(&ctx.groups),
                offsets: Arc::clone(&ctx.offsets),
                clients: Arc::clone(&ctx.clients),
                items: Arc::clone(&ctx.items),
                pull_hold: Arc::clone(&ctx.pull_hold),
                role: Arc::clone(&ctx.role),
            }),
            pop: Arc::new(PopPath {
                settings: Arc::clone(&settings),
                runtime: Arc::clone(&ctx.runtime),
                store: Arc::clone(&ctx.store),
                store_host: ctx.store_host,
                topics: Arc::clone(&ctx.topics),
                groups: Arc::clone(&ctx.groups),
                offsets: Arc::clone(&ctx.offsets),
                clients: Arc::clone(&ctx.clients),
                items: Arc::clone(&ctx.items),
                pop: Arc::clone(&ctx.pop),
                request_modes: Arc::clone(&ctx.request_modes),
            }),
            client_table: Arc::new(ClientTable {
                clients: Arc::clone(&ctx.clients),
                groups: Arc::clone(&ctx.groups),
                topics: Arc::clone(&ctx.topics),
                topics_changed: Arc::clone(&ctx.topics_changed),
                auto_create_subscription_group: broker.auto_create_subscription_group,
                enable_property_filter: broker.enable_property_filter,
            }),
            consumption: Arc::new(Consumption {
                broker_name: broker.broker_name.clone(),
                store: Arc::clone(&ctx.store),
                store_host: ctx.store_host,
                topics: Arc::clone(&ctx.topics),
                offsets: Arc::clone(&ctx.offsets),
                groups: Arc::clone(&ctx.groups),
                clients: Arc::clone(&ctx.clients),
                calls: Arc::clone(&ctx.calls),
                items: Arc::clone(&ctx.items),
                rocketmq: Arc::clone(&ctx.rocketmq),
            }),
            admin: Arc::new(Admin {
                rocketmq: Arc::clone(&ctx.rocketmq),
                settings,
                runtime: Arc::clone(&ctx.runtime),
                store: Arc::clone(&ctx.store),
                store_host: ctx.store_host,
                topics: Arc::clone(&ctx.topics),
                topics_changed: Arc::clone(&ctx.topics_changed),
                registrar: Arc::clone(&ctx.registrar),
                offsets: Arc::clone(&ctx.offsets),
                items: Arc::clone(&ctx.items),
                stats: Arc::clone(&ctx.stats),
                ha_acks: Arc::clone(&ctx.ha_acks),
                ha_link: Arc::clone(&ctx.ha_link),
                boot_ms: ctx.boot_ms,
                role: Arc::clone(&ctx.role),
                replicas: Arc::clone(&ctx.replicas),
            }),
            acl_admin: Arc::new(AclAdmin {
                acl: ctx.acl.clone(),
                broker_name: broker.broker_name.clone(),
                cluster_name: broker.broker_cluster_name.clone(),
                store_host: ctx.store_host,
            }),
        }
    }
}
