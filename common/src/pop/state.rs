//! [`PopStateStore`]: where a broker keeps which popped messages are still
//! unacknowledged, so that each comes back when its invisible time ends.
//! Two forms implement it, chosen by `popConsumerKVServiceEnable`: RocketMQ 5.x's
//! revive topic (checkpoint and ack records as messages of
//! `rmq_sys_REVIVE_LOG_<cluster>`) and RocksDB (one record per popped
//! message keyed by its revive time, as RocketMQ's RIP-73).
//!
//! Contract, shared by both and checked by one conformance suite:
//! - [`PopStateStore::popped`] and [`PopStateStore::acked`] return once the
//!   record is as durable as the store's flush mode makes a message; an ack
//!   answered Ok is never lost by a crash.
//! - [`PopStateStore::due`] lists, oldest revive time first, each pop whose
//!   revive time has come with its offsets not yet acked; an offset acked
//!   before `due` ran is never listed.
//! - After [`PopStateStore::revived`] a pop is never listed again, unless
//!   the broker crashed before that call returned (at least once).

use super::records::PopCheckPoint;

/// A pop to remember.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Popped {
    /// What was handed out (`topic` is the topic read, retry or not).
    pub ck: PopCheckPoint,
    /// The revive queue the receipt handles name.
    pub revive_qid: i32,
}

/// Acks of one pop's messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acked {
    /// The topic read (the retry topic for a retried message).
    pub topic: String,
    /// The group.
    pub group: String,
    /// The queue read.
    pub queue_id: i32,
    /// The pop's checkpoint offset (extraInfo field 0).
    pub start_offset: i64,
    /// The pop's time.
    pub pop_time: i64,
    /// The pop's invisible time.
    pub invisible_time: i64,
    /// The revive queue of its checkpoint.
    pub revive_qid: i32,
    /// The popping broker.
    pub broker_name: String,
    /// The acked offsets.
    pub offsets: Vec<i64>,
}

/// A pop whose invisible time has ended, with what is still unacked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    /// The pop.
    pub ck: PopCheckPoint,
    /// Its revive queue.
    pub revive_qid: i32,
    /// Its offsets not acked, ascending.
    pub offsets: Vec<i64>,
}

/// Why POP state could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum PopStateError {
    /// Writing a record failed.
    #[error("POP state ({form}): writing a {what} record failed: {reason}")]
    Write {
        /// Which form.
        form: &'static str,
        /// `checkpoint`, `ack`, ...
        what: &'static str,
        /// The cause, as the engine said it.
        reason: String,
    },
    /// Reading records failed.
    #[error("POP state ({form}): reading failed: {reason}")]
    Read {
        /// Which form.
        form: &'static str,
        /// The cause.
        reason: String,
    },
    /// A stored record does not parse.
    #[error("POP state ({form}): record {at} does not parse: {reason}")]
    Corrupt {
        /// Which form.
        form: &'static str,
        /// Where it is.
        at: String,
        /// Why.
        reason: String,
    },
}

/// Where pops continue: the first offset after the last recorded pop of a
/// (group, topic, queue).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PopOffset {
    /// The group.
    pub group: String,
    /// The topic read.
    pub topic: String,
    /// The queue.
    pub queue_id: i32,
    /// The next offset to pop.
    pub next_offset: i64,
}

/// The unacknowledged popped messages of a broker.
pub trait PopStateStore: Send + Sync + std::fmt::Debug {
    /// `revive-topic` or `rocksdb`.
    fn name(&self) -> &'static str;

    /// Records a pop.
    fn popped(&self, p: &Popped) -> Result<(), PopStateError>;

    /// Records acks.
    fn acked(&self, a: &Acked) -> Result<(), PopStateError>;

    /// Pops due at `now_ms` with their unacked offsets, oldest first, at
    /// most `max`; fully acked pops are dropped on the way.
    fn due(&self, now_ms: i64, max: usize) -> Result<Vec<Due>, PopStateError>;

    /// These were re-delivered: forget them.
    fn revived(&self, done: &[Due]) -> Result<(), PopStateError>;

    /// Where each queue's pops continue after a restart, from the pops
    /// recorded and not yet forgotten.
    fn pop_offsets(&self) -> Vec<PopOffset>;

    /// Popped messages not yet acked or revived.
    fn in_flight(&self) -> u64;
}
