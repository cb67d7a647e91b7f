//! The [`ConsumeQueueStore`] implementation of [`FileConsumeQueueStore`]:
//! argument checks, locking and poisoning around the per-queue operations.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use rmq_common::cq::{
    Boundary, ConsumeQueueStore, CqError, CqPut, CqStats, CqUnit, QueueKey, StoreTimeSource,
};
use rmq_common::names::is_lmq;
use rmq_common::CqBackend;

use super::checkpoint;
use super::queue::QueueState;
use super::store::check_topic;
use super::write::validate;
use super::{io_err, FileConsumeQueueStore};

impl ConsumeQueueStore for FileConsumeQueueStore {
    fn backend(&self) -> CqBackend {
        CqBackend::File
    }

    fn put(&self, batch: &[CqPut], dispatched_to: i64) -> Result<(), CqError> {
        self.check_writable()?;
        // Validate the whole batch first so a bad unit writes nothing.
        for p in batch {
            check_topic(&p.topic)?;
            validate(p)?;
        }
        let mut cached = None;
        for p in batch {
            self.put_one(p, &mut cached).map_err(|e| self.poisoned(e))?;
        }
        self.dispatched.fetch_max(dispatched_to, Ordering::AcqRel);
        Ok(())
    }

    fn get(
        &self,
        topic: &str,
        queue_id: i32,
        from: i64,
        max_count: usize,
        out: &mut Vec<CqUnit>,
    ) -> Result<(), CqError> {
        self.check_open()?;
        let Some(h) = self.lookup(topic, queue_id) else {
            return Ok(());
        };
        let st = h.state.read();
        h.get(&st, from, max_count, &self.env, out)
    }

    fn min_offset(&self, topic: &str, queue_id: i32) -> Result<i64, CqError> {
        self.check_open()?;
        Ok(self
            .lookup(topic, queue_id)
            .map_or(0, |h| h.state.read().min))
    }

    fn max_offset(&self, topic: &str, queue_id: i32) -> Result<i64, CqError> {
        self.check_open()?;
        Ok(self
            .lookup(topic, queue_id)
            .map_or(0, |h| h.state.read().max))
    }

    fn dispatched_phy_offset(&self) -> Result<i64, CqError> {
        self.check_open()?;
        Ok(self.dispatched.load(Ordering::Acquire))
    }

    fn truncate_from_phy(&self, phy_offset: i64) -> Result<(), CqError> {
        self.check_writable()?;
        for h in self.handles() {
            let mut st = h.state.write();
            h.truncate(&mut st, phy_offset, &self.env)
                .map_err(|e| self.poisoned(e))?;
        }
        self.dispatched.fetch_min(phy_offset, Ordering::AcqRel);
        Ok(())
    }

    fn correct_min_offset(&self, commit_log_min: i64) -> Result<(), CqError> {
        self.check_writable()?;
        for h in self.handles() {
            let mut st = h.state.write();
            h.correct_min(&mut st, commit_log_min, &self.env)
                .map_err(|e| self.poisoned(e))?;
        }
        Ok(())
    }

    fn offset_by_time(
        &self,
        topic: &str,
        queue_id: i32,
        timestamp_ms: i64,
        boundary: Boundary,
        times: &dyn StoreTimeSource,
    ) -> Result<i64, CqError> {
        self.check_open()?;
        let Some(h) = self.lookup(topic, queue_id) else {
            return Ok(0);
        };
        let st = h.state.read();
        h.offset_by_time(&st, timestamp_ms, boundary, times)
    }

    fn flush(&self) -> Result<(), CqError> {
        self.check_writable()?;
        self.flush_inner().map_err(|e| self.poisoned(e))
    }

    fn delete_topic(&self, topic: &str) -> Result<(), CqError> {
        self.check_writable()?;
        check_topic(topic)?;
        let doomed = {
            // The map stays locked until the folder is renamed, so a put
            // racing the deletion creates a fresh folder, not one inside the
            // doomed tree.
            let mut map = self.queues.write();
            let removed = map.remove(topic);
            if is_lmq(topic) {
                let n = removed.as_ref().map_or(0, BTreeMap::len) as u64;
                self.lmq_queues.fetch_sub(n, Ordering::Relaxed);
            }
            for h in removed.into_iter().flat_map(BTreeMap::into_values) {
                let mut st = h.state.write();
                h.unmap_all(&st, &self.env);
                *st = QueueState::new();
                st.deleted = true;
            }
            self.env.min_dirty.store(true, Ordering::Release);
            self.unlink_topic_dir(topic)?
        };
        if let Some(doomed) = doomed {
            checkpoint::sync_dir(&self.env.root)?;
            std::fs::remove_dir_all(&doomed).map_err(io_err("delete", &doomed))?;
        }
        Ok(())
    }

    fn queues(&self) -> Result<Vec<QueueKey>, CqError> {
        self.check_open()?;
        let mut keys: Vec<QueueKey> = self
            .handles()
            .into_iter()
            .filter(|h| !h.state.read().segments.is_empty())
            .map(|h| h.key.clone())
            .collect();
        keys.sort();
        Ok(keys)
    }

    fn has_queue(&self, topic: &str, queue_id: i32) -> Result<bool, CqError> {
        self.check_open()?;
        Ok(self
            .lookup(topic, queue_id)
            .is_some_and(|h| !h.state.read().segments.is_empty()))
    }

    fn lmq_queues(&self) -> u64 {
        self.lmq_queues.load(Ordering::Relaxed)
    }

    fn stats(&self) -> CqStats {
        let mapped = self.env.pool.len() as u64;
        CqStats {
            queues: self.queues.read().values().map(|q| q.len() as u64).sum(),
            lmq_queues: self.lmq_queues.load(Ordering::Relaxed),
            // Each mapping keeps its file descriptor open; nothing else does.
            open_files: mapped,
            mapped_files: mapped,
            mapped_bytes: self.env.pool.mapped_bytes(),
            ..CqStats::default()
        }
    }

    fn close(&self) -> Result<(), CqError> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let flushed = match self.poison.lock().clone() {
            Some(reason) => Err(CqError::Poisoned { reason }),
            None => self.flush_inner(),
        };
        for h in self.handles() {
            let st = h.state.read();
            h.unmap_all(&st, &self.env);
        }
        self.env.pool.clear();
        flushed
    }
}
