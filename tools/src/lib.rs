//! The operator's tools: `rmq-admin` (topics, offsets, messages, cluster,
//! broker config, controller-mode broker sets over the real protocol; as functions returning the text it
//! prints, so the output is testable) and `rmq-bench` (load over the
//! protocol, A/B runs per backend with a plot, store-level and NameServer
//! route runs).
#![forbid(unsafe_code)]

pub mod admin;
pub mod bench;
pub mod controller_admin;
pub mod cq_admin;
