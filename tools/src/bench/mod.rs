//! The load tool behind `rmq-bench`: producers and consumers over the real
//! protocol with the broker's own client, A/B runs per backend with a plot,
//! and store-level runs without the network.

pub mod ab;
pub mod consumer;
pub mod latency;
pub mod load;
pub mod plot;
pub mod producer;
pub mod report;
pub mod reput;
pub mod routes;
pub mod scrape;
pub mod spec;
pub mod store;

pub use load::{LoadReport, Tick};
pub use spec::{LoadSpec, SendMode};
