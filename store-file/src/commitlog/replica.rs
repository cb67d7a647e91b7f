//! The slave's side of replication: bytes the master streams are written at
//! the same CommitLog offsets they have on the master, so both logs stay
//! byte-identical (records, blank tails and all) and the slave's reput
//! builds its own consume queue from them.
//!
//! RocketMQ's rule, kept here: a chunk is taken only where the slave's log
//! ends (an empty log takes a chunk at a segment boundary and starts its
//! first segment there), and a chunk never crosses a segment: the master
//! cuts its frames at segment ends.

use super::CommitLog;
use crate::error::{Result, StoreError};

impl CommitLog {
    /// Writes `data`, which starts at CommitLog offset `offset` on the
    /// master, at the same offset here. Fails with
    /// [`StoreError::ReplicaGap`] (nothing written) unless `offset` is this
    /// log's end, or the log is empty and `offset` a segment boundary (an
    /// empty `data` there only creates the segment); fails with
    /// [`StoreError::MessageIllegal`] if `data` would cross a segment.
    pub fn append_replica(&self, offset: i64, data: &[u8]) -> Result<()> {
        let _put = self.put.lock();
        self.check_poisoned()?;
        let end = self.max_offset();
        let size = self.segment_size as i64;
        let empty = self.segments.last().is_none();
        // An empty log starts at a segment boundary (the master starts an
        // empty slave at the start of its last segment).
        if (!empty && offset != end) || (empty && offset.rem_euclid(size) != 0) {
            return Err(StoreError::ReplicaGap {
                local_end: end,
                offset,
            });
        }
        let seg = match self.segments.last() {
            Some(s) if !s.is_full() => s,
            Some(s) => self.segments.create_segment(s.file_from_offset() + size)?,
            None => self
                .segments
                .create_segment(offset - offset.rem_euclid(size))?,
        };
        if data.is_empty() {
            return Ok(());
        }
        seg.append(data).ok_or_else(|| StoreError::MessageIllegal {
            reason: format!(
                "replicated chunk of {} bytes at offset {offset} crosses the segment starting at {}",
                data.len(),
                seg.file_from_offset()
            ),
        })?;
        Ok(())
    }
}
