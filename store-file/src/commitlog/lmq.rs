//! Light message queues at append: the next queue offset of each LMQ, and
//! the rewrite that records the offsets a message took in its
//! INNER_MULTI_QUEUE_OFFSET property (RocketMQ's `LmqDispatch`).
//!
//! The table is lazy and bounded. An LMQ's first append since the broker
//! started (or since its entry was dropped) asks the serving consume queue
//! for the queue's max offset, so a restart loads nothing per LMQ. Past
//! [`LMQ_OFFSETS_KEPT`] entries, those whose every append has been
//! dispatched (the consume queue's max offset then equals the entry, so
//! asking again gives the same) are dropped: an idle LMQ holds no memory
//! here. An entry is a boxed name and two integers.

use std::collections::HashMap;
use std::sync::Arc;

use rmq_common::constants::property;
use rmq_common::cq::CqError;
use rmq_common::message::lmq::{dispatch_entries, join_offsets, names_queues};
use rmq_common::message::record::replace_properties;
use rmq_common::message::{sysflag, MessageToStore};
use rmq_common::names::topic_allows_lmq;

use crate::error::{Result, StoreError};

/// LMQ entries kept before dispatched ones are dropped.
pub const LMQ_OFFSETS_KEPT: usize = 65_536;

/// What the put path asks the consume queue about LMQs.
pub trait LmqOffsetSource: Send + Sync {
    /// The LMQ's max offset in the serving consume queue.
    fn max_offset(&self, queue: &str) -> std::result::Result<i64, CqError>;
    /// CommitLog offset below which every record's units are readable.
    fn dispatched_to(&self) -> i64;
}

/// One LMQ: its next offset, and the CommitLog end of the last append that
/// took one.
#[derive(Debug, Clone, Copy)]
struct Entry {
    next: i64,
    last_end: i64,
}

/// Next queue offset of the LMQs appended to lately.
pub(super) struct LmqOffsets {
    next: HashMap<Box<str>, Entry>,
    source: Option<Arc<dyn LmqOffsetSource>>,
    /// Size at which dispatched entries are next dropped.
    drop_at: usize,
}

impl Default for LmqOffsets {
    fn default() -> Self {
        Self {
            next: HashMap::new(),
            source: None,
            drop_at: LMQ_OFFSETS_KEPT,
        }
    }
}

impl std::fmt::Debug for LmqOffsets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LmqOffsets")
            .field("queues", &self.next.len())
            .field("source", &self.source.is_some())
            .finish()
    }
}

impl LmqOffsets {
    pub(super) fn set_source(&mut self, source: Arc<dyn LmqOffsetSource>) {
        self.source = Some(source);
    }

    /// LMQs in the table.
    pub(super) fn len(&self) -> usize {
        self.next.len()
    }

    /// Forgets every LMQ (the log was truncated): each next append asks
    /// the consume queue again.
    pub(super) fn clear(&mut self) {
        self.next.clear();
    }

    /// Forgets an LMQ (deleted or cleaned up): its next append asks the
    /// consume queue again.
    pub(super) fn forget(&mut self, queue: &str) {
        self.next.remove(queue);
    }

    /// Forgets `queue` unless its next offset is past `max`.
    pub(super) fn forget_unless_ahead(&mut self, queue: &str, max: i64) -> bool {
        match self.next.get(queue) {
            Some(e) if e.next > max => false,
            _ => {
                self.next.remove(queue);
                true
            }
        }
    }

    /// The next offset of `queue`, loading it on first use.
    pub(super) fn next(&mut self, queue: &str) -> Result<i64> {
        if let Some(e) = self.next.get(queue) {
            return Ok(e.next);
        }
        let loaded = match &self.source {
            Some(source) => source.max_offset(queue)?,
            None => 0,
        };
        self.next.insert(
            queue.into(),
            Entry {
                next: loaded,
                last_end: 0,
            },
        );
        Ok(loaded)
    }

    /// Records that `queue` has taken offsets up to `last`, by an append
    /// ending at CommitLog offset `end`.
    fn advance(&mut self, queue: &str, last: i64, end: i64) {
        match self.next.get_mut(queue) {
            Some(e) => {
                e.next = e.next.max(last + 1);
                e.last_end = e.last_end.max(end);
            }
            None => {
                self.next.insert(
                    queue.into(),
                    Entry {
                        next: last + 1,
                        last_end: end,
                    },
                );
            }
        }
    }

    /// Past the bound, drops the entries whose appends are all dispatched.
    fn drop_dispatched(&mut self) {
        if self.next.len() <= self.drop_at {
            return;
        }
        let Some(source) = &self.source else { return };
        let dispatched = source.dispatched_to();
        self.next.retain(|_, e| e.last_end > dispatched);
        // Entries still in flight stay; the next drop waits for the table
        // to double, so a backlog costs one walk per doubling, not per put.
        self.drop_at = LMQ_OFFSETS_KEPT.max(self.next.len() * 2);
    }
}

/// The LMQ offsets taken by the batch being appended, applied to the table
/// only once its bytes are in the segment.
#[derive(Debug, Default)]
pub(super) struct LmqTaken(Vec<(String, i64)>);

impl LmqTaken {
    /// The next offset of `queue`, seen through what this batch took.
    pub(super) fn next(&self, table: &mut LmqOffsets, queue: &str) -> Result<i64> {
        match self.0.iter().rev().find(|(q, _)| q == queue) {
            Some((_, last)) => Ok(last + 1),
            None => table.next(queue),
        }
    }

    /// Takes the next offset of `queue`.
    pub(super) fn take(&mut self, table: &mut LmqOffsets, queue: &str) -> Result<i64> {
        let offset = self.next(table, queue)?;
        self.0.push((queue.to_owned(), offset));
        Ok(offset)
    }

    /// Applies what the batch took; `end` is the CommitLog offset past the
    /// batch.
    pub(super) fn apply(self, table: &mut LmqOffsets, end: i64) {
        for (queue, offset) in self.0 {
            table.advance(&queue, offset, end);
        }
        table.drop_dispatched();
    }
}

/// Whether `msg` is multi-dispatched: it names queues, it is consumable
/// and its topic takes multi-dispatch.
pub(super) fn is_multi_dispatch(msg: &MessageToStore) -> bool {
    sysflag::is_consumable(msg.sys_flag)
        && topic_allows_lmq(&msg.topic)
        && names_queues(&msg.properties)
}

/// Takes an offset in each LMQ `msg` names and rewrites the properties of
/// its encoded record `bytes` to carry them (INNER_MULTI_QUEUE_OFFSET; the
/// WAIT property is dropped, as RocketMQ does). Fails, taking nothing, if
/// the record would outgrow `max_message_size` (the batch is then refused).
pub(super) fn stamp_offsets(
    msg: &MessageToStore,
    bytes: &mut Vec<u8>,
    table: &mut LmqOffsets,
    taken: &mut LmqTaken,
    max_message_size: usize,
) -> Result<()> {
    let names = msg
        .properties
        .get(property::INNER_MULTI_DISPATCH)
        .unwrap_or_default();
    // A message stored straight into an LMQ has its unit there already.
    let entries: Vec<Option<&str>> = dispatch_entries(names)
        .into_iter()
        .map(|e| e.filter(|q| *q != msg.topic))
        .collect();
    let mut offsets = Vec::with_capacity(entries.len());
    for entry in &entries {
        offsets.push(match entry {
            Some(queue) => Some(taken.next(table, queue)?),
            None => None,
        });
    }
    let mut props = msg.properties.clone();
    props.insert(property::INNER_MULTI_QUEUE_OFFSET, join_offsets(&offsets));
    props.remove(property::WAIT_STORE_MSG_OK);
    let encoded = props.encode().map_err(|e| StoreError::MessageIllegal {
        reason: e.to_string(),
    })?;
    // On failure the whole batch is refused, so `bytes` may be left as is.
    replace_properties(bytes, &encoded).map_err(StoreError::Encode)?;
    if bytes.len() > max_message_size {
        return Err(StoreError::MessageIllegal {
            reason: format!(
                "message of {} bytes with its multi-dispatch offsets exceeds maxMessageSize {max_message_size}",
                bytes.len()
            ),
        });
    }
    for queue in entries.into_iter().flatten() {
        taken.take(table, queue)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicI64, Ordering};

    use super::*;

    /// A consume queue holding `next` as every LMQ's max offset, dispatched
    /// up to `dispatched`.
    struct Stub {
        next: i64,
        dispatched: AtomicI64,
    }

    impl LmqOffsetSource for Stub {
        fn max_offset(&self, _queue: &str) -> std::result::Result<i64, CqError> {
            Ok(self.next)
        }
        fn dispatched_to(&self) -> i64 {
            self.dispatched.load(Ordering::Relaxed)
        }
    }

    #[test]
    fn only_dispatched_entries_are_dropped_past_the_bound() {
        let stub = Arc::new(Stub {
            next: 1,
            dispatched: AtomicI64::new(0),
        });
        let mut table = LmqOffsets::default();
        table.set_source(stub.clone());
        // LMQ i takes offset 1 by an append ending at 100 * (i + 1).
        let append = |table: &mut LmqOffsets, i: usize| {
            let mut taken = LmqTaken::default();
            assert_eq!(taken.take(table, &format!("%LMQ%{i}")).unwrap(), 1);
            taken.apply(table, 100 * (i as i64 + 1));
        };
        for i in 0..LMQ_OFFSETS_KEPT {
            append(&mut table, i);
        }
        assert_eq!(
            table.len(),
            LMQ_OFFSETS_KEPT,
            "nothing dropped up to the bound"
        );
        // All but the last five are dispatched; one more append passes the
        // bound: the dispatched ones go, the five in flight and the new one
        // stay.
        let k = LMQ_OFFSETS_KEPT as i64;
        stub.dispatched.store(100 * (k - 5), Ordering::Relaxed);
        append(&mut table, LMQ_OFFSETS_KEPT);
        assert_eq!(table.len(), 6);
        // One in flight keeps its own next offset.
        assert_eq!(
            table
                .next(&format!("%LMQ%{}", LMQ_OFFSETS_KEPT - 1))
                .unwrap(),
            2
        );
        // A dropped one asks the consume queue again.
        assert_eq!(table.next("%LMQ%0").unwrap(), 1);
    }
}
