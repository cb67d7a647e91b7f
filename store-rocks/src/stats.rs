//! The numbers behind [`CqStats`], read from RocksDB properties and
//! statistics.

use std::sync::atomic::Ordering;

use rmq_common::cq::CqStats;
use rocksdb::properties::{
    PropName, ACTUAL_DELAYED_WRITE_RATE, CUR_SIZE_ALL_MEM_TABLES,
    ESTIMATE_PENDING_COMPACTION_BYTES, ESTIMATE_TABLE_READERS_MEM, IS_WRITE_STOPPED,
    NUM_RUNNING_COMPACTIONS,
};
use rocksdb::statistics::Ticker;

use crate::db::Db;
use crate::shared::Shared;

/// Collects the stats; engine numbers are zero once the store is closed.
pub(crate) fn collect(shared: &Shared) -> CqStats {
    let (queues, lmq_queues) = {
        let offsets = shared.offsets.read();
        let others = offsets.queues.len().saturating_sub(offsets.lmq_cached) as u64;
        (others + offsets.lmq_total, offsets.lmq_total)
    };
    let mut s = CqStats {
        queues,
        lmq_queues,
        pending_writes: shared.pending_units.load(Ordering::Relaxed),
        ..CqStats::default()
    };
    let guard = shared.db.read();
    if let Some(db) = guard.as_ref() {
        s.memtable_bytes = sum_over_cfs(db, CUR_SIZE_ALL_MEM_TABLES);
        s.pending_compaction_bytes = sum_over_cfs(db, ESTIMATE_PENDING_COMPACTION_BYTES);
        s.running_compactions = db_int(db, NUM_RUNNING_COMPACTIONS);
        s.block_cache_usage_bytes = db.block_cache.get_usage() as u64;
        s.table_readers_bytes = sum_over_cfs(db, ESTIMATE_TABLE_READERS_MEM);
        let stopped = db_int(db, IS_WRITE_STOPPED) > 0;
        let delayed = db_int(db, ACTUAL_DELAYED_WRITE_RATE) > 0;
        s.write_stalled = u64::from(stopped || delayed);
        // `rocksdb.stall.micros`: cumulative time writers spent stalled or
        // delayed since open (statistics are enabled in options.rs).
        s.write_stall_micros = db.options.get_ticker_count(Ticker::StallMicros);
        // max_open_files is left at -1, so RocksDB keeps every live SST file
        // open: their count is the backend's open table files (the WAL, LOCK
        // and LOG files are not counted).
        s.open_files = db.db.live_files().map_or(0, |f| f.len() as u64);
    }
    s
}

/// A DB-wide integer property (0 if unavailable).
fn db_int(db: &Db, name: &PropName) -> u64 {
    db.db.property_int_value(name).ok().flatten().unwrap_or(0)
}

/// An integer property summed over both column families.
fn sum_over_cfs(db: &Db, name: &PropName) -> u64 {
    [db.entries(), db.offsets()]
        .into_iter()
        .filter_map(Result::ok)
        .filter_map(|cf| db.db.property_int_value_cf(cf, name).ok().flatten())
        .sum()
}
