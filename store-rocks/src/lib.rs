//! The RocksDB consume-queue backend (RocketMQ 5.x layout).
//!
//! One RocksDB database under `<store root>/rocksdb_consumequeue` holds every
//! queue: the `default` column family keeps one entry per unit, the `offset`
//! column family keeps each queue's min and max entry and the dispatch
//! checkpoint. Puts go through a group-commit thread that writes many
//! dispatch batches as one `WriteBatch`; with the WAL off and atomic flush
//! on, what reaches SST files is always a consistent prefix, and whatever only
//! lived in memtables is rebuilt from the CommitLog after a crash, starting at
//! the persisted checkpoint.
//!
//! Layout of this crate, one concern per file:
//! - `key`: key and value codecs (the on-disk format),
//! - `options`: RocksDB options derived from [`rmq_common::StoreConfig`],
//! - `db`: the open database and the state every thread shares,
//! - `offsets`: the in-memory min/max cache and its loading at open,
//! - `search`: binary searches over a queue's entries,
//! - `writer`: the group-commit thread and batch planning,
//! - `maintain`: truncation, lazy min-offset correction, topic deletion,
//! - `compact`: the background range compaction that runs the compaction
//!   filter (entries below the CommitLog min),
//! - `store`: [`RocksConsumeQueueStore`] and its trait implementation,
//! - `stats`: the numbers behind [`rmq_common::cq::CqStats`].
//!
//! Beyond the 5.x layout, the CommitLog min given to `correct_min_offset` is
//! kept as the min key of the checkpoint topic (8 bytes), so the compaction
//! filter and the lazy min correction resume after a restart.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod compact;
mod db;
mod error;
mod key;
mod lmq_filter;
mod maintain;
mod offsets;
mod options;
mod pop_state;
mod search;
mod shared;
mod stats;
mod store;
mod writer;

#[cfg(test)]
mod tests;

pub use pop_state::RocksPopState;
pub use store::RocksConsumeQueueStore;
