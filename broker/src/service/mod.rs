//! Broker services built on the store: the schedule service (delay levels).

pub mod schedule;
