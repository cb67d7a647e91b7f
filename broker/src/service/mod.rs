//! Broker services built on the store: the schedule service (delay levels)
//! and the transaction check walk.

pub mod poison;
pub mod schedule;
pub mod transaction;
