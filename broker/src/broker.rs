//! The broker process: store, metadata, remoting server, embedded
//! NameServer, registration and the periodic services, started in order and
//! stopped cleanly.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmq_common::time::SystemClock;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use rmq_common::remoting::body::{RegisterBrokerBody, PERM_READ, PERM_WRITE};

use crate::clients::{ClientManager, QueueLockManager};
use crate::config::Settings;
use crate::context::BrokerContext;
pub use crate::error::BrokerError;
use crate::meta::{
    ConsumerOffsetManager, MetaPersister, PersistTable, TopicConfigManager, TABLE_WRITE_INTERVAL,
};
use rmq_namesrv::route::BrokerIdentity;
use rmq_namesrv::{BodyForm, BrokerRegistrar, NameServer, NameServerHandle, NamesrvOptions};

use crate::processor::BrokerHandler;
use crate::pull_hold::PullHoldService;
use crate::service::schedule::Scheduler;
use crate::service::timer::Timers;
use crate::service::transaction::{Transactions, TxSettings};
use rmq_remoting::ServerOptions;
use rmq_store::MessageStore;

/// Longest a shutdown waits for connection tasks to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// After a topic change triggers a NameServer registration, further
/// changes within this long wait and go out together in the next one: a
/// storm of topic creations costs a registration (the whole table, encoded
/// and sent to every NameServer) per spacing, not per request.
const REGISTER_SPACING: Duration = Duration::from_millis(200);

/// A running broker.
#[derive(Debug)]
pub struct Broker {
    ctx: Arc<BrokerContext>,
    addr: SocketAddr,
    fast_addr: Option<SocketAddr>,
    grpc_addr: Option<SocketAddr>,
    namesrv: Option<NameServerHandle>,
    controller: Option<rmq_controller::server::ControllerHandle>,
    metrics_addr: Option<SocketAddr>,
    duties: Arc<crate::duties::Duties>,
    persister: Option<MetaPersister>,
    registrar: Option<BrokerRegistrar>,
    cancel: CancellationToken,
    tracker: TaskTracker,
}

/// Tries of a pair of free ports `p` and `p - 2` when listenPort is 0.
const PORT_PAIR_TRIES: usize = 20;

/// Binds the client port and, unless `fastListenPort` is -1, the fast
/// (VIP) port: listenPort - 2 by default, as RocketMQ opens it; peers
/// find it by that rule (a Java slave copies its master's metadata there).
/// With listenPort 0, a free pair is picked.
async fn bind_client_ports(
    ip: &str,
    b: &crate::config::BrokerConfig,
) -> Result<(TcpListener, Option<TcpListener>), BrokerError> {
    let fast_port = |listen: u16| match b.fast_listen_port {
        -1 => None,
        0 => Some(listen.saturating_sub(2)),
        p => u16::try_from(p).ok(),
    };
    if b.listen_port != 0 || b.fast_listen_port != 0 {
        let main = bind(ip, b.listen_port).await?;
        let port = main.local_addr().map(|a| a.port()).unwrap_or(b.listen_port);
        let fast = match fast_port(port) {
            Some(p) => Some(bind(ip, p).await?),
            None => None,
        };
        return Ok((main, fast));
    }
    let mut last = None;
    for _ in 0..PORT_PAIR_TRIES {
        let main = bind(ip, 0).await?;
        let Some(port) = main.local_addr().ok().map(|a| a.port()).filter(|p| *p > 2) else {
            continue;
        };
        match bind(ip, port - 2).await {
            Ok(fast) => return Ok((main, Some(fast))),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| BrokerError::Bind {
        addr: format!("{ip}:0"),
        source: std::io::Error::other("no free port above 2"),
    }))
}

async fn bind(ip: &str, port: u16) -> Result<TcpListener, BrokerError> {
    let addr = format!("{ip}:{port}");
    TcpListener::bind(&addr)
        .await
        .map_err(|source| BrokerError::Bind { addr, source })
}

impl Broker {
    /// Opens the store (recovering it), binds the listeners, registers with
    /// the NameServers and starts serving.
    /// A start that fails stops what it had started (its NameServer,
    /// controller, listeners and watches) before it answers.
    pub async fn start(settings: Settings) -> Result<Self, BrokerError> {
        let (cancel, tracker) = (CancellationToken::new(), TaskTracker::new());
        let started = Self::start_on(settings, cancel.clone(), tracker.clone()).await;
        unwind_on_error(started, &cancel, &tracker).await
    }

    async fn start_on(
        settings: Settings,
        cancel: CancellationToken,
        tracker: TaskTracker,
    ) -> Result<Self, BrokerError> {
        let ip = settings.broker.broker_ip1.clone();
        let (listener, fast_listener) = bind_client_ports(&ip, &settings.broker).await?;
        let addr = listener.local_addr().map_err(|source| BrokerError::Bind {
            addr: ip.clone(),
            source,
        })?;
        let acl = crate::acl_setup::open_acl(&settings, &cancel, &tracker)?;
        let tls = settings.broker.tls_settings()?;
        // The certificate names both addresses: slaves reach the HA port
        // on brokerIP2.
        let mut names = vec![ip.clone()];
        if settings.broker.ha_ip() != ip {
            names.push(settings.broker.ha_ip().to_owned());
        }
        let tls_server = tls
            .server(&names)
            .map_err(|e| BrokerError::Tls(e.to_string()))?;
        let connector = rmq_client::Connector::new()
            .with_credentials(crate::acl_setup::own_credentials(
                &settings,
                acl.as_deref(),
            )?)
            .with_tls(tls.client().map_err(|e| BrokerError::Tls(e.to_string()))?);
        if let Some(t) = &tls_server {
            tracing::info!(mode = ?t.mode(), outbound = tls.outbound, "TLS on the broker's ports");
        }
        let namesrv = match u16::try_from(settings.broker.namesrv_listen_port) {
            Ok(port) => Some(
                start_namesrv(
                    &settings,
                    (acl.clone(), tls_server.clone()),
                    &ip,
                    port,
                    &cancel,
                    &tracker,
                )
                .await?,
            ),
            Err(_) => None,
        };
        // Apache's embedded controller runs beside a NameServer: here, the
        // broker's embedded one.
        // Before the embedded controller, so its first requests count.
        let prometheus = crate::metrics::install();
        let controller = match (&namesrv, settings.controller_config()?) {
            (Some(_), Some(c)) => Some(crate::controller::start(&c, &cancel, &tracker).await?),
            (None, Some(_)) => {
                tracing::warn!("enableControllerInNamesrv without an embedded NameServer (namesrvListenPort=-1): no controller started");
                None
            }
            (_, None) => None,
        };

        let store_config = settings.store.clone();
        let broker_name = settings.broker.broker_name.clone();
        let store = tokio::task::spawn_blocking(move || {
            MessageStore::open_for_broker(store_config, &broker_name)
        })
        .await
        .map_err(|source| BrokerError::Join {
            task: "store open",
            source,
        })??;
        let store = Arc::new(store);
        let controller_mode = settings.broker.controller.enable_controller_mode;
        let slave = settings.broker.broker_role == crate::ha::BrokerRole::Slave;
        if slave || controller_mode {
            // In controller mode the broker is fenced until the controller
            // names a master.
            // A slave writes only what its master streams: no sends, no
            // delayed deliveries, no half re-appends of its own.
            store.set_replica_only();
        }
        let root = settings.store.store_path_root_dir.clone();
        let topics = Arc::new(TopicConfigManager::open(
            &root,
            settings.broker.default_topic_queue_nums,
        )?);
        topics.serve_lmq(settings.store.enable_lmq);
        crate::meta::own_topics::create(&topics, &settings.broker);
        let offsets = Arc::new(ConsumerOffsetManager::open_with(
            &root,
            settings.store.enable_lmq,
        )?);
        let groups = Arc::new(crate::meta::SubscriptionGroupManager::open(&root)?);
        groups.serve_lmq(settings.store.enable_lmq);
        {
            // An LMQ removed because its messages expired takes its consumer
            // offsets along.
            let offsets = Arc::clone(&offsets);
            store.set_lmq_removed_listener(Arc::new(move |gone: &[String]| {
                offsets.remove_topics(gone);
            }));
        }
        let orders = Arc::new(crate::pop::orderly::OrderTable::open(&root)?);
        let request_modes = Arc::new(crate::pop::request_mode::RequestModeTable::open(&root)?);
        // Requests change the tables in memory; this thread writes them.
        let persister = MetaPersister::start(vec![
            (
                Arc::clone(&orders) as Arc<dyn PersistTable>,
                TABLE_WRITE_INTERVAL,
            ),
            (
                Arc::clone(&topics) as Arc<dyn PersistTable>,
                TABLE_WRITE_INTERVAL,
            ),
            (Arc::clone(&groups) as _, TABLE_WRITE_INTERVAL),
            (Arc::clone(&request_modes) as _, TABLE_WRITE_INTERVAL),
            (
                Arc::clone(&offsets) as _,
                Duration::from_millis(settings.broker.flush_consumer_offset_interval_ms),
            ),
        ])
        .map_err(|source| BrokerError::Spawn {
            service: "meta persist",
            source,
        })?;
        let topics_changed = Arc::new(Notify::new());
        let pull_hold = Arc::new(PullHoldService::new());
        store.add_arrival_listener(Arc::clone(&pull_hold) as _);
        let scheduler = Arc::new(
            Scheduler::open(Arc::clone(&store), Arc::clone(&store) as _).map_err(|source| {
                BrokerError::Service {
                    service: "schedule",
                    source,
                }
            })?,
        );
        let timers = open_timers(&store, &topics).await?;
        let transactions = Arc::new(Transactions::open(
            Arc::clone(&store),
            Arc::clone(&offsets),
            TxSettings {
                timeout_ms: i64::try_from(settings.broker.transaction_time_out_ms)
                    .unwrap_or(i64::MAX),
                check_max: settings.broker.transaction_check_max,
            },
        )?);
        let clients = Arc::new(ClientManager::new());
        let runtime = crate::runtime_config::RuntimeConfig::open(
            &settings,
            &settings.store.store_path_root_dir,
        );
        let pop_state = crate::pop::open_state(
            &store,
            &topics,
            &offsets,
            &settings.broker,
            &settings.store.store_path_root_dir,
            addr,
        )?;
        let lmq_fold = crate::metrics::LmqFold::new(
            settings.store.enable_lmq,
            settings.broker.enable_lmq_stats,
        );
        let pop = Arc::new(crate::pop::PopRuntime::new(
            settings.broker.pop.clone(),
            Arc::clone(&pop_state),
            &settings.broker.broker_cluster_name,
            &settings.broker.broker_name,
            orders,
            lmq_fold,
        ));
        store.add_arrival_listener(Arc::clone(&pop.polling) as _);
        let settings_ha_gap = settings.broker.ha_max_gap_not_in_sync;
        let (settings_broker_name, settings_cluster_name) = (
            settings.broker.broker_name.clone(),
            settings.broker.broker_cluster_name.clone(),
        );
        let initial_role = if controller_mode {
            crate::role::Role {
                fenced: true,
                ..crate::role::Role::configured(crate::ha::BrokerRole::Slave, -1)
            }
        } else {
            crate::role::Role::configured(settings.broker.broker_role, settings.broker.broker_id)
        };
        let ctx = Arc::new(BrokerContext {
            settings,
            store,
            topics,
            offsets,
            clients,
            pull_hold,
            locks: Arc::new(QueueLockManager::new()),
            calls: Arc::new(crate::clients::ClientCalls::new()),
            store_host: addr,
            scheduler,
            transactions,
            timers,
            connections: Arc::new(std::sync::atomic::AtomicI64::new(0)),
            topics_changed,
            registrar: Arc::default(),
            groups,
            stats: Arc::new(crate::metrics::BrokerStats::new()),
            items: Arc::new(crate::metrics::StatsItems::with_lmq_fold(lmq_fold)),
            rocketmq: Arc::new(crate::metrics::RocketmqMeters::new(
                &settings_broker_name,
                &settings_cluster_name,
                lmq_fold,
            )),
            ha_acks: Arc::new(crate::ha::ReplicaAcks::new(settings_ha_gap)),
            ha_link: Arc::default(),
            acl,
            connector,
            tls_server: tls_server.clone(),
            ha_addr: std::sync::OnceLock::new(),
            runtime: Arc::new(runtime),
            boot_ms: rmq_common::time::now_ms(),
            pop,
            request_modes,
            role: Arc::new(crate::role::RoleState::new(initial_role)),
            replicas: Arc::default(),
            in_sync: Arc::default(),
        });
        let duties = Arc::new(crate::duties::Duties::default());
        if !slave && !controller_mode {
            duties.as_master(&ctx).await?;
        }

        let options = ServerOptions {
            max_in_flight: ctx.settings.broker.max_in_flight_per_connection as usize,
            idle_timeout: Duration::from_millis(ctx.settings.broker.channel_not_active_interval_ms),
            max_buffered_bytes: usize::try_from(
                ctx.settings.broker.max_buffered_bytes_per_connection,
            )
            .unwrap_or(usize::MAX),
            ..ServerOptions::default().with_limits(&ctx.settings.store)
        };
        let handler = Arc::new(BrokerHandler::new(Arc::clone(&ctx)));
        let fast_addr = fast_listener.as_ref().and_then(|l| l.local_addr().ok());
        for listener in std::iter::once(listener).chain(fast_listener) {
            tracker.spawn(rmq_remoting::serve_tls(
                listener,
                Arc::clone(&handler),
                options,
                tls_server.clone(),
                cancel.clone(),
                tracker.clone(),
            ));
        }
        if let Some(fast) = fast_addr {
            tracing::info!(%fast, "fast (VIP) port serving the same requests");
        }
        // The embedded controller's series show on the broker's endpoint.
        let controller_needle = controller.as_ref().map(|c| c.metrics_needle());
        let metrics_addr =
            start_metrics(&ctx, prometheus, controller_needle, &ip, &cancel, &tracker).await?;

        let mut namesrv_addrs: Vec<SocketAddr> = ctx
            .settings
            .broker
            .namesrv_addrs()
            .iter()
            .filter_map(|a| a.parse().ok())
            .collect();
        if let Some(ns) = &namesrv {
            if !namesrv_addrs.contains(&ns.addr) {
                namesrv_addrs.push(ns.addr);
            }
        }
        let grpc_addr = match u16::try_from(ctx.settings.broker.grpc_server_port) {
            Ok(port) => {
                let listener = bind(&ip, port).await?;
                Some(
                    crate::grpc::start(
                        &ctx,
                        handler,
                        listener,
                        namesrv_addrs.clone(),
                        &cancel,
                        &tracker,
                    )
                    .map_err(|source| BrokerError::Bind {
                        addr: format!("{ip}:{port}"),
                        source,
                    })?,
                )
            }
            Err(_) => None,
        };
        start_ha_master(&ctx, addr, &cancel, &tracker).await?;
        let registrar = start_registrar(&ctx, namesrv_addrs, &cancel, &tracker).await?;
        if let Some(r) = &registrar {
            let _ = ctx.registrar.set(r.downgrade());
        }
        if controller_mode {
            crate::replicas::start(&ctx, &duties, registrar.as_ref(), &cancel, &tracker).await?;
        } else if slave {
            start_ha_slave(&ctx, registrar.as_ref(), &cancel, &tracker);
        }
        tracing::info!(%addr, backend = %ctx.store.consume_queue().backend(), "broker started");
        Ok(Self {
            ctx,
            addr,
            fast_addr,
            grpc_addr,
            namesrv,
            controller,
            metrics_addr,
            duties,
            persister: Some(persister),
            registrar,
            cancel,
            tracker,
        })
    }

    /// Shared state (for tests and tools).
    pub fn context(&self) -> &Arc<BrokerContext> {
        &self.ctx
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The fast (VIP) port's address, if it is open (`fastListenPort`).
    pub fn fast_addr(&self) -> Option<SocketAddr> {
        self.fast_addr
    }

    /// Where the gRPC API of RocketMQ 5.x's SDKs is served, if it is.
    pub fn grpc_addr(&self) -> Option<SocketAddr> {
        self.grpc_addr
    }

    /// Where `/metrics` is served, if it is.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// The embedded NameServer's address, if it runs.
    pub fn namesrv_addr(&self) -> Option<SocketAddr> {
        self.namesrv.as_ref().map(|n| n.addr)
    }

    /// The controller replica beside the embedded NameServer, if
    /// `enableControllerInNamesrv`.
    pub fn controller_addr(&self) -> Option<SocketAddr> {
        self.controller.as_ref().map(|c| c.addr)
    }

    /// The NameServer registrar, if the broker has a NameServer.
    pub fn registrar(&self) -> Option<&BrokerRegistrar> {
        self.registrar.as_ref()
    }

    /// Stops the way `kill -9` would, as far as others can tell: the
    /// listeners close and connections drop, the NameServer connections
    /// too, with nothing unregistered (a NameServer drops the broker when
    /// the connection it registered over closes, or at the expiry), and
    /// the store is left with its abort file, unflushed. For failover and
    /// crash tests.
    pub async fn halt(mut self) {
        if let Some(r) = &self.registrar {
            r.halt();
        }
        self.cancel.cancel();
        self.tracker.close();
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, self.tracker.wait()).await;
        self.duties.finish(true).await;
        if let Some(persister) = self.persister.take() {
            let _ = tokio::task::spawn_blocking(move || persister.halt()).await;
        }
        let store = Arc::clone(&self.ctx.store);
        let _ = tokio::task::spawn_blocking(move || store.halt_as_if_crashed()).await;
        tracing::warn!(addr = %self.addr, "broker halted as if killed");
    }

    /// Stops serving, unregisters, writes every changed meta table and
    /// shuts the store down cleanly.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        self.tracker.close();
        if tokio::time::timeout(SHUTDOWN_GRACE, self.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("some connection tasks did not stop within the grace period");
        }
        self.duties.finish(false).await;
        // Last of the writers of meta tables: it writes what they changed.
        if let Some(persister) = self.persister.take() {
            if let Err(e) = tokio::task::spawn_blocking(move || persister.stop()).await {
                tracing::error!(error = %e, "meta persister stop task failed");
            }
        }
        let store = Arc::clone(&self.ctx.store);
        match tokio::task::spawn_blocking(move || store.shutdown()).await {
            Ok(Ok(())) => tracing::info!("broker stopped"),
            Ok(Err(e)) => tracing::error!(error = %e, "store shutdown failed"),
            Err(e) => tracing::error!(error = %e, "store shutdown task failed"),
        }
    }
}

/// With `timerWheelEnable`: creates the timer topic (1 queue, as 5.x) and
/// opens the timer store (recovering it); a master's duties run its
/// threads ([`crate::duties`]).
async fn open_timers(
    store: &Arc<MessageStore>,
    topics: &Arc<TopicConfigManager>,
) -> Result<Option<Arc<Timers>>, BrokerError> {
    if !store.config().timer_wheel_enable {
        return Ok(None);
    }
    let topic = rmq_common::constants::TIMER_TOPIC;
    if let Err(e) = topics.get_or_create_deferred(topic, 1) {
        tracing::warn!(topic, error = %e, "timer topic not created");
    }
    let s = Arc::clone(store);
    let timers = tokio::task::spawn_blocking(move || Timers::open(Arc::clone(&s), s as _))
        .await
        .map_err(|source| BrokerError::Join {
            task: "timer store open",
            source,
        })?
        .map_err(|source| BrokerError::Service {
            service: "timer",
            source,
        })?;
    Ok(Some(Arc::new(timers)))
}

/// How often the sampler refreshes the gauges (dispatch lag above all).
const SAMPLE_INTERVAL: Duration = Duration::from_secs(1);

/// Starts the gauge sampler and, unless `metricsPort` is -1, the `/metrics`
/// listener on `brokerIP1` (port 0 picks one; it is logged), serving the
/// broker's series and those holding `controller` (the embedded
/// controller's needle).
async fn start_metrics(
    ctx: &Arc<BrokerContext>,
    prometheus: Option<&'static metrics_exporter_prometheus::PrometheusHandle>,
    controller: Option<String>,
    ip: &str,
    cancel: &CancellationToken,
    tracker: &TaskTracker,
) -> Result<Option<SocketAddr>, BrokerError> {
    let backend = ctx.store.consume_queue().backend();
    let broker = ctx.settings.broker.broker_name.clone();
    let sources = crate::sampler::Sources {
        settings: ctx.settings.clone(),
        role: Arc::clone(&ctx.role),
        replicas: Arc::clone(&ctx.replicas),
        in_sync: Arc::clone(&ctx.in_sync),
        runtime: Arc::clone(&ctx.runtime),
        rocketmq: Arc::clone(&ctx.rocketmq),
        store: Arc::clone(&ctx.store),
        topics: Arc::clone(&ctx.topics),
        groups: Arc::clone(&ctx.groups),
        offsets: Arc::clone(&ctx.offsets),
        stats: Arc::clone(&ctx.stats),
        items: Arc::clone(&ctx.items),
        ha_acks: Arc::clone(&ctx.ha_acks),
        scheduler: Arc::clone(&ctx.scheduler),
        transactions: Arc::clone(&ctx.transactions),
        timers: ctx.timers.clone(),
        connections: Arc::clone(&ctx.connections),
        pop: Arc::clone(&ctx.pop),
        clients: Arc::clone(&ctx.clients),
    };
    let sampler = Arc::new(crate::sampler::Sampler::new(
        sources,
        crate::metrics::base_labels(&broker, backend.as_str()),
    ));
    {
        let (sampler, cancel) = (Arc::clone(&sampler), cancel.clone());
        tracker.spawn(async move {
            let mut tick = tokio::time::interval(SAMPLE_INTERVAL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    biased;
                    _ = cancel.cancelled() => break,
                    _ = tick.tick() => {
                        let s = Arc::clone(&sampler);
                        let _ = tokio::task::spawn_blocking(move || s.sample()).await;
                        if let Some(h) = prometheus {
                            h.run_upkeep();
                        }
                    }
                }
            }
        });
    }
    let Ok(port) = u16::try_from(ctx.settings.broker.metrics_port) else {
        return Ok(None);
    };
    let Some(handle) = prometheus else {
        return Ok(None);
    };
    let listener = bind(ip, port).await?;
    let addr = listener.local_addr().map_err(|source| BrokerError::Bind {
        addr: format!("{ip}:{port}"),
        source,
    })?;
    tracing::info!(%addr, "metrics endpoint listening at /metrics");
    let needles: Vec<String> = std::iter::once(format!("broker=\"{broker}\""))
        .chain(controller)
        .collect();
    let render: Arc<dyn Fn() -> String + Send + Sync> = Arc::new(move || {
        sampler.sample();
        crate::metrics::render_matching(handle, &needles)
    });
    tracker.spawn(crate::metrics::serve_metrics(
        listener,
        render,
        cancel.clone(),
        tracker.clone(),
    ));
    Ok(Some(addr))
}

/// What this broker tells the NameServers.
fn registration(ctx: &BrokerContext) -> (BrokerIdentity, RegisterBrokerBody) {
    (
        identity(ctx),
        register_body(ctx, ctx.topics.durable_table()),
    )
}

fn identity(ctx: &BrokerContext) -> BrokerIdentity {
    BrokerIdentity {
        cluster: ctx.settings.broker.broker_cluster_name.clone(),
        broker_name: ctx.settings.broker.broker_name.clone(),
        broker_id: ctx.role.broker_id(),
        broker_addr: ctx.store_host.to_string(),
        ha_server_addr: ctx
            .ha_addr
            .get()
            .map_or_else(String::new, |a| a.to_string()),
    }
}

/// The topics changed since the last increment was taken (see
/// [`rmq_namesrv::Increment`]).
fn increment(ctx: &BrokerContext) -> rmq_namesrv::Increment {
    let id = identity(ctx);
    let changes = ctx.topics.take_unregistered();
    let table = if changes.full {
        Default::default()
    } else {
        ctx.topics.increment(&changes.changed)
    };
    rmq_namesrv::Increment {
        id,
        body: register_body(ctx, table),
        deleted: changes.deleted.into_iter().collect(),
        full: changes.full,
    }
}

/// A REGISTER_BROKER body of `table`. As Java: a broker that is not
/// read-write registers every topic with its own perm, so clients stop
/// sending (or pulling) here.
fn register_body(
    ctx: &BrokerContext,
    mut table: rmq_common::remoting::body::TopicConfigSerializeWrapper,
) -> RegisterBrokerBody {
    // In controller mode a NameServer keeps the master of the newest epoch.
    table.data_version.state_version = i64::from(ctx.role.now().master_epoch);
    let perm = ctx.runtime.broker_permission();
    if perm != PERM_READ | PERM_WRITE {
        for t in table.topic_config_table.values_mut() {
            t.perm = perm;
        }
    }
    RegisterBrokerBody {
        topic_config_serialize_wrapper: table,
        filter_server_list: Vec::new(),
    }
}

/// A NameServer alone (`rmq-broker --namesrv-only`), with a controller
/// replica beside it when `enableControllerInNamesrv`.
#[derive(Debug)]
pub struct StandaloneNameServer {
    handle: NameServerHandle,
    controller: Option<rmq_controller::server::ControllerHandle>,
    controller_metrics: Option<SocketAddr>,
    cancel: CancellationToken,
    tracker: TaskTracker,
}

impl StandaloneNameServer {
    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.handle.addr
    }

    /// The running NameServer.
    pub fn handle(&self) -> &NameServerHandle {
        &self.handle
    }

    /// The controller replica beside it, if `enableControllerInNamesrv`.
    pub fn controller(&self) -> Option<&rmq_controller::server::ControllerHandle> {
        self.controller.as_ref()
    }

    /// Where the controller's `/metrics` endpoint listens, if its
    /// `metricsExporterType` is PROM.
    pub fn controller_metrics_addr(&self) -> Option<SocketAddr> {
        self.controller_metrics
    }

    /// Stops it.
    pub async fn shutdown(self) {
        self.cancel.cancel();
        self.tracker.close();
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, self.tracker.wait()).await;
    }
}

/// Starts a NameServer on `namesrvListenPort` (namesrv.conf's
/// `listenPort`) at `bindAddress` or `brokerIP1`, and with
/// `enableControllerInNamesrv` a controller replica on its own peer port
/// (Apache's embedded controller). Settings from
/// [`Settings::load_namesrv`].
pub async fn run_namesrv_only(settings: &Settings) -> Result<StandaloneNameServer, BrokerError> {
    let (cancel, tracker) = (CancellationToken::new(), TaskTracker::new());
    let started = namesrv_only_on(settings, cancel.clone(), tracker.clone()).await;
    unwind_on_error(started, &cancel, &tracker).await
}

/// When `started` failed, cancels and waits (bounded) for the tasks the
/// start had spawned on `tracker`, so none outlives the error: no port
/// stays bound, no file watched.
async fn unwind_on_error<T>(
    started: Result<T, BrokerError>,
    cancel: &CancellationToken,
    tracker: &TaskTracker,
) -> Result<T, BrokerError> {
    if started.is_err() {
        cancel.cancel();
        tracker.close();
        if tokio::time::timeout(SHUTDOWN_GRACE, tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!(grace = ?SHUTDOWN_GRACE, "tasks of a failed start still run past the grace");
        }
    }
    started
}

async fn namesrv_only_on(
    settings: &Settings,
    cancel: CancellationToken,
    tracker: TaskTracker,
) -> Result<StandaloneNameServer, BrokerError> {
    let controller_config = settings.controller_config()?;
    let port = u16::try_from(settings.broker.namesrv_listen_port).unwrap_or(9876);
    let acl = crate::acl_setup::open_acl(settings, &cancel, &tracker)?;
    let tls = settings
        .broker
        .tls_settings()?
        .server(std::slice::from_ref(&settings.broker.broker_ip1))
        .map_err(|e| BrokerError::Tls(e.to_string()))?;
    let ip = settings
        .namesrv
        .bind_address
        .as_deref()
        .unwrap_or(&settings.broker.broker_ip1);
    let handle = start_namesrv(settings, (acl, tls), ip, port, &cancel, &tracker).await?;
    let served = match &controller_config {
        Some(c) => Some(crate::controller::start_serving_metrics(c, &cancel, &tracker).await?),
        None => None,
    };
    let controller_metrics = served.as_ref().and_then(|s| s.metrics_addr);
    Ok(StandaloneNameServer {
        handle,
        controller: served.map(|s| s.handle),
        controller_metrics,
        cancel,
        tracker,
    })
}

/// Binds `ip:port` and serves a NameServer there (embedded or standalone).
async fn start_namesrv(
    settings: &Settings,
    (acl, tls): (
        Option<Arc<rmq_remoting::acl::Acl>>,
        Option<Arc<rmq_remoting::tls::TlsServer>>,
    ),
    ip: &str,
    port: u16,
    cancel: &CancellationToken,
    tracker: &TaskTracker,
) -> Result<NameServerHandle, BrokerError> {
    let listener = bind(ip, port).await?;
    NameServer::start(
        listener,
        Arc::new(SystemClock),
        &NamesrvOptions {
            expiry_ms: settings.broker.namesrv_broker_expiry_ms,
            delete_with_registration: settings.namesrv.delete_topic_with_broker_registration,
            files: Some(namesrv_files(settings)),
            acl,
            tls,
        },
        cancel.clone(),
        tracker.clone(),
    )
    .await
    .map_err(|source| BrokerError::Bind {
        addr: format!("{ip}:{port}"),
        source,
    })
}

/// `kvConfigPath` and `configStorePath` as namesrv.conf gives them, else
/// in `<storePathRootDir>/namesrv`.
fn namesrv_files(settings: &Settings) -> rmq_namesrv::NamesrvFiles {
    let mut files =
        rmq_namesrv::NamesrvFiles::in_dir(&settings.store.store_path_root_dir.join("namesrv"));
    if let Some(p) = &settings.namesrv.kv_config_path {
        files.kv_config.clone_from(p);
    }
    if let Some(p) = &settings.namesrv.config_store_path {
        files.config_store.clone_from(p);
    }
    files
}

/// A master takes slaves on `brokerIP2:haListenPort` (brokerIP1 when
/// brokerIP2 is not set; port 0: listenPort + 1, or a free port when
/// listenPort is 0), the address it registers as `haServerAddr`.
async fn start_ha_master(
    ctx: &Arc<BrokerContext>,
    addr: SocketAddr,
    cancel: &CancellationToken,
    tracker: &TaskTracker,
) -> Result<(), BrokerError> {
    let b = &ctx.settings.broker;
    let ip = b.ha_ip();
    if b.broker_role == crate::ha::BrokerRole::Slave || b.controller.enable_controller_mode {
        return Ok(());
    }
    let Some(port) = b.ha_port(addr.port()) else {
        return Ok(());
    };
    let listener = bind(ip, port).await.map_err(|e| match e {
        BrokerError::Bind { addr, source } => BrokerError::Bind {
            addr: format!("{addr} (HA port, on brokerIP2)"),
            source,
        },
        other => other,
    })?;
    let ha_addr = listener.local_addr().map_err(|source| BrokerError::Bind {
        addr: format!("{ip}:{port}"),
        source,
    })?;
    let _ = ctx.ha_addr.set(ha_addr);
    let shared = crate::ha::master::MasterShared {
        store: Arc::clone(&ctx.store),
        acks: Arc::clone(&ctx.ha_acks),
        appended: Arc::clone(ctx.store.appended()),
        settings: b.ha_settings(),
        tls: ctx.tls_server.clone(),
    };
    tracker.spawn(crate::ha::master::serve(
        listener,
        shared,
        cancel.clone(),
        tracker.clone(),
    ));
    tracing::info!(%ha_addr, role = ?b.broker_role, "taking slaves");
    Ok(())
}

/// A slave follows its master: the configured `haMasterAddress`, else the
/// one the NameServers name.
fn start_ha_slave(
    ctx: &Arc<BrokerContext>,
    registrar: Option<&BrokerRegistrar>,
    cancel: &CancellationToken,
    tracker: &TaskTracker,
) {
    let b = &ctx.settings.broker;
    let named = registrar.map(BrokerRegistrar::master);
    if let Some(named) = &named {
        // Topics, offsets, delay progress and groups come from the master
        // the NameServers name.
        let tables = ctx.slave_tables();
        tracker.spawn(crate::ha::sync::run(tables, named.clone(), cancel.clone()));
    }
    // Records are compared with the master the NameServers name.
    let requests = named.clone().map(|named| crate::ha::slave::MasterRequests {
        connector: ctx.connector.clone(),
        named,
    });
    let master = if b.ha_master_address.is_empty() {
        let Some(mut named) = named else {
            tracing::error!(
                "a slave without haMasterAddress and without a NameServer has no master to follow"
            );
            return;
        };
        // The HA address of the master the NameServers name.
        let (tx, rx) = tokio::sync::watch::channel(None);
        let stop = cancel.clone();
        tracker.spawn(async move {
            loop {
                let ha = named
                    .borrow_and_update()
                    .as_ref()
                    .map(|m| m.ha_addr.clone());
                tx.send_if_modified(|old| {
                    let changed = *old != ha;
                    *old = ha;
                    changed
                });
                tokio::select! {
                    biased;
                    () = stop.cancelled() => return,
                    r = named.changed() => if r.is_err() { return },
                }
            }
        });
        rx
    } else {
        tokio::sync::watch::channel(Some(b.ha_master_address.clone())).1
    };
    tracker.spawn(crate::ha::slave::follow(
        Arc::clone(&ctx.store),
        master,
        b.ha_settings(),
        Arc::clone(&ctx.ha_link),
        ctx.connector.tls().cloned(),
        requests,
        cancel.clone(),
    ));
}

/// Registers with every NameServer now, then keeps the registration fresh
/// and re-registers whenever the topic table changes.
async fn start_registrar(
    ctx: &Arc<BrokerContext>,
    namesrv_addrs: Vec<SocketAddr>,
    cancel: &CancellationToken,
    tracker: &TaskTracker,
) -> Result<Option<BrokerRegistrar>, BrokerError> {
    if namesrv_addrs.is_empty() {
        tracing::warn!("no NameServer: clients cannot find this broker");
        return Ok(None);
    }
    let provider_ctx = Arc::clone(ctx);
    let increment_ctx = Arc::clone(ctx);
    let form = if ctx.settings.broker.compressed_register {
        BodyForm::Compressed
    } else {
        BodyForm::Auto
    };
    let registrar = BrokerRegistrar::start_with(
        namesrv_addrs,
        Arc::new(move || registration(&provider_ctx)),
        Some(Arc::new(move || increment(&increment_ctx))),
        Duration::from_millis(ctx.settings.broker.register_name_server_period_ms),
        form,
        &ctx.connector,
        cancel.clone(),
        tracker,
    );
    registrar.register_now().await.map_err(|e| {
        if e.refused_by_acl() {
            BrokerError::RegisterRefusedByAcl(e)
        } else {
            BrokerError::Register(e)
        }
    })?;
    let (changed, cancel, trigger) = (
        Arc::clone(&ctx.topics_changed),
        cancel.clone(),
        registrar.clone(),
    );
    // The registrar runs one registration at a time off the request path
    // and keeps one pending wake-up; the spacing also bounds how often a
    // stream of topic changes makes it re-encode the whole table.
    tracker.spawn(async move {
        loop {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => break,
                _ = changed.notified() => trigger.trigger(),
            }
            tokio::select! {
                biased;
                _ = cancel.cancelled() => break,
                _ = tokio::time::sleep(REGISTER_SPACING) => {}
            }
        }
    });
    Ok(Some(registrar))
}
