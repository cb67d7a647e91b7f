//! Controller mode on the broker (RocketMQ 5.x automatic failover): the
//! keys ([`config`]), the id kept across restarts ([`identity`]), the calls
//! to the controllers ([`rpc`]) and the manager that turns their answers
//! into role changes ([`manager`]). [`BrokerHost`] is what a role change
//! does to this broker: the store's write fence, the master-only services,
//! the slave's metadata copy and the NameServer registration.

pub mod config;
pub mod identity;
pub mod manager;
pub mod rpc;

use std::collections::BTreeSet;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use rmq_namesrv::BrokerRegistrar;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use config::ControllerModeConfig;
pub use manager::{Phase, ReplicaHost, ReplicasManager, RoleChangeError};

use crate::context::BrokerContext;
use crate::duties::Duties;
use crate::error::BrokerError;
use crate::ha::switch_master::{SwitchMaster, SwitchMasterShared};
use crate::ha::switch_slave::{SwitchSlave, SwitchSlaveConfig};
use crate::ha::switch_sync::{InSync, InSyncSettings};
use crate::role::Role;

/// How long a role change waits for the NameServers to have the new role.
const REGISTER_WAIT: Duration = Duration::from_secs(3);
/// A new slave asks its NameServers this often until they name the
/// master the controller named (the master may register after it).
const NAMED_MASTER_POLL: Duration = Duration::from_millis(500);

/// Starts the manager of a broker in controller mode, with the HA port
/// bound (it is taken by the auto-switch master link whenever this broker
/// is master, and registered as `haServerAddr` all along).
pub async fn start(
    ctx: &Arc<BrokerContext>,
    duties: &Arc<Duties>,
    registrar: Option<&BrokerRegistrar>,
    cancel: &CancellationToken,
    tracker: &TaskTracker,
) -> Result<(), BrokerError> {
    let cfg = ctx.settings.broker.controller.clone();
    let me = rpc::Me {
        cluster: ctx.settings.broker.broker_cluster_name.clone(),
        broker_name: ctx.settings.broker.broker_name.clone(),
        addr: ctx.store_host.to_string(),
    };
    let controllers = rpc::Controllers::new(ctx.connector.clone(), me, cfg.controller_addrs());
    let files = identity::IdentityFiles::new(std::path::Path::new(
        &ctx.settings.store.store_path_root_dir,
    ));
    let listener = bind_ha(ctx).await?;
    let ha_addr = listener.local_addr().map_err(|source| BrokerError::Bind {
        addr: "HA port".into(),
        source,
    })?;
    let _ = ctx.ha_addr.set(ha_addr);
    let (proposed, _) = watch::channel(BTreeSet::new());
    let host = Arc::new(BrokerHost {
        ctx: Arc::downgrade(ctx),
        duties: Arc::clone(duties),
        named_master: registrar.map(BrokerRegistrar::master),
        links: tokio::sync::Mutex::new(Links {
            listener: Some(listener),
            master: None,
            slave: None,
            scope: None,
        }),
        ha_addr,
        proposed,
        cancel: cancel.clone(),
        tracker: tracker.clone(),
    });
    {
        // The links have trackers of their own: the broker's stop ends them
        // before the store closes.
        let (host, cancel) = (Arc::clone(&host), cancel.clone());
        tracker.spawn(async move {
            cancel.cancelled().await;
            let mut links = host.links.lock().await;
            host.end_links(&mut links).await;
        });
    }
    let manager = Arc::new(ReplicasManager::new(
        cfg,
        controllers,
        files,
        Arc::clone(&ctx.role),
        host,
    ));
    if ctx.replicas.set(Arc::clone(&manager)).is_err() {
        return Err(BrokerError::Config(rmq_common::ConfigError::new(
            "enableControllerMode",
            "the controller-mode manager was started twice",
        )));
    }
    tracker.spawn(manager.run(cancel.clone()));
    Ok(())
}

/// The HA port: `brokerIP2:haListenPort` (0: listenPort + 1, or a free
/// port when listenPort is 0).
async fn bind_ha(ctx: &BrokerContext) -> Result<tokio::net::TcpListener, BrokerError> {
    let b = &ctx.settings.broker;
    let Some(port) = b.ha_port(ctx.store_host.port()) else {
        return Err(BrokerError::Config(rmq_common::ConfigError::new(
            "haListenPort",
            "controller mode replicates over the HA port: -1 is not allowed",
        )));
    };
    let addr = format!("{}:{port}", b.ha_ip());
    tokio::net::TcpListener::bind(&addr)
        .await
        .map_err(|source| BrokerError::Bind {
            addr: format!("{addr} (HA port)"),
            source,
        })
}

/// The replication links of the role now.
struct Links {
    /// The HA port while no master link holds it.
    listener: Option<tokio::net::TcpListener>,
    /// On a master: its link and in-sync bookkeeping.
    master: Option<(SwitchMaster, Arc<InSync>)>,
    /// On a slave: its link.
    slave: Option<SwitchSlave>,
    /// Tasks of the role now (the slave's metadata copy, the master's
    /// forwarding of SyncStateSet proposals), ended by a change.
    scope: Option<CancellationToken>,
}

/// What a role change does to this broker.
pub struct BrokerHost {
    ctx: Weak<BrokerContext>,
    duties: Arc<Duties>,
    named_master: Option<watch::Receiver<Option<rmq_namesrv::register::MasterInfo>>>,
    links: tokio::sync::Mutex<Links>,
    ha_addr: std::net::SocketAddr,
    proposed: watch::Sender<BTreeSet<i64>>,
    cancel: CancellationToken,
    tracker: TaskTracker,
}

/// How long becoming master may wait for dispatch to catch up.
const BECOME_MASTER_WAIT: Duration = Duration::from_secs(30);

impl BrokerHost {
    /// Ends the links and tasks of the role now.
    async fn end_links(&self, links: &mut Links) {
        if let Some(scope) = links.scope.take() {
            scope.cancel();
        }
        if let Some(slave) = links.slave.take() {
            slave.stop().await;
        }
        if let Some((master, _)) = links.master.take() {
            master.stop().await;
        }
        if let Some(ctx) = self.ctx.upgrade() {
            *ctx.in_sync.write() = None;
        }
    }

    async fn to_master(&self, ctx: &Arc<BrokerContext>, to: &Role) -> Result<(), String> {
        let mut links = self.links.lock().await;
        let was_master = links.master.is_some();
        if !was_master {
            self.end_links(&mut links).await;
        }
        let store = Arc::clone(&ctx.store);
        let epoch = to.master_epoch;
        tokio::task::spawn_blocking(move || store.become_master(epoch, BECOME_MASTER_WAIT))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("the store cannot become master of epoch {epoch}: {e}"))?;
        if let Some((_, in_sync)) = &links.master {
            in_sync.adopt(to.sync_state_set.clone(), to.sync_state_set_epoch);
            return Ok(());
        }
        let cfg = &ctx.settings.broker.controller;
        let in_sync = Arc::new(InSync::new(
            Arc::clone(&ctx.store),
            Arc::new(rmq_common::time::SystemClock),
            InSyncSettings {
                local_id: to.controller_id,
                max_not_caught_up: Duration::from_millis(cfg.ha_max_time_slave_not_catchup_ms),
                all_ack: cfg.all_ack_in_sync_state_set,
                read_uncommitted: cfg.read_uncommitted,
            },
        ));
        in_sync.adopt(to.sync_state_set.clone(), to.sync_state_set_epoch);
        let listener = match links.listener.take() {
            Some(l) => l,
            None => tokio::net::TcpListener::bind(self.ha_addr)
                .await
                .map_err(|e| format!("HA port {}: {e}", self.ha_addr))?,
        };
        let master = SwitchMaster::start(
            listener,
            SwitchMasterShared {
                store: Arc::clone(&ctx.store),
                in_sync: Arc::clone(&in_sync),
                settings: ctx.settings.broker.ha_settings(),
                tls: ctx.tls_server.clone(),
            },
        )
        .map_err(|e| format!("HA link: {e}"))?;
        // The HA links' proposals go to the manager.
        let scope = self.cancel.child_token();
        let mut rx = in_sync.subscribe();
        let tx = self.proposed.clone();
        let stop = scope.clone();
        self.tracker.spawn(async move {
            loop {
                let set = rx.borrow_and_update().clone();
                tx.send_replace(set);
                tokio::select! {
                    biased;
                    () = stop.cancelled() => return,
                    r = rx.changed() => if r.is_err() { return },
                }
            }
        });
        *ctx.in_sync.write() = Some(Arc::clone(&in_sync));
        links.master = Some((master, in_sync));
        links.scope = Some(scope);
        Ok(())
    }

    async fn to_slave(&self, ctx: &Arc<BrokerContext>, to: &Role) {
        let mut links = self.links.lock().await;
        self.end_links(&mut links).await;
        let scope = self.cancel.child_token();
        links.scope = Some(scope.clone());
        let Some(named) = self.named_master.clone() else {
            tracing::error!("a slave without a NameServer cannot learn its master's HA address");
            return;
        };
        // The master's HA address: the NameServers' answer, once it names
        // the master the controller named.
        let want = to.master_addr.clone();
        let (ha_tx, ha_rx) = watch::channel(None);
        let cfg = &ctx.settings.broker.controller;
        links.slave = Some(SwitchSlave::start(
            Arc::clone(&ctx.store),
            ha_rx,
            SwitchSlaveConfig {
                broker_id: to.controller_id,
                settings: ctx.settings.broker.ha_settings(),
                read_uncommitted: cfg.read_uncommitted,
                retry_after: Duration::from_secs(2),
                tls: ctx.connector.tls().cloned(),
            },
        ));
        let tables = ctx.slave_tables();
        self.tracker
            .spawn(crate::ha::sync::run(tables, named.clone(), scope.clone()));
        let registrar = ctx.registrar.get().cloned();
        self.tracker.spawn(async move {
            let mut named = named;
            loop {
                let now = named.borrow_and_update().clone();
                match now.filter(|m| Some(&m.broker_addr) == want.as_ref()) {
                    Some(m) => {
                        ha_tx.send_if_modified(|old| {
                            let changed = old.as_deref() != Some(m.ha_addr.as_str());
                            *old = Some(m.ha_addr.clone());
                            changed
                        });
                    }
                    None => {
                        // The master may register after this broker: ask
                        // the NameServers again.
                        if let Some(r) = &registrar {
                            r.sync(REGISTER_WAIT).await;
                        }
                    }
                }
                tokio::select! {
                    biased;
                    () = scope.cancelled() => return,
                    _ = named.changed() => {}
                    () = tokio::time::sleep(NAMED_MASTER_POLL) => {}
                }
            }
        });
    }
}

impl ReplicaHost for BrokerHost {
    fn beat_state(&self) -> (i32, i64, i64) {
        let Some(ctx) = self.ctx.upgrade() else {
            return (-1, 0, 0);
        };
        let store = &ctx.store;
        (
            store.last_epoch(),
            store.max_phy_offset(),
            store.confirm_offset(),
        )
    }

    fn change_role(&self, to: Role) -> BoxFuture<'_, Result<(), RoleChangeError>> {
        Box::pin(async move {
            let ctx = self.ctx.upgrade().ok_or(RoleChangeError::Stopping)?;
            if to.is_slave() {
                self.duties.as_slave().await;
                ctx.store.set_replica_only();
                ctx.role.set(to.clone());
                self.to_slave(&ctx, &to).await;
            } else {
                self.to_master(&ctx, &to)
                    .await
                    .map_err(RoleChangeError::CannotBecomeMaster)?;
                ctx.role.set(to.clone());
                if let Err(e) = self.duties.as_master(&ctx).await {
                    tracing::error!(error = %e, "master services did not start");
                }
            }
            // A new data version makes the next registration a full one,
            // which carries the new id (as Java's DataVersion.nextVersion).
            ctx.topics.touch();
            if let Some(r) = ctx.registrar.get() {
                if !r.sync(REGISTER_WAIT).await {
                    tracing::warn!("the NameServers did not confirm the new role in time");
                }
            }
            tracing::info!(
                role = to.role.name(),
                epoch = to.master_epoch,
                "role changed"
            );
            Ok(())
        })
    }

    fn proposed_sync_state_set(&self) -> Option<watch::Receiver<BTreeSet<i64>>> {
        Some(self.proposed.subscribe())
    }

    fn sync_state_set_accepted(&self, set: BTreeSet<i64>, epoch: i32) {
        let Some(ctx) = self.ctx.upgrade() else {
            return;
        };
        if let Some(in_sync) = ctx.in_sync.read().clone() {
            in_sync.adopt(set.clone(), epoch);
        }
        ctx.role.update(|r| {
            if epoch > r.sync_state_set_epoch {
                r.sync_state_set = set;
                r.sync_state_set_epoch = epoch;
            }
        });
    }

    fn sync_state_set_refused(&self) {
        if let Some(ctx) = self.ctx.upgrade() {
            if let Some(in_sync) = ctx.in_sync.read().clone() {
                in_sync.proposal_refused();
            }
        }
    }

    fn check_sync_state_set(&self) {
        if let Some(ctx) = self.ctx.upgrade() {
            if let Some(in_sync) = ctx.in_sync.read().clone() {
                in_sync.shrink_check();
            }
        }
    }
}
