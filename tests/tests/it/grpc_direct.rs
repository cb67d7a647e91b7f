//! The stock gRPC Java client 5.0.7 pointed straight at this broker's
//! gRPC endpoint (`grpcServerPort`), no proxy: the same scenarios, checked
//! by content, as `proxy_grpc_pop` runs through Apache's proxy, on both
//! consume-queue backends (the RocksDB one with the RocksDB POP state).
//! More in `grpc_direct_5x` (sends to a 4.x consumer, delivery timestamps,
//! transactions), `grpc_direct_typed` (typed topics, SQL92, max attempts)
//! and `grpc_direct_mixed` (a remoting and a gRPC group on one topic).

use std::path::PathBuf;

use rmq_broker::broker::Broker;
use rmq_broker::config::Settings;
use rmq_common::config::CqBackend;
use rmq_tests::java::{self, Client};
use tempfile::TempDir;

use crate::proxy_grpc::paired_pop_settings;
use crate::proxy_grpc_pop::{fifo, push, redeliver, simple};

/// A broker serving gRPC, with the folder the Java runs use.
pub(crate) struct Direct {
    pub(crate) broker: Broker,
    /// `host:port` of the broker's gRPC endpoint.
    pub(crate) endpoint: String,
    /// The Java runs' home folder.
    pub(crate) home: PathBuf,
    /// Holds the store and the home folder until the test ends.
    _dir: TempDir,
}

/// Starts a broker on `backend` ([`paired_pop_settings`] changed by
/// `tune`) whose gRPC endpoint the Java client uses.
pub(crate) async fn start_direct(backend: CqBackend, tune: impl FnOnce(&mut Settings)) -> Direct {
    java::require_java_and_jars(Client::Grpc);
    let dir = tempfile::tempdir().unwrap();
    let mut settings = paired_pop_settings(dir.path(), backend);
    tune(&mut settings);
    let broker = Broker::start(settings).await.unwrap();
    let endpoint = broker.grpc_addr().expect("gRPC served").to_string();
    let home = dir.path().join("java");
    std::fs::create_dir_all(&home).unwrap();
    Direct {
        broker,
        endpoint,
        home,
        _dir: dir,
    }
}

async fn pop_direct(backend: CqBackend) {
    let d = start_direct(backend, |_| {}).await;
    simple(&d.broker, &d.home, &d.endpoint).await;
    redeliver(&d.broker, &d.home, &d.endpoint).await;
    fifo(&d.broker, &d.home, &d.endpoint).await;
    push(&d.broker, &d.home, &d.endpoint).await;
    d.broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_java_client_pops_from_the_broker_file_cq() {
    pop_direct(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_java_client_pops_from_the_broker_rocks_cq() {
    pop_direct(CqBackend::Rocksdb).await;
}
