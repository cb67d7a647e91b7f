//! The dequeue side: due slots → real topics.

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use rmq_common::constants::{property, TIMER_TOPIC};
use rmq_common::message::record::RecordView;
use rmq_timer::{EntryKind, TimerEntry};

use super::convert;
use super::{PassEnd, Timers, MAX_PER_PASS, PUT_RETRY_MS};
use crate::error::ServiceError;
use crate::service::poison::PoisonEntry;

impl Timers {
    /// One bounded dequeue pass: delivers every slot before the write time
    /// (see the module docs).
    pub fn dequeue_pass(&self) -> Result<PassEnd, ServiceError> {
        let mut entries: Vec<TimerEntry> = Vec::new();
        let mut handled = 0usize;
        while handled < MAX_PER_PASS {
            let r = self.read_ms.load(Ordering::Acquire);
            let w = self.write_ms.load(Ordering::Acquire);
            if r >= w {
                return Ok(PassEnd::NotDue {
                    at_ms: r + self.precision,
                });
            }
            entries.clear();
            self.timers.read_slot(r, &mut entries)?;
            let deleted = self.delete_set(&entries);
            let start = {
                let resume = self.resume.lock();
                if resume.0 == r {
                    resume.1
                } else {
                    0
                }
            };
            for (i, e) in entries.iter().enumerate().skip(start) {
                if e.kind == EntryKind::Delete {
                    continue;
                }
                let now = self.store.clock().now_ms();
                if let Err(why) = self.deliver(e, &deleted, now) {
                    *self.resume.lock() = (r, i);
                    tracing::warn!(slot_ms = r, reason = %why, "timer delivery failed; will retry it");
                    return Ok(PassEnd::PutFailed {
                        retry_at_ms: now + PUT_RETRY_MS,
                    });
                }
            }
            handled += entries.len().max(1);
            let next = r + self.precision;
            self.read_ms.store(next, Ordering::Release);
            self.timers.advance(next);
            self.last_lag_ms.store(
                (self.store.clock().now_ms() - next).max(0),
                Ordering::Relaxed,
            );
        }
        Ok(PassEnd::Budget)
    }

    /// `<realTopic>+<uniqKey>` of every delete marker of the slot.
    fn delete_set(&self, entries: &[TimerEntry]) -> HashSet<String> {
        entries
            .iter()
            .filter(|e| e.kind == EntryKind::Delete)
            .filter_map(|e| {
                let sel = self.store.record_at(e.commit_log_offset)?;
                let view = RecordView::parse(sel.bytes(), false).ok()?;
                view.property(property::TIMER_DEL_UNIQKEY)
                    .map(|k| k.into_owned())
            })
            .collect()
    }

    /// Puts one entry's message; `Err` only for a failure worth retrying.
    fn deliver(&self, e: &TimerEntry, deleted: &HashSet<String>, now: i64) -> Result<(), String> {
        let Some(sel) = self.store.record_at(e.commit_log_offset) else {
            self.poison_entry(
                e,
                format!("no record at CommitLog offset {}", e.commit_log_offset),
                now,
            );
            return Ok(());
        };
        let view = match RecordView::parse(sel.bytes(), false) {
            Ok(v) => v,
            Err(err) => {
                self.poison_entry(e, format!("record at {}: {err}", e.commit_log_offset), now);
                return Ok(());
            }
        };
        let msg = match e.kind {
            EntryKind::Roll => convert::roll(&view, e.write_ms, now),
            _ => {
                let key = format!(
                    "{}+{}",
                    view.property(property::REAL_TOPIC).unwrap_or_default(),
                    view.property(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
                        .unwrap_or_default()
                );
                if deleted.contains(&key) {
                    self.counts.recalled.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                match convert::delivery(&view, e.write_ms, now) {
                    Ok(m) => m,
                    Err(err) => {
                        self.poison_entry(e, err.to_string(), now);
                        return Ok(());
                    }
                }
            }
        };
        match self.sink.put(&msg) {
            Ok(()) => {
                let counter = if e.kind == EntryKind::Roll {
                    &self.counts.rolled
                } else {
                    &self.counts.delivered
                };
                counter.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(err) if err.permanent => {
                self.poison_entry(e, err.reason, now);
                Ok(())
            }
            Err(err) => Err(err.reason),
        }
    }

    fn poison_entry(&self, e: &TimerEntry, reason: String, now: i64) {
        self.poison.record(&PoisonEntry {
            time_ms: now,
            commit_log_offset: e.commit_log_offset,
            offset_msg_id: None,
            queue: format!("{TIMER_TOPIC}:slot {}", e.slot_ms),
            queue_offset: -1,
            target_topic: None,
            reason,
        });
    }
}
