//! The background range compaction that makes the compaction filter drop
//! entries below the CommitLog min. Requests coalesce: however often
//! `correct_min_offset` runs, at most one compaction is pending.

use std::sync::Arc;

use parking_lot::Mutex;
use rmq_common::cq::CqError;
use rmq_common::service::{Next, Service};
use rocksdb::{BottommostLevelCompaction, CompactOptions};

use crate::shared::Shared;

/// Handle to the compaction service: one pass per request.
pub(crate) struct Compactor {
    service: Mutex<Option<Service>>,
}

impl Compactor {
    pub fn spawn(shared: Arc<Shared>) -> Result<Self, CqError> {
        let service = Service::start("rmq-cq-rocks-compact", Next::WhenWoken, move || {
            compact_entries(&shared);
            Next::WhenWoken
        })
        .map_err(|e| CqError::io("spawn the rocksdb consume-queue compaction thread", e))?;
        Ok(Self {
            service: Mutex::new(Some(service)),
        })
    }

    /// Asks for a compaction of the entry column family.
    pub fn request(&self) {
        if let Some(service) = self.service.lock().as_ref() {
            service.wake();
        }
    }

    /// Stops the thread after the compaction in progress, if any; a pending
    /// one is dropped (compaction is never needed for correctness: readers
    /// use the corrected min offsets, and automatic compactions run the
    /// filter too). Idempotent.
    pub fn stop(&self) {
        if let Some(service) = self.service.lock().take() {
            service.stop("consume queue closed");
        }
    }
}

/// Compacts the whole entry column family so every SST file passes through
/// the filter. Runs beside automatic compactions (not exclusive) so writes do
/// not stall behind it.
pub(crate) fn compact_entries(shared: &Shared) {
    let guard = shared.db.read();
    let Some(db) = guard.as_ref() else { return };
    let Ok(cf) = db.entries() else { return };
    let mut opts = CompactOptions::default();
    opts.set_exclusive_manual_compaction(false);
    // The bottommost level holds most old entries; without Force, files
    // already there would only be filtered by their next natural rewrite.
    opts.set_bottommost_level_compaction(BottommostLevelCompaction::Force);
    let started = std::time::Instant::now();
    db.db
        .compact_range_cf_opt(cf, None::<&[u8]>, None::<&[u8]>, &opts);
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "compacted the consume-queue entries"
    );
}
