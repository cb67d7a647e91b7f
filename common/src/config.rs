//! Store configuration: RocketMQ's `MessageStoreConfig` keys (camelCase, as in
//! broker.conf) with RocketMQ's defaults. Field names carry units; the serde
//! names are the RocketMQ keys.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use crate::config_error::ConfigError;

/// When a send is answered relative to the CommitLog flush.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum FlushDiskType {
    /// Answer once the bytes are in the mapped file; a flush thread syncs
    /// them every `flushIntervalCommitLog`.
    #[default]
    #[serde(rename = "ASYNC_FLUSH")]
    AsyncFlush,
    /// Answer after a (group-commit) flush covers the record.
    #[serde(rename = "SYNC_FLUSH")]
    SyncFlush,
}

/// Which consume-queue engine the broker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CqBackend {
    /// One folder per topic/queue of 20-byte-unit files.
    #[default]
    #[serde(alias = "default")]
    File,
    /// One RocksDB database (RocketMQ 5.x layout).
    #[serde(alias = "defaultRocksDB")]
    Rocksdb,
    /// The in-memory model (tests only).
    Memory,
}

impl CqBackend {
    /// The name used in config and metric labels.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::File => "file",
            Self::Rocksdb => "rocksdb",
            Self::Memory => "memory",
        }
    }
}

impl std::fmt::Display for CqBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `shadowConsumeQueueStore`: an engine name, or empty (or `none`) for none.
fn optional_backend<'de, D>(d: D) -> Result<Option<CqBackend>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let name: Option<String> = Option::deserialize(d)?;
    match name.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(n) if n.eq_ignore_ascii_case("none") || n == "null" => Ok(None),
        Some(n) => {
            CqBackend::deserialize(serde::de::value::StrDeserializer::<D::Error>::new(n)).map(Some)
        }
    }
}

/// `shadowConsumeQueueStore` as written back (GET_BROKER_CONFIG): the
/// engine's name, or empty for none.
fn optional_backend_name<S>(v: &Option<CqBackend>, s: S) -> Result<S::Ok, S::Error>
where
    S: serde::Serializer,
{
    s.serialize_str(v.map_or("", |b| b.as_str()))
}

/// What separates the folders of RocketMQ's multi-path CommitLog
/// (`storePathCommitLog=/a;/b`), which this store does not have.
pub const MULTI_PATH_SEPARATOR: char = ';';

/// Bytes in a consume-queue unit.
pub const CQ_UNIT_SIZE: u64 = 20;

/// Which engine keeps pending timer messages (`timerStoreType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimerStoreType {
    /// RocketMQ 5.x's timer wheel (`timerwheel`) and timer log
    /// (`timerlog/`), with `config/timercheck`.
    #[default]
    Wheel,
    /// One RocksDB database keyed by due time (`timer_rocksdb/`), as
    /// RocketMQ 5.4's RocksDB timer.
    Rocksdb,
}

impl TimerStoreType {
    /// The name used in config and metric labels.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Wheel => "wheel",
            Self::Rocksdb => "rocksdb",
        }
    }
}

impl std::fmt::Display for TimerStoreType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The message store's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct StoreConfig {
    /// Root folder of the store (commitlog/, consumequeue/, index/, config/ ...).
    pub store_path_root_dir: PathBuf,
    /// Folder of the CommitLog segments; empty: `commitlog` under
    /// `storePathRootDir`. One folder (RocketMQ's `;`-separated list of
    /// several is refused).
    pub store_path_commit_log: PathBuf,
    /// Size of one CommitLog segment.
    #[serde(rename = "mappedFileSizeCommitLog")]
    pub mapped_file_size_commit_log_bytes: u64,
    /// Size of one consume-queue file; a multiple of 20.
    #[serde(rename = "mappedFileSizeConsumeQueue")]
    pub mapped_file_size_consume_queue_bytes: u64,
    /// ASYNC_FLUSH or SYNC_FLUSH.
    pub flush_disk_type: FlushDiskType,
    /// How long a SYNC_FLUSH send waits for its flush before FLUSH_DISK_TIMEOUT.
    #[serde(rename = "syncFlushTimeout")]
    pub sync_flush_timeout_ms: u64,
    /// ASYNC_FLUSH: interval of the CommitLog flush thread.
    #[serde(rename = "flushIntervalCommitLog")]
    pub flush_interval_commit_log_ms: u64,
    /// ASYNC_FLUSH: pages (4 KiB) that must be dirty before a periodic flush.
    pub flush_commit_log_least_pages: u32,
    /// ASYNC_FLUSH: interval after which a flush ignores the least-pages rule.
    #[serde(rename = "flushCommitLogThoroughInterval")]
    pub flush_commit_log_thorough_interval_ms: u64,
    /// Interval of the consume-queue flush.
    #[serde(rename = "flushIntervalConsumeQueue")]
    pub flush_interval_consume_queue_ms: u64,
    /// Pages that must be dirty before a periodic consume-queue flush.
    pub flush_consume_queue_least_pages: u32,
    /// Interval after which the consume-queue flush ignores the least-pages rule.
    #[serde(rename = "flushConsumeQueueThoroughInterval")]
    pub flush_consume_queue_thorough_interval_ms: u64,
    /// Largest accepted record (whole encoded message).
    #[serde(rename = "maxMessageSize")]
    pub max_message_size_bytes: u64,
    /// Fault the pages of each new CommitLog segment in before it is used,
    /// so appends avoid page-fault cost at the price of writing the segment
    /// once as zeroes.
    pub warm_mapped_file_enable: bool,
    /// Verify body CRCs while recovering the CommitLog tail.
    #[serde(rename = "checkCRCOnRecover")]
    pub check_crc_on_recover: bool,
    /// Consume-queue engine (`storeType` is accepted as an alias).
    #[serde(alias = "storeType")]
    pub consume_queue_store: CqBackend,
    /// A second consume-queue engine fed by the same reput but serving no
    /// reads, to compare against (or migrate to) the serving one; empty:
    /// none. `config/cqBackends.json`, once written by a runtime flip,
    /// overrides this and `consumeQueueStore`.
    #[serde(
        deserialize_with = "optional_backend",
        serialize_with = "optional_backend_name"
    )]
    pub shadow_consume_queue_store: Option<CqBackend>,
    /// Build the key index (query by key / UNIQ_KEY).
    pub message_index_enable: bool,
    /// Hash slots per IndexFile.
    pub max_hash_slot_num: u32,
    /// Entries per IndexFile.
    pub max_index_num: u32,
    /// Largest number of consume-queue files kept mapped at once; idle ones
    /// are unmapped beyond it (`vm.max_map_count` is 65,530 by default).
    pub max_mapped_consume_queue_files: u32,
    /// Hours a CommitLog segment is kept.
    #[serde(rename = "fileReservedTime")]
    pub file_reserved_time_hours: u64,
    /// Hours of the day (`"04"`, `"01;13"`) when expired segments are deleted.
    pub delete_when: String,
    /// Disk use (percent) beyond which expired segments are deleted at once.
    #[serde(rename = "diskMaxUsedSpaceRatio")]
    pub disk_max_used_space_ratio_pct: u32,
    /// Disk use (percent) beyond which segments are deleted even before
    /// they expire (never the one being written or one reput has not passed).
    #[serde(rename = "diskSpaceCleanForciblyRatio")]
    pub disk_space_clean_forcibly_ratio_pct: u32,
    /// Disk use (percent) beyond which the store refuses writes (reads go
    /// on) until space is freed.
    #[serde(rename = "diskSpaceWarningLevelRatio")]
    pub disk_space_warning_level_ratio_pct: u32,
    /// Most CommitLog segments one clean pass deletes.
    pub delete_file_batch_max: u32,
    /// Interval between clean passes.
    #[serde(rename = "cleanResourceInterval")]
    pub clean_resource_interval_ms: u64,
    /// Build consume queues with the concurrent reput (RocketMQ 5.x).
    pub enable_build_consume_queue_concurrently: bool,
    /// Delay levels, e.g. "1s 5s 10s 30s 1m ... 2h".
    pub message_delay_level: String,
    /// Interval at which the schedule service persists its per-level
    /// progress (`config/delayOffset.json`).
    #[serde(rename = "flushDelayOffsetInterval")]
    pub flush_delay_offset_interval_ms: u64,
    /// Most messages one pull returns.
    pub max_transfer_count_on_message_in_memory: u32,
    /// Most bytes one pull returns.
    #[serde(rename = "maxTransferBytesOnMessageInMemory")]
    pub max_transfer_bytes_on_message_in_memory_bytes: u64,
    /// Most messages one pull returns when they are no longer likely in
    /// memory (see `accessMessageInMemoryMaxRatio`).
    pub max_transfer_count_on_message_in_disk: u32,
    /// Most bytes one pull returns when the messages are no longer likely
    /// in memory.
    #[serde(rename = "maxTransferBytesOnMessageInDisk")]
    pub max_transfer_bytes_on_message_in_disk_bytes: u64,
    /// A message whose CommitLog offset is more than this percentage of the
    /// machine's physical memory behind the CommitLog's end counts as on
    /// disk for the transfer limits (RocketMQ's rule).
    #[serde(rename = "accessMessageInMemoryMaxRatio")]
    pub access_message_in_memory_max_ratio_pct: u32,
    /// Remoting: largest request header; a larger one closes the connection
    /// before it is buffered.
    #[serde(rename = "maxHeaderBytes")]
    pub max_header_bytes: u64,
    /// Remoting: connections open at once on a listening port; further ones
    /// are closed at accept.
    pub max_connections: u32,
    /// Remoting: connections open at once from one peer IP.
    pub max_connections_per_address: u32,
    /// Remoting: bytes of frames still arriving, over all connections of a
    /// port; a connection whose next frame does not fit is closed.
    #[serde(rename = "maxUnfinishedFrameBytes")]
    pub max_unfinished_frame_bytes: u64,
    /// Remoting: answer bytes queued for one connection and not yet
    /// written; a client that lets more pile up is disconnected.
    #[serde(rename = "maxQueuedBytesPerConnection")]
    pub max_queued_bytes_per_connection: u64,
    /// RocksDB backend: shared block cache size.
    #[serde(rename = "rocksdbBlockCacheSize")]
    pub rocksdb_block_cache_size_bytes: u64,
    /// RocksDB backend: memtable size per column family.
    #[serde(rename = "rocksdbWriteBufferSize")]
    pub rocksdb_write_buffer_size_bytes: u64,
    /// RocksDB backend: memtables per column family before writes stall.
    pub rocksdb_max_write_buffer_number: u32,
    /// RocksDB backend: bloom filter bits per key (0 disables it).
    pub rocksdb_bloom_bits_per_key: u32,
    /// RocksDB backend: compaction style of the entry column family,
    /// `universal` (5.x) or `level`.
    pub rocksdb_compaction_style: String,
    /// RocksDB backend: background flush and compaction threads.
    pub rocksdb_max_background_jobs: u32,
    /// RocksDB backend: keep a write-ahead log. Off as in 5.x: with atomic
    /// flush, what reaches SST files is a consistent prefix, and whatever
    /// only lived in memtables is rebuilt from the CommitLog.
    pub rocksdb_wal_enabled: bool,
    /// RocksDB backend: most entries the group-commit writer puts in one
    /// WriteBatch.
    pub rocksdb_group_commit_max_entries: u32,
    /// RocksDB backend: dispatch batches queued for the writer before reput
    /// waits (back-pressure).
    pub rocksdb_group_commit_queue_capacity: u32,
    /// Timer messages (TIMER_DELIVER_MS / TIMER_DELAY_SEC / TIMER_DELAY_MS)
    /// are accepted and delivered; false refuses them (RocketMQ 5.x).
    pub timer_wheel_enable: bool,
    /// The timer-store engine: `wheel` (default) or `rocksdb`.
    pub timer_store_type: TimerStoreType,
    /// Timer slot width; rounded as RocketMQ's setter does (see
    /// [`StoreConfig::timer_precision`]).
    pub timer_precision_ms: u64,
    /// Longest accepted timer delay, seconds (3 days).
    pub timer_max_delay_sec: u64,
    /// Wheel: slots ahead of the write time a message may be filed; later
    /// ones are filed at a roll point and re-filed from there.
    pub timer_roll_window_slot: u64,
    /// Interval of the timer checkpoint (store flush, then progress).
    pub timer_flush_interval_ms: u64,
    /// Wheel: size of one timer-log file.
    #[serde(rename = "mappedFileSizeTimerLog")]
    pub mapped_file_size_timer_log_bytes: u64,
    /// Light message queues: a message's INNER_MULTI_DISPATCH `%LMQ%` queues
    /// take a queue offset each at append (INNER_MULTI_QUEUE_OFFSET), and
    /// `%LMQ%` names are served without topic config.
    pub enable_lmq: bool,
    /// Reput writes a unit into each light message queue a record names
    /// (needs `enableLmq` too).
    pub enable_multi_dispatch: bool,
    /// File backend: once more light message queues than this exist, sends
    /// with INNER_MULTI_DISPATCH and pulls of `%LMQ%` queues are refused
    /// (RocketMQ 4.x's guard against a folder per queue; the RocksDB backend
    /// has no such limit).
    pub max_lmq_consume_queue_num: u32,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            store_path_root_dir: PathBuf::from("./store"),
            store_path_commit_log: PathBuf::new(),
            mapped_file_size_commit_log_bytes: 1024 * 1024 * 1024,
            mapped_file_size_consume_queue_bytes: 300_000 * CQ_UNIT_SIZE,
            flush_disk_type: FlushDiskType::AsyncFlush,
            sync_flush_timeout_ms: 5_000,
            flush_interval_commit_log_ms: 500,
            flush_commit_log_least_pages: 4,
            flush_commit_log_thorough_interval_ms: 10_000,
            flush_interval_consume_queue_ms: 1_000,
            flush_consume_queue_least_pages: 2,
            flush_consume_queue_thorough_interval_ms: 60_000,
            max_message_size_bytes: 4 * 1024 * 1024,
            check_crc_on_recover: true,
            warm_mapped_file_enable: false,
            consume_queue_store: CqBackend::File,
            shadow_consume_queue_store: None,
            message_index_enable: true,
            max_hash_slot_num: 5_000_000,
            max_index_num: 20_000_000,
            max_mapped_consume_queue_files: 16_384,
            file_reserved_time_hours: 72,
            delete_when: "04".to_owned(),
            disk_max_used_space_ratio_pct: 75,
            disk_space_clean_forcibly_ratio_pct: 85,
            disk_space_warning_level_ratio_pct: 90,
            delete_file_batch_max: 10,
            clean_resource_interval_ms: 10_000,
            enable_build_consume_queue_concurrently: false,
            message_delay_level: crate::delay::DEFAULT_DELAY_LEVELS.to_owned(),
            flush_delay_offset_interval_ms: 10_000,
            max_transfer_count_on_message_in_memory: 32,
            max_transfer_bytes_on_message_in_memory_bytes: 256 * 1024,
            max_transfer_count_on_message_in_disk: 8,
            max_transfer_bytes_on_message_in_disk_bytes: 64 * 1024,
            access_message_in_memory_max_ratio_pct: 40,
            max_header_bytes: 256 * 1024,
            max_connections: 10_000,
            max_connections_per_address: 1_000,
            max_unfinished_frame_bytes: 256 * 1024 * 1024,
            max_queued_bytes_per_connection: 32 * 1024 * 1024,
            rocksdb_block_cache_size_bytes: 256 * 1024 * 1024,
            rocksdb_write_buffer_size_bytes: 128 * 1024 * 1024,
            rocksdb_max_write_buffer_number: 4,
            rocksdb_bloom_bits_per_key: 16,
            rocksdb_compaction_style: "universal".to_owned(),
            rocksdb_max_background_jobs: 4,
            rocksdb_wal_enabled: false,
            rocksdb_group_commit_max_entries: 16_384,
            rocksdb_group_commit_queue_capacity: 64,
            timer_wheel_enable: true,
            timer_store_type: TimerStoreType::Wheel,
            timer_precision_ms: 1_000,
            timer_max_delay_sec: 3 * 86_400,
            timer_roll_window_slot: 2 * 86_400,
            timer_flush_interval_ms: 1_000,
            mapped_file_size_timer_log_bytes: 100 * 1024 * 1024,
            enable_lmq: false,
            enable_multi_dispatch: false,
            max_lmq_consume_queue_num: 20_000,
        }
    }
}

impl StoreConfig {
    /// A default config rooted at `root`.
    pub fn with_root(root: impl Into<PathBuf>) -> Self {
        Self {
            store_path_root_dir: root.into(),
            ..Self::default()
        }
    }

    /// The hours of the day (0..=23, UTC) in `deleteWhen`, e.g. "04" or
    /// "01;13".
    pub fn delete_hours(&self) -> Result<Vec<u32>, ConfigError> {
        let mut hours = Vec::new();
        for part in self
            .delete_when
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            match part.parse::<u32>() {
                Ok(h) if h < 24 => hours.push(h),
                _ => {
                    return Err(ConfigError::new(
                        "deleteWhen",
                        format!("{part:?} is not an hour 0..=23 (e.g. \"04\" or \"01;13\")"),
                    ))
                }
            }
        }
        if hours.is_empty() {
            return Err(ConfigError::new("deleteWhen", "names no hour"));
        }
        Ok(hours)
    }

    /// The parsed `messageDelayLevel` table.
    pub fn delay_levels(&self) -> Result<crate::delay::DelayLevels, ConfigError> {
        crate::delay::DelayLevels::parse(&self.message_delay_level)
    }

    /// Checks every value; the error names the first bad key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.store_path_root_dir.as_os_str().is_empty() {
            return Err(ConfigError::new("storePathRootDir", "must not be empty"));
        }
        if self
            .store_path_commit_log
            .to_string_lossy()
            .contains(MULTI_PATH_SEPARATOR)
        {
            return Err(ConfigError::new(
                "storePathCommitLog",
                format!(
                    "{:?} names several folders; this broker keeps the CommitLog in one",
                    self.store_path_commit_log
                ),
            ));
        }
        let seg = self.mapped_file_size_commit_log_bytes;
        if !(4096..=i32::MAX as u64).contains(&seg) {
            return Err(ConfigError::new(
                "mappedFileSizeCommitLog",
                format!("{seg} is outside 4096..={}", i32::MAX),
            ));
        }
        let cq = self.mapped_file_size_consume_queue_bytes;
        if cq == 0 || !cq.is_multiple_of(CQ_UNIT_SIZE) || cq > i32::MAX as u64 {
            return Err(ConfigError::new(
                "mappedFileSizeConsumeQueue",
                format!("{cq} must be a positive multiple of {CQ_UNIT_SIZE} below 2^31"),
            ));
        }
        if self.max_message_size_bytes == 0 || self.max_message_size_bytes + 8 > seg {
            return Err(ConfigError::new(
                "maxMessageSize",
                format!(
                    "{} must be positive and leave 8 bytes in a {seg}-byte CommitLog segment",
                    self.max_message_size_bytes
                ),
            ));
        }
        for (key, v) in [
            ("syncFlushTimeout", self.sync_flush_timeout_ms),
            ("flushIntervalCommitLog", self.flush_interval_commit_log_ms),
            (
                "flushIntervalConsumeQueue",
                self.flush_interval_consume_queue_ms,
            ),
            (
                "flushDelayOffsetInterval",
                self.flush_delay_offset_interval_ms,
            ),
        ] {
            if v == 0 {
                return Err(ConfigError::new(key, "must be at least 1 ms"));
            }
        }
        self.delay_levels()?;
        if self.consume_queue_store == CqBackend::Memory {
            return Err(ConfigError::new(
                "consumeQueueStore",
                "memory is a test model; use file or rocksdb",
            ));
        }
        if let Some(shadow) = self.shadow_consume_queue_store {
            if shadow == self.consume_queue_store || shadow == CqBackend::Memory {
                return Err(ConfigError::new(
                    "shadowConsumeQueueStore",
                    format!(
                        "{shadow} cannot shadow {}: name the other engine (file or rocksdb), or leave it empty",
                        self.consume_queue_store
                    ),
                ));
            }
        }
        if self.max_hash_slot_num == 0 || self.max_index_num < 2 {
            return Err(ConfigError::new(
                "maxIndexNum",
                "maxHashSlotNum must be positive and maxIndexNum at least 2",
            ));
        }
        if self.max_mapped_consume_queue_files < 16 {
            return Err(ConfigError::new(
                "maxMappedConsumeQueueFiles",
                "must be at least 16",
            ));
        }
        if !(10..=95).contains(&self.disk_max_used_space_ratio_pct) {
            return Err(ConfigError::new(
                "diskMaxUsedSpaceRatio",
                "must be within 10..=95",
            ));
        }
        if !(10..=99).contains(&self.disk_space_clean_forcibly_ratio_pct) {
            return Err(ConfigError::new(
                "diskSpaceCleanForciblyRatio",
                "must be within 10..=99",
            ));
        }
        if !(10..=99).contains(&self.disk_space_warning_level_ratio_pct) {
            return Err(ConfigError::new(
                "diskSpaceWarningLevelRatio",
                "must be within 10..=99",
            ));
        }
        if self.delete_file_batch_max == 0 || self.clean_resource_interval_ms == 0 {
            return Err(ConfigError::new(
                "deleteFileBatchMax",
                "deleteFileBatchMax and cleanResourceInterval must be positive",
            ));
        }
        self.delete_hours()?;
        if !matches!(
            self.rocksdb_compaction_style.as_str(),
            "universal" | "level"
        ) {
            return Err(ConfigError::new(
                "rocksdbCompactionStyle",
                format!(
                    "{:?} is neither universal nor level",
                    self.rocksdb_compaction_style
                ),
            ));
        }
        if self.rocksdb_group_commit_max_entries == 0
            || self.rocksdb_group_commit_queue_capacity == 0
        {
            return Err(ConfigError::new(
                "rocksdbGroupCommitMaxEntries",
                "rocksdbGroupCommitMaxEntries and rocksdbGroupCommitQueueCapacity must be positive",
            ));
        }
        if self.rocksdb_max_write_buffer_number < 2
            || self.rocksdb_write_buffer_size_bytes < 1024 * 1024
        {
            return Err(ConfigError::new(
                "rocksdbWriteBufferSize",
                "needs at least 1 MiB and rocksdbMaxWriteBufferNumber at least 2",
            ));
        }
        for (key, v) in [
            (
                "maxTransferCountOnMessageInMemory",
                u64::from(self.max_transfer_count_on_message_in_memory),
            ),
            (
                "maxTransferCountOnMessageInDisk",
                u64::from(self.max_transfer_count_on_message_in_disk),
            ),
            (
                "maxTransferBytesOnMessageInMemory",
                self.max_transfer_bytes_on_message_in_memory_bytes,
            ),
            (
                "maxTransferBytesOnMessageInDisk",
                self.max_transfer_bytes_on_message_in_disk_bytes,
            ),
            ("maxHeaderBytes", self.max_header_bytes),
            ("maxConnections", u64::from(self.max_connections)),
            (
                "maxConnectionsPerAddress",
                u64::from(self.max_connections_per_address),
            ),
            ("maxUnfinishedFrameBytes", self.max_unfinished_frame_bytes),
            (
                "maxQueuedBytesPerConnection",
                self.max_queued_bytes_per_connection,
            ),
        ] {
            if v == 0 {
                return Err(ConfigError::new(key, "must be positive"));
            }
        }
        if self.timer_max_delay_sec == 0 || self.timer_max_delay_sec > i32::MAX as u64 {
            return Err(ConfigError::new(
                "timerMaxDelaySec",
                format!("{} is outside 1..={}", self.timer_max_delay_sec, i32::MAX),
            ));
        }
        if self.timer_flush_interval_ms == 0 {
            return Err(ConfigError::new(
                "timerFlushIntervalMs",
                "must be at least 1 ms",
            ));
        }
        let tl = self.mapped_file_size_timer_log_bytes;
        if !(4096..=i32::MAX as u64).contains(&tl) {
            return Err(ConfigError::new(
                "mappedFileSizeTimerLog",
                format!("{tl} is outside 4096..={}", i32::MAX),
            ));
        }
        if self.access_message_in_memory_max_ratio_pct > 100 {
            return Err(ConfigError::new(
                "accessMessageInMemoryMaxRatio",
                "is a percentage (0..=100)",
            ));
        }
        Ok(())
    }

    /// The timer slot width in use: `timerPrecisionMs` rounded down to 100,
    /// 200, 500 or 1,000 ms, as RocketMQ 5.x's setter does.
    pub fn timer_precision(&self) -> i64 {
        match self.timer_precision_ms {
            0..200 => 100,
            200..500 => 200,
            500..1_000 => 500,
            _ => 1_000,
        }
    }

    /// CommitLog folder: `storePathCommitLog`, else `commitlog` under the
    /// root.
    pub fn commit_log_dir(&self) -> PathBuf {
        if self.store_path_commit_log.as_os_str().is_empty() {
            self.store_path_root_dir.join("commitlog")
        } else {
            self.store_path_commit_log.clone()
        }
    }

    /// File consume-queue folder.
    pub fn consume_queue_dir(&self) -> PathBuf {
        self.store_path_root_dir.join("consumequeue")
    }

    /// RocksDB consume-queue folder.
    pub fn rocksdb_consume_queue_dir(&self) -> PathBuf {
        self.store_path_root_dir.join("rocksdb_consumequeue")
    }

    /// IndexFile folder.
    pub fn index_dir(&self) -> PathBuf {
        self.store_path_root_dir.join("index")
    }

    /// Units per consume-queue file.
    pub fn cq_units_per_file(&self) -> u64 {
        self.mapped_file_size_consume_queue_bytes / CQ_UNIT_SIZE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_rocketmq_defaults_and_valid() {
        let c = StoreConfig::default();
        c.validate().unwrap();
        assert_eq!(c.mapped_file_size_commit_log_bytes, 1 << 30);
        assert_eq!(c.mapped_file_size_consume_queue_bytes, 6_000_000);
        assert_eq!(c.max_message_size_bytes, 4 << 20);
        assert_eq!(c.cq_units_per_file(), 300_000);
    }

    #[test]
    fn camel_case_keys_load() {
        let c: StoreConfig = serde_json::from_str(
            r#"{"mappedFileSizeCommitLog": 65536, "flushDiskType": "SYNC_FLUSH",
                "storeType": "defaultRocksDB", "checkCRCOnRecover": false, "syncFlushTimeout": 10}"#,
        )
        .unwrap();
        assert_eq!(c.mapped_file_size_commit_log_bytes, 65536);
        assert_eq!(c.flush_disk_type, FlushDiskType::SyncFlush);
        assert_eq!(c.consume_queue_store, CqBackend::Rocksdb);
        assert!(!c.check_crc_on_recover);
        assert_eq!(c.sync_flush_timeout_ms, 10);
        let c: StoreConfig = serde_json::from_str(r#"{"consumeQueueStore": "file"}"#).unwrap();
        assert_eq!(c.consume_queue_store, CqBackend::File);
    }

    #[test]
    fn validate_names_the_key() {
        let mut c = StoreConfig {
            mapped_file_size_commit_log_bytes: 100,
            ..StoreConfig::default()
        };
        assert_eq!(c.validate().unwrap_err().key, "mappedFileSizeCommitLog");
        c.mapped_file_size_commit_log_bytes = 65536;
        assert_eq!(c.validate().unwrap_err().key, "maxMessageSize");
        c.max_message_size_bytes = 1024;
        c.mapped_file_size_consume_queue_bytes = 30;
        assert_eq!(c.validate().unwrap_err().key, "mappedFileSizeConsumeQueue");
        c.mapped_file_size_consume_queue_bytes = 2000;
        c.validate().unwrap();
        c.sync_flush_timeout_ms = 0;
        let e = c.validate().unwrap_err();
        assert_eq!(e.key, "syncFlushTimeout");
        assert!(e.to_string().contains("syncFlushTimeout"));
    }

    #[test]
    fn commit_log_dir_is_store_path_commit_log_when_set() {
        let mut c = StoreConfig::with_root("/data/store");
        assert_eq!(c.commit_log_dir(), PathBuf::from("/data/store/commitlog"));
        c.store_path_commit_log = PathBuf::from("/disk2/cl");
        c.validate().unwrap();
        assert_eq!(c.commit_log_dir(), PathBuf::from("/disk2/cl"));
        c.store_path_commit_log = PathBuf::from("/disk2/cl;/disk3/cl");
        assert_eq!(c.validate().unwrap_err().key, "storePathCommitLog");
    }

    #[test]
    fn delete_when_hours() {
        let mut c = StoreConfig::default();
        assert_eq!(c.delete_hours().unwrap(), vec![4]);
        c.delete_when = "01; 13".into();
        assert_eq!(c.delete_hours().unwrap(), vec![1, 13]);
        for bad in ["24", "x", "", ";"] {
            c.delete_when = bad.into();
            assert_eq!(c.validate().unwrap_err().key, "deleteWhen", "{bad:?}");
        }
        c.delete_when = "04".into();
        c.disk_space_clean_forcibly_ratio_pct = 100;
        assert_eq!(c.validate().unwrap_err().key, "diskSpaceCleanForciblyRatio");
    }
}
