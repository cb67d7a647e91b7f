//! LOCK_BATCH_MQ / UNLOCK_BATCH_MQ: orderly consumers lock queues so that one
//! client of a group consumes each queue at a time.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use rmq_common::remoting::body::{LockBatchBody, MessageQueue};
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};

use super::{success, Handled, Refusal};
use crate::context::BrokerContext;

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

/// Handles the lock requests.
pub fn handle(ctx: &Arc<BrokerContext>, code: RequestCode, req: &RemotingCommand) -> Handled {
    let body: LockBatchBody = rmq_common::json::from_slice(req.body.as_deref().unwrap_or_default())
        .map_err(|e| {
            Refusal::new(
                ResponseCode::SystemError,
                format!("lock body is not valid: {e}"),
            )
        })?;
    match code {
        RequestCode::LockBatchMq => {
            let ok = ctx.locks.lock(
                &body.consumer_group,
                &body.client_id,
                &body.mq_set,
                rmq_common::time::now_ms(),
            );
            let out = serde_json::json!({ "lockOKMQSet": ok }).to_string();
            Ok(success().with_body(out.into_bytes()))
        }
        RequestCode::UnlockBatchMq => {
            ctx.locks
                .unlock(&body.consumer_group, &body.client_id, &body.mq_set);
            Ok(success())
        }
        _ => Err(Refusal::new(
            ResponseCode::RequestCodeNotSupported,
            "not a lock request",
        )),
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
