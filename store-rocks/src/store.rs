//! [`RocksConsumeQueueStore`]: opening, closing, and the
//! [`ConsumeQueueStore`] implementation, which delegates to the writer
//! (puts), `maintain` (truncation, min correction, deletion) and `search`.

use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use rmq_common::config::CqBackend;
use rmq_common::cq::{
    AsQueueKey, Boundary, ConsumeQueueStore, CqError, CqPut, CqStats, CqUnit, PutCallback,
    QueueKey, StoreTimeSource,
};
use rmq_common::names::is_lmq;
use rmq_common::StoreConfig;
use rocksdb::{FlushOptions, ReadOptions};

use crate::compact::Compactor;
use crate::db::Db;
use crate::error::engine_ctx;
use crate::key::{self, EntryValue};
use crate::shared::Shared;
use crate::writer::{PutRequest, Writer};
use crate::{maintain, offsets, options, search, stats};

/// The RocksDB consume queue (RocketMQ 5.x layout) under
/// `<store root>/rocksdb_consumequeue`.
///
/// Puts go through a group-commit thread (see `put_async`); reads take min
/// and max from an in-memory cache and entries with one iterator seek. Callbacks
/// of `put_async` run on the writer thread and must not block on this store.
pub struct RocksConsumeQueueStore {
    shared: Arc<Shared>,
    writer: Writer,
    compactor: Compactor,
}

impl std::fmt::Debug for RocksConsumeQueueStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksConsumeQueueStore")
            .field("dir", &self.shared.dir)
            .field("dispatched", &self.shared.offsets.read().dispatched)
            .field("closed", &self.shared.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl RocksConsumeQueueStore {
    /// Opens (creating if needed) the database at
    /// `config.rocksdb_consume_queue_dir()`, loads every queue's min and max
    /// and the dispatch checkpoint (0 if none was persisted), and starts the
    /// writer and compaction threads.
    pub fn open(config: &StoreConfig) -> Result<Self, CqError> {
        // Only the keys this backend reads are checked here (options.rs):
        // the rest of the config is the broker's business.
        options::check(config)?;
        let dir = config.rocksdb_consume_queue_dir();
        rmq_common::meta_file::create_dir_all_durable(&dir)
            .map_err(|e| CqError::io(format!("create {}", dir.display()), e))?;
        let commit_log_min = Arc::new(AtomicI64::new(0));
        let db = Db::open(&dir, options::build(config, Arc::clone(&commit_log_min))?)?;
        let loaded = offsets::load(&db)?;
        commit_log_min.store(loaded.commit_log_min, Ordering::Release);
        tracing::info!(
            dir = %dir.display(),
            queues = loaded.cache.queues.len(),
            dispatched = loaded.cache.dispatched,
            lmqs = loaded.cache.lmq_total,
            lmq_filter_bytes = loaded.lmqs.bytes(),
            "opened the rocksdb consume queue"
        );
        let shared = Arc::new(Shared::new(db, loaded, commit_log_min, dir));
        let writer = Writer::spawn(
            Arc::clone(&shared),
            config.rocksdb_group_commit_queue_capacity as usize,
            config.rocksdb_group_commit_max_entries as usize,
        )?;
        let compactor = match Compactor::spawn(Arc::clone(&shared)) {
            Ok(c) => c,
            Err(e) => {
                writer.stop();
                return Err(e);
            }
        };
        Ok(Self {
            shared,
            writer,
            compactor,
        })
    }

    /// The database folder.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    #[cfg(test)]
    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Flushes both column families together so SST files hold everything
    /// written so far, the checkpoint included.
    fn flush_db(db: &Db) -> Result<(), CqError> {
        let mut fo = FlushOptions::default();
        fo.set_wait(true);
        db.db
            .flush_cfs_opt(&[db.entries()?, db.offsets()?], &fo)
            .map_err(engine_ctx("flush the rocksdb consume queue"))
    }

    /// Stops accepting calls, writes everything queued, flushes (unless
    /// poisoned), stops the threads and closes the database.
    fn shut_down(&self) -> Result<(), CqError> {
        if self.shared.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // Drains the queue first: nothing a caller queued is lost.
        self.writer.stop();
        self.compactor.stop();
        let flushed = match self.shared.check_writable() {
            Ok(()) => self.shared.with_db(Self::flush_db),
            Err(e) => Err(e),
        };
        // Dropping the database releases its files and its LOCK, so the same
        // folder can be opened again.
        drop(self.shared.db.write().take());
        flushed
    }

    /// A queue's state from the cache, or for an LMQ the cache does not
    /// hold from the database; without the lazy min correction (callers that
    /// read the min go through [`maintain::queue_for_read`]).
    fn state_uncorrected(
        &self,
        topic: &str,
        queue_id: i32,
    ) -> Result<Option<crate::offsets::QueueState>, CqError> {
        let cached = self
            .shared
            .offsets
            .read()
            .queues
            .get(&(topic, queue_id) as &dyn AsQueueKey)
            .copied();
        match cached {
            None if is_lmq(topic) => self.shared.with_db(|db| {
                offsets::load_lmq(&self.shared.lmqs, db, &QueueKey::new(topic, queue_id))
            }),
            other => Ok(other),
        }
    }

    fn queue(
        &self,
        db: &Db,
        topic: &str,
        queue_id: i32,
    ) -> Result<Option<crate::offsets::QueueState>, CqError> {
        maintain::queue_for_read(&self.shared, db, &QueueKey::new(topic, queue_id))
    }
}

impl Drop for RocksConsumeQueueStore {
    fn drop(&mut self) {
        if let Err(e) = self.shut_down() {
            tracing::warn!(dir = %self.shared.dir.display(), error = %e, "closing the rocksdb consume queue on drop failed");
        }
    }
}

impl ConsumeQueueStore for RocksConsumeQueueStore {
    fn backend(&self) -> CqBackend {
        CqBackend::Rocksdb
    }

    fn put(&self, batch: &[CqPut], dispatched_to: i64) -> Result<(), CqError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let done: PutCallback = Box::new(move |r| {
            let _ = tx.send(r);
        });
        self.put_async(batch.to_vec(), dispatched_to, done);
        // A dropped callback means the writer thread died mid-batch.
        rx.recv().unwrap_or_else(|_| {
            Err(CqError::Poisoned {
                reason: "the group-commit writer thread stopped".into(),
            })
        })
    }

    /// Queues the batch for the group-commit thread, blocking while its
    /// queue (`rocksdbGroupCommitQueueCapacity` batches) is full. `done` is
    /// called on that thread after the write and the cache update.
    fn put_async(&self, batch: Vec<CqPut>, dispatched_to: i64, done: PutCallback) {
        if self.shared.closed.load(Ordering::Acquire) {
            done(Err(CqError::Closed));
            return;
        }
        self.writer.submit(PutRequest {
            units: batch,
            dispatched_to,
            done,
        });
    }

    fn get(
        &self,
        topic: &str,
        queue_id: i32,
        from: i64,
        max_count: usize,
        out: &mut Vec<CqUnit>,
    ) -> Result<(), CqError> {
        self.shared.check_open()?;
        self.shared.with_db(|db| {
            let Some(q) = self.queue(db, topic, queue_id)? else {
                return Ok(());
            };
            CqError::check_not_compacted(topic, queue_id, from, q.min)?;
            // Bounded by the cached max: entries written but not yet
            // published (or being truncated) stay invisible.
            let available = usize::try_from(q.max_offset() - from).unwrap_or(0);
            let count = max_count.min(available);
            if count == 0 {
                return Ok(());
            }
            // One seek and then `next` along the queue's contiguous keys:
            // cheaper than a point lookup per key once a pull asks for more
            // than a few entries.
            let end = from.saturating_add(count as i64);
            let mut ro = ReadOptions::default();
            ro.set_iterate_upper_bound(key::entry_key(topic, queue_id, end));
            let mut it = db.db.raw_iterator_cf_opt(db.entries()?, ro);
            it.seek(key::entry_key(topic, queue_id, from));
            let mut next = from;
            while next < end && it.valid() {
                let (Some(k), Some(v)) = (it.key(), it.value()) else {
                    break;
                };
                // Dense read: stop at the first missing entry.
                if key::entry_key_offset(k) != Some(next) {
                    return Ok(());
                }
                let e = EntryValue::decode(v)?;
                out.push(CqUnit {
                    queue_offset: next,
                    phy_offset: e.phy_offset,
                    size: e.size,
                    tags_code: e.tags_code,
                });
                next += 1;
                it.next();
            }
            it.status()
                .map_err(engine_ctx("iterate consume-queue entries"))
        })
    }

    fn min_offset(&self, topic: &str, queue_id: i32) -> Result<i64, CqError> {
        self.shared.check_open()?;
        self.shared
            .with_db(|db| Ok(self.queue(db, topic, queue_id)?.map_or(0, |q| q.min)))
    }

    fn max_offset(&self, topic: &str, queue_id: i32) -> Result<i64, CqError> {
        self.shared.check_open()?;
        // A pending min correction never changes the max: a queue it empties
        // gets min = max = the old max.
        Ok(self
            .state_uncorrected(topic, queue_id)?
            .map_or(0, |q| q.max_offset()))
    }

    fn dispatched_phy_offset(&self) -> Result<i64, CqError> {
        self.shared.check_open()?;
        Ok(self.shared.offsets.read().dispatched)
    }

    fn truncate_from_phy(&self, phy_offset: i64) -> Result<(), CqError> {
        self.shared.check_open()?;
        self.writer.barrier()?;
        self.shared
            .with_db(|db| maintain::truncate_from_phy(&self.shared, db, phy_offset))
    }

    /// Records the CommitLog min (persisted, read by the compaction filter)
    /// and requests a background compaction. Queue min offsets follow lazily,
    /// on their next read or write.
    fn correct_min_offset(&self, commit_log_min: i64) -> Result<(), CqError> {
        self.shared.check_open()?;
        let raised = self
            .shared
            .with_db(|db| maintain::raise_commit_log_min(&self.shared, db, commit_log_min))?;
        if raised {
            self.compactor.request();
        }
        Ok(())
    }

    /// Binary search over `[min, max)` on the store timestamps kept in the
    /// entries; `times` is not needed.
    fn offset_by_time(
        &self,
        topic: &str,
        queue_id: i32,
        timestamp_ms: i64,
        boundary: Boundary,
        _times: &dyn StoreTimeSource,
    ) -> Result<i64, CqError> {
        self.shared.check_open()?;
        self.shared.with_db(|db| {
            let k = QueueKey::new(topic, queue_id);
            let Some(q) = maintain::queue_for_read(&self.shared, db, &k)? else {
                return Ok(0);
            };
            let (lo, hi) = (q.min, q.max_offset());
            Ok(match boundary {
                Boundary::Lower => {
                    search::first_where(db, &k, lo, hi, |v| v.store_timestamp >= timestamp_ms)?
                        .map_or(hi, |(o, _)| o)
                }
                Boundary::Upper => {
                    search::last_where(db, &k, lo, hi, |v| v.store_timestamp <= timestamp_ms)?
                        .map_or(lo, |(o, _)| o)
                }
            })
        })
    }

    /// Waits until every queued put is written, then flushes both column
    /// families atomically: SST files then hold everything put so far and
    /// the checkpoint that covers it.
    fn flush(&self) -> Result<(), CqError> {
        self.shared.check_open()?;
        self.shared.check_writable()?;
        self.writer.barrier()?;
        self.shared.check_writable()?;
        self.shared.with_db(Self::flush_db)
    }

    fn delete_topic(&self, topic: &str) -> Result<(), CqError> {
        self.shared.check_open()?;
        self.writer.barrier()?;
        self.shared
            .with_db(|db| maintain::delete_topic(&self.shared, db, topic))
    }

    fn queues_except_lmq(&self) -> Result<Vec<QueueKey>, CqError> {
        self.shared.check_open()?;
        let mut keys: Vec<QueueKey> = self
            .shared
            .offsets
            .read()
            .queues
            .keys()
            .filter(|k| !is_lmq(&k.topic))
            .cloned()
            .collect();
        keys.sort();
        Ok(keys)
    }

    /// The cache's queues and, read from the database, every LMQ.
    fn queues(&self) -> Result<Vec<QueueKey>, CqError> {
        let mut keys = self.queues_except_lmq()?;
        keys.extend(self.shared.with_db(offsets::lmq_keys)?);
        keys.sort();
        Ok(keys)
    }

    fn has_queue(&self, topic: &str, queue_id: i32) -> Result<bool, CqError> {
        self.shared.check_open()?;
        Ok(self.state_uncorrected(topic, queue_id)?.is_some())
    }

    fn lmq_queues(&self) -> u64 {
        self.shared.offsets.read().lmq_total
    }

    fn stats(&self) -> CqStats {
        stats::collect(&self.shared)
    }

    /// Writes everything queued (never dropped at shutdown), flushes, stops
    /// the threads and closes the database. Later calls fail with `Closed`.
    fn close(&self) -> Result<(), CqError> {
        self.shut_down()
    }
}
