//! Truncation after recovery, min-offset correction after CommitLog
//! deletion, and flushing one queue.

use std::fs::File;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rmq_common::cq::CqError;

use super::checkpoint::sync_dir;
use super::pool::flush_file;
use super::queue::{QueueHandle, QueueState};
use super::unit::UNIT_I64;
use super::{io_err, Env};
use crate::mapped_file::MappedFile;

impl QueueHandle {
    /// Removes every record unit whose CommitLog offset is at or beyond `phy`
    /// (and the blanks of a hole before the first of them). Bytes are zeroed,
    /// segments left empty are deleted, the first segment is always kept (its
    /// name still says where the queue starts). `min` never moves.
    pub(crate) fn truncate(&self, st: &mut QueueState, phy: i64, env: &Env) -> Result<(), CqError> {
        if st.is_empty() || st.last_phy < phy {
            return Ok(());
        }
        let first_cut = self.partition_point(st, st.min, st.max, |u| u.phy >= phy)?;
        let new_max = match self.prev_record(st, first_cut - 1, st.min)? {
            Some((j, _)) => j + 1,
            None => st.min,
        };
        tracing::info!(
            topic = %self.key.topic,
            queue_id = self.key.queue_id,
            old_max = st.max,
            new_max,
            "truncating consume queue beyond CommitLog offset {phy}"
        );
        self.cut(st, new_max, env)
    }

    /// Sets `max` to `new_max` (at most the current max): zeroes the units
    /// from it, deletes segments that start at or after it (but never the
    /// first) and reloads the last record's CommitLog end.
    pub(crate) fn cut(&self, st: &mut QueueState, new_max: i64, env: &Env) -> Result<(), CqError> {
        let byte = new_max * UNIT_I64;
        while st.segments.len() > 1 && st.segments.back().is_some_and(|s| s.start >= byte) {
            if let Some(seg) = st.segments.pop_back() {
                self.destroy_segment(seg, env)?;
            }
        }
        if let Some(seg) = st.segments.back() {
            let start = seg.start;
            let old = self.valid_len(st, st.segments.len() - 1);
            let pos = usize::try_from((byte - start).clamp(0, self.file_size)).unwrap_or(0);
            // Zero through a mapping of our own, held with `&mut`: the shared
            // one may still be referenced (by a flush in progress), so it is
            // dropped from the slot and the next read maps the cut file anew.
            if seg.slot.lock().take().is_some() {
                env.pool.remove((self.uid, start));
            }
            if old > pos {
                let path = self.path(start);
                let mut file = MappedFile::open(&path, start, self.file_size as usize)
                    .map_err(io_err("map", &path))?;
                file.set_wrote_position(old);
                file.truncate_to(pos);
            }
            // The zeroed bytes look clean to the mapping; sync them through
            // the file so stale units cannot come back after a power loss.
            self.resync_from.fetch_min(start, Ordering::AcqRel);
        }
        st.max = new_max;
        if st.is_empty() {
            st.last_phy = -1;
            st.max_phy_end = -1;
        } else {
            let last = self.unit_at(st, new_max - 1)?;
            st.last_phy = last.phy;
            st.max_phy_end = last.phy_end();
        }
        Ok(())
    }

    /// Raises `min` to the first record at or beyond CommitLog offset
    /// `commit_log_min` (or to `max`), then deletes segments whose every unit
    /// is below `min`, keeping the last. Returns whether `min` moved.
    pub(crate) fn correct_min(
        &self,
        st: &mut QueueState,
        commit_log_min: i64,
        env: &Env,
    ) -> Result<bool, CqError> {
        let mut changed = false;
        if !st.is_empty() {
            // Fast path: most queues' first record is still above the min.
            let first = match self.next_record(st, st.min, st.max)? {
                None => st.max,
                Some((j, u)) if u.phy >= commit_log_min => j,
                Some((j, _)) => {
                    self.partition_point(st, j + 1, st.max, |u| u.phy >= commit_log_min)?
                }
            };
            if first > st.min {
                st.min = first;
                changed = true;
                if st.is_empty() {
                    st.last_phy = -1;
                    st.max_phy_end = -1;
                }
            }
        }
        let min_byte = st.min * UNIT_I64;
        let mut removed = false;
        // Front first, so a crash leaves a contiguous suffix.
        while st.segments.len() > 1
            && st
                .segments
                .front()
                .is_some_and(|s| s.start + self.file_size <= min_byte)
        {
            if let Some(seg) = st.segments.pop_front() {
                self.destroy_segment(seg, env)?;
                removed = true;
            }
        }
        if changed || removed {
            let lo = st.files_lo();
            st.min_pred = if st.min > lo {
                self.prev_record(st, st.min - 1, lo)?
                    .map(|(j, u)| (j, u.phy))
            } else {
                None
            };
            env.min_dirty.store(true, Ordering::Release);
        }
        Ok(changed)
    }

    /// Makes this queue's appended units, re-synced tails and folder entries
    /// durable. Syncs run outside the queue lock so the writer is not held up
    /// by an fsync; a segment evicted meanwhile was flushed by the eviction,
    /// which holds the slot while it flushes.
    pub(crate) fn flush(&self) -> Result<(), CqError> {
        if self.dirty.swap(false, Ordering::AcqRel) {
            let files: Vec<Arc<MappedFile>> = {
                let st = self.state.read();
                st.segments
                    .iter()
                    .filter_map(|s| s.mapped())
                    .filter(|f| f.wrote_position() > f.flushed_position())
                    .collect()
            };
            for file in files {
                if let Err(e) = flush_file(&file) {
                    self.dirty.store(true, Ordering::Release);
                    return Err(e);
                }
            }
        }
        let from = self.resync_from.swap(i64::MAX, Ordering::AcqRel);
        if from != i64::MAX {
            let paths: Vec<_> = {
                let st = self.state.read();
                st.segments
                    .iter()
                    .filter(|s| s.start + self.file_size > from)
                    .map(|s| self.path(s.start))
                    .collect()
            };
            for path in paths {
                match File::open(&path).and_then(|f| f.sync_data()) {
                    // Deleted meanwhile (correct_min, delete_topic): nothing to keep.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => {
                        self.resync_from.fetch_min(from, Ordering::AcqRel);
                        return Err(io_err("fsync", &path)(e));
                    }
                    Ok(()) => {}
                }
            }
        }
        if self.dir_dirty.swap(false, Ordering::AcqRel) {
            if let Err(e) = sync_dir(&self.dir) {
                self.dir_dirty.store(true, Ordering::Release);
                return Err(e);
            }
        }
        Ok(())
    }
}
