//! What the slaves have acknowledged, and the SYNC_MASTER puts waiting for
//! it: a put is answered once some slave reports an offset at or past its
//! end (Java's `push2SlaveMaxOffset`, the highest offset any slave ever
//! acknowledged), FLUSH_SLAVE_TIMEOUT after `slaveTimeout`, and
//! SLAVE_NOT_AVAILABLE at once when no slave is connected or the
//! acknowledged offset is `haMaxGapNotInSync` or more behind. A waiting put
//! holds a oneshot receiver, no thread.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::oneshot;

/// How a replica wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaStatus {
    /// A slave has the bytes.
    Acked,
    /// No slave acknowledged them in time (FLUSH_SLAVE_TIMEOUT).
    TimedOut,
    /// No slave in sync to wait for (SLAVE_NOT_AVAILABLE).
    NotAvailable,
}

/// Puts waiting for replicas to acknowledge their end, by that end (a
/// waiting put holds a oneshot receiver, no thread). Shared by
/// [`ReplicaAcks`] and the controller mode's `InSync`.
#[derive(Debug, Default)]
pub struct OffsetWaiters(Mutex<BTreeMap<i64, Vec<oneshot::Sender<()>>>>);

impl OffsetWaiters {
    /// A wait for `end`, unless `reached()` already says it is reached.
    /// `reached` runs under the lock [`Self::release`] takes, so a release
    /// cannot slip between the check and the wait.
    pub fn register(&self, end: i64, reached: impl FnOnce() -> bool) -> Waiter {
        let mut waiters = self.0.lock();
        if reached() {
            return Waiter(None);
        }
        let (tx, rx) = oneshot::channel();
        waiters.entry(end).or_default().push(tx);
        Waiter(Some(rx))
    }

    /// Answers every waiter whose end is at or before `offset`.
    pub fn release(&self, offset: i64) {
        let mut waiters = self.0.lock();
        let later = waiters.split_off(&offset.saturating_add(1));
        let done = std::mem::replace(&mut *waiters, later);
        drop(waiters);
        for tx in done.into_values().flatten() {
            let _ = tx.send(());
        }
    }
}

/// One registered wait ([`OffsetWaiters::register`]).
#[derive(Debug)]
pub struct Waiter(Option<oneshot::Receiver<()>>);

impl Waiter {
    /// Acked when released (or reached at registration), else TimedOut
    /// after `timeout`.
    pub async fn until(self, timeout: Duration) -> ReplicaStatus {
        let Some(rx) = self.0 else {
            return ReplicaStatus::Acked;
        };
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(())) => ReplicaStatus::Acked,
            _ => ReplicaStatus::TimedOut,
        }
    }
}

/// Slave acknowledgements and the puts waiting on them.
#[derive(Debug)]
pub struct ReplicaAcks {
    acked: AtomicI64,
    slaves: AtomicUsize,
    /// What each connected slave acknowledged, by its address.
    per_slave: Mutex<BTreeMap<String, i64>>,
    max_gap: i64,
    waiters: OffsetWaiters,
}

impl ReplicaAcks {
    /// Nothing acknowledged; a slave more than `max_gap` bytes behind does
    /// not count as in sync.
    pub fn new(max_gap: i64) -> Self {
        Self {
            acked: AtomicI64::new(0),
            slaves: AtomicUsize::new(0),
            per_slave: Mutex::new(BTreeMap::new()),
            max_gap,
            waiters: OffsetWaiters::default(),
        }
    }

    /// The slave at `slave` connected (nothing acknowledged yet).
    pub fn slave_connected(&self, slave: &str) {
        self.per_slave.lock().insert(slave.to_owned(), 0);
        self.slaves.fetch_add(1, Ordering::Relaxed);
    }

    /// The connection of the slave at `slave` ended.
    pub fn slave_gone(&self, slave: &str) {
        self.per_slave.lock().remove(slave);
        self.slaves.fetch_sub(1, Ordering::Relaxed);
    }

    /// Each connected slave's address and the offset it acknowledged.
    pub fn per_slave(&self) -> Vec<(String, i64)> {
        self.per_slave
            .lock()
            .iter()
            .map(|(a, o)| (a.clone(), *o))
            .collect()
    }

    /// Connected slaves less than the in-sync gap behind `end`.
    pub fn in_sync(&self, end: i64) -> usize {
        self.per_slave
            .lock()
            .values()
            .filter(|o| end - **o < self.max_gap)
            .count()
    }

    /// Slaves connected now.
    pub fn slaves(&self) -> usize {
        self.slaves.load(Ordering::Relaxed)
    }

    /// The highest offset any slave acknowledged.
    pub fn acked(&self) -> i64 {
        self.acked.load(Ordering::Acquire)
    }

    /// The slave at `slave` acknowledged `offset`: every put ending at or
    /// before it is answered.
    pub fn ack(&self, slave: &str, offset: i64) {
        if let Some(o) = self.per_slave.lock().get_mut(slave) {
            *o = (*o).max(offset);
        }
        let before = self.acked.fetch_max(offset, Ordering::AcqRel);
        if offset <= before {
            return;
        }
        self.waiters.release(offset);
    }

    /// Java's `isSlaveOK`: a slave is connected and the acknowledged offset
    /// is less than the gap behind `end`.
    pub fn slave_ok(&self, end: i64) -> bool {
        self.slaves() > 0 && end - self.acked() < self.max_gap
    }

    /// Waits (at most `timeout`) until a slave acknowledged `end`.
    pub async fn wait(&self, end: i64, timeout: Duration) -> ReplicaStatus {
        if !self.slave_ok(end) {
            return ReplicaStatus::NotAvailable;
        }
        self.waiters
            .register(end, || self.acked() >= end)
            .until(timeout)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn acks_answer_waiters_in_order_and_time_out_the_rest() {
        let acks = std::sync::Arc::new(ReplicaAcks::new(1_000));
        assert_eq!(
            acks.wait(10, Duration::from_secs(3)).await,
            ReplicaStatus::NotAvailable
        );
        acks.slave_connected("s1");
        let a = tokio::spawn({
            let acks = acks.clone();
            async move { acks.wait(100, Duration::from_secs(3)).await }
        });
        let b = tokio::spawn({
            let acks = acks.clone();
            async move { acks.wait(200, Duration::from_secs(3)).await }
        });
        tokio::task::yield_now().await;
        acks.ack("s1", 150);
        assert_eq!(a.await.unwrap(), ReplicaStatus::Acked);
        // b waits on past the ack below it, then times out.
        assert_eq!(b.await.unwrap(), ReplicaStatus::TimedOut);
        assert_eq!(
            acks.wait(120, Duration::from_secs(3)).await,
            ReplicaStatus::Acked
        );
        // Acks never go back.
        acks.ack("s1", 50);
        assert_eq!(acks.acked(), 150);
        // A second slave, behind: counted, not in sync at this end.
        acks.slave_connected("s2");
        acks.ack("s2", 100);
        assert_eq!(acks.per_slave(), [("s1".into(), 150), ("s2".into(), 100)]);
        assert_eq!(acks.in_sync(1_120), 1);
        assert_eq!(acks.in_sync(1_000), 2);
        acks.slave_gone("s2");
        // Too far behind: not in sync.
        assert!(!acks.slave_ok(150 + 1_000));
        assert!(acks.slave_ok(150 + 999));
        acks.slave_gone("s1");
        assert!(!acks.slave_ok(151));
        assert!(acks.per_slave().is_empty());
    }
}
