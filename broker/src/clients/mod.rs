//! Producer and consumer connections, grouped as RocketMQ's
//! ProducerManager / ConsumerManager keep them.

mod manager;

pub use manager::{ClientManager, GroupChange};
