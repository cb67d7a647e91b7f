//! The load tool behind `rmq-bench`: producers and consumers over the real
//! protocol with the broker's own client, A/B runs per backend with a plot,
//! POP state forms side by side, and store-level runs without the network.

pub mod ab;
pub mod broker_proc;
pub mod consumer;
pub mod grpc_client;
pub mod grpc_consumer;
pub mod grpc_idle;
pub mod grpc_ids;
pub mod grpc_producer;
pub mod ha;
pub mod latency;
pub mod live;
pub mod lmq;
pub mod lmq_check;
pub mod lmq_load;
pub mod lmq_plan;
pub mod lmq_report;
pub mod load;
pub mod meta;
pub mod plot;
pub mod pop;
pub mod pop_consumer;
pub mod pop_report;
pub mod proc_stats;
pub mod producer;
pub mod report;
pub mod reput;
pub mod routes;
pub mod scrape;
pub mod soak;
pub mod soak_ledger;
pub mod soak_load;
pub mod soak_report;
pub mod spec;
pub mod store;
pub mod timer;
pub mod wire;

pub use load::{LoadOptions, LoadReport, Tick};
pub use spec::{LoadSpec, SendMode};

/// Connects a load client to `addr`; a failure is counted in `errors` and
/// kept as `first_error` for the report.
pub(crate) async fn connect_counted(
    addr: std::net::SocketAddr,
    errors: &mut u64,
    first_error: &mut Option<String>,
) -> Option<rmq_client::RemotingClient> {
    match rmq_client::connect(addr).await {
        Ok(c) => Some(c),
        Err(e) => {
            *errors += 1;
            first_error.get_or_insert_with(|| format!("connect {addr}: {e}"));
            None
        }
    }
}
