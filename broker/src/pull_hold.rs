//! Long polling: pulls that found nothing wait here until reput makes a new
//! unit of their queue readable, or their suspend time runs out.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rmq_common::cq::QueueKey;
use tokio::sync::Notify;

use rmq_store::MessageArrivalListener;

/// Wakes held pulls per queue.
#[derive(Debug, Default)]
pub struct PullHoldService {
    queues: Mutex<HashMap<QueueKey, Arc<Notify>>>,
}

impl PullHoldService {
    /// No held pulls.
    pub fn new() -> Self {
        Self::default()
    }

    fn notify_of(&self, topic: &str, queue_id: i32) -> Arc<Notify> {
        Arc::clone(
            self.queues
                .lock()
                .entry(QueueKey::new(topic, queue_id))
                .or_insert_with(|| Arc::new(Notify::new())),
        )
    }

    /// Waits until `has_new()` is true, re-checking after every arrival on
    /// the queue, or until `timeout`. Returns whether it became true.
    pub async fn wait(
        &self,
        topic: &str,
        queue_id: i32,
        timeout: Duration,
        has_new: impl Fn() -> bool,
    ) -> bool {
        let notify = self.notify_of(topic, queue_id);
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Register interest before checking, so an arrival between the
            // check and the wait is not missed.
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if has_new() {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return has_new();
            }
        }
    }
}

impl MessageArrivalListener for PullHoldService {
    fn arrived(&self, topic: &str, queue_id: i32, _max_offset: i64) {
        let notify = self
            .queues
            .lock()
            .get(&QueueKey::new(topic, queue_id))
            .cloned();
        if let Some(n) = notify {
            n.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[tokio::test]
    async fn wakes_on_arrival_and_times_out() {
        let s = Arc::new(PullHoldService::new());
        let flag = Arc::new(AtomicBool::new(false));
        let (s2, f2) = (Arc::clone(&s), Arc::clone(&flag));
        let waiter = tokio::spawn(async move {
            s2.wait("T", 0, Duration::from_secs(30), move || {
                f2.load(Ordering::SeqCst)
            })
            .await
        });
        tokio::task::yield_now().await;
        flag.store(true, Ordering::SeqCst);
        s.arrived("T", 0, 1);
        assert!(tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .unwrap()
            .unwrap());
        let start = tokio::time::Instant::now();
        assert!(!s.wait("T", 1, Duration::from_millis(30), || false).await);
        assert!(start.elapsed() >= Duration::from_millis(30));
    }
}
