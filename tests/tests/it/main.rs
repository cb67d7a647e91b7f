//! The one integration-test binary of the workspace (every test binary links
//! RocksDB statically, so there is only this one).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod admin_cli;
mod bench;
mod broker_clients;
mod broker_server;
mod cq_conformance;
mod cq_model;
mod disk_full;
mod hostile_fuzz;
mod hostile_memory;
mod hostile_poison;
mod hostile_stall;
mod hostile_topics;
mod java_client;
mod metrics;
mod mqadmin;
mod namesrv;
mod real_client;
mod reput_concurrent;
mod request_reply;
mod retention;
mod retry_dlq;
mod route_scale;
mod schedule;
mod sql92_filter;
mod store_bad_input;
mod store_concurrency;
mod store_crash;
mod store_many_queues;
mod store_read_path;
mod store_recovery;
mod store_segments;
mod store_switch;
mod transactions;
