//! The background range compaction that makes the compaction filter drop
//! entries below the CommitLog min. Requests coalesce: however often
//! `correct_min_offset` runs, at most one compaction is pending.

use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};
use rmq_common::cq::CqError;
use rocksdb::{BottommostLevelCompaction, CompactOptions};

use crate::db::Shared;

#[derive(Default)]
struct Flags {
    requested: bool,
    stop: bool,
}

/// Handle to the compaction thread.
pub(crate) struct Compactor {
    signal: Arc<(Mutex<Flags>, Condvar)>,
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl Compactor {
    pub fn spawn(shared: Arc<Shared>) -> Result<Self, CqError> {
        let signal = Arc::new((Mutex::new(Flags::default()), Condvar::new()));
        let thread_signal = Arc::clone(&signal);
        let handle = std::thread::Builder::new()
            .name("rmq-cq-rocks-compact".into())
            .spawn(move || run(&shared, &thread_signal))
            .map_err(|e| CqError::io("spawn the rocksdb consume-queue compaction thread", e))?;
        Ok(Self {
            signal,
            handle: Mutex::new(Some(handle)),
        })
    }

    /// Asks for a compaction of the entry column family.
    pub fn request(&self) {
        let (flags, cv) = &*self.signal;
        flags.lock().requested = true;
        cv.notify_one();
    }

    /// Stops the thread after the compaction in progress, if any; a pending
    /// one is dropped (compaction is never needed for correctness: readers
    /// use the corrected min offsets, and automatic compactions run the
    /// filter too). Idempotent.
    pub fn stop(&self) {
        let (flags, cv) = &*self.signal;
        flags.lock().stop = true;
        cv.notify_one();
        if let Some(handle) = self.handle.lock().take() {
            if handle.join().is_err() {
                tracing::error!("the rocksdb consume-queue compaction thread panicked");
            }
        }
    }
}

fn run(shared: &Shared, signal: &(Mutex<Flags>, Condvar)) {
    let (flags, cv) = signal;
    loop {
        {
            let mut f = flags.lock();
            while !f.requested && !f.stop {
                cv.wait(&mut f);
            }
            if f.stop {
                return;
            }
            f.requested = false;
        }
        compact_entries(shared);
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
