//! The stock gRPC Java client 5.0.7 pointed straight at this broker's
//! gRPC endpoint (`grpcServerPort`), no proxy: the same scenarios, checked
//! by content, as `proxy_grpc_pop` runs through Apache's proxy, on both
//! consume-queue backends (the RocksDB one with the RocksDB POP state).

use rmq_common::config::CqBackend;
use rmq_tests::java::{self, Client};

use crate::proxy_grpc::paired_pop_settings;
use crate::proxy_grpc_pop::{fifo, push, redeliver, simple};

async fn pop_direct(backend: CqBackend) {
    java::require_java_and_jars(Client::Grpc);
    let dir = tempfile::tempdir().unwrap();
    let settings = paired_pop_settings(dir.path(), backend);
    let broker = rmq_broker::broker::Broker::start(settings).await.unwrap();
    let endpoint = broker.grpc_addr().expect("gRPC served").to_string();
    let home = dir.path().join("java");
    std::fs::create_dir_all(&home).unwrap();
    simple(&broker, &home, &endpoint).await;
    redeliver(&broker, &home, &endpoint).await;
    fifo(&broker, &home, &endpoint).await;
    push(&broker, &home, &endpoint).await;
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_java_client_pops_from_the_broker_file_cq() {
    pop_direct(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_java_client_pops_from_the_broker_rocks_cq() {
    pop_direct(CqBackend::Rocksdb).await;
}
