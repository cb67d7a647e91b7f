//! The enqueue side: timer-topic consume queue → timer store.

use std::sync::atomic::Ordering;

use rmq_common::constants::{property, TIMER_TOPIC};
use rmq_common::cq::{CqError, CqUnit};
use rmq_common::message::record::RecordView;
use rmq_timer::{java_string_hash, EntryKind, TimerEntry};

use super::convert::{self, NEVER_ENQUEUED};
use super::{PassEnd, Timers, MAX_PER_PASS, PUT_RETRY_MS, READ_BATCH};
use crate::error::ServiceError;
use crate::service::poison::PoisonEntry;

/// What one timer-topic unit becomes.
enum Filing {
    /// An entry for the timer store.
    File(TimerEntry),
    /// Due already: deliver now (or drop, for a delete marker).
    Now,
    /// Not a timer message the service can use; recorded and passed over.
    Poison(String),
}

impl Timers {
    /// One bounded enqueue pass (see the module docs).
    pub fn enqueue_pass(&self) -> Result<PassEnd, ServiceError> {
        let mut units: Vec<CqUnit> = Vec::with_capacity(READ_BATCH);
        let mut handled = 0usize;
        while handled < MAX_PER_PASS {
            let offset = self.enqueue_offset.load(Ordering::Acquire);
            units.clear();
            match self
                .store
                .consume_queue()
                .get(TIMER_TOPIC, 0, offset, READ_BATCH, &mut units)
            {
                Ok(()) => {}
                Err(CqError::Compacted { min_offset, .. }) => {
                    tracing::warn!(offset, min_offset, "timer-topic entries were deleted before filing; continuing at the queue min");
                    self.enqueue_offset.store(min_offset, Ordering::Release);
                    continue;
                }
                Err(e) => return Err(rmq_store_file::StoreError::from(e).into()),
            }
            let now = self.store.clock().now_ms();
            if units.is_empty() {
                self.write_ms.fetch_max(self.floor(now), Ordering::AcqRel);
                return Ok(PassEnd::CaughtUp);
            }
            let w = self.write_ms.load(Ordering::Acquire);
            let mut entries = Vec::with_capacity(units.len());
            for unit in &units {
                match self.filing(unit, w) {
                    Filing::File(e) => entries.push(e),
                    Filing::Now => {
                        // Keep queue order for what is filed before it.
                        self.timers.put(&entries)?;
                        self.counts
                            .filed
                            .fetch_add(entries.len() as u64, Ordering::Relaxed);
                        entries.clear();
                        if let Err(e) = self.deliver_now(unit, now) {
                            self.enqueue_offset
                                .store(unit.queue_offset, Ordering::Release);
                            tracing::warn!(queue_offset = unit.queue_offset, reason = %e, "delivering a due timer message failed; will retry it");
                            return Ok(PassEnd::PutFailed {
                                retry_at_ms: now + PUT_RETRY_MS,
                            });
                        }
                    }
                    Filing::Poison(reason) => self.poison(unit, reason, now),
                }
            }
            self.timers.put(&entries)?;
            self.counts
                .filed
                .fetch_add(entries.len() as u64, Ordering::Relaxed);
            if let Some(last) = units.last() {
                self.enqueue_offset
                    .store(last.queue_offset + 1, Ordering::Release);
            }
            handled += units.len();
            self.write_ms.fetch_max(self.floor(now), Ordering::AcqRel);
        }
        Ok(PassEnd::Budget)
    }

    fn filing(&self, unit: &CqUnit, write_ms: i64) -> Filing {
        let Some(sel) = self.store.record_at(unit.phy_offset) else {
            return Filing::Poison(format!("no record at CommitLog offset {}", unit.phy_offset));
        };
        let view = match RecordView::parse(sel.bytes(), false) {
            Ok(v) => v,
            Err(e) => return Filing::Poison(format!("record at {}: {e}", unit.phy_offset)),
        };
        let Some(out_ms) = view
            .property(property::TIMER_OUT_MS)
            .and_then(|v| v.trim().parse::<i64>().ok())
        else {
            return Filing::Poison("no usable TIMER_OUT_MS".into());
        };
        // A slot from another precision (a restart with a new one) files
        // under the slot that holds it.
        let slot = self.floor(out_ms);
        if slot < write_ms {
            return Filing::Now;
        }
        let delete = view.property(property::TIMER_DEL_UNIQKEY).is_some();
        let topic_hash = view
            .property(property::REAL_TOPIC)
            .map_or(0, |t| java_string_hash(&t));
        let mut entry = TimerEntry {
            slot_ms: slot,
            write_ms,
            commit_log_offset: unit.phy_offset,
            size: unit.size,
            topic_hash,
            kind: if delete {
                EntryKind::Delete
            } else {
                EntryKind::Deliver
            },
        };
        if let Some(horizon) = self.timers.horizon_ms() {
            let window = self.roll_window_ms.min(horizon);
            if slot - write_ms >= window {
                let excess = slot - write_ms - window;
                let step = if excess < window / 3 {
                    window / 2
                } else {
                    window
                };
                entry.slot_ms = self.floor(write_ms + step);
                entry.kind = EntryKind::Roll;
            }
        }
        Filing::File(entry)
    }

    /// A unit due before it could be filed: deliver it now (a delete
    /// marker that late has nothing left to delete).
    fn deliver_now(&self, unit: &CqUnit, now: i64) -> Result<(), String> {
        let Some(sel) = self.store.record_at(unit.phy_offset) else {
            return Ok(());
        };
        let Ok(view) = RecordView::parse(sel.bytes(), false) else {
            return Ok(());
        };
        if view.property(property::TIMER_DEL_UNIQKEY).is_some() {
            return Ok(());
        }
        let msg = match convert::delivery(&view, NEVER_ENQUEUED, now) {
            Ok(m) => m,
            Err(e) => {
                self.poison(unit, e.to_string(), now);
                return Ok(());
            }
        };
        match self.sink.put(&msg) {
            Ok(()) => {
                self.counts.delivered.fetch_add(1, Ordering::Relaxed);
                self.counts.delivered_direct.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(e) if e.permanent => {
                self.poison(unit, e.reason, now);
                Ok(())
            }
            Err(e) => Err(e.reason),
        }
    }

    fn poison(&self, unit: &CqUnit, reason: String, now: i64) {
        self.poison.record(&PoisonEntry {
            time_ms: now,
            commit_log_offset: unit.phy_offset,
            offset_msg_id: None,
            queue: format!("{TIMER_TOPIC}:0"),
            queue_offset: unit.queue_offset,
            target_topic: None,
            reason,
        });
    }
}
