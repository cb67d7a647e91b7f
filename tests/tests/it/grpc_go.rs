//! The stock 5.x gRPC client for Go, the module
//! `github.com/apache/rocketmq-clients/golang/v5` v5.1.2 (`tests/go5`, built
//! to `tests/go5/target/grpc_check`), straight at the broker's gRPC
//! endpoint, no proxy: sends and SimpleConsumer receive/ack, FIFO, delay by
//! delivery timestamp and transactions with check-back, each checked by
//! content (`grpc_sdk`), on both consume-queue backends (the RocksDB one
//! with the RocksDB POP state, the file one with the revive topic). Skipped,
//! saying so, only when there is no `go`; fails when the program was not
//! built (`scripts/setup.sh` builds it).

use rmq_common::config::CqBackend;
use rmq_tests::sdk5::Sdk;

use crate::grpc_sdk::direct;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go5_direct_file() {
    direct(Sdk::Go, CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go5_direct_rocksdb() {
    direct(Sdk::Go, CqBackend::Rocksdb).await;
}
