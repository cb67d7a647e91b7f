//! RocksDB options derived from [`StoreConfig`]. Every setting here is chosen
//! on purpose; the comments say why.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use rmq_common::cq::CqError;
use rmq_common::StoreConfig;
use rocksdb::{
    BlockBasedIndexType, BlockBasedOptions, Cache, ColumnFamilyDescriptor, CompactionDecision,
    DBCompactionStyle, DBCompressionType, Env, Options, WriteOptions, DEFAULT_COLUMN_FAMILY_NAME,
};

use crate::key::EntryValue;

/// Column family of the entries.
pub(crate) const CF_ENTRIES: &str = DEFAULT_COLUMN_FAMILY_NAME;
/// Column family of the min/max keys and the checkpoints.
pub(crate) const CF_OFFSETS: &str = "offset";
/// Name RocksDB logs for the compaction filter.
const FILTER_NAME: &str = "rmq_cq_below_commit_log_min";

/// Everything needed to open the database.
pub(crate) struct DbOptions {
    /// Database-wide options; keeps the statistics object the stall ticker is
    /// read from.
    pub db: Options,
    /// One descriptor per column family.
    pub cfs: Vec<ColumnFamilyDescriptor>,
    /// The LRU block cache both column families share.
    pub block_cache: Cache,
    /// Options of every write.
    pub write: WriteOptions,
}

/// Checks the config keys this backend reads; the error names the key.
pub(crate) fn check(config: &StoreConfig) -> Result<(), CqError> {
    let bad = |key: &str, why: &str| Err(CqError::InvalidArgument(format!("{key}: {why}")));
    if !matches!(
        config.rocksdb_compaction_style.as_str(),
        "universal" | "level"
    ) {
        return bad("rocksdbCompactionStyle", "must be universal or level");
    }
    if config.rocksdb_group_commit_max_entries == 0 {
        return bad("rocksdbGroupCommitMaxEntries", "must be positive");
    }
    if config.rocksdb_group_commit_queue_capacity == 0 {
        return bad("rocksdbGroupCommitQueueCapacity", "must be positive");
    }
    if config.rocksdb_write_buffer_size_bytes == 0 {
        return bad("rocksdbWriteBufferSize", "must be positive");
    }
    Ok(())
}

/// Builds the options. `commit_log_min` is read by the compaction filter of
/// the entry column family: entries whose record lies below it are dropped.
pub(crate) fn build(
    config: &StoreConfig,
    commit_log_min: Arc<AtomicI64>,
) -> Result<DbOptions, CqError> {
    let compaction = match config.rocksdb_compaction_style.as_str() {
        // Universal (5.x's choice): entries are written once in queue-offset
        // order per queue and deleted in bulk, so fewer rewrites beat the
        // tighter space bound of level compaction.
        "universal" => DBCompactionStyle::Universal,
        "level" => DBCompactionStyle::Level,
        other => {
            return Err(CqError::InvalidArgument(format!(
                "rocksdbCompactionStyle {other:?} is neither universal nor level"
            )))
        }
    };
    let write_buffer = usize::try_from(config.rocksdb_write_buffer_size_bytes).map_err(|_| {
        CqError::InvalidArgument("rocksdbWriteBufferSize does not fit in memory".into())
    })?;
    let cache_bytes = usize::try_from(config.rocksdb_block_cache_size_bytes).map_err(|_| {
        CqError::InvalidArgument("rocksdbBlockCacheSize does not fit in memory".into())
    })?;
    let write_buffers = i32::try_from(config.rocksdb_max_write_buffer_number).unwrap_or(i32::MAX);
    let jobs = i32::try_from(config.rocksdb_max_background_jobs).unwrap_or(i32::MAX);

    let mut db = Options::default();
    // A fresh store root has no database yet; the `offset` CF is created on
    // first open of a database made by an older layout or by hand.
    db.create_if_missing(true);
    db.create_missing_column_families(true);
    // With the WAL off, a flush of one CF alone could persist entries without
    // their max keys and checkpoint (or the reverse). Atomic flush makes every
    // flush cut both CFs at the same sequence number, so SST files always hold
    // a consistent prefix of write batches.
    db.set_atomic_flush(true);
    // Flushes and compactions share this pool; the config sizes it to the
    // disk rather than to RocksDB's default of 2.
    db.set_max_background_jobs(jobs.max(1));
    // The stall ticker (`rocksdb.stall.micros`) behind CqStats needs
    // statistics; their cost is a few atomic counters per operation.
    db.enable_statistics();
    // Compactions run in the low-priority pool at the lowest CPU priority, so
    // on a small machine a large compaction takes the CPU the broker leaves
    // idle instead of starving pulls and sends (a one-hour soak on 2 cores
    // saw consumers fall 214k messages behind during one). Flushes keep the
    // high-priority pool at normal priority: a starved flush stalls writes.
    // The default Env is process-wide, so this holds for every RocksDB store
    // of the broker; setting it again is harmless.
    let mut env = Env::new().map_err(|e| CqError::Engine {
        context: "creating RocksDB's environment".into(),
        source: Box::new(e),
    })?;
    env.lower_thread_pool_cpu_priority();
    db.set_env(&env);

    // One LRU cache for both CFs, so the configured size is the total
    // block-cache memory of the backend.
    let block_cache = Cache::new_lru_cache(cache_bytes);
    let mut table = BlockBasedOptions::default();
    table.set_block_cache(&block_cache);
    if config.rocksdb_bloom_bits_per_key > 0 {
        // Reads are point lookups (multi-get of N keys, min/max keys): a
        // full-key bloom filter skips SST files that cannot hold the key.
        table.set_bloom_filter(f64::from(config.rocksdb_bloom_bits_per_key), false);
        // Partitioned filters: only the partitions a lookup touches are
        // loaded into the cache (needs the two-level index below).
        table.set_partition_filters(true);
    }
    // Index and filter blocks live in the block cache, so the configured
    // cache size bounds them too. Outside it (RocksDB's default) they grow
    // with the data: ~2.45 B per unit, 260 MiB after a soak hour. Two-level
    // indexes keep the part that must stay resident small: the top level
    // of each file and the L0 files' blocks are pinned, the partitions are
    // cached and evicted like data blocks.
    table.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
    table.set_cache_index_and_filter_blocks(true);
    table.set_pin_l0_filter_and_index_blocks_in_cache(true);
    table.set_pin_top_level_index_and_filter(true);

    let mut entries = cf_common(&table, write_buffer, write_buffers);
    entries.set_compaction_style(compaction);
    entries.set_compaction_filter(FILTER_NAME, move |_level, _key, value| {
        // Keep what cannot be decoded: the filter must never lose data it
        // does not understand.
        match EntryValue::decode_phy(value) {
            Some(phy) if phy < commit_log_min.load(Ordering::Relaxed) => CompactionDecision::Remove,
            _ => CompactionDecision::Keep,
        }
    });

    let mut offsets = cf_common(&table, write_buffer, write_buffers);
    // The offset CF is small and rewrites the same keys constantly (a max
    // key per touched queue per batch): level compaction keeps its space and
    // read amplification low.
    offsets.set_compaction_style(DBCompactionStyle::Level);
    // LMQs are looked up by min and max key when first written or read and
    // most such lookups miss (a new LMQ): a whole-key bloom filter in the
    // memtable answers those misses without a skip-list search.
    offsets.set_memtable_whole_key_filtering(true);
    offsets.set_memtable_prefix_bloom_ratio(0.05);

    let mut write = WriteOptions::default();
    // WAL off (5.x's default): the CommitLog is the log. What only lived in
    // memtables at a crash is re-dispatched from the persisted checkpoint.
    write.disable_wal(!config.rocksdb_wal_enabled);

    Ok(DbOptions {
        db,
        cfs: vec![
            ColumnFamilyDescriptor::new(CF_ENTRIES, entries),
            ColumnFamilyDescriptor::new(CF_OFFSETS, offsets),
        ],
        block_cache,
        write,
    })
}

/// Settings both column families share.
fn cf_common(table: &BlockBasedOptions, write_buffer: usize, write_buffers: i32) -> Options {
    let mut o = Options::default();
    o.set_block_based_table_factory(table);
    // The configured memtable size and count bound the memory a burst of
    // dispatches may use before writes stall.
    o.set_write_buffer_size(write_buffer);
    o.set_max_write_buffer_number(write_buffers.max(2));
    // LZ4 is cheap enough for every level; the bottommost level holds most of
    // the data and is rewritten least, so ZSTD's better ratio pays there.
    o.set_compression_type(DBCompressionType::Lz4);
    o.set_bottommost_compression_type(DBCompressionType::Zstd);
    o
}
