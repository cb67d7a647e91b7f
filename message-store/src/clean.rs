//! CommitLog retention: a clean pass deletes the oldest segments that have
//! expired (`fileReservedTime` hours since their last write) when it is
//! time (`deleteWhen`), when disk use passes `diskMaxUsedSpaceRatio`, or on
//! request; past `diskSpaceCleanForciblyRatio` it deletes unexpired ones
//! too. It never deletes the segment being written or one reput has not
//! passed, and at most `deleteFileBatchMax` a pass. Afterwards the consume
//! queue corrects its min offsets and IndexFiles wholly below the new
//! CommitLog min go.
//!
//! The same disk reading guards writes: past `diskSpaceWarningLevelRatio`
//! the store refuses them ([`StoreError::DiskFull`]) until space returns.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

use parking_lot::RwLock;
use rmq_common::config::ConfigError;
use rmq_common::time::Clock;
use rmq_common::StoreConfig;
use rmq_store_file::commitlog::CommitLog;
use rmq_store_file::index::IndexService;
use rmq_store_file::StoreError;

use super::reput::Dispatcher;

/// Reads the store disk's used fraction (0.0..=1.0), `None` when unknown.
pub trait DiskUsage: Send + Sync + std::fmt::Debug {
    /// Used fraction of the disk holding the store.
    fn used_ratio(&self) -> Option<f64>;
}

/// [`DiskUsage`] of the file system holding a folder.
#[derive(Debug)]
pub struct FsDiskUsage(pub PathBuf);

impl DiskUsage for FsDiskUsage {
    fn used_ratio(&self) -> Option<f64> {
        let stats = fs4::statvfs(&self.0).ok()?;
        used_ratio_as_java(
            stats.total_space(),
            stats.free_space(),
            stats.available_space(),
        )
    }
}

/// The used fraction as Apache RocketMQ reads it (and as `df` prints
/// Use%): used = total - free blocks, over used + blocks available to
/// unprivileged writers, rounded up to a whole percent. Blocks reserved
/// for root (or held back by the file system) count neither as used nor
/// as room, so a disk with a large reserve does not read as nearly full.
pub fn used_ratio_as_java(total: u64, free: u64, available: u64) -> Option<f64> {
    let used = total.checked_sub(free)?;
    let entire = used.checked_add(available)?;
    if total == 0 || entire == 0 {
        return None;
    }
    let pct = (u128::from(used) * 100).div_ceil(u128::from(entire));
    Some(pct as f64 / 100.0)
}

/// The retention settings.
#[derive(Debug, Clone)]
pub struct CleanPolicy {
    /// A segment expires this long after its last write.
    pub reserved: Duration,
    /// Hours of the day (UTC) when expired segments are deleted.
    pub hours: Vec<u32>,
    /// Past this used fraction, expired segments go at any hour.
    pub max_used: f64,
    /// Past this used fraction, unexpired segments go too.
    pub forcibly: f64,
    /// Most segments one pass deletes.
    pub batch_max: usize,
}

impl CleanPolicy {
    /// The policy of a store config.
    pub fn from_config(c: &StoreConfig) -> Result<Self, ConfigError> {
        Ok(Self {
            reserved: Duration::from_secs(c.file_reserved_time_hours.saturating_mul(3600)),
            hours: c.delete_hours()?,
            max_used: f64::from(c.disk_max_used_space_ratio_pct) / 100.0,
            forcibly: f64::from(c.disk_space_clean_forcibly_ratio_pct) / 100.0,
            batch_max: c.delete_file_batch_max as usize,
        })
    }
}

/// Who asked for a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CleanTrigger {
    /// The clean service, every `cleanResourceInterval`: expired segments go
    /// only in a `deleteWhen` hour or past `diskMaxUsedSpaceRatio`.
    Service,
    /// An operator: expired segments go whatever the hour.
    Operator,
}

/// Why a pass deleted (or would delete) anything.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub enum CleanReason {
    /// An operator asked (DELETE_EXPIRED_COMMITLOG, `rmq-admin clean`).
    Manual,
    /// The hour is one of `deleteWhen`.
    Scheduled,
    /// Disk use passed `diskMaxUsedSpaceRatio`.
    DiskFull,
    /// Disk use passed `diskSpaceCleanForciblyRatio`: unexpired go too.
    Forcibly,
}

/// Why a pass stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum PassEnd {
    /// Not the hour, the disk not full, nobody asked.
    NotDue,
    /// The oldest segment is the one being written.
    WritingSegment,
    /// The oldest segment holds records reput has not dispatched.
    ReputBehind,
    /// The oldest segment has not expired.
    NotExpired,
    /// `deleteFileBatchMax` segments went; the next pass goes on.
    BatchMax,
}

/// What one pass did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CleanReport {
    /// Why it ran.
    pub reason: Option<CleanReason>,
    /// Segments deleted.
    pub deleted: usize,
    /// CommitLog min offset after the pass.
    pub min_offset: i64,
    /// IndexFiles deleted.
    pub index_files_deleted: usize,
    /// Why it stopped.
    pub end: PassEnd,
}

/// Whether the oldest segment may go. Pure, so the rules can be tested.
pub fn verdict(
    is_last: bool,
    segment_end: i64,
    reput_from: i64,
    expired: bool,
    reason: CleanReason,
) -> Result<(), PassEnd> {
    if is_last {
        return Err(PassEnd::WritingSegment);
    }
    if segment_end > reput_from {
        return Err(PassEnd::ReputBehind);
    }
    if !expired && reason != CleanReason::Forcibly {
        return Err(PassEnd::NotExpired);
    }
    Ok(())
}

/// How often the put path re-reads disk use (also each clean pass).
const DISK_RECHECK: Duration = Duration::from_secs(1);

/// Refuses writes while the disk is fuller than
/// `diskSpaceWarningLevelRatio`; logs each change of state. The put path
/// reads only atomics unless the last reading is stale.
#[derive(Debug)]
pub(crate) struct DiskGuard {
    limit_pct: u32,
    /// Disk use at the last check, in hundredths of a percent.
    used_centi_pct: AtomicU64,
    full: AtomicBool,
    /// Base of `last_check_ms`.
    started: Instant,
    /// Milliseconds after `started` of the last reading, plus one (0: never).
    last_check_ms: AtomicU64,
}

impl DiskGuard {
    pub(crate) fn new(limit_pct: u32) -> Self {
        Self {
            limit_pct,
            used_centi_pct: AtomicU64::new(0),
            full: AtomicBool::new(false),
            started: Instant::now(),
            last_check_ms: AtomicU64::new(0),
        }
    }

    /// Takes a reading of disk use (`None`: unknown, the state stays);
    /// returns whether writes are refused.
    pub(crate) fn record(&self, used: Option<f64>) -> bool {
        let now = self.started.elapsed().as_millis() as u64 + 1;
        self.last_check_ms.store(now, Ordering::Relaxed);
        let Some(used) = used else {
            return self.full.load(Ordering::Acquire);
        };
        let used_pct = used * 100.0;
        self.used_centi_pct
            .store((used_pct * 100.0) as u64, Ordering::Relaxed);
        let full = used_pct > f64::from(self.limit_pct);
        if self.full.swap(full, Ordering::AcqRel) != full {
            if full {
                tracing::error!(
                    used_pct,
                    limit_pct = self.limit_pct,
                    "disk full: refusing writes until space is freed (diskSpaceWarningLevelRatio)"
                );
            } else {
                tracing::warn!(used_pct, "disk has room again: accepting writes");
            }
        }
        full
    }

    /// `Err(DiskFull)` while the disk is full; calls `read` for a new
    /// reading at most once a second.
    pub(crate) fn admit(&self, read: impl FnOnce() -> Option<f64>) -> Result<(), StoreError> {
        let last = self.last_check_ms.load(Ordering::Relaxed);
        let now = self.started.elapsed().as_millis() as u64 + 1;
        let stale = last == 0 || now.saturating_sub(last) >= DISK_RECHECK.as_millis() as u64;
        let full = if stale {
            self.record(read())
        } else {
            self.full.load(Ordering::Acquire)
        };
        if full {
            return Err(StoreError::DiskFull {
                used_pct: self.used_centi_pct.load(Ordering::Relaxed) as f64 / 100.0,
                limit_pct: self.limit_pct,
            });
        }
        Ok(())
    }
}

/// Runs clean passes over one store.
#[derive(Debug)]
pub(crate) struct Cleaner {
    pub(crate) policy: CleanPolicy,
    pub(crate) commit_log: Arc<CommitLog>,
    pub(crate) index: Option<Arc<IndexService>>,
    pub(crate) dispatcher: Arc<Dispatcher>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) disk: RwLock<Arc<dyn DiskUsage>>,
    pub(crate) guard: DiskGuard,
    /// One pass at a time (the thread and a manual request).
    pub(crate) pass_lock: parking_lot::Mutex<()>,
    /// `enableLmq`: a pass that deleted segments removes the LMQs whose
    /// messages all expired.
    pub(crate) enable_lmq: bool,
    /// Told of those removals.
    pub(crate) lmq_removed: LmqRemovedCell,
    /// Controller mode's epoch file: entries wholly below the new min go.
    pub(crate) epochs: Arc<parking_lot::Mutex<rmq_store_file::epoch_file::EpochFile>>,
}

/// Holds the listener of LMQ removals; `Debug` without the closure.
#[derive(Default)]
pub(crate) struct LmqRemovedCell(std::sync::OnceLock<crate::lmq::LmqRemovedListener>);

impl LmqRemovedCell {
    pub(crate) fn set(&self, listener: crate::lmq::LmqRemovedListener) {
        let _ = self.0.set(listener);
    }
}

impl std::fmt::Debug for LmqRemovedCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "LmqRemovedCell(set)"
        } else {
            "LmqRemovedCell(unset)"
        })
    }
}

impl Cleaner {
    /// Tells the listener of LMQs removed by expiry.
    pub(crate) fn lmqs_removed(&self, gone: &[String]) {
        if let (false, Some(listener)) = (gone.is_empty(), self.lmq_removed.0.get()) {
            listener(gone);
        }
    }

    fn read_disk(&self) -> Option<f64> {
        self.disk.read().used_ratio()
    }

    /// See [`DiskGuard::admit`].
    pub(crate) fn admit_write(&self) -> Result<(), StoreError> {
        self.guard.admit(|| self.read_disk())
    }

    /// Re-reads disk use; returns whether writes are refused.
    pub(crate) fn check_disk(&self) -> bool {
        self.guard.record(self.read_disk())
    }

    fn reason(&self, trigger: CleanTrigger, used: f64) -> Option<CleanReason> {
        if used > self.policy.forcibly {
            return Some(CleanReason::Forcibly);
        }
        if used > self.policy.max_used {
            return Some(CleanReason::DiskFull);
        }
        if trigger == CleanTrigger::Operator {
            return Some(CleanReason::Manual);
        }
        let now_ms = self.clock.now_ms().max(0) as u64;
        let hour = ((now_ms / 3_600_000) % 24) as u32;
        self.policy
            .hours
            .contains(&hour)
            .then_some(CleanReason::Scheduled)
    }

    /// One bounded pass.
    pub(crate) fn pass(&self, trigger: CleanTrigger) -> Result<CleanReport, StoreError> {
        let _one = self.pass_lock.lock();
        let used = self.read_disk();
        self.guard.record(used);
        let Some(reason) = self.reason(trigger, used.unwrap_or(0.0)) else {
            return Ok(CleanReport {
                reason: None,
                deleted: 0,
                min_offset: self.commit_log.min_offset(),
                index_files_deleted: 0,
                end: PassEnd::NotDue,
            });
        };
        let now_ms = self.clock.now_ms();
        let segment_size = self.commit_log.segments().segment_size() as i64;
        let mut deleted = 0;
        let end = loop {
            if deleted >= self.policy.batch_max {
                break PassEnd::BatchMax;
            }
            let snapshot = self.commit_log.segments().snapshot();
            let Some(first) = snapshot.first() else {
                break PassEnd::WritingSegment;
            };
            let from = first.file_from_offset();
            let expired = written_ms(first.path())
                .is_some_and(|w| w + self.policy.reserved.as_millis() as i64 <= now_ms);
            let reput_from = self.dispatcher.reput_from();
            if let Err(end) = verdict(
                snapshot.len() == 1,
                from + segment_size,
                reput_from,
                expired,
                reason,
            ) {
                break end;
            }
            drop(snapshot);
            match self.commit_log.delete_oldest_below(reput_from)? {
                Some(_) => deleted += 1,
                None => break PassEnd::WritingSegment,
            }
        };
        let min_offset = self.commit_log.min_offset();
        let mut index_files_deleted = 0;
        if deleted > 0 {
            self.dispatcher.correct_min_offset(min_offset)?;
            self.epochs.lock().truncate_prefix(min_offset)?;
            if self.enable_lmq {
                let gone = crate::lmq::remove_expired_lmqs(&self.dispatcher, &self.commit_log)?;
                self.lmqs_removed(&gone);
            }
            if let Some(index) = &self.index {
                index_files_deleted = index.delete_files_below(min_offset)?;
            }
            tracing::info!(
                ?reason,
                deleted,
                min_offset,
                index_files_deleted,
                ?end,
                "deleted CommitLog segments"
            );
        }
        Ok(CleanReport {
            reason: Some(reason),
            deleted,
            min_offset,
            index_files_deleted,
            end,
        })
    }
}

/// When a file was last written (its mtime), ms since the epoch.
fn written_ms(path: &std::path::Path) -> Option<i64> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    let since = modified.duration_since(UNIX_EPOCH).ok()?;
    i64::try_from(since.as_millis()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_rules() {
        use CleanReason::*;
        // The segment being written never goes, even forcibly.
        assert_eq!(
            verdict(true, 100, 1000, true, Forcibly),
            Err(PassEnd::WritingSegment)
        );
        // Nor one reput has not passed.
        assert_eq!(
            verdict(false, 100, 99, true, Forcibly),
            Err(PassEnd::ReputBehind)
        );
        // Unexpired only goes forcibly.
        for r in [Manual, Scheduled, DiskFull] {
            assert_eq!(verdict(false, 100, 100, false, r), Err(PassEnd::NotExpired));
            assert_eq!(verdict(false, 100, 100, true, r), Ok(()));
        }
        assert_eq!(verdict(false, 100, 100, false, Forcibly), Ok(()));
    }

    #[test]
    fn used_ratio_reads_the_disk_as_java_and_df_do() {
        // This machine's disk, in 4 KiB blocks: a large reserve between
        // free and available. Java (and df) read 67 %, not 88 %.
        let b = 4096u64;
        let r = used_ratio_as_java(66_053_021 * b, 50_121_572 * b, 7_943_867 * b);
        assert_eq!(r, Some(0.67));
        // Rounded up to the next whole percent, as Java does.
        assert_eq!(used_ratio_as_java(1000, 899, 899), Some(0.11));
        assert_eq!(used_ratio_as_java(1000, 500, 500), Some(0.5));
        // Unknown rather than a division by zero or a wrapped subtraction.
        assert_eq!(used_ratio_as_java(0, 0, 0), None);
        assert_eq!(used_ratio_as_java(10, 20, 5), None);
    }
}
