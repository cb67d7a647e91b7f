//! Timer-message stores: where a broker keeps the messages it must deliver
//! at a given time (RocketMQ 5.x timer messages), behind one trait.
//!
//! Layout:
//! - [`entry`]: a [`TimerEntry`] (slot time, CommitLog position, kind) and
//!   its 52-byte timer-log unit codec.
//! - [`store`]: the [`TimerStore`] trait, its [`Progress`] and durability
//!   contract.
//! - [`wheel`]: [`WheelTimerStore`], RocketMQ 5.x's files: `timerwheel`
//!   (one 32-byte slot per precision step, 14 days of them), `timerlog/`
//!   (52-byte units chained backwards per slot) and `config/timercheck`.
//! - [`rocks`]: [`RocksTimerStore`], one RocksDB database keyed by due
//!   time then CommitLog offset.
//! - [`open`]: picks the engine from `timerStoreType`.
//!
//! The stores know nothing of messages: the broker's timer service reads
//! the timer topic, files entries here, reads due slots back and puts the
//! messages into their real topics.
#![forbid(unsafe_code)]

pub mod entry;
mod error;
pub mod open;
pub mod rocks;
pub mod store;
pub mod wheel;

pub use entry::{java_string_hash, EntryKind, TimerEntry};
pub use error::TimerError;
pub use open::open_timer_store;
pub use rocks::RocksTimerStore;
pub use store::{Progress, TimerStore};
pub use wheel::WheelTimerStore;
