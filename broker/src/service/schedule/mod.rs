//! The schedule service: delivers delayed messages when they are due.
//!
//! The put path stores a message with a DELAY level in `SCHEDULE_TOPIC_XXXX`,
//! queue `level - 1`, and reput gives its consume-queue unit the delivery time
//! as tagsCode. Within one level every message waits the same delay, so each
//! queue is due in order: a level's task reads its queue from its progress
//! offset (through the [`ConsumeQueueStore`](rmq_common::cq::ConsumeQueueStore)
//! trait, so both backends behave alike), puts every due entry back into its
//! real topic through the normal put path, and parks until the first entry
//! that is not due yet. Progress is kept per level in
//! [`DelayOffsetTable`] and persisted periodically and at stop.
//!
//! [`Scheduler`] is the logic, one bounded pass at a time (tests drive it
//! with a manual clock); [`ScheduleService`] runs it on one thread per level.

mod deliver;
pub(crate) mod offsets;
mod runner;

pub(crate) use deliver::real_target;
pub use deliver::{restore, DeliverySink, PutFailure, Undeliverable};
pub use offsets::DelayOffsetTable;
pub use runner::ScheduleService;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use rmq_common::constants::SCHEDULE_TOPIC;
use rmq_common::cq::{CqError, CqUnit};
use rmq_common::message::encode_offset_msg_id;
use rmq_common::message::record::RecordView;
use rmq_common::DelayLevels;
use rmq_store_file::StoreError;

use crate::error::{MetaError, ServiceError};
use crate::service::poison::{PoisonEntry, PoisonLog};

use rmq_store::MessageStore;

/// Most entries one pass handles before it yields (so a level with a large
/// backlog still checks for shutdown between passes).
pub const MAX_ENTRIES_PER_PASS: usize = 1024;
/// Units read from the consume queue at a time.
const READ_BATCH: usize = 32;
/// How long a level waits before trying an entry whose put failed again;
/// each further failure in a row doubles it, up to [`PUT_RETRY_MAX_DELAY_MS`].
pub const PUT_RETRY_DELAY_MS: i64 = 1_000;
/// Longest wait between tries of an entry whose put keeps failing.
pub const PUT_RETRY_MAX_DELAY_MS: i64 = 30_000;

/// Why a level's pass ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassEnd {
    /// Handled [`MAX_ENTRIES_PER_PASS`] entries; more may be due at once.
    Budget,
    /// Every stored entry of the level is delivered.
    CaughtUp,
    /// The next entry is due at `due_ms` (the level parks until then).
    NotDue {
        /// Delivery time of the next entry, ms.
        due_ms: i64,
    },
    /// Putting the next entry failed; it is tried again at `retry_at_ms`.
    PutFailed {
        /// When to try again, ms.
        retry_at_ms: i64,
    },
}

/// What one pass over a level did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelPass {
    /// Entries put back into their real topics.
    pub delivered: usize,
    /// Entries that can never be delivered (passed over, recorded in the
    /// poison record).
    pub skipped: usize,
    /// Why the pass stopped.
    pub ended: PassEnd,
}

/// The delivery logic over one store.
#[derive(Debug)]
pub struct Scheduler {
    store: Arc<MessageStore>,
    sink: Arc<dyn DeliverySink>,
    levels: DelayLevels,
    offsets: DelayOffsetTable,
    poison: PoisonLog,
    /// Failed puts in a row, per level (index level - 1), for the back-off.
    failures: Vec<AtomicU32>,
}

impl Scheduler {
    /// Loads the progress table from the store's `config/` folder and puts
    /// each level's offset back inside its queue's current range. Delivered
    /// messages go through `sink` (the store itself in a broker).
    pub fn open(
        store: Arc<MessageStore>,
        sink: Arc<dyn DeliverySink>,
    ) -> Result<Self, ServiceError> {
        let levels = store.delay_levels().clone();
        let offsets =
            DelayOffsetTable::open(&store.config().store_path_root_dir, levels.max_level())?;
        let poison = PoisonLog::new(&store.config().store_path_root_dir, "schedule");
        let failures = (0..levels.max_level()).map(|_| AtomicU32::new(0)).collect();
        let scheduler = Self {
            store,
            sink,
            levels,
            offsets,
            poison,
            failures,
        };
        for (level, _) in scheduler.levels.iter() {
            scheduler.clamp_offset(level)?;
        }
        Ok(scheduler)
    }

    /// A progress offset outside the queue would skip entries (ahead of the
    /// max, e.g. after a crash cut the log) or read compacted ones (below
    /// the min): move it inside.
    fn clamp_offset(&self, level: i32) -> Result<(), StoreError> {
        let queue = DelayLevels::queue_id(level);
        let min = self.store.min_offset_in_queue(SCHEDULE_TOPIC, queue)?;
        let max = self.store.max_offset_in_queue(SCHEDULE_TOPIC, queue)?;
        let at = self.offsets.get(level);
        let fixed = at.clamp(min, max.max(min));
        if fixed != at {
            tracing::warn!(
                level,
                persisted = at,
                min,
                max,
                continue_at = fixed,
                "delay offset outside its schedule queue; corrected"
            );
            self.offsets.set(level, fixed);
        }
        Ok(())
    }

    /// The delay-level table.
    pub fn levels(&self) -> &DelayLevels {
        &self.levels
    }

    /// Next schedule-queue offset `level` delivers.
    pub fn offset(&self, level: i32) -> i64 {
        self.offsets.get(level)
    }

    /// Entries of `level` stored but not yet delivered.
    pub fn pending(&self, level: i32) -> i64 {
        let max = self
            .store
            .max_offset_in_queue(SCHEDULE_TOPIC, DelayLevels::queue_id(level))
            .unwrap_or(0);
        (max - self.offsets.get(level)).max(0)
    }

    /// Entries passed over since start because they can never be delivered.
    pub fn poisoned(&self) -> u64 {
        self.poison.count()
    }

    fn failures(&self, level: i32) -> Option<&AtomicU32> {
        usize::try_from(level - 1)
            .ok()
            .and_then(|i| self.failures.get(i))
    }

    /// Persists the progress table.
    pub fn persist(&self) -> Result<(), MetaError> {
        self.offsets.persist()
    }

    /// GET_ALL_DELAY_OFFSET's body: `{"offsetTable":{"<level>":<offset>}}`.
    pub fn offsets_json(&self) -> serde_json::Value {
        let table: serde_json::Map<String, serde_json::Value> = (1..=self.levels.max_level())
            .map(|l| (l.to_string(), self.offsets.get(l).into()))
            .collect();
        serde_json::json!({ "offsetTable": table })
    }

    /// A slave takes its master's progress table and keeps it.
    pub fn replace_offsets(
        &self,
        table: &std::collections::BTreeMap<i32, i64>,
    ) -> Result<(), MetaError> {
        for (level, offset) in table {
            if (1..=self.levels.max_level()).contains(level) {
                self.offsets.set(*level, *offset);
            }
        }
        self.offsets.persist()
    }

    /// One bounded pass over `level`: delivers every due entry from the
    /// level's offset, in queue order, up to [`MAX_ENTRIES_PER_PASS`].
    pub fn pass(&self, level: i32) -> Result<LevelPass, StoreError> {
        let delay_ms = self.levels.delay_ms(level).ok_or_else(|| {
            StoreError::Config(rmq_common::ConfigError::new(
                rmq_common::delay::DELAY_LEVEL_KEY,
                format!("no delay level {level}"),
            ))
        })?;
        let queue = DelayLevels::queue_id(level);
        let mut out = LevelPass {
            delivered: 0,
            skipped: 0,
            ended: PassEnd::CaughtUp,
        };
        let mut units: Vec<CqUnit> = Vec::with_capacity(READ_BATCH);
        while out.delivered + out.skipped < MAX_ENTRIES_PER_PASS {
            let offset = self.offsets.get(level);
            units.clear();
            match self.store.consume_queue().get(
                SCHEDULE_TOPIC,
                queue,
                offset,
                READ_BATCH,
                &mut units,
            ) {
                Ok(()) => {}
                Err(CqError::Compacted { min_offset, .. }) => {
                    tracing::warn!(
                        level,
                        offset,
                        min_offset,
                        "schedule entries were deleted before delivery; continuing at the queue min"
                    );
                    self.offsets.set(level, min_offset);
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
            if units.is_empty() {
                out.ended = PassEnd::CaughtUp;
                return Ok(out);
            }
            for unit in &units {
                let now = self.store.clock().now_ms();
                let due = corrected_due(unit.tags_code, now, delay_ms, level);
                if due > now {
                    out.ended = PassEnd::NotDue { due_ms: due };
                    return Ok(out);
                }
                match self.deliver(unit) {
                    Delivery::Done => {
                        out.delivered += 1;
                        if let Some(f) = self.failures(level) {
                            f.store(0, Ordering::Relaxed);
                        }
                    }
                    Delivery::Skipped(poison) => {
                        self.poison.record(&PoisonEntry {
                            time_ms: now,
                            queue: format!("{SCHEDULE_TOPIC}:{queue}"),
                            queue_offset: unit.queue_offset,
                            ..poison
                        });
                        out.skipped += 1;
                    }
                    Delivery::Failed(why) => {
                        let failed = self
                            .failures(level)
                            .map_or(1, |f| f.fetch_add(1, Ordering::Relaxed) + 1);
                        let wait = retry_delay_ms(failed);
                        tracing::warn!(level, queue_offset = unit.queue_offset, reason = %why,
                            failed_in_a_row = failed, retry_in_ms = wait,
                            "delivering a delayed message failed; will retry it");
                        out.ended = PassEnd::PutFailed {
                            retry_at_ms: now + wait,
                        };
                        return Ok(out);
                    }
                }
                self.offsets.set(level, unit.queue_offset + 1);
                if out.delivered + out.skipped >= MAX_ENTRIES_PER_PASS {
                    break;
                }
            }
        }
        out.ended = PassEnd::Budget;
        Ok(out)
    }

    fn deliver(&self, unit: &CqUnit) -> Delivery {
        let poison = |reason: String, msg_id: Option<String>, target: Option<String>| {
            Delivery::Skipped(PoisonEntry {
                time_ms: 0,
                commit_log_offset: unit.phy_offset,
                offset_msg_id: msg_id,
                queue: String::new(),
                queue_offset: unit.queue_offset,
                target_topic: target,
                reason,
            })
        };
        let Some(sel) = self.store.record_at(unit.phy_offset) else {
            return poison(Undeliverable::Gone(unit.phy_offset).to_string(), None, None);
        };
        let view = match RecordView::parse(sel.bytes(), false) {
            Ok(v) => v,
            Err(e) => return poison(format!("record at {}: {e}", unit.phy_offset), None, None),
        };
        let msg_id = Some(encode_offset_msg_id(
            view.store_host(),
            view.physical_offset(),
        ));
        let msg = match restore(&view) {
            Ok(m) => m,
            Err(e) => {
                let target = view
                    .property(rmq_common::constants::property::REAL_TOPIC)
                    .map(|t| t.into_owned());
                return poison(e.to_string(), msg_id, target);
            }
        };
        match self.sink.put(&msg) {
            Ok(()) => Delivery::Done,
            Err(e) if e.permanent => poison(e.reason, msg_id, Some(msg.topic)),
            Err(e) => Delivery::Failed(e.reason),
        }
    }
}

enum Delivery {
    Done,
    /// Can never be delivered: the entry to record (time and queue are
    /// filled in by the pass).
    Skipped(PoisonEntry),
    /// Failed for now; tried again after a back-off.
    Failed(String),
}

/// The back-off after `failed` puts in a row.
fn retry_delay_ms(failed: u32) -> i64 {
    let doublings = failed.saturating_sub(1).min(16);
    PUT_RETRY_DELAY_MS
        .saturating_mul(1 << doublings)
        .min(PUT_RETRY_MAX_DELAY_MS)
}

/// A due time further ahead than the level's whole delay can only come from
/// a clock that moved back (or a corrupt unit): deliver it now rather than
/// park the level for an unbounded time (RocketMQ does the same).
fn corrected_due(due_ms: i64, now_ms: i64, delay_ms: i64, level: i32) -> i64 {
    if due_ms > now_ms.saturating_add(delay_ms) {
        tracing::warn!(
            level,
            due_ms,
            now_ms,
            delay_ms,
            "delivery time beyond now + delay (clock moved back?); delivering now"
        );
        return now_ms;
    }
    due_ms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_puts_back_off_up_to_a_bound() {
        assert_eq!(retry_delay_ms(1), PUT_RETRY_DELAY_MS);
        assert_eq!(retry_delay_ms(2), 2 * PUT_RETRY_DELAY_MS);
        assert_eq!(retry_delay_ms(3), 4 * PUT_RETRY_DELAY_MS);
        assert_eq!(retry_delay_ms(40), PUT_RETRY_MAX_DELAY_MS);
        assert_eq!(retry_delay_ms(u32::MAX), PUT_RETRY_MAX_DELAY_MS);
    }

    #[test]
    fn due_times_beyond_the_delay_are_delivered_now() {
        assert_eq!(corrected_due(1_500, 1_000, 1_000, 1), 1_500);
        assert_eq!(corrected_due(2_000, 1_000, 1_000, 1), 2_000);
        assert_eq!(corrected_due(2_001, 1_000, 1_000, 1), 1_000);
    }
}
