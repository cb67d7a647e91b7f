//! Orderly consumers' queue locks (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ): one
//! client of a group holds each queue at a time, until it unlocks or stops
//! renewing the lock.

use std::collections::HashMap;

use parking_lot::Mutex;
use rmq_common::remoting::body::MessageQueue;

/// A lock not renewed for this long can be taken by another client
/// (RocketMQ's `rocketmq.broker.rebalance.lockMaxLiveTime`).
pub const LOCK_MAX_LIVE_MS: i64 = 60_000;

/// Who holds which queue, per group.
#[derive(Debug, Default)]
pub struct QueueLockManager {
    locks: Mutex<HashMap<(String, MessageQueue), (String, i64)>>,
}

impl QueueLockManager {
    /// No locks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Locks what it can for `client`; returns the queues it now holds.
    pub fn lock(
        &self,
        group: &str,
        client: &str,
        mqs: &[MessageQueue],
        now_ms: i64,
    ) -> Vec<MessageQueue> {
        let mut locks = self.locks.lock();
        let mut ok = Vec::new();
        for mq in mqs {
            let key = (group.to_owned(), mq.clone());
            let free = match locks.get(&key) {
                None => true,
                Some((holder, at)) => holder == client || now_ms - at > LOCK_MAX_LIVE_MS,
            };
            if free {
                locks.insert(key, (client.to_owned(), now_ms));
                ok.push(mq.clone());
            }
        }
        ok
    }

    /// Releases `client`'s locks on `mqs`.
    pub fn unlock(&self, group: &str, client: &str, mqs: &[MessageQueue]) {
        let mut locks = self.locks.lock();
        for mq in mqs {
            let key = (group.to_owned(), mq.clone());
            if locks.get(&key).is_some_and(|(holder, _)| holder == client) {
                locks.remove(&key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_expire_and_belong_to_one_client() {
        let m = QueueLockManager::new();
        let mq = MessageQueue {
            topic: "T".into(),
            broker_name: "b".into(),
            queue_id: 0,
        };
        assert_eq!(m.lock("g", "c1", std::slice::from_ref(&mq), 0).len(), 1);
        assert!(m
            .lock("g", "c2", std::slice::from_ref(&mq), 1000)
            .is_empty());
        assert_eq!(
            m.lock("g", "c2", std::slice::from_ref(&mq), LOCK_MAX_LIVE_MS + 1)
                .len(),
            1
        );
        m.unlock("g", "c1", std::slice::from_ref(&mq));
        assert!(m
            .lock("g", "c1", std::slice::from_ref(&mq), LOCK_MAX_LIVE_MS + 2)
            .is_empty());
        m.unlock("g", "c2", std::slice::from_ref(&mq));
        assert_eq!(m.lock("g", "c1", &[mq], LOCK_MAX_LIVE_MS + 3).len(), 1);
    }
}
