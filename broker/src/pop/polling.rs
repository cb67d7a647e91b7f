//! Long polling of POP_MESSAGE and NOTIFICATION: a request that found
//! nothing waits until a message arrives on its topic (or its POP retry
//! topic), an ack unblocks an orderly queue, or its poll time ends.
//! RocketMQ's limits apply: `popPollingSize` waiters per (topic, group,
//! queue) and `maxPopPollingSize` in the broker; past them the request is
//! answered POLLING_FULL at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;

use rmq_store::MessageArrivalListener;

/// Waiting POP and NOTIFICATION requests.
#[derive(Debug)]
pub struct PopPolling {
    per_key: usize,
    total_max: usize,
    /// One wake-up per topic.
    topics: Mutex<HashMap<String, Arc<Notify>>>,
    /// POP requests waiting per `topic@group@queueId`.
    waiting: Mutex<HashMap<String, usize>>,
    total: AtomicUsize,
}

/// Why a wait was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollingFull;

/// A waiter's place, released when dropped.
struct Slot<'a> {
    polling: &'a PopPolling,
    key: String,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut w = self.polling.waiting.lock();
        if let Some(n) = w.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                w.remove(&self.key);
            }
        }
        self.polling.total.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The polling key RocketMQ counts waiters under (-1: every queue).
pub fn key(topic: &str, group: &str, queue_id: i32) -> String {
    format!("{topic}@{group}@{}", queue_id.max(-1))
}

impl PopPolling {
    /// Limits `per_key` and `total_max`.
    pub fn new(per_key: usize, total_max: usize) -> Self {
        Self {
            per_key,
            total_max,
            topics: Mutex::default(),
            waiting: Mutex::default(),
            total: AtomicUsize::new(0),
        }
    }

    fn notify_of(&self, topic: &str) -> Arc<Notify> {
        Arc::clone(
            self.topics
                .lock()
                .entry(topic.to_owned())
                .or_insert_with(|| Arc::new(Notify::new())),
        )
    }

    /// POP requests waiting under `key`.
    pub fn waiting(&self, key: &str) -> usize {
        self.waiting.lock().get(key).copied().unwrap_or(0)
    }

    /// Wakes the waiters of `topic`.
    pub fn wake(&self, topic: &str) {
        let n = self.topics.lock().get(topic).cloned();
        if let Some(n) = n {
            n.notify_waiters();
        }
    }

    /// Waits under `key` for news on any of `topics` until `has_new()` or
    /// `timeout`; counted for POLLING_INFO when `counted`. Returns whether
    /// `has_new()` became true.
    pub async fn wait(
        &self,
        key: &str,
        counted: bool,
        topics: &[String],
        timeout: Duration,
        has_new: impl Fn() -> bool,
    ) -> Result<bool, PollingFull> {
        let _slot = if counted {
            let mut w = self.waiting.lock();
            let n = w.entry(key.to_owned()).or_insert(0);
            if *n >= self.per_key || self.total.load(Ordering::Relaxed) >= self.total_max {
                if *n == 0 {
                    w.remove(key);
                }
                return Err(PollingFull);
            }
            *n += 1;
            self.total.fetch_add(1, Ordering::Relaxed);
            Some(Slot {
                polling: self,
                key: key.to_owned(),
            })
        } else {
            None
        };
        let notifies: Vec<Arc<Notify>> = topics.iter().map(|t| self.notify_of(t)).collect();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let waits: Vec<_> = notifies.iter().map(|n| Box::pin(n.notified())).collect();
            let mut waits = waits;
            for w in &mut waits {
                w.as_mut().enable();
            }
            if has_new() {
                return Ok(true);
            }
            let any = futures::future::select_all(waits);
            if tokio::time::timeout_at(deadline, any).await.is_err() {
                return Ok(has_new());
            }
        }
    }
}

impl MessageArrivalListener for PopPolling {
    fn arrived(&self, topic: &str, _queue_id: i32, _max_offset: i64) {
        self.wake(topic);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[tokio::test]
    async fn wakes_counts_and_refuses_when_full() {
        let p = Arc::new(PopPolling::new(1, 10));
        let flag = Arc::new(AtomicBool::new(false));
        let (p2, f2) = (Arc::clone(&p), Arc::clone(&flag));
        let waiter = tokio::spawn(async move {
            p2.wait(
                "T@G@-1",
                true,
                &["T".into()],
                Duration::from_secs(30),
                move || f2.load(Ordering::SeqCst),
            )
            .await
        });
        for _ in 0..1000 {
            if p.waiting("T@G@-1") == 1 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(p.waiting("T@G@-1"), 1);
        let full = p
            .wait(
                "T@G@-1",
                true,
                &["T".into()],
                Duration::from_millis(1),
                || false,
            )
            .await;
        assert_eq!(full, Err(PollingFull));
        flag.store(true, Ordering::SeqCst);
        p.arrived("T", 0, 1);
        let woke = tokio::time::timeout(Duration::from_secs(10), waiter).await;
        assert_eq!(woke.unwrap().unwrap(), Ok(true));
        assert_eq!(p.waiting("T@G@-1"), 0);
    }
}
