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
use std::sync::Arc;
use std::time::Duration;

use rmq_controller::config::{ControllerConfig, ControllerConfigError, MetricsExporter};
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

/// How often the recorder of a process serving only a controller's
/// metrics drains its histograms (the broker's sampler does it otherwise).
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// A replica started with its own metrics endpoint, for a process that
/// has no broker endpoint to show them on (`--controller-only`,
/// `--namesrv-only`).
#[derive(Debug)]
pub struct Served {
    /// The replica.
    pub handle: ControllerHandle,
    /// Where `/metrics` listens, when `metricsExporterType=PROM`.
    pub metrics_addr: Option<SocketAddr>,
}

/// [`start`], and with `metricsExporterType=PROM` the Prometheus endpoint
/// on `metricsPromExporterHost:metricsPromExporterPort` serving this
/// replica's series (Apache's controller exporter).
pub async fn start_serving_metrics(
    config: &ControllerConfig,
    cancel: &CancellationToken,
    tracker: &TaskTracker,
) -> Result<Served, BrokerError> {
    let Some(endpoint) = config.prom_endpoint() else {
        if config.metrics_exporter_type != MetricsExporter::Disable {
            tracing::warn!(kind = ?config.metrics_exporter_type, "metricsExporterType: only PROM is served; no controller metrics endpoint");
        }
        let handle = start(config, cancel, tracker).await?;
        return Ok(Served {
            handle,
            metrics_addr: None,
        });
    };
    // The recorder first, so the replica's first requests count.
    let prometheus = crate::metrics::install();
    let handle = start(config, cancel, tracker).await?;
    let Some(prometheus) = prometheus else {
        tracing::warn!("no metrics recorder: no controller metrics endpoint");
        return Ok(Served {
            handle,
            metrics_addr: None,
        });
    };
    let listener = TcpListener::bind(&endpoint)
        .await
        .map_err(|source| BrokerError::Bind {
            addr: endpoint.clone(),
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| BrokerError::Bind {
        addr: endpoint,
        source,
    })?;
    let needles = vec![handle.metrics_needle()];
    let render: Arc<dyn Fn() -> String + Send + Sync> =
        Arc::new(move || crate::metrics::render_matching(prometheus, &needles));
    tracker.spawn(crate::metrics::serve_metrics(
        listener,
        render,
        cancel.clone(),
        tracker.clone(),
    ));
    let stop = cancel.clone();
    tracker.spawn(async move {
        let mut tick = tokio::time::interval(UPKEEP_INTERVAL);
        loop {
            tokio::select! {
                biased;
                () = stop.cancelled() => break,
                _ = tick.tick() => prometheus.run_upkeep(),
            }
        }
    });
    tracing::info!(%addr, "controller metrics endpoint listening at /metrics");
    Ok(Served {
        handle,
        metrics_addr: Some(addr),
    })
}

/// A controller replica alone (`rmq-broker --controller-only`).
#[derive(Debug)]
pub struct StandaloneController {
    handle: ControllerHandle,
    metrics_addr: Option<SocketAddr>,
    cancel: CancellationToken,
    tracker: TaskTracker,
}

impl StandaloneController {
    /// Starts the replica `config` describes, and its metrics endpoint if
    /// the configuration asks for one.
    pub async fn start(config: &ControllerConfig) -> Result<Self, BrokerError> {
        let (cancel, tracker) = (CancellationToken::new(), TaskTracker::new());
        let served = start_serving_metrics(config, &cancel, &tracker).await?;
        Ok(Self {
            handle: served.handle,
            metrics_addr: served.metrics_addr,
            cancel,
            tracker,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.handle.addr
    }

    /// Where its `/metrics` endpoint listens, if it serves one.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
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
