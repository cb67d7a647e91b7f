//! Wake-ups for code waiting on new messages in a queue (long polling).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use rmq_common::cq::QueueKey;

/// Told after reput has made new units of a queue readable.
pub trait MessageArrivalListener: Send + Sync + std::fmt::Debug {
    /// `max_offset` is the queue's new exclusive max offset.
    fn arrived(&self, topic: &str, queue_id: i32, max_offset: i64);
}

/// A blocking waiter per queue, for threads (tests, tools) that wait for a
/// queue to pass an offset.
#[derive(Debug, Default)]
pub struct QueueWaiters {
    max_offsets: Mutex<HashMap<QueueKey, i64>>,
    changed: Condvar,
}

impl QueueWaiters {
    /// No queue seen yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Blocks until the queue's max offset is above `offset`, or `timeout`
    /// passes. Returns whether it is.
    pub fn wait_beyond(&self, topic: &str, queue_id: i32, offset: i64, timeout: Duration) -> bool {
        let key = QueueKey::new(topic, queue_id);
        let deadline = Instant::now() + timeout;
        let mut map = self.max_offsets.lock();
        loop {
            if map.get(&key).is_some_and(|m| *m > offset) {
                return true;
            }
            if self.changed.wait_until(&mut map, deadline).timed_out() {
                return map.get(&key).is_some_and(|m| *m > offset);
            }
        }
    }
}

impl MessageArrivalListener for QueueWaiters {
    fn arrived(&self, topic: &str, queue_id: i32, max_offset: i64) {
        let mut map = self.max_offsets.lock();
        let slot = map
            .entry(QueueKey::new(topic, queue_id))
            .or_insert(max_offset);
        *slot = (*slot).max(max_offset);
        drop(map);
        self.changed.notify_all();
    }
}
