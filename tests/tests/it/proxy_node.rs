//! A second language's stock 5.x gRPC client through Apache's
//! rocketmq-proxy 5.3.3 (cluster mode) in front of this broker: the npm
//! package `rocketmq-client-nodejs` runs `tests/node5/grpc_check.js`. It
//! sends (sync and async with tags and keys, and in message groups to a
//! FIFO topic), a SimpleConsumer receives and acks exactly what was sent,
//! each once, and a FIFO group (consumeMessageOrderly) gets each message
//! group in send order. On both consume-queue backends (RocksDB with the
//! RocksDB POP state, file with the revive topic). The scenarios and their
//! checks are `grpc_sdk`'s; `grpc_node` runs them straight at the broker.
//!
//! Needs `node`, the pinned client (`npm ci --prefix tests/node5`) and the
//! proxy's jars, all installed by `scripts/setup.sh`.

use rmq_common::config::CqBackend;
use rmq_tests::sdk5::Sdk;

use crate::grpc_sdk::{ready, Target};
use crate::proxy_grpc::{broker_and_proxy, paired_pop_settings};

async fn node_through_proxy(backend: CqBackend) {
    assert!(ready(Sdk::Node).await, "the Node test never skips");
    let dir = tempfile::tempdir().unwrap();
    let settings = paired_pop_settings(dir.path(), backend);
    let (broker, proxy) = broker_and_proxy(dir.path(), settings, serde_json::Map::new()).await;
    let out = dir.path().join("node");
    std::fs::create_dir_all(&out).unwrap();
    let endpoint = proxy.grpc_endpoint();
    let target = Target {
        sdk: Sdk::Node,
        out: &out,
        endpoint: &endpoint,
    };
    target.send_and_simple(&broker).await;
    target.fifo(&broker).await;
    drop(proxy);
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node5_proxy_file() {
    node_through_proxy(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node5_proxy_rocksdb() {
    node_through_proxy(CqBackend::Rocksdb).await;
}
