//! Gauges of each consume-queue backend of the store, serving and shadow,
//! labelled `backend` and `role`: files and maps held, memory, bytes on
//! disk, how far each has written and how far the shadow lags.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use metrics::Label;
use rmq_common::config::CqBackend;

use super::Sampler;
use crate::metrics::{names, Role};
use rmq_store::{backend_dir, disk_use};

/// How often a large backend folder (at least [`MANY_FILES`]) is walked
/// for its size; a smaller one is walked at every sample.
pub(super) const DISK_BYTES_EVERY: Duration = Duration::from_secs(15);
/// Files beyond which a walk is too dear to repeat every second.
const MANY_FILES: u64 = 10_000;

/// Last walk of each backend's folder: when, files and bytes found.
#[derive(Debug, Default)]
pub(super) struct DiskBytes(HashMap<CqBackend, (Instant, u64, u64)>);

impl Sampler {
    pub(super) fn consume_queues(&self) {
        let serving = self.ctx.store.serving_backend();
        metrics::gauge!(
            names::LMQ_OFFSETS_HELD,
            vec![self.broker_label(), Label::new("backend", serving.as_str())]
        )
        .set(self.ctx.store.commit_log().lmq_offsets_held() as f64);
        let status = self.ctx.store.cq_status();
        let serving_at = status
            .iter()
            .find(|s| s.role == Role::Serving)
            .map_or(0, |s| s.written_to);
        for s in status {
            let labels = vec![
                self.broker_label(),
                Label::new("backend", s.backend.as_str()),
                Label::new("role", s.role.as_str()),
            ];
            let gauge = |name: &'static str, v: f64| metrics::gauge!(name, labels.clone()).set(v);
            let st = &s.stats;
            gauge(names::CQ_OPEN_FILES, st.open_files as f64);
            gauge(names::CQ_MAPPED_FILES, st.mapped_files as f64);
            gauge(
                names::CQ_MEMORY_BYTES,
                (st.mapped_bytes
                    + st.memtable_bytes
                    + st.block_cache_usage_bytes
                    + st.table_readers_bytes) as f64,
            );
            gauge(names::CQ_QUEUES, st.queues as f64);
            gauge(names::CQ_LMQ_QUEUES, st.lmq_queues as f64);
            gauge(names::CQ_DISPATCHED_OFFSET, s.written_to as f64);
            gauge(names::CQ_BEHIND_BYTES, s.behind_bytes as f64);
            if s.role == Role::Shadow {
                gauge(
                    names::CQ_SHADOW_LAG_BYTES,
                    (serving_at - s.written_to).max(0) as f64,
                );
                metrics::counter!(names::CQ_SHADOW_DROPPED_BATCHES_TOTAL, labels.clone())
                    .absolute(s.dropped_batches);
            }
            if let Some(bytes) = self.disk_bytes_of(s.backend) {
                gauge(names::CQ_DISK_BYTES, bytes as f64);
            }
            if s.backend == CqBackend::Rocksdb {
                gauge(names::ROCKSDB_MEMTABLE_BYTES, st.memtable_bytes as f64);
                gauge(
                    names::ROCKSDB_TABLE_READERS_BYTES,
                    st.table_readers_bytes as f64,
                );
                gauge(
                    names::ROCKSDB_PENDING_COMPACTION_BYTES,
                    st.pending_compaction_bytes as f64,
                );
                gauge(
                    names::ROCKSDB_RUNNING_COMPACTIONS,
                    st.running_compactions as f64,
                );
                gauge(
                    names::ROCKSDB_BLOCK_CACHE_USAGE_BYTES,
                    st.block_cache_usage_bytes as f64,
                );
                gauge(names::ROCKSDB_WRITE_STALLED, st.write_stalled as f64);
                crate::metrics::float::set(
                    names::ROCKSDB_WRITE_STALL_SECONDS_TOTAL,
                    "Time RocksDB spent stalling writes, seconds.",
                    &labels,
                    st.write_stall_micros as f64 / 1e6,
                );
            }
        }
    }

    /// The backend's folder size (a large folder is walked at most every
    /// [`DISK_BYTES_EVERY`]).
    fn disk_bytes_of(&self, backend: CqBackend) -> Option<u64> {
        let dir = backend_dir(self.ctx.store.config(), backend)?;
        let mut cache = self.disk_bytes.lock();
        match cache.0.get(&backend) {
            Some((at, files, bytes)) if *files >= MANY_FILES && at.elapsed() < DISK_BYTES_EVERY => {
                Some(*bytes)
            }
            _ => {
                let (files, bytes) = disk_use(&dir);
                cache.0.insert(backend, (Instant::now(), files, bytes));
                Some(bytes)
            }
        }
    }
}
