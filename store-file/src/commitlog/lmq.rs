//! Light message queues at append: the next queue offset of each LMQ, and
//! the rewrite that records the offsets a message took in its
//! INNER_MULTI_QUEUE_OFFSET property (RocketMQ's `LmqDispatch`).
//!
//! The table is filled lazily: an LMQ's first append since the broker
//! started asks the serving consume queue for the queue's max offset (exact
//! then, because reput caught up before the first append), so a restart
//! loads nothing per LMQ. An entry is a boxed name and an offset.

use std::collections::HashMap;
use std::sync::Arc;

use rmq_common::constants::property;
use rmq_common::cq::CqError;
use rmq_common::message::lmq::{dispatch_entries, join_offsets};
use rmq_common::message::record::replace_properties;
use rmq_common::message::{sysflag, MessageToStore};
use rmq_common::names::topic_allows_lmq;

use crate::error::{Result, StoreError};

/// Reads an LMQ's max offset from the serving consume queue.
pub type LmqOffsetSource = Arc<dyn Fn(&str) -> std::result::Result<i64, CqError> + Send + Sync>;

/// Next queue offset of every LMQ appended to since the start.
#[derive(Default)]
pub(super) struct LmqOffsets {
    next: HashMap<Box<str>, i64>,
    source: Option<LmqOffsetSource>,
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
    pub(super) fn set_source(&mut self, source: LmqOffsetSource) {
        self.source = Some(source);
    }

    /// LMQs in the table.
    pub(super) fn len(&self) -> usize {
        self.next.len()
    }

    /// Forgets an LMQ (deleted or cleaned up): its next append asks the
    /// consume queue again.
    pub(super) fn forget(&mut self, queue: &str) {
        self.next.remove(queue);
    }

    /// Forgets `queue` unless its next offset is past `max`.
    pub(super) fn forget_unless_ahead(&mut self, queue: &str, max: i64) -> bool {
        match self.next.get(queue) {
            Some(n) if *n > max => false,
            _ => {
                self.next.remove(queue);
                true
            }
        }
    }

    /// The next offset of `queue`, loading it on first use.
    pub(super) fn next(&mut self, queue: &str) -> Result<i64> {
        if let Some(n) = self.next.get(queue) {
            return Ok(*n);
        }
        let loaded = match &self.source {
            Some(source) => source(queue)?,
            None => 0,
        };
        self.next.insert(queue.into(), loaded);
        Ok(loaded)
    }

    /// Records that `queue` has taken offsets up to `last`.
    pub(super) fn advance(&mut self, queue: &str, last: i64) {
        match self.next.get_mut(queue) {
            Some(n) => *n = (*n).max(last + 1),
            None => {
                self.next.insert(queue.into(), last + 1);
            }
        }
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

    pub(super) fn apply(self, table: &mut LmqOffsets) {
        for (queue, offset) in self.0 {
            table.advance(&queue, offset);
        }
    }
}

/// Whether `msg` is multi-dispatched: it names queues, it is consumable
/// and its topic takes multi-dispatch.
pub(super) fn is_multi_dispatch(msg: &MessageToStore) -> bool {
    sysflag::is_consumable(msg.sys_flag)
        && topic_allows_lmq(&msg.topic)
        && msg
            .properties
            .get(property::INNER_MULTI_DISPATCH)
            .is_some_and(|v| !v.trim().is_empty())
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
