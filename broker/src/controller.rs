//! A controller replica started by this process, configured by Apache
//! RocketMQ 5.3.3's own keys ([`rmq_controller::config`]): alone
//! (`rmq-broker --controller-only -c controller.conf`, Apache's
//! `mqcontroller -c`), or beside the NameServer when its file says
//! `enableControllerInNamesrv=true` (Apache's embedded controller). As in
//! Apache, the replica listens on the port of its own entry in
//! `controllerDLegerPeers`, never on the NameServer's port, and it binds
//! that entry's host as written (Apache binds every interface).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rmq_controller::config::{ControllerConfig, ControllerConfigError};
use rmq_controller::server::{ControllerHandle, ControllerServer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::error::BrokerError;

/// Longest a stop waits for the controller's tasks.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Java's `user.home`, where the controller's defaults put its folders.
pub fn home() -> PathBuf {
    std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from)
}

/// The controller configuration of a properties file and `--set`
/// overrides (`key=value`, applied after the file), Apache's way: keys
/// that are not the controller's are ignored.
pub fn load(file: Option<&Path>, overrides: &[String]) -> Result<ControllerConfig, BrokerError> {
    let mut pairs = Vec::new();
    if let Some(path) = file {
        let text = std::fs::read_to_string(path).map_err(|e| {
            rmq_common::ConfigError::new("--config", format!("{}: {e}", path.display()))
        })?;
        pairs = rmq_common::properties::parse(&text);
    }
    for o in overrides {
        let (k, v) = o.split_once('=').ok_or_else(|| {
            rmq_common::ConfigError::new("--set", format!("{o:?} is not key=value"))
        })?;
        pairs.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    Ok(ControllerConfig::from_pairs(&pairs, &home())?)
}

/// Binds this replica's peer address and starts it; its tasks are tracked
/// by `tracker` and stop at `cancel`.
pub async fn start(
    config: &ControllerConfig,
    cancel: &CancellationToken,
    tracker: &TaskTracker,
) -> Result<ControllerHandle, BrokerError> {
    let me = config.me().ok_or(ControllerConfigError::Missing {
        key: "controllerDLegerSelfId",
    })?;
    let listener = TcpListener::bind(&me.addr)
        .await
        .map_err(|source| BrokerError::Bind {
            addr: me.addr.clone(),
            source,
        })?;
    let handle = ControllerServer::start(
        listener,
        config.settings()?,
        cancel.clone(),
        tracker.clone(),
    )
    .await
    .map_err(Box::new)?;
    tracing::info!(
        addr = %handle.addr,
        self_id = %config.self_id,
        group = %config.group,
        peers = %config.peers.iter().map(|p| format!("{}-{}", p.id, p.addr)).collect::<Vec<_>>().join(";"),
        store = %config.store_path.display(),
        "controller replica started"
    );
    Ok(handle)
}

/// A controller replica alone (`rmq-broker --controller-only`).
#[derive(Debug)]
pub struct StandaloneController {
    handle: ControllerHandle,
    cancel: CancellationToken,
    tracker: TaskTracker,
}

impl StandaloneController {
    /// Starts the replica `config` describes.
    pub async fn start(config: &ControllerConfig) -> Result<Self, BrokerError> {
        let (cancel, tracker) = (CancellationToken::new(), TaskTracker::new());
        let handle = start(config, &cancel, &tracker).await?;
        Ok(Self {
            handle,
            cancel,
            tracker,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.handle.addr
    }

    /// The running replica.
    pub fn handle(&self) -> &ControllerHandle {
        &self.handle
    }

    /// Stops it: connections close, the Raft node shuts down, the store
    /// folder's lock is released.
    pub async fn shutdown(self) {
        self.cancel.cancel();
        self.tracker.close();
        if tokio::time::timeout(SHUTDOWN_GRACE, self.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("some controller tasks did not stop within the grace period");
        }
    }
}
