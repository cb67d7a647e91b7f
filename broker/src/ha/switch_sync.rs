//! The master's view of its slaves in controller mode
//! (`docs/controller-facts.md` 6.7, 8.7, 8.8): what each connected slave
//! acknowledged and when it last caught up, the SyncStateSet the
//! controller accepted and the one this master would report now, the
//! confirm offset, and the sends waiting for every in-set replica
//! (`allAckInSyncStateSet`).
//!
//! Time comes from an injected [`Clock`], so caught-up times and the shrink
//! rule are tested without sleeping.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rmq_common::time::Clock;
use rmq_store::{DispatchBound, MessageStore};
use tokio::sync::watch;

use super::acks::ReplicaStatus;

/// A SyncStateSet: controller broker ids.
pub type SyncStateSet = BTreeSet<i64>;

/// What the in-sync decisions depend on.
#[derive(Debug, Clone, Copy)]
pub struct InSyncSettings {
    /// This broker's controller id (always in its own set).
    pub local_id: i64,
    /// `haMaxTimeSlaveNotCatchup`: a slave not caught up for longer leaves
    /// the set at the next shrink check.
    pub max_not_caught_up: Duration,
    /// `allAckInSyncStateSet`: sends wait for every member, dispatch stops
    /// at the confirm offset.
    pub all_ack: bool,
    /// `readUnCommitted`: dispatch to the log's end whatever the set.
    pub read_uncommitted: bool,
}

/// One connected slave.
#[derive(Debug, Clone, Copy)]
struct Slave {
    /// Which connection (a reconnect replaces the entry).
    conn: u64,
    ack: i64,
    caught_up_ms: i64,
    async_learner: bool,
    /// The master's max offset when it last sent to this slave, and when.
    last_sent_max: i64,
    last_sent_ms: i64,
}

#[derive(Debug, Default)]
struct Inner {
    accepted: SyncStateSet,
    accepted_epoch: i32,
    /// Reported to the controller, not yet accepted.
    proposed: Option<SyncStateSet>,
    slaves: HashMap<i64, Slave>,
    next_conn: u64,
}

impl Inner {
    /// Java's `getSyncStateSet`: the accepted set, with a pending proposal
    /// merged in.
    fn union(&self) -> SyncStateSet {
        let mut s = self.accepted.clone();
        if let Some(p) = &self.proposed {
            s.extend(p.iter().copied());
        }
        s
    }
}

/// The master's in-sync bookkeeping; shared by its HA connections and the
/// controller client.
#[derive(Debug)]
pub struct InSync {
    store: Arc<MessageStore>,
    clock: Arc<dyn Clock>,
    settings: InSyncSettings,
    inner: Mutex<Inner>,
    /// The set this master would report now (accepted, or the pending
    /// proposal): the controller client sends ALTER_SYNC_STATE_SET when it
    /// differs from what was accepted.
    report: watch::Sender<SyncStateSet>,
    waiters: super::acks::OffsetWaiters,
}

impl InSync {
    /// A master whose set is only itself (epoch 0 until the controller's
    /// first answer is adopted).
    pub fn new(store: Arc<MessageStore>, clock: Arc<dyn Clock>, settings: InSyncSettings) -> Self {
        let own: SyncStateSet = [settings.local_id].into();
        let inner = Inner {
            accepted: own.clone(),
            ..Inner::default()
        };
        let (report, _) = watch::channel(own);
        let me = Self {
            store,
            clock,
            settings,
            inner: Mutex::new(inner),
            report,
            waiters: super::acks::OffsetWaiters::default(),
        };
        me.recompute(&me.inner.lock());
        me
    }

    /// Notified whenever the set this master would report changes; the
    /// value is that set.
    pub fn subscribe(&self) -> watch::Receiver<SyncStateSet> {
        self.report.subscribe()
    }

    /// The controller accepted `set` at SyncStateSet epoch `epoch` (an
    /// ALTER_SYNC_STATE_SET answer, or the set of an election): taken if
    /// `epoch` is above the last one adopted, as Java's
    /// `changeSyncStateSet`. Returns whether it was.
    pub fn adopt(&self, set: SyncStateSet, epoch: i32) -> bool {
        let mut inner = self.inner.lock();
        if epoch <= inner.accepted_epoch && inner.accepted_epoch != 0 {
            return false;
        }
        inner.accepted = set;
        inner.accepted_epoch = epoch;
        inner.proposed = None;
        self.publish(&inner);
        self.recompute(&inner);
        true
    }

    /// The controller refused the pending proposal: it is dropped (the next
    /// expand or shrink proposes again).
    pub fn proposal_refused(&self) {
        let mut inner = self.inner.lock();
        inner.proposed = None;
        self.publish(&inner);
        self.recompute(&inner);
    }

    /// The accepted set and its epoch.
    pub fn accepted(&self) -> (SyncStateSet, i32) {
        let inner = self.inner.lock();
        (inner.accepted.clone(), inner.accepted_epoch)
    }

    /// The set sends wait for: accepted plus pending (Java's
    /// `getSyncStateSet`).
    pub fn sync_state_set(&self) -> SyncStateSet {
        self.inner.lock().union()
    }

    /// Java's `inSyncReplicasNums`: the larger of the accepted and the
    /// pending set (for `minInSyncReplicas`).
    pub fn in_sync_replicas(&self) -> usize {
        let inner = self.inner.lock();
        inner
            .accepted
            .len()
            .max(inner.proposed.as_ref().map_or(0, BTreeSet::len))
    }

    /// Each connected slave's id and acknowledged offset.
    pub fn acks(&self) -> Vec<(i64, i64)> {
        let inner = self.inner.lock();
        let mut v: Vec<_> = inner.slaves.iter().map(|(id, s)| (*id, s.ack)).collect();
        v.sort_unstable();
        v
    }

    /// Each connected slave's last caught-up time, ms.
    pub fn caught_up_times(&self) -> Vec<(i64, i64)> {
        let inner = self.inner.lock();
        let mut v: Vec<_> = inner
            .slaves
            .iter()
            .map(|(id, s)| (*id, s.caught_up_ms))
            .collect();
        v.sort_unstable();
        v
    }

    /// A slave's handshake: returns the connection number its later calls
    /// name.
    pub(crate) fn connected(&self, id: i64, async_learner: bool) -> u64 {
        let mut inner = self.inner.lock();
        inner.next_conn += 1;
        let conn = inner.next_conn;
        let now = self.clock.now_ms();
        inner.slaves.insert(
            id,
            Slave {
                conn,
                ack: 0,
                caught_up_ms: now,
                async_learner,
                last_sent_max: -1,
                last_sent_ms: now,
            },
        );
        self.recompute(&inner);
        conn
    }

    /// The connection ended: its slave leaves the set at once.
    pub(crate) fn disconnected(&self, id: i64, conn: u64) {
        let mut inner = self.inner.lock();
        if inner.slaves.get(&id).is_none_or(|s| s.conn != conn) {
            return;
        }
        inner.slaves.remove(&id);
        let mut set = inner.union();
        if set.remove(&id) {
            inner.proposed = Some(set);
            self.publish(&inner);
        }
        self.recompute(&inner);
    }

    /// Bytes up to `max` (the master's end then) were sent to slave `id`.
    pub(crate) fn sent(&self, id: i64, conn: u64, max: i64) {
        let now = self.clock.now_ms();
        if let Some(s) = self.slave(&mut self.inner.lock(), id, conn) {
            s.last_sent_max = max;
            s.last_sent_ms = now;
        }
    }

    /// Nothing is left to send to slave `id`: it is caught up now.
    pub(crate) fn nothing_to_send(&self, id: i64, conn: u64) {
        let now = self.clock.now_ms();
        if let Some(s) = self.slave(&mut self.inner.lock(), id, conn) {
            s.caught_up_ms = now;
        }
    }

    /// Slave `id` acknowledged `offset`: its caught-up time (8.7), the set
    /// (expand), the confirm offset and the waiting sends follow.
    pub(crate) fn ack(&self, id: i64, conn: u64, offset: i64) {
        let now = self.clock.now_ms();
        let max = self.store.max_phy_offset();
        let mut inner = self.inner.lock();
        let Some(s) = self.slave(&mut inner, id, conn) else {
            return;
        };
        s.ack = s.ack.max(offset);
        let slave = *s;
        if offset >= slave.last_sent_max {
            let caught = if offset == max {
                now
            } else {
                slave.last_sent_ms
            };
            if let Some(s) = inner.slaves.get_mut(&id) {
                s.caught_up_ms = s.caught_up_ms.max(caught);
            }
        }
        let set = inner.union();
        let epoch_start = self.store.epoch_entries().last().map_or(0, |e| e.start);
        if !set.contains(&id)
            && !slave.async_learner
            && offset >= slave.last_sent_max
            && offset >= self.store.confirm_offset()
            && offset >= epoch_start
        {
            let mut grown = set;
            grown.insert(id);
            tracing::info!(
                slave = id,
                offset,
                "slave caught up: proposing it for the SyncStateSet"
            );
            inner.proposed = Some(grown);
            self.publish(&inner);
        }
        self.recompute(&inner);
    }

    /// Java's `maybeShrinkSyncStateSet` (every `checkSyncStateSetPeriod`,
    /// and on becoming master): slaves of the accepted set not caught up
    /// within `haMaxTimeSlaveNotCatchup`, or not connected, are proposed
    /// out. Returns the set this master would report.
    pub fn shrink_check(&self) -> SyncStateSet {
        let now = self.clock.now_ms();
        let mut inner = self.inner.lock();
        let limit = i64::try_from(self.settings.max_not_caught_up.as_millis()).unwrap_or(i64::MAX);
        let local = self.settings.local_id;
        let keep: SyncStateSet = inner
            .union()
            .into_iter()
            .filter(|id| {
                *id == local
                    || inner
                        .slaves
                        .get(id)
                        .is_some_and(|s| now - s.caught_up_ms <= limit)
            })
            .chain([local])
            .collect();
        if keep != inner.union() {
            tracing::info!(
                ?keep,
                "slaves fell behind: proposing a smaller SyncStateSet"
            );
            inner.proposed = Some(keep.clone());
            self.publish(&inner);
            self.recompute(&inner);
        }
        keep
    }

    /// Waits (at most `timeout`) until every member of the set other than
    /// this master acknowledged `end` (`allAckInSyncStateSet`); a set of
    /// only this master answers at once.
    pub async fn wait_all_ack(&self, end: i64, timeout: Duration) -> ReplicaStatus {
        let waiter = {
            // Checked under the locks `recompute` holds (in this order): an
            // ack cannot slip between.
            let inner = self.inner.lock();
            self.waiters.register(end, || self.all_acked(&inner) >= end)
        };
        waiter.until(timeout).await
    }

    fn slave<'a>(&self, inner: &'a mut Inner, id: i64, conn: u64) -> Option<&'a mut Slave> {
        inner.slaves.get_mut(&id).filter(|s| s.conn == conn)
    }

    /// The offset every member other than this master acknowledged (one not
    /// connected counts 0).
    fn all_acked(&self, inner: &Inner) -> i64 {
        inner
            .union()
            .iter()
            .filter(|id| **id != self.settings.local_id)
            .map(|id| inner.slaves.get(id).map_or(0, |s| s.ack))
            .min()
            .unwrap_or(i64::MAX)
    }

    fn publish(&self, inner: &Inner) {
        let now = inner
            .proposed
            .clone()
            .unwrap_or_else(|| inner.accepted.clone());
        self.report.send_if_modified(|s| {
            let changed = *s != now;
            *s = now;
            changed
        });
    }

    /// The confirm offset (8.8) and the waiting sends, after any change.
    fn recompute(&self, inner: &Inner) {
        let set = inner.union();
        let store = &self.store;
        if set.len() <= 1 || !self.settings.all_ack || self.settings.read_uncommitted {
            store.set_dispatch_bound(DispatchBound::LogEnd);
        } else {
            let local = self.settings.local_id;
            let unconnected = set
                .iter()
                .any(|id| *id != local && !inner.slaves.contains_key(id));
            // A member without a connection leaves the value as it was.
            if !unconnected {
                let confirm = set
                    .iter()
                    .filter_map(|id| inner.slaves.get(id))
                    .map(|s| s.ack)
                    .filter(|a| *a > 0)
                    .fold(store.max_phy_offset(), i64::min);
                store.set_confirm_offset(confirm);
            }
            store.set_dispatch_bound(DispatchBound::ConfirmOffset);
        }
        self.waiters.release(self.all_acked(inner));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_common::message::MessageToStore;
    use rmq_common::time::ManualClock;

    /// Expand needs the slave at the master's end; shrink, by the injected
    /// clock, drops a member not caught up within `haMaxTimeSlaveNotCatchup`.
    #[test]
    fn expand_on_a_caught_up_ack_and_shrink_after_the_catch_up_limit() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            Arc::new(MessageStore::open(rmq_common::StoreConfig::with_root(dir.path())).unwrap());
        store
            .put_message(&MessageToStore::new("T", 0, "x"))
            .unwrap();
        let max = store.max_phy_offset();
        let clock = Arc::new(ManualClock::new(1_000_000));
        let in_sync = InSync::new(
            Arc::clone(&store),
            clock.clone(),
            InSyncSettings {
                local_id: 1,
                max_not_caught_up: Duration::from_secs(15),
                all_ack: true,
                read_uncommitted: false,
            },
        );
        let report = in_sync.subscribe();
        let conn = in_sync.connected(2, false);
        in_sync.sent(2, conn, max);
        in_sync.ack(2, conn, max - 1);
        assert_eq!(*report.borrow(), BTreeSet::from([1]), "behind: not added");
        in_sync.ack(2, conn, max);
        assert_eq!(*report.borrow(), BTreeSet::from([1, 2]));
        assert!(in_sync.adopt(BTreeSet::from([1, 2]), 1));
        assert!(!in_sync.adopt(BTreeSet::from([1]), 1), "same epoch again");
        assert_eq!(store.confirm_offset(), max);
        clock.advance(15_000);
        assert_eq!(
            in_sync.shrink_check(),
            BTreeSet::from([1, 2]),
            "at the limit"
        );
        clock.advance(1);
        assert_eq!(in_sync.shrink_check(), BTreeSet::from([1]));
        assert_eq!(*report.borrow(), BTreeSet::from([1]));
        assert_eq!(in_sync.sync_state_set(), BTreeSet::from([1, 2]), "pending");
        store.shutdown().unwrap();
    }
}
