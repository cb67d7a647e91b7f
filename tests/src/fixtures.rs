//! Shared set-up of the broker tests: settings for a broker under test
//! (ports chosen by the OS on 127.0.0.1, a small store), brokers started
//! from them, and a standalone NameServer on a manual clock with brokers
//! behind it (route-scale, failover and NameServer tests).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rmq_broker::broker::Broker;
use rmq_broker::config::{BrokerConfig, Settings};
use rmq_common::config::CqBackend;
use rmq_common::time::ManualClock;
use rmq_namesrv::{NameServer, NameServerHandle, BROKER_EXPIRY_MS};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Longest the NameServer's tasks may take to stop.
const STOP_BOUND: Duration = Duration::from_secs(10);

/// Settings for a broker under test: ports chosen by the OS on 127.0.0.1,
/// the embedded NameServer, no metrics endpoint, a small store under
/// `root`.
pub fn broker_settings(root: &Path, backend: CqBackend) -> Settings {
    let mut store = crate::small_config(root, backend);
    store.mapped_file_size_commit_log_bytes = 4 * 1024 * 1024;
    store.max_message_size_bytes = 1024 * 1024;
    Settings {
        broker: BrokerConfig {
            listen_port: 0,
            namesrv_listen_port: 0,
            grpc_server_port: 0,
            metrics_port: -1,
            ..BrokerConfig::default()
        },
        store,
        ..Settings::default()
    }
}

/// [`broker_settings`] with the `/metrics` endpoint on a port the OS picks
/// and a broker name unique to `test` and `backend`: the metrics recorder
/// is process-wide, so tests tell their series apart by that name.
pub fn metered_settings(root: &Path, backend: CqBackend, test: &str) -> Settings {
    let mut s = broker_settings(root, backend);
    s.broker.metrics_port = 0;
    s.broker.broker_name = format!("{test}-{backend}");
    s
}

/// A broker with [`broker_settings`].
pub async fn start_broker(root: &Path, backend: CqBackend) -> Broker {
    Broker::start(broker_settings(root, backend))
        .await
        .expect("the broker under test starts")
}

/// A NameServer on 127.0.0.1:0 with RocketMQ's 120 s expiry, its heartbeat
/// times from a manual clock.
pub struct TestNameServer {
    /// The running NameServer.
    pub ns: NameServerHandle,
    /// The clock its heartbeats and expiry read.
    pub clock: Arc<ManualClock>,
    cancel: CancellationToken,
    tracker: TaskTracker,
}

impl TestNameServer {
    /// Starts one on 127.0.0.1:0 with the clock at `now_ms`.
    pub async fn start(now_ms: i64) -> Self {
        Self::start_with("127.0.0.1:0".parse().unwrap(), now_ms, BROKER_EXPIRY_MS).await
    }

    /// Starts one on `addr` (a restart binds the address it had) with the
    /// clock at `now_ms` and brokers expiring after `expiry_ms`.
    pub async fn start_with(addr: SocketAddr, now_ms: i64, expiry_ms: i64) -> Self {
        let clock = Arc::new(ManualClock::new(now_ms));
        let (cancel, tracker) = (CancellationToken::new(), TaskTracker::new());
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        let ns = NameServer::start(
            listener,
            clock.clone(),
            &rmq_namesrv::NamesrvOptions::in_memory(expiry_ms),
            cancel.clone(),
            tracker.clone(),
        )
        .await
        .unwrap();
        Self {
            ns,
            clock,
            cancel,
            tracker,
        }
    }

    /// A broker named `name` with its store under `root`, registered here
    /// only (no embedded NameServer) and only when a test says so: its
    /// background heartbeat period is an hour.
    pub async fn broker(&self, root: &Path, name: &str, backend: CqBackend) -> Broker {
        let mut s = broker_settings(root, backend);
        s.broker.broker_name = name.to_owned();
        s.broker.namesrv_listen_port = -1;
        s.broker.namesrv_addr = self.ns.addr.to_string();
        s.broker.register_name_server_period_ms = 3_600_000;
        Broker::start(s).await.unwrap()
    }

    /// Lets the expiry pass for the broker `dead_name` at `dead_addr` while
    /// `live` heartbeat half way, then checks that it, and only it, is
    /// gone (the NameServer's own 10 s scan may have dropped it first).
    pub async fn expire(&self, live: &[Broker], dead_name: &str, dead_addr: &str) {
        self.clock.advance(BROKER_EXPIRY_MS / 2);
        for b in live {
            b.registrar().unwrap().register_now().await.unwrap();
        }
        self.clock.advance(BROKER_EXPIRY_MS / 2 + 1_000);
        let dropped = self.ns.scan_once();
        assert!(dropped.is_empty() || dropped == [dead_addr], "{dropped:?}");
        let names: Vec<String> = self
            .ns
            .routes()
            .cluster_info()
            .broker_addr_table
            .into_keys()
            .collect();
        assert!(!names.iter().any(|n| n == dead_name), "{names:?}");
        assert_eq!(names.len(), live.len(), "{names:?}");
    }

    /// Stops the NameServer, bounded.
    pub async fn stop(self) {
        self.cancel.cancel();
        self.tracker.close();
        tokio::time::timeout(STOP_BOUND, self.tracker.wait())
            .await
            .expect("the NameServer stops");
    }
}
