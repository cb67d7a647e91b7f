//! Cutting the log at runtime (controller mode: a slave that follows a new
//! master whose log diverged from its own, a new master dropping a torn
//! replicated tail). Readers go on meanwhile: the segment holding the cut
//! is replaced by a copy of what stays, never zeroed in place.

use std::sync::atomic::Ordering;

use rmq_common::message::record::{peek_frame, Frame};

use super::CommitLog;
use crate::error::{Result, StoreError};

impl CommitLog {
    /// Whether `offset` is where a record (or a segment's blank) starts, or
    /// the log's end; the error says why not.
    pub fn check_record_boundary(&self, offset: i64) -> Result<()> {
        let (min, max) = (self.min_offset(), self.max_offset());
        if offset < min || offset > max {
            return Err(StoreError::TruncateOutOfRange { offset, min, max });
        }
        if offset == max {
            return Ok(());
        }
        let Some(seg) = self.segments.find(offset) else {
            return Err(StoreError::TruncateOutOfRange { offset, min, max });
        };
        let start = seg.file_from_offset();
        let target = usize::try_from(offset - start).unwrap_or(0);
        let written = seg.wrote_position();
        let mut pos = 0usize;
        while pos < target {
            let frame = seg.slice(pos, written.saturating_sub(pos)).map(peek_frame);
            match frame {
                Some(Ok(Frame::Message { total_size })) if total_size > 0 => {
                    if pos + total_size > target {
                        break;
                    }
                    pos += total_size;
                }
                _ => break,
            }
        }
        if pos == target {
            Ok(())
        } else {
            Err(StoreError::NotRecordBoundary {
                offset,
                record_start: start + pos as i64,
            })
        }
    }

    /// The end of the last whole record at or after `from` (a record
    /// start): where a log that may end inside a record (a slave's) can be
    /// cut. Stops at the first frame that is not a whole message.
    pub fn whole_records_end(&self, from: i64) -> i64 {
        let max = self.max_offset();
        let mut at = from.max(self.min_offset());
        while at < max {
            let Some(sel) = self.select_from(at) else {
                break;
            };
            let bytes = sel.bytes();
            match peek_frame(bytes) {
                Ok(Frame::Message { total_size })
                    if total_size > 0 && total_size <= bytes.len() =>
                {
                    at += total_size as i64;
                }
                Ok(Frame::Blank { .. }) => at = self.roll_next(at),
                _ => break,
            }
        }
        at.min(max)
    }

    /// The records from `from` (a record start) to the end of its
    /// segment's data: each one's start and how many of its bytes this log
    /// holds, which is fewer than its size for a record the log ends
    /// inside (a slave's log ends wherever a transfer stopped). Stops at a
    /// blank, at zeroes and at bytes that are no message head.
    pub fn records_from(&self, from: i64) -> Vec<(i64, usize)> {
        let mut out = Vec::new();
        let Some(sel) = self.select_from(from) else {
            return out;
        };
        let bytes = sel.bytes();
        let mut pos = 0usize;
        // A record held in part is the last: `pos` then reaches the end.
        while let Some(held) = message_held(&bytes[pos..]) {
            out.push((from + pos as i64, held));
            pos += held;
        }
        out
    }

    /// How many bytes of the record starting at `at` this log holds (see
    /// [`CommitLog::records_from`]); `None` where no message starts there.
    pub fn record_held(&self, at: i64) -> Option<usize> {
        message_held(self.select_from(at)?.bytes())
    }

    /// Cuts the log at `offset` (a record boundary in `[min, max]`, else a
    /// typed error and nothing changes): later bytes and segments go, the
    /// put path's queue-offset tables are emptied (the caller rebuilds them
    /// from the consume queue, truncated first) and the flushed offset
    /// drops to at most `offset` (the rewritten segment is synced).
    /// Readers may hold slices of the cut bytes; they stay readable to them.
    pub fn truncate_to(&self, offset: i64) -> Result<()> {
        let mut put = self.put.lock();
        self.check_record_boundary(offset)?;
        let _flush = self.flush_pass.lock();
        let max = self.max_offset();
        if offset < max {
            self.segments.truncate_to(offset)?;
            tracing::warn!(offset, old_max = max, "CommitLog truncated");
        }
        put.queue_offsets.clear();
        put.lmq.clear();
        self.flushed_where.fetch_min(offset, Ordering::AcqRel);
        Ok(())
    }
}

/// The bytes of the message whose head starts `bytes` that `bytes` holds
/// (all of it, or the part before their end).
fn message_held(bytes: &[u8]) -> Option<usize> {
    match peek_frame(bytes) {
        Ok(Frame::Message { total_size }) => Some(total_size.min(bytes.len())),
        _ => None,
    }
}
