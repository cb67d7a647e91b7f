//! RocketMQ 5.x POP consumption, the engine-free parts: the names of its
//! topics and groups, the extraInfo / receipt handle a popped message
//! carries, the checkpoint and ack records, and the [`PopStateStore`]
//! trait that keeps which popped messages are still unacknowledged (one
//! implementation writes RocketMQ's revive topic, the other RocksDB).
//!
//! The facts these follow are in `docs/pop-facts.md`.

pub mod extra_info;
pub mod names;
pub mod records;
pub mod state;

pub use extra_info::{ExtraInfo, ExtraInfoError, OffsetInfo};
pub use names::{retry_flag, RetryFlag};
pub use records::{AckMsg, BatchAck, BatchAckBody, PopCheckPoint};
pub use state::{Acked, Due, PopOffset, PopStateError, PopStateStore, Popped};

/// The revive queue id orderly pops carry (they write no checkpoint).
pub const ORDER_REVIVE_QUEUE: i32 = 999;

/// Most messages one POP_MESSAGE returns.
pub const MAX_POP_NUMS: i32 = 32;

/// A pop's checkpoint falls due this long before its revive time, so the
/// acks written for it are read after it (RocketMQ's `ackTimeInterval`).
pub const ACK_TIME_INTERVAL_MS: i64 = 1000;
