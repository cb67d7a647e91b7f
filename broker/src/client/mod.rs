//! Producer and consumer connections, grouped as RocketMQ's
//! ProducerManager / ConsumerManager keep them.

mod heartbeat;
mod manager;

pub use heartbeat::{ConsumerData, HeartbeatData, ProducerData, SubscriptionData};
pub use manager::{ClientManager, GroupChange};
