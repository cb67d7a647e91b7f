//! [`ControllerService`]: one controller replica's request handler. Raft's
//! RPCs go to the Raft node; BROKER_HEARTBEAT and GET_METADATA_INFO are
//! answered by any replica; every other controller request only by the
//! leader (see [`super::leader`]), others answering CONTROLLER_NOT_LEADER.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmq_common::remoting::RemotingCommand;
use rmq_remoting::{Connection, RequestHandler};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::alive::Liveness;
use crate::metrics::ControllerMetrics;
use crate::raft::ControllerRaft;
use crate::server::answers::{self, Metadata};
use crate::server::notify::RoleNotifier;
use crate::server::raft_rpc;
use crate::server::runtime::RuntimeConfig;
use crate::server::settings::ControllerSettings;
use crate::wire::{self, Request};

/// One controller replica: its Raft node, its broker liveness table, the
/// lock that lets the leader decide one request at a time, the settings
/// an operator may change while it runs, and the role change notifier.
#[derive(Debug)]
pub struct ControllerService {
    pub(super) raft: ControllerRaft,
    pub(super) settings: ControllerSettings,
    pub(super) runtime: Arc<RuntimeConfig>,
    pub(super) notifier: Arc<RoleNotifier>,
    pub(super) live: parking_lot::Mutex<Liveness>,
    /// Held from reading the state until the decision's event is applied,
    /// so no two decisions are made against the same state.
    pub(super) decide: tokio::sync::Mutex<()>,
    /// Wakes the scan before its interval (a broker's connection closed).
    pub(super) scan_now: tokio::sync::Notify,
    /// Where elections, requests and the gauges are recorded.
    pub(super) metrics: ControllerMetrics,
}

impl ControllerService {
    /// The service of the started Raft node `raft`; its notifications are
    /// sent by tasks of `tracker` that stop at `cancel`.
    pub fn new(
        raft: ControllerRaft,
        settings: ControllerSettings,
        cancel: CancellationToken,
        tracker: TaskTracker,
    ) -> Self {
        Self {
            raft,
            runtime: Arc::new(RuntimeConfig::new(&settings)),
            metrics: ControllerMetrics::new(&settings),
            notifier: Arc::new(RoleNotifier::new(cancel, tracker)),
            settings,
            live: parking_lot::Mutex::new(Liveness::new()),
            decide: tokio::sync::Mutex::new(()),
            scan_now: tokio::sync::Notify::new(),
        }
    }

    /// The Raft node.
    pub fn raft(&self) -> &ControllerRaft {
        &self.raft
    }

    /// The settings it started with.
    pub fn settings(&self) -> &ControllerSettings {
        &self.settings
    }

    /// The settings as they are now (UPDATE_CONTROLLER_CONFIG changes them).
    pub fn runtime(&self) -> &RuntimeConfig {
        &self.runtime
    }

    /// Its metric handles.
    pub fn metrics(&self) -> &ControllerMetrics {
        &self.metrics
    }

    /// Sets the metric gauges (leadership, brokers alive) from the state
    /// now.
    pub fn refresh_gauges(&self) {
        let now_ms = self.now_ms();
        self.metrics.gauges(
            self.raft.is_leader(),
            &self.raft.state(),
            &self.live.lock(),
            now_ms,
        );
    }

    /// Now, by the injected clock.
    pub(super) fn now_ms(&self) -> i64 {
        self.settings.clock.now_ms()
    }

    /// The answer to `req` (its opaque and serialize type not yet set);
    /// `None` only when nothing should be sent.
    pub async fn answer(&self, req: &RemotingCommand) -> Option<RemotingCommand> {
        self.answer_on(None, req).await
    }

    /// [`ControllerService::answer`] of a request that came over the
    /// connection `channel`: a broker whose heartbeats came over it is
    /// taken for dead when it closes.
    pub async fn answer_on(
        &self,
        channel: Option<u64>,
        req: &RemotingCommand,
    ) -> Option<RemotingCommand> {
        if raft_rpc::is_raft_code(req.code) {
            return raft_rpc::answer(self.raft.raft(), req).await;
        }
        let request = match wire::decode(req) {
            None => return Some(answers::not_supported(req.code)),
            Some(Err(refusal)) => return Some(wire::refusal(&refusal)),
            Some(Ok(request)) => request,
        };
        Some(match request {
            Request::Heartbeat { heartbeat, .. } => {
                let now = self.now_ms();
                self.live.lock().heartbeat_on(heartbeat, now, channel);
                answers::heartbeat()
            }
            Request::GetMetadataInfo => answers::metadata(&Metadata {
                group: &self.settings.group,
                leader: self.raft.leader(),
                is_leader: self.raft.is_leader(),
                peers: &self.settings.peers,
                names: &self.settings.names,
            }),
            Request::GetControllerConfig => answers::config_text(self.runtime.text()),
            Request::UpdateControllerConfig { body } => {
                let runtime = Arc::clone(&self.runtime);
                match tokio::task::spawn_blocking(move || runtime.update(&body)).await {
                    Ok(Ok(())) => answers::success(),
                    Ok(Err(refusal)) => wire::refusal(&refusal),
                    Err(e) => answers::system_error(format!("the update did not run: {e}")),
                }
            }
            other if !self.raft.is_leader() => {
                drop(other);
                answers::not_leader()
            }
            other => self.on_leader(other).await,
        })
    }
}

impl RequestHandler for ControllerService {
    fn handle(
        self: Arc<Self>,
        conn: Arc<Connection>,
        req: RemotingCommand,
    ) -> BoxFuture<'static, Option<RemotingCommand>> {
        let channel = (!conn.is_detached()).then_some(conn.id);
        Box::pin(async move {
            let started = std::time::Instant::now();
            let mut resp = self.answer_on(channel, &req).await?;
            if !raft_rpc::is_raft_code(req.code) {
                self.metrics.request(req.code, resp.code, started.elapsed());
            }
            if req.is_oneway() {
                return None;
            }
            resp.opaque = req.opaque;
            resp.serialize_type = req.serialize_type;
            resp.mark_response();
            Some(resp)
        })
    }

    /// As RocketMQ's controller (`BrokerHousekeepingService`): the brokers
    /// that heartbeat over this connection are dead now, and the scan runs
    /// at once, so the leader elects a new master without waiting for the
    /// heartbeat timeout.
    fn connection_closed(&self, conn: &Arc<Connection>) {
        let gone = self.live.lock().drop_channel(conn.id);
        if gone.is_empty() {
            return;
        }
        for (set, id) in &gone {
            tracing::info!(broker_name = %set, broker_id = id, peer = %conn.peer, "broker connection closed");
        }
        self.scan_now.notify_one();
    }
}
