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
pub use manager::{Phase, ReplicaHost, ReplicasManager};

use crate::context::BrokerContext;
use crate::duties::Duties;
use crate::error::BrokerError;
use crate::role::Role;

/// How long a role change waits for the NameServers to have the new role.
const REGISTER_WAIT: Duration = Duration::from_secs(3);
/// A new slave asks its NameServers this often until they name the
/// master the controller named (the master may register after it).
const NAMED_MASTER_POLL: Duration = Duration::from_millis(500);

/// Starts the manager of a broker in controller mode.
pub fn start(
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
    let host = Arc::new(BrokerHost {
        ctx: Arc::downgrade(ctx),
        duties: Arc::clone(duties),
        named_master: registrar.map(BrokerRegistrar::master),
        slave_scope: parking_lot::Mutex::new(None),
        cancel: cancel.clone(),
        tracker: tracker.clone(),
    });
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

/// What a role change does to this broker.
pub struct BrokerHost {
    ctx: Weak<BrokerContext>,
    duties: Arc<Duties>,
    named_master: Option<watch::Receiver<Option<rmq_namesrv::register::MasterInfo>>>,
    slave_scope: parking_lot::Mutex<Option<CancellationToken>>,
    cancel: CancellationToken,
    tracker: TaskTracker,
}

impl BrokerHost {
    /// Stops the slave's tasks, if it has any.
    fn end_slave_scope(&self) {
        if let Some(scope) = self.slave_scope.lock().take() {
            scope.cancel();
        }
    }

    /// Starts the slave's tasks (the metadata copy from the master the
    /// NameServers name) under a scope a later change ends.
    fn start_slave_scope(&self, ctx: &Arc<BrokerContext>, to: &Role) {
        self.end_slave_scope();
        let scope = self.cancel.child_token();
        *self.slave_scope.lock() = Some(scope.clone());
        let Some(named) = self.named_master.clone() else {
            tracing::error!("a slave without a NameServer cannot learn its master's HA address");
            return;
        };
        let tables = crate::ha::sync::SlaveTables {
            connector: ctx.connector.clone(),
            topics: Arc::clone(&ctx.topics),
            topics_changed: Arc::clone(&ctx.topics_changed),
            offsets: Arc::clone(&ctx.offsets),
            scheduler: Arc::clone(&ctx.scheduler),
            groups: Arc::clone(&ctx.groups),
        };
        self.tracker
            .spawn(crate::ha::sync::run(tables, named.clone(), scope.clone()));
        // Until the NameServers name the master the controller named, ask
        // them again (it may register after this broker).
        let want = to.master_addr.clone();
        let registrar = ctx.registrar.get().cloned();
        self.tracker.spawn(async move {
            let mut named = named;
            loop {
                let now = named
                    .borrow_and_update()
                    .as_ref()
                    .map(|m| m.broker_addr.clone());
                if now.is_some() && now == want {
                    return;
                }
                if let Some(r) = &registrar {
                    r.sync(REGISTER_WAIT).await;
                }
                tokio::select! {
                    biased;
                    () = scope.cancelled() => return,
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
        let max = ctx.store.max_phy_offset();
        (-1, max, max)
    }

    fn change_role(&self, to: Role) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let Some(ctx) = self.ctx.upgrade() else {
                return;
            };
            if to.is_slave() {
                self.duties.as_slave().await;
                ctx.store.set_replica_only();
                ctx.role.set(to.clone());
                self.start_slave_scope(&ctx, &to);
            } else {
                self.end_slave_scope();
                ctx.store.set_writable();
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
        })
    }

    fn proposed_sync_state_set(&self) -> Option<watch::Receiver<BTreeSet<i64>>> {
        None
    }

    fn sync_state_set_accepted(&self, set: BTreeSet<i64>, epoch: i32) {
        if let Some(ctx) = self.ctx.upgrade() {
            ctx.role.update(|r| {
                if epoch > r.sync_state_set_epoch {
                    r.sync_state_set = set;
                    r.sync_state_set_epoch = epoch;
                }
            });
        }
    }
}
