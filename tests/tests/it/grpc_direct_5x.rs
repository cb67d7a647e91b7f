//! The stock gRPC Java client 5.0.7 straight at this broker's gRPC
//! endpoint, the scenarios `proxy_grpc` and `proxy_grpc_5x` run through
//! Apache's proxy (the same bodies, another endpoint), on both
//! consume-queue backends: sends, sync and async, with tags and keys, reach
//! a 4.9.8 remoting push consumer, exactly those; messages with a delivery
//! timestamp arrive once each, on time; a TransactionProducer's commits,
//! rollbacks and check-backs deliver exactly the committed messages.

use rmq_common::config::CqBackend;

use crate::grpc_direct::start_direct;
use crate::proxy_grpc::sends_reach_a_4x_consumer;
use crate::proxy_grpc_5x::{
    delivery_timestamp, quick_transaction_checks, transaction_check_back_at,
};

async fn sends(backend: CqBackend) {
    let d = start_direct(backend, |_| {}).await;
    sends_reach_a_4x_consumer(&d.broker, &d.home, &d.endpoint).await;
    d.broker.shutdown().await;
}

async fn delay(backend: CqBackend) {
    let d = start_direct(backend, |_| {}).await;
    delivery_timestamp(&d.broker, &d.home, &d.endpoint).await;
    d.broker.shutdown().await;
}

async fn transaction(backend: CqBackend) {
    let d = start_direct(backend, quick_transaction_checks).await;
    transaction_check_back_at(&d.broker, &d.home, &d.endpoint).await;
    d.broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_direct_sends_reach_a_4x_consumer_file() {
    sends(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_direct_sends_reach_a_4x_consumer_rocksdb() {
    sends(CqBackend::Rocksdb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_direct_delivery_timestamp_file() {
    delay(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_direct_delivery_timestamp_rocksdb() {
    delay(CqBackend::Rocksdb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_direct_transaction_check_back_file() {
    transaction(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_direct_transaction_check_back_rocksdb() {
    transaction(CqBackend::Rocksdb).await;
}
