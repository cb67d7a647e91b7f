//! [`ControllerServer::start`]: a controller replica on a listener — its
//! Raft node over [`TcpTransport`], the request handler serving brokers,
//! mqadmin and the peers' Raft RPCs on the same port (as Java's DLedger
//! shares the controller port), the scan, and a clean stop on cancel.
//!
//! How a group forms: every replica is started with the same `peers` (ids
//! and addresses) and forms the group from them on its first start (each
//! writes the same initial membership, so it does not matter which comes
//! up first; a restarted replica keeps its log and skips this). A
//! 1-replica group elects itself at once. A 3-replica group elects a
//! leader as soon as two replicas reach each other, and goes on while any
//! two are up.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use openraft::BasicNode;
use rmq_client::Connector;
use rmq_remoting::{serve, ServerOptions};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::metrics::GAUGE_REFRESH;
use crate::raft::{ControllerRaft, NodeId};
use crate::server::error::ServerError;
use crate::server::lock::StoreLock;
use crate::server::scan::{scan_loop, ScanOutcome};
use crate::server::service::ControllerService;
use crate::server::settings::ControllerSettings;
use crate::server::transport::TcpTransport;
use crate::state::ReplicaState;

/// Starts controller replicas.
#[derive(Debug)]
pub struct ControllerServer;

impl ControllerServer {
    /// Serves controller replica `settings.id` on `listener` until
    /// `cancel`; every task it starts is tracked by `tracker` (the Raft
    /// node is shut down before the last one ends).
    pub async fn start(
        listener: TcpListener,
        settings: ControllerSettings,
        cancel: CancellationToken,
        tracker: TaskTracker,
    ) -> Result<ControllerHandle, ServerError> {
        let addr = listener.local_addr().map_err(ServerError::Listener)?;
        if !settings.peers.contains_key(&settings.id) {
            return Err(ServerError::NotAPeer(settings.id));
        }
        let lock = StoreLock::acquire(&settings.store_dir)?;
        let members: BTreeMap<NodeId, BasicNode> = settings
            .peers
            .iter()
            .map(|(id, a)| (*id, BasicNode::new(a)))
            .collect();
        let transport = TcpTransport::new(Connector::new(), settings.connect_timeout());
        let raft = ControllerRaft::start(
            settings.id,
            members,
            &settings.store_dir,
            transport,
            settings.raft.clone(),
        )
        .await?;
        if let Err(e) = raft.initialize().await {
            if let Err(stop) = raft.raft().shutdown().await {
                tracing::warn!(error = %stop, "raft did not stop cleanly");
            }
            return Err(e.into());
        }
        let service = Arc::new(ControllerService::new(
            raft,
            settings,
            cancel.clone(),
            tracker.clone(),
        ));
        tracker.spawn(serve(
            listener,
            Arc::clone(&service),
            ServerOptions::default(),
            cancel.clone(),
            tracker.clone(),
        ));
        tracker.spawn(scan_loop(Arc::clone(&service), cancel.clone()));
        tracker.spawn(gauge_loop(Arc::clone(&service), cancel.clone()));
        let stopping = Arc::clone(&service);
        tracker.spawn(async move {
            cancel.cancelled().await;
            if let Err(e) = stopping.raft.raft().shutdown().await {
                tracing::warn!(error = %e, "raft did not stop cleanly");
            }
            // The log is closed: another replica may open the folder.
            drop(lock);
        });
        let s = &service.settings;
        tracing::info!(
            %addr,
            id = %s.name_of(s.id),
            node = s.id,
            group = %s.group,
            peers = ?s.peers,
            store = %s.store_dir.display(),
            "controller listening"
        );
        Ok(ControllerHandle { addr, service })
    }
}

/// Sets the metric gauges every [`GAUGE_REFRESH`] until `cancel`.
async fn gauge_loop(service: Arc<ControllerService>, cancel: CancellationToken) {
    let mut tick = tokio::time::interval(GAUGE_REFRESH);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            _ = tick.tick() => service.refresh_gauges(),
        }
    }
}

/// A running controller replica.
#[derive(Debug, Clone)]
pub struct ControllerHandle {
    /// The address it listens on.
    pub addr: SocketAddr,
    service: Arc<ControllerService>,
}

impl ControllerHandle {
    /// Its request handler and state.
    pub fn service(&self) -> &Arc<ControllerService> {
        &self.service
    }

    /// Whether it leads the group now.
    pub fn is_leader(&self) -> bool {
        self.service.raft().is_leader()
    }

    /// The leader it knows of.
    pub fn leader(&self) -> Option<NodeId> {
        self.service.raft().leader()
    }

    /// A copy of the replicated state as applied here.
    pub fn state(&self) -> ReplicaState {
        self.service.raft().state().clone()
    }

    /// The text every metric series of this replica contains, to pick
    /// them out of the process's scrape.
    pub fn metrics_needle(&self) -> String {
        self.service.metrics().needle()
    }

    /// Runs one scan now (see [`ControllerService::scan_once`]).
    pub async fn scan_once(&self) -> ScanOutcome {
        self.service.scan_once().await
    }
}
