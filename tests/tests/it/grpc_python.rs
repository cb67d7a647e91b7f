//! The stock 5.x gRPC client for Python, the PyPI `rocketmq-python-client`
//! 5.1.2 (`tests/python5/grpc_check.py`, run by the venv
//! `${RMQ_PY5_VENV:-~/.cache/rmq-py5/venv}`), straight at the broker's gRPC
//! endpoint, no proxy: sends and SimpleConsumer receive/ack, FIFO, delay by
//! delivery timestamp and transactions with check-back, each checked by
//! content (`grpc_sdk`), on both consume-queue backends (the RocksDB one
//! with the RocksDB POP state, the file one with the revive topic). Skipped,
//! saying so, only when there is no `python3`; fails when the venv or the
//! client is missing (`scripts/setup.sh` makes them).

use rmq_common::config::CqBackend;
use rmq_tests::sdk5::Sdk;

use crate::grpc_sdk::direct;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python5_direct_file() {
    direct(Sdk::Python, CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python5_direct_rocksdb() {
    direct(Sdk::Python, CqBackend::Rocksdb).await;
}
