//! Prometheus metrics: the process-wide recorder, the names (ours and
//! RocketMQ 5.x's), the per-store handles (`rmq_store::metrics`, re-exported),
//! and the `/metrics` endpoint. The sampler that reads the broker's state into gauges is
//! `crate::sampler`, beside the broker that owns that state.
//!
//! Every series carries `broker` and `backend` labels, so two brokers side
//! by side (or in one test process) are told apart. Label values come from
//! bounded sets only.

mod describe;
pub mod float;
mod http;
pub mod items;
pub mod lmq_fold;
pub mod outcomes;
pub mod process;
pub mod rocketmq;
mod rocketmq_help;
pub mod rocketmq_names;
pub mod rpc;
pub mod tps;

pub use http::serve_metrics;
pub use items::{StatsItems, StatsKind};
pub use lmq_fold::LmqFold;
pub use rmq_store::metrics::{
    base_labels, topic_class, LaneMetrics, Role, StoreMetrics, Totals, TOPIC_CLASSES,
};
pub use rocketmq::RocketmqMeters;
pub use tps::BrokerStats;

use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use metrics_util::MetricKindMask;

/// Metric names.
pub mod names {
    pub use rmq_store::metrics::names::*;

    /// Bytes appended but not yet dispatched.
    pub const DISPATCH_BEHIND_BYTES: &str = "rmq_dispatch_behind_bytes";
    /// Age of the oldest undispatched record.
    pub const DISPATCH_BEHIND_SECONDS: &str = "rmq_dispatch_behind_seconds";
    /// Reput position.
    pub const REPUT_FROM_OFFSET: &str = "rmq_reput_from_offset";
    /// CommitLog end.
    pub const COMMITLOG_MAX_OFFSET: &str = "rmq_commitlog_max_offset";
    /// CommitLog start.
    pub const COMMITLOG_MIN_OFFSET: &str = "rmq_commitlog_min_offset";
    /// CommitLog bytes a shadow backend has not written yet (behind the
    /// serving one).
    pub const CQ_SHADOW_LAG_BYTES: &str = "rmq_cq_shadow_lag_bytes";
    /// CommitLog offset a backend has written up to.
    pub const CQ_DISPATCHED_OFFSET: &str = "rmq_cq_dispatched_offset";
    /// Bytes a consume-queue backend holds in memory (maps, memtables,
    /// block cache).
    pub const CQ_MEMORY_BYTES: &str = "rmq_cq_memory_bytes";
    /// Bytes a consume-queue backend's folder occupies on disk.
    pub const CQ_DISK_BYTES: &str = "rmq_cq_disk_bytes";
    /// Queues a consume-queue backend knows.
    pub const CQ_QUEUES: &str = "rmq_cq_queues";
    /// Of those, light message queues (`%LMQ%`).
    pub const CQ_LMQ_QUEUES: &str = "rmq_cq_lmq_queues";
    /// Light message queues whose next offset the put path holds in memory
    /// (those appended to lately; bounded, see `LMQ_OFFSETS_KEPT`).
    pub const LMQ_OFFSETS_HELD: &str = "rmq_lmq_offsets_held";
    /// CommitLog bytes a consume-queue backend has not written yet.
    pub const CQ_BEHIND_BYTES: &str = "rmq_cq_behind_bytes";
    /// Batches the shadow's queue dropped (it read them from the CommitLog
    /// instead).
    pub const CQ_SHADOW_DROPPED_BATCHES_TOTAL: &str = "rmq_cq_shadow_dropped_batches_total";
    /// Consume-queue files open / mapped (file backend).
    pub const CQ_OPEN_FILES: &str = "rmq_cq_open_files";
    /// Consume-queue files mapped.
    pub const CQ_MAPPED_FILES: &str = "rmq_cq_mapped_files";
    /// RocksDB memtables.
    pub const ROCKSDB_MEMTABLE_BYTES: &str = "rmq_rocksdb_memtable_bytes";
    /// RocksDB compaction debt.
    pub const ROCKSDB_PENDING_COMPACTION_BYTES: &str = "rmq_rocksdb_pending_compaction_bytes";
    /// RocksDB compactions running now.
    pub const ROCKSDB_RUNNING_COMPACTIONS: &str = "rmq_rocksdb_running_compactions";
    /// RocksDB block cache.
    pub const ROCKSDB_BLOCK_CACHE_USAGE_BYTES: &str = "rmq_rocksdb_block_cache_usage_bytes";
    /// RocksDB table readers (memory of open SST files outside the block
    /// cache; index and filter blocks are kept in the cache).
    pub const ROCKSDB_TABLE_READERS_BYTES: &str = "rmq_rocksdb_table_readers_bytes";
    /// 1 while RocksDB stalls writes.
    pub const ROCKSDB_WRITE_STALLED: &str = "rmq_rocksdb_write_stalled";
    /// Time RocksDB spent stalling writes.
    pub const ROCKSDB_WRITE_STALL_SECONDS_TOTAL: &str = "rmq_rocksdb_write_stall_seconds_total";
    /// Consumer lag per (group, topic), capped.
    pub const CONSUMER_LAG_MESSAGES: &str = "rmq_consumer_lag_messages";
    /// Delayed messages waiting, per level.
    pub const SCHEDULE_PENDING: &str = "rmq_schedule_pending";
    /// Timer messages filed and not yet delivered (label `timer_store`:
    /// wheel or rocksdb).
    pub const TIMER_BACKLOG: &str = "rmq_timer_backlog";
    /// How far timer delivery is behind the clock: now minus the end of
    /// the next slot to deliver (0 when it is not due).
    pub const TIMER_DUE_LAG_SECONDS: &str = "rmq_timer_due_lag_seconds";
    /// Timer-topic messages stored but not yet filed in the timer store.
    pub const TIMER_ENQUEUE_LAG: &str = "rmq_timer_enqueue_lag";
    /// Timer messages put into their real topics.
    pub const TIMER_DELIVERED_TOTAL: &str = "rmq_timer_delivered_total";
    /// Timer messages dropped because a recall named them.
    pub const TIMER_RECALLED_TOTAL: &str = "rmq_timer_recalled_total";
    /// Bytes the timer store holds on disk.
    pub const TIMER_DISK_BYTES: &str = "rmq_timer_disk_bytes";
    /// Popped messages neither acked nor revived yet, per POP-state form.
    pub const POP_IN_FLIGHT: &str = "rmq_pop_in_flight";
    /// Messages handed out by POP_MESSAGE.
    pub const POP_MESSAGES_TOTAL: &str = "rmq_pop_messages_total";
    /// Offsets acked (ACK_MESSAGE, BATCH_ACK_MESSAGE).
    pub const POP_ACKS_TOTAL: &str = "rmq_pop_acks_total";
    /// Messages brought back through retry topics.
    pub const POP_REVIVED_TOTAL: &str = "rmq_pop_revived_total";
    /// How late the oldest due pop is, seconds.
    pub const POP_REVIVE_DUE_LAG_SECONDS: &str = "rmq_pop_revive_due_lag_seconds";
    /// Half messages not resolved.
    pub const TRANSACTION_HALF_PENDING: &str = "rmq_transaction_half_pending";
    /// Check-backs sent.
    pub const TRANSACTION_CHECKS_TOTAL: &str = "rmq_transaction_checks_total";
    /// Messages stored per second over the last minute, by topic (the 50
    /// busiest; the rest summed as `topic="_other"`).
    pub const TOPIC_PUT_TPS: &str = "rmq_topic_put_tps";
    /// Messages pulled per second over the last minute, by (group, topic)
    /// (the 50 busiest; the rest summed as `_other`).
    pub const GROUP_GET_TPS: &str = "rmq_group_get_tps";
    /// Messages stored since UTC midnight.
    pub const PUT_MESSAGES_TODAY: &str = "rmq_put_messages_today";
    /// Messages stored yesterday (UTC).
    pub const PUT_MESSAGES_YESTERDAY: &str = "rmq_put_messages_yesterday";
    /// Messages pulled since UTC midnight.
    pub const GET_MESSAGES_TODAY: &str = "rmq_get_messages_today";
    /// Messages pulled yesterday (UTC).
    pub const GET_MESSAGES_YESTERDAY: &str = "rmq_get_messages_yesterday";
    /// Slaves connected to this master.
    pub const HA_SLAVES: &str = "rmq_ha_slaves";
    /// 1 while this broker is a master (taking writes), 0 as a slave or
    /// fenced (controller mode: no master named yet).
    pub const HA_IS_MASTER: &str = "rmq_ha_is_master";
    /// Controller mode: the master epoch of this broker's role.
    pub const CONTROLLER_MASTER_EPOCH: &str = "rmq_controller_master_epoch";
    /// Controller mode, on the master: members of the SyncStateSet (the
    /// master included).
    pub const CONTROLLER_SYNC_STATE_SET_SIZE: &str = "rmq_controller_sync_state_set_size";
    /// Controller mode: role changes this broker took (each follows an
    /// election).
    pub const CONTROLLER_ROLE_CHANGES_TOTAL: &str = "rmq_controller_role_changes_total";
    /// Slaves in sync (connected and less than haMaxGapNotInSync behind):
    /// what SYNC_MASTER sends wait on.
    pub const HA_IN_SYNC_SLAVES: &str = "rmq_ha_in_sync_slaves";
    /// The highest CommitLog offset each slave acknowledged (label `slave`:
    /// its address as the master sees it).
    pub const HA_ACKED_OFFSET: &str = "rmq_ha_slave_acked_offset";
    /// CommitLog bytes each slave has not acknowledged yet (label `slave`).
    pub const HA_LAG_BYTES: &str = "rmq_ha_replication_lag_bytes";
    /// Age of the oldest record each slave has not acknowledged (label
    /// `slave`).
    pub const HA_LAG_SECONDS: &str = "rmq_ha_replication_lag_seconds";
    /// CommitLog bytes streamed to slaves (rate: HA bytes/s).
    pub const HA_SENT_BYTES_TOTAL: &str = "rmq_ha_sent_bytes_total";
    /// Client connections open.
    pub const CONNECTIONS: &str = "rmq_connections";
    /// Stored messages a service passed over because it can never write
    /// them again (label `service`: schedule, transaction); each is
    /// described in `<storePathRootDir>/poison/<service>.jsonl`.
    pub const POISON_MESSAGES_TOTAL: &str = "rmq_poison_messages_total";
    /// Used fraction of the store's file system.
    pub const STORE_DISK_USED_RATIO: &str = "rmq_store_disk_used_ratio";
    /// Open file descriptors of the process.
    pub const OPEN_FILES: &str = "rmq_open_files";
    /// Memory maps of the process.
    pub const MEMORY_MAPS: &str = "rmq_memory_maps";
    /// Resident memory of the process.
    pub const PROCESS_RESIDENT_BYTES: &str = "rmq_process_resident_bytes";
    /// User plus system CPU time of the process (Prometheus' standard
    /// process metric name), seconds.
    pub const PROCESS_CPU_SECONDS_TOTAL: &str = "process_cpu_seconds_total";
}

/// Latency buckets, seconds: 10 µs to 10 s.
const LATENCY_BUCKETS: &[f64] = &[
    0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025,
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Batch-size buckets, units.
const BATCH_BUCKETS: &[f64] = &[
    1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 16384.0,
];
/// Gauges not set for this long disappear (a consumer group that left the
/// top of the lag list, a broker that stopped in a test process).
const GAUGE_IDLE: Duration = Duration::from_secs(30);

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Installs the process-wide Prometheus recorder once and returns its
/// handle; `None` if another recorder was installed first.
pub fn install() -> Option<&'static PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .idle_timeout(MetricKindMask::GAUGE, Some(GAUGE_IDLE))
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY_BUCKETS)
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full(rmq_controller::metrics::names::ELECTION_SECONDS.into()),
                        rmq_controller::metrics::ELECTION_BUCKETS,
                    )
                })
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full(names::CQ_WRITE_BATCH_SIZE.into()),
                        BATCH_BUCKETS,
                    )
                })
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full(rocketmq_names::MESSAGE_SIZE.into()),
                        rocketmq_names::MESSAGE_SIZE_BUCKETS,
                    )
                })
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full(rocketmq_names::RPC_LATENCY_MS.into()),
                        rocketmq_names::RPC_LATENCY_BUCKETS,
                    )
                })
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full(rocketmq_names::TOPIC_CREATE_EXECUTION_TIME_MS.into()),
                        rocketmq_names::TOPIC_CREATE_BUCKETS,
                    )
                })
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full(
                            rocketmq_names::CONSUMER_GROUP_CREATE_EXECUTION_TIME_MS.into(),
                        ),
                        rocketmq_names::TOPIC_CREATE_BUCKETS,
                    )
                })
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full(rocketmq_names::FINISH_MESSAGE_LATENCY_MS.into()),
                        rocketmq_names::FINISH_MESSAGE_LATENCY_BUCKETS,
                    )
                });
            let recorder = match builder {
                Ok(b) => b.build_recorder(),
                Err(e) => {
                    tracing::error!(error = %e, "metrics recorder set-up failed");
                    return None;
                }
            };
            let handle = recorder.handle();
            match metrics::set_global_recorder(recorder) {
                Ok(()) => {
                    describe::describe_all();
                    Some(handle)
                }
                Err(e) => {
                    tracing::warn!(error = %e, "a metrics recorder is already installed; /metrics stays empty");
                    None
                }
            }
        })
        .as_ref()
}

/// The lines of a rendered scrape that belong to `broker` (series with its
/// label, and the HELP/TYPE comments), so a process running several brokers
/// (tests) serves each its own.
pub fn render_for(handle: &PrometheusHandle, broker: &str) -> String {
    render_matching(handle, &[format!("broker=\"{broker}\"")])
}

/// The lines of a rendered scrape whose labels contain one of `needles`
/// (`key="value"`; a broker's `broker="a"`, a controller replica's
/// `address="host:port"`), and the HELP/TYPE comments.
pub fn render_matching(handle: &PrometheusHandle, needles: &[String]) -> String {
    let text = handle.render();
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        if line.starts_with('#') || needles.iter().any(|n| line.contains(n.as_str())) {
            out.push_str(line);
            out.push('\n');
        }
    }
    for needle in needles {
        out.push_str(&float::render(needle));
    }
    out
}
