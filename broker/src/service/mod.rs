//! Broker services built on the store: the schedule service (delay levels)
//! the transaction check walk, and timer messages (RocketMQ 5.x).

pub mod poison;
pub mod schedule;
pub mod timer;
pub mod transaction;
