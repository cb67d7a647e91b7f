//! The stock 5.x gRPC client for Node, the npm `rocketmq-client-nodejs`
//! 1.0.8 (`tests/node5/grpc_check.js`), straight at the broker's gRPC
//! endpoint, no proxy: sends and SimpleConsumer receive/ack, FIFO, delay by
//! delivery timestamp and transactions with check-back, each checked by
//! content (`grpc_sdk`), on both consume-queue backends (the RocksDB one
//! with the RocksDB POP state, the file one with the revive topic). Fails
//! when node or the client is missing (`npm ci --prefix tests/node5`, done
//! by `scripts/setup.sh`).

use rmq_common::config::CqBackend;
use rmq_tests::sdk5::Sdk;

use crate::grpc_sdk::direct;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node5_direct_file() {
    direct(Sdk::Node, CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node5_direct_rocksdb() {
    direct(Sdk::Node, CqBackend::Rocksdb).await;
}
