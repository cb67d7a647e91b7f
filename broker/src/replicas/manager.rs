//! The broker's side of controller mode (RocketMQ 5.3.3's
//! `ReplicasManager`, `docs/controller-facts.md` section 6): get an id
//! (GET_NEXT_BROKER_ID, APPLY_BROKER_ID with a check code, kept in the
//! identity files), register, heartbeat to every controller, learn the
//! set's master (the register answer, an election of its own, the
//! GET_REPLICA_INFO poll, NOTIFY_BROKER_ROLE_CHANGED) and change role when
//! the master epoch grows. Until a master is named the broker is fenced
//! (no writes). On the master, the SyncStateSet changes the HA links
//! propose are sent to the controller and the accepted set adopted.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rmq_common::remoting::ResponseCode;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::config::ControllerModeConfig;
use super::identity::{Identity, IdentityFiles};
use super::rpc::{Beat, Controllers, MasterInfo, RpcError};
use crate::ha::BrokerRole;
use crate::role::{Role, RoleState};

/// Wait before a failed start-up step is tried again (Java: 5 s).
const RETRY: Duration = Duration::from_secs(5);
/// Tries of a registration before waiting [`RETRY`] (Java: 5).
const REGISTER_TRIES: usize = 5;
/// Wait after the controller forgot this broker (2008) before polling on.
const FORGOTTEN_WAIT: Duration = Duration::from_secs(2);

/// What the broker does for the manager.
pub trait ReplicaHost: Send + Sync + 'static {
    /// The last epoch of the epoch file (-1: none), the CommitLog's max
    /// offset and the confirm offset, for heartbeats.
    fn beat_state(&self) -> (i32, i64, i64);

    /// Takes role `to` (store, HA links, services, NameServer registration)
    /// and then publishes it.
    fn change_role(&self, to: Role) -> BoxFuture<'_, Result<(), RoleChangeError>>;

    /// On a master: the SyncStateSet its HA links would report now; the
    /// manager sends each change to the controller.
    fn proposed_sync_state_set(&self) -> Option<watch::Receiver<BTreeSet<i64>>>;

    /// On a master: the set and epoch the controller accepted.
    fn sync_state_set_accepted(&self, set: BTreeSet<i64>, epoch: i32);

    /// On a master: the controller refused the proposed set.
    fn sync_state_set_refused(&self);

    /// On a master, every `checkSyncStateSetPeriod`: drop slaves that fell
    /// behind (the change arrives through the proposed set).
    fn check_sync_state_set(&self);
}

/// Where the start-up has got to (for logs, metrics and rmq-admin).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Looking for the controller leader.
    Initial,
    /// Leader known; getting an id and registering.
    LeaderKnown,
    /// Registered; waiting for a master to be named.
    Registered,
    /// A master is named; the broker runs in its role.
    Running,
}

/// The manager.
pub struct ReplicasManager {
    cfg: ControllerModeConfig,
    controllers: Controllers,
    files: IdentityFiles,
    role: Arc<RoleState>,
    host: Arc<dyn ReplicaHost>,
    controller_id: std::sync::OnceLock<i64>,
    phase: parking_lot::Mutex<Phase>,
    notices: mpsc::Sender<MasterInfo>,
    notices_rx: parking_lot::Mutex<Option<mpsc::Receiver<MasterInfo>>>,
    elections_seen: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for ReplicasManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicasManager")
            .field("controllers", &self.controllers.addrs())
            .field("controller_id", &self.controller_id.get())
            .field("phase", &*self.phase.lock())
            .finish_non_exhaustive()
    }
}

impl ReplicasManager {
    /// A manager for the broker whose role is `role`.
    pub fn new(
        cfg: ControllerModeConfig,
        controllers: Controllers,
        files: IdentityFiles,
        role: Arc<RoleState>,
        host: Arc<dyn ReplicaHost>,
    ) -> Self {
        let (notices, rx) = mpsc::channel(16);
        Self {
            cfg,
            controllers,
            files,
            role,
            host,
            controller_id: std::sync::OnceLock::new(),
            phase: parking_lot::Mutex::new(Phase::Initial),
            notices,
            notices_rx: parking_lot::Mutex::new(Some(rx)),
            elections_seen: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The id the controller gave this broker, once it has one.
    pub fn controller_id(&self) -> Option<i64> {
        self.controller_id.get().copied()
    }

    /// Where start-up has got to.
    pub fn phase(&self) -> Phase {
        *self.phase.lock()
    }

    /// The controller leader as last learned.
    pub fn controller_leader(&self) -> Option<String> {
        self.controllers.leader()
    }

    /// Role changes this broker took (metrics).
    pub fn role_changes(&self) -> u64 {
        self.elections_seen
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// NOTIFY_BROKER_ROLE_CHANGED: acted on by the manager's task (a
    /// notice older than the role is ignored there).
    pub fn notify(&self, info: MasterInfo) {
        if self.notices.try_send(info).is_err() {
            tracing::warn!("role change notice dropped: the manager is behind");
        }
    }

    fn set_phase(&self, p: Phase) {
        *self.phase.lock() = p;
    }

    /// Runs until `cancel`: start-up, then heartbeats, polls and notices.
    pub async fn run(self: Arc<Self>, cancel: CancellationToken) {
        let Some(mut notices) = self.notices_rx.lock().take() else {
            return;
        };
        let id = tokio::select! {
            biased;
            () = cancel.cancelled() => return,
            id = self.start_up() => id,
        };
        tracing::info!(controller_id = id, role = ?self.role.broker_role(), "controller mode running");
        let beat = {
            let me = Arc::clone(&self);
            let cancel = cancel.clone();
            tokio::spawn(async move { me.heartbeat_loop(id, cancel).await })
        };
        let mut poll = interval(self.cfg.sync_broker_metadata_period_ms);
        let mut leader = interval(self.cfg.sync_controller_metadata_period_ms);
        let mut proposed = self.host.proposed_sync_state_set();
        let mut check = interval(self.cfg.check_sync_state_set_period_ms);
        loop {
            tokio::select! {
                biased;
                () = cancel.cancelled() => break,
                Some(info) = notices.recv() => self.adopt(id, info).await,
                _ = poll.tick() => self.poll(id).await,
                _ = check.tick() => self.host.check_sync_state_set(),
                _ = leader.tick() => {
                    if let Err(e) = self.controllers.find_leader().await {
                        tracing::warn!(error = %e, "controller leader unknown");
                    }
                }
                r = changed(&mut proposed) => match r {
                    Some(set) => self.report(id, set).await,
                    None => proposed = None,
                },
            }
        }
        beat.abort();
    }

    /// Until a master is named: the leader, an id, the registration, an
    /// election if there is no master. Returns this broker's id.
    async fn start_up(&self) -> i64 {
        loop {
            self.set_phase(Phase::Initial);
            if let Err(e) = self.controllers.find_leader().await {
                tracing::warn!(error = %e, "no controller leader yet; retrying");
                tokio::time::sleep(RETRY).await;
                continue;
            }
            self.set_phase(Phase::LeaderKnown);
            let (id, registered) = match self.register().await {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(error = %e, "controller registration failed; retrying");
                    tokio::time::sleep(RETRY).await;
                    continue;
                }
            };
            self.set_phase(Phase::Registered);
            self.controllers.heartbeat(self.beat(id)).await;
            let info = if registered.has_master() {
                registered
            } else {
                match self.controllers.elect(id).await {
                    Ok(info) => info,
                    Err(e) => {
                        tracing::info!(error = %e, "no master elected yet; retrying");
                        tokio::time::sleep(RETRY).await;
                        continue;
                    }
                }
            };
            if !info.has_master() {
                tokio::time::sleep(RETRY).await;
                continue;
            }
            self.adopt(id, info).await;
            self.set_phase(Phase::Running);
            return id;
        }
    }

    /// The id (from the identity file, or applied for now) and the
    /// registration's answer.
    async fn register(&self) -> Result<(i64, MasterInfo), RegisterError> {
        let id = self.broker_id().await?;
        let _ = self.controller_id.set(id);
        let mut last = None;
        for _ in 0..REGISTER_TRIES {
            match self.controllers.register(id).await {
                Ok(info) => return Ok((id, info)),
                Err(e) => last = Some(e),
            }
            let pause = rand::random::<u64>() % 1000;
            tokio::time::sleep(Duration::from_millis(pause)).await;
        }
        Err(last.map_or(RegisterError::NoTry, RegisterError::Rpc))
    }

    async fn broker_id(&self) -> Result<i64, RegisterError> {
        if let Some(id) = self.controller_id() {
            return Ok(id);
        }
        let me = self.controllers.me();
        if let Some(id) = self.files.load(&me.cluster, &me.broker_name)? {
            return Ok(id.broker_id);
        }
        let temp = match self.files.load_temp(&me.cluster, &me.broker_name)? {
            Some(t) => t,
            None => {
                let next = self.controllers.next_broker_id().await?;
                let t = Identity {
                    cluster: me.cluster.clone(),
                    broker_name: me.broker_name.clone(),
                    broker_id: next,
                    check_code: Some(format!("{};{}", me.addr, rmq_common::time::now_ms())),
                };
                self.files.save_temp(&t)?;
                t
            }
        };
        let code = temp.check_code.clone().unwrap_or_default();
        if let Err(e) = self
            .controllers
            .apply_broker_id(temp.broker_id, &code)
            .await
        {
            // Another broker took the id (or the controller is gone): the
            // next try starts over with a fresh id.
            self.files.clear_temp()?;
            return Err(e.into());
        }
        let applied = Identity {
            check_code: None,
            ..temp
        };
        self.files.save(&applied)?;
        tracing::info!(
            broker_id = applied.broker_id,
            "controller gave this broker its id"
        );
        Ok(applied.broker_id)
    }

    fn beat(&self, id: i64) -> Beat {
        let (epoch, max_offset, confirm_offset) = self.host.beat_state();
        Beat {
            broker_id: id,
            epoch,
            max_offset,
            confirm_offset,
            timeout_ms: self.cfg.controller_heartbeat_timeout_ms,
            priority: self.cfg.broker_election_priority,
        }
    }

    async fn heartbeat_loop(&self, id: i64, cancel: CancellationToken) {
        let mut tick = interval(self.cfg.broker_heartbeat_interval_ms);
        let timeout = Duration::from_millis(self.cfg.send_heartbeat_timeout_ms.max(1));
        loop {
            tokio::select! {
                biased;
                () = cancel.cancelled() => return,
                _ = tick.tick() => {
                    let beat = self.beat(id);
                    if tokio::time::timeout(timeout, self.controllers.heartbeat(beat)).await.is_err() {
                        tracing::debug!("heartbeat to the controllers timed out");
                    }
                }
            }
        }
    }

    /// GET_REPLICA_INFO: a newer master epoch changes the role; none named
    /// means this broker asks to be elected.
    async fn poll(&self, id: i64) {
        match self.controllers.replica_info().await {
            Ok(info) => {
                let now = self.role.now();
                if info.master_epoch > now.master_epoch && !info.has_master() {
                    match self.controllers.elect(id).await {
                        Ok(elected) => self.adopt(id, elected).await,
                        Err(e) => tracing::info!(error = %e, "asked to be elected, refused"),
                    }
                } else {
                    self.adopt(id, info).await;
                }
            }
            Err(e) if e.code() == Some(ResponseCode::ControllerBrokerMetadataNotExist as i32) => {
                tracing::warn!("the controller does not know this broker's set; registering again");
                if let Err(e) = self.controllers.register(id).await {
                    tracing::warn!(error = %e, "registration again failed");
                }
                tokio::time::sleep(FORGOTTEN_WAIT).await;
            }
            Err(e) => tracing::debug!(error = %e, "replica info not read"),
        }
    }

    /// Takes what `info` says if its master epoch is newer than the role's
    /// (or, on the master, a newer SyncStateSet of the same epoch).
    async fn adopt(&self, id: i64, info: MasterInfo) {
        let now = self.role.now();
        let (Some(master_id), Some(master_addr)) = (info.master_id, info.master_addr.clone())
        else {
            return;
        };
        if info.master_epoch < now.master_epoch
            || (info.master_epoch == now.master_epoch && !now.fenced)
        {
            if info.master_epoch == now.master_epoch
                && master_id == id
                && info.sync_state_set_epoch > now.sync_state_set_epoch
            {
                self.host
                    .sync_state_set_accepted(info.sync_state_set, info.sync_state_set_epoch);
            }
            return;
        }
        let to = if master_id == id {
            Role {
                role: BrokerRole::SyncMaster,
                broker_id: 0,
                controller_id: id,
                master_epoch: info.master_epoch,
                fenced: false,
                sync_state_set: info.sync_state_set,
                sync_state_set_epoch: info.sync_state_set_epoch,
                master_addr: Some(master_addr),
            }
        } else {
            Role {
                role: BrokerRole::Slave,
                broker_id: id,
                controller_id: id,
                master_epoch: info.master_epoch,
                fenced: false,
                sync_state_set: BTreeSet::new(),
                sync_state_set_epoch: 0,
                master_addr: Some(master_addr),
            }
        };
        tracing::info!(
            role = to.role.name(),
            epoch = to.master_epoch,
            master = master_id,
            "controller named the master"
        );
        match self.host.change_role(to).await {
            Ok(()) => {
                self.elections_seen
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            // Writes stay refused: better no master than one that cannot
            // keep its log.
            Err(e) => tracing::error!(error = %e, "role not taken"),
        }
    }

    /// On the master: sends the set the HA links propose to the controller.
    async fn report(&self, id: i64, mut set: BTreeSet<i64>) {
        let now = self.role.now();
        if now.is_slave() || now.fenced {
            return;
        }
        set.insert(id);
        if set == now.sync_state_set {
            return;
        }
        match self
            .controllers
            .alter_sync_state_set(id, now.master_epoch, &set, now.sync_state_set_epoch)
            .await
        {
            Ok((accepted, epoch)) => {
                tracing::info!(?accepted, epoch, "SyncStateSet changed");
                self.host.sync_state_set_accepted(accepted, epoch);
            }
            Err(e) => {
                tracing::warn!(?set, error = %e, "SyncStateSet change refused");
                self.host.sync_state_set_refused();
            }
        }
    }
}

/// Why a broker did not take the role the controller named.
#[derive(Debug, thiserror::Error)]
pub enum RoleChangeError {
    /// The broker is stopping.
    #[error("the broker is stopping")]
    Stopping,
    /// Its store or HA links could not become master's.
    #[error("cannot become master: {0}")]
    CannotBecomeMaster(String),
}

/// Why a registration failed.
#[derive(Debug, thiserror::Error)]
enum RegisterError {
    #[error(transparent)]
    Rpc(#[from] RpcError),
    #[error(transparent)]
    Identity(#[from] super::identity::IdentityError),
    #[error("no registration was tried")]
    NoTry,
}

fn interval(ms: u64) -> tokio::time::Interval {
    let mut i = tokio::time::interval(Duration::from_millis(ms.max(1)));
    i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    i
}

/// The next value of an optional watch (`None`: it closed, or there is none
/// and this never resolves).
async fn changed(rx: &mut Option<watch::Receiver<BTreeSet<i64>>>) -> Option<BTreeSet<i64>> {
    match rx {
        Some(r) => match r.changed().await {
            Ok(()) => Some(r.borrow_and_update().clone()),
            Err(_) => None,
        },
        None => std::future::pending().await,
    }
}
