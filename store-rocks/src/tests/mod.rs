//! In-crate tests: behaviour through the [`ConsumeQueueStore`] trait, with
//! a few white-box checks through `RocksConsumeQueueStore::shared`.

mod basic;
mod durability;
mod lmq;
mod maintain;
mod writer;

use std::path::Path;

use rmq_common::cq::{ConsumeQueueStore, CqPut, CqUnit, StoreTimeSource};
use rmq_common::StoreConfig;

use crate::RocksConsumeQueueStore;

/// Small memory settings so tests open fast and memtables fill quickly.
pub(crate) fn config(root: &Path) -> StoreConfig {
    StoreConfig {
        rocksdb_write_buffer_size_bytes: 1024 * 1024,
        rocksdb_block_cache_size_bytes: 4 * 1024 * 1024,
        rocksdb_max_background_jobs: 2,
        ..StoreConfig::with_root(root)
    }
}

pub(crate) fn open(root: &Path) -> RocksConsumeQueueStore {
    RocksConsumeQueueStore::open(&config(root)).unwrap()
}

/// A unit whose record is 10 bytes at `phy`, stored at time `phy`.
pub(crate) fn unit(topic: &str, queue_id: i32, queue_offset: i64, phy: i64) -> CqPut {
    CqPut {
        topic: topic.into(),
        queue_id,
        queue_offset,
        phy_offset: phy,
        size: 10,
        tags_code: phy * 7,
        store_timestamp: phy,
    }
}

/// What `get` should return for a unit made by [`unit`].
pub(crate) fn read_back(u: &CqPut) -> CqUnit {
    CqUnit {
        queue_offset: u.queue_offset,
        phy_offset: u.phy_offset,
        size: u.size,
        tags_code: u.tags_code,
    }
}

/// Every unit from `from` on.
pub(crate) fn read(
    store: &dyn ConsumeQueueStore,
    topic: &str,
    queue_id: i32,
    from: i64,
) -> Vec<CqUnit> {
    let mut out = Vec::new();
    store
        .get(topic, queue_id, from, usize::MAX, &mut out)
        .unwrap();
    out
}

/// The RocksDB backend keeps store times itself.
pub(crate) struct NoTimes;

impl StoreTimeSource for NoTimes {
    fn store_time(&self, _: i64, _: i32) -> Option<i64> {
        None
    }
}
