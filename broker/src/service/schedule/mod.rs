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

pub use deliver::{restore, DeliverySink, Undeliverable};
pub use offsets::DelayOffsetTable;
pub use runner::ScheduleService;

use std::sync::Arc;

use rmq_common::constants::SCHEDULE_TOPIC;
use rmq_common::cq::{CqError, CqUnit};
use rmq_common::message::record::RecordView;
use rmq_common::DelayLevels;
use rmq_store_file::StoreError;

use crate::error::{MetaError, ServiceError};

use crate::store::MessageStore;

/// Most entries one pass handles before it yields (so a level with a large
/// backlog still checks for shutdown between passes).
pub const MAX_ENTRIES_PER_PASS: usize = 1024;
/// Units read from the consume queue at a time.
const READ_BATCH: usize = 32;
/// How long a level waits before trying an entry whose put failed again.
pub const PUT_RETRY_DELAY_MS: i64 = 1_000;

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
    /// Entries that could not be delivered at all (logged and passed over).
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
        let scheduler = Self {
            store,
            sink,
            levels,
            offsets,
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

    /// Persists the progress table.
    pub fn persist(&self) -> Result<(), MetaError> {
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
                    Delivery::Done => out.delivered += 1,
                    Delivery::Skipped(why) => {
                        tracing::error!(level, queue_offset = unit.queue_offset, reason = %why,
                            "delayed message cannot be delivered; passed over");
                        out.skipped += 1;
                    }
                    Delivery::Failed(why) => {
                        tracing::warn!(level, queue_offset = unit.queue_offset, reason = %why,
                            retry_in_ms = PUT_RETRY_DELAY_MS, "delivering a delayed message failed; will retry it");
                        out.ended = PassEnd::PutFailed {
                            retry_at_ms: now + PUT_RETRY_DELAY_MS,
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
        let Some(sel) = self.store.record_at(unit.phy_offset) else {
            return Delivery::Skipped(Undeliverable::Gone(unit.phy_offset).to_string());
        };
        let view = match RecordView::parse(sel.bytes(), false) {
            Ok(v) => v,
            Err(e) => return Delivery::Skipped(format!("record at {}: {e}", unit.phy_offset)),
        };
        let msg = match restore(&view) {
            Ok(m) => m,
            Err(e) => return Delivery::Skipped(e.to_string()),
        };
        match self.sink.put(&msg) {
            Ok(()) => Delivery::Done,
            Err(e) => Delivery::Failed(e),
        }
    }
}

enum Delivery {
    Done,
    Skipped(String),
    Failed(String),
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
    fn due_times_beyond_the_delay_are_delivered_now() {
        assert_eq!(corrected_due(1_500, 1_000, 1_000, 1), 1_500);
        assert_eq!(corrected_due(2_000, 1_000, 1_000, 1), 2_000);
        assert_eq!(corrected_due(2_001, 1_000, 1_000, 1), 1_000);
    }
}
