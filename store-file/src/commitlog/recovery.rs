//! Finding the valid tail of the CommitLog at start.
//!
//! The valid tail is the end of the last record whose magic, size, physical
//! offset (and CRC when `checkCRCOnRecover`) check out. What follows it in the
//! last segment is a torn write and is cut (zeroed); segments after it are
//! deleted. Damage that is followed by valid records is not a torn tail: the
//! store refuses to start rather than cut good data.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_common::message::properties::PROPERTY_SEPARATOR;
use rmq_common::message::record::{peek_frame, Frame, RecordView};
use rmq_common::message::RecordError;
use rmq_common::names::validate_topic;

use super::CommitLog;
use crate::error::{Result, StoreError};
use crate::mapped_file::MappedFile;

/// Segments a clean start re-checks (as RocketMQ does).
const NORMAL_RECOVERY_SEGMENTS: usize = 3;

/// How to recover.
#[derive(Debug, Clone, Copy)]
pub struct RecoverOptions {
    /// The previous run did not shut down cleanly (the abort file exists).
    pub abnormal: bool,
    /// Verify body CRCs while scanning.
    pub check_crc: bool,
    /// After a crash, scan from the segment holding this offset (the consume
    /// queues' durable dispatch point) so every record reput will replay is
    /// checked. Ignored on a clean start.
    pub scan_from: i64,
}

/// What recovery found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryReport {
    /// End of the last valid record.
    pub tail: i64,
    /// Where the scan started.
    pub scanned_from: i64,
    /// Valid records scanned.
    pub records: u64,
    /// Whether bytes past the tail were cut.
    pub cut: bool,
    /// Bytes zeroed past the tail.
    pub zeroed_bytes: u64,
    /// Segments deleted beyond the tail.
    pub deleted_segments: usize,
    /// Time taken.
    pub elapsed: Duration,
}

enum Step {
    Record(usize),
    NextSegment,
    End,
    Bad(RecordError),
}

fn step(seg: &MappedFile, rel: usize, phy: i64, check_crc: bool) -> Step {
    let size = seg.file_size();
    if rel + 8 > size {
        // Cannot happen in a log we wrote (a blank always closes a segment),
        // but a short remainder simply ends the segment.
        return Step::NextSegment;
    }
    let Some(bytes) = seg.slice(rel, size - rel) else {
        return Step::End;
    };
    match peek_frame(bytes) {
        Ok(Frame::Empty) => Step::End,
        Ok(Frame::Blank { total_size }) if rel + total_size == size => Step::NextSegment,
        Ok(Frame::Blank { total_size }) => Step::Bad(RecordError::SizeMismatch {
            declared: total_size as i64,
            computed: (size - rel) as i64,
        }),
        Ok(Frame::Message { .. }) => match RecordView::parse(bytes, check_crc) {
            Ok(v) if v.physical_offset() == phy && looks_whole(&v) => Step::Record(v.total_size()),
            Ok(v) if v.physical_offset() == phy => Step::Bad(RecordError::Incomplete {
                detail: "illegal topic or properties without their final separator",
            }),
            Ok(v) => Step::Bad(RecordError::SizeMismatch {
                declared: v.physical_offset(),
                computed: phy,
            }),
            Err(e) => Step::Bad(e),
        },
        Err(e) => Step::Bad(e),
    }
}

/// The body CRC does not cover the topic and properties at the end of a
/// record, where a torn copy leaves zeroes. Every record this store writes has
/// a legal topic name and, when it has properties, ends with the property
/// separator; a record that does not was torn.
fn looks_whole(v: &RecordView<'_>) -> bool {
    validate_topic(v.topic()).is_ok()
        && v.properties_raw()
            .last()
            .is_none_or(|b| *b == PROPERTY_SEPARATOR as u8)
}

/// Whether valid data follows damage at `rel` of segment `idx`: a valid record
/// right after the damaged one, or a later segment that starts with one.
fn valid_data_follows(segs: &[Arc<MappedFile>], idx: usize, rel: usize, check_crc: bool) -> bool {
    let seg = &segs[idx];
    if let Some(Ok(Frame::Message { total_size })) = seg.slice(rel, 8).map(peek_frame) {
        let next = rel + total_size;
        let phy = seg.file_from_offset() + next as i64;
        if next + 8 <= seg.file_size() && matches!(step(seg, next, phy, check_crc), Step::Record(_))
        {
            return true;
        }
    }
    segs[idx + 1..]
        .iter()
        .any(|s| matches!(step(s, 0, s.file_from_offset(), check_crc), Step::Record(_)))
}

impl CommitLog {
    pub(super) fn recover(&self, options: RecoverOptions) -> Result<RecoveryReport> {
        let started = Instant::now();
        let segs = self.segments.snapshot();
        let Some(last) = segs.last() else {
            return Ok(RecoveryReport {
                tail: 0,
                scanned_from: 0,
                records: 0,
                cut: false,
                zeroed_bytes: 0,
                deleted_segments: 0,
                elapsed: started.elapsed(),
            });
        };
        let mut idx = segs.len().saturating_sub(NORMAL_RECOVERY_SEGMENTS);
        if options.abnormal {
            let first = segs[0].file_from_offset();
            let from = options.scan_from.clamp(first, last.file_from_offset());
            let hint = usize::try_from((from - first) / self.segment_size as i64).unwrap_or(0);
            idx = idx.min(hint);
        }
        let scanned_from = segs[idx].file_from_offset();
        let mut rel = 0usize;
        let mut records = 0u64;
        let mut cut = false;
        loop {
            let seg = &segs[idx];
            let phy = seg.file_from_offset() + rel as i64;
            match step(seg, rel, phy, options.check_crc) {
                Step::Record(n) => {
                    records += 1;
                    rel += n;
                }
                Step::NextSegment if idx + 1 < segs.len() => {
                    idx += 1;
                    rel = 0;
                }
                Step::NextSegment => {
                    rel = seg.file_size();
                    break;
                }
                Step::End => break,
                Step::Bad(err) => {
                    if valid_data_follows(&segs, idx, rel, options.check_crc) {
                        return Err(StoreError::Corrupt {
                            path: seg.path().to_owned(),
                            offset: phy,
                            detail: format!(
                                "{err}, and valid records follow; refusing to cut them. \
                                 Inspect the file; move it and later segments aside to start without them"
                            ),
                        });
                    }
                    tracing::warn!(path = %seg.path().display(), offset = phy, error = %err,
                        "torn CommitLog tail; cutting it");
                    cut = true;
                    break;
                }
            }
        }
        let tail_start = segs[idx].file_from_offset();
        let tail_path = segs[idx].path().to_owned();
        let tail = tail_start + rel as i64;
        // The cut needs the only reference to the tail segment.
        drop(segs);
        let deleted_segments = self.segments.delete_after(tail_start)?;
        let zeroed_bytes = if cut || options.abnormal {
            self.segments
                .with_last_exclusive(|seg| seg.truncate_and_scrub(rel))
                .ok_or_else(|| {
                    StoreError::io(
                        format!("cut tail of {}", tail_path.display()),
                        std::io::Error::other("the segment is in use during recovery"),
                    )
                })?
                .map_err(|e| StoreError::io(format!("cut tail of {}", tail_path.display()), e))?
                as u64
        } else {
            if let Some(seg) = self.segments.last() {
                seg.set_wrote_position(rel);
            }
            0
        };
        let tail_seg = self
            .segments
            .last()
            .filter(|s| s.file_from_offset() == tail_start)
            .ok_or_else(|| {
                StoreError::io(
                    format!("sync {}", tail_path.display()),
                    std::io::Error::other("the tail segment vanished during recovery"),
                )
            })?;
        // Whatever survived is on disk or in the page cache; sync it so the
        // flushed offset can honestly start at the tail.
        tail_seg
            .flush(0, self.flush_method)
            .map_err(|e| StoreError::io(format!("sync {}", tail_seg.path().display()), e))?;
        self.flushed_where.store(tail, Ordering::Release);
        let report = RecoveryReport {
            tail,
            scanned_from,
            records,
            cut,
            zeroed_bytes,
            deleted_segments,
            elapsed: started.elapsed(),
        };
        tracing::info!(?report, abnormal = options.abnormal, "CommitLog recovered");
        Ok(report)
    }
}
