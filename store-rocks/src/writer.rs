//! The group-commit writer: one thread owns a bounded queue of dispatch
//! batches, drains as many as fit in one `WriteBatch`, writes it, updates the
//! in-memory min/max cache, and only then calls the batches' callbacks in
//! order (the broker wakes waiting pulls from them, so a pull never sees a
//! unit before it is readable).
//!
//! Max keys are written lazily: a group writes its entries (and any min key
//! it changes), while the max keys of the queues it touched are written
//! together every [`MAX_KEY_GROUPS`] groups, at a barrier and when the
//! thread ends. With many queues nearly every unit lands in a queue of its
//! own, so a max key per unit doubled the memtable inserts. LMQs are the
//! exception: their max keys go with the group (see `write_locked`). Nothing depends
//! on a max key being current: at open the last entry of each queue is read
//! from the entries (`offsets::load`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Mutex, RwLock};
use rmq_common::constants::CHECKPOINT_TOPIC;
use rmq_common::cq::{AsQueueKey, CqError, CqPut, PutCallback, QueueKey};
use rmq_common::names::is_lmq;
use rocksdb::WriteBatch;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::db::Db;
use crate::key::{self, EntryValue, OffsetKind};
use crate::lmq_filter::LmqFilter;
use crate::maintain::{self, Correction};
use crate::offsets::{self, LastUnit, OffsetCache, QueueState, LMQ_CACHED};
use crate::shared::Shared;

/// Groups between two writes of the max keys of the queues they touched.
pub(crate) const MAX_KEY_GROUPS: usize = 64;

/// One `put_async` call.
pub(crate) struct PutRequest {
    pub units: Vec<CqPut>,
    pub dispatched_to: i64,
    pub done: PutCallback,
}

enum Msg {
    Put(PutRequest),
    /// Acknowledged once everything queued before it is written.
    Barrier(SyncSender<()>),
}

/// Handle to the group-commit thread.
pub(crate) struct Writer {
    /// `None` once stopped. This is the only sender: dropping it ends the
    /// thread once the queue is drained. Senders hold the read lock while
    /// they send, so `stop` (write lock) never races a send.
    tx: RwLock<Option<SyncSender<Msg>>>,
    handle: Mutex<Option<JoinHandle<()>>>,
    shared: Arc<Shared>,
}

impl Writer {
    /// Starts the thread with a queue of `capacity` batches; one write holds
    /// at most `max_units` units unless a single batch is larger (a batch is
    /// never split: it is atomic).
    pub fn spawn(shared: Arc<Shared>, capacity: usize, max_units: usize) -> Result<Self, CqError> {
        let (tx, rx) = sync_channel(capacity.max(1));
        let thread_shared = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("rmq-cq-rocks-writer".into())
            .spawn(move || run(&thread_shared, &rx, max_units.max(1)))
            .map_err(|e| CqError::io("spawn the rocksdb consume-queue writer thread", e))?;
        Ok(Self {
            tx: RwLock::new(Some(tx)),
            handle: Mutex::new(Some(handle)),
            shared,
        })
    }

    /// Queues a batch, blocking while the queue is full (back-pressure on
    /// reput). After `stop`, calls `done` with [`CqError::Closed`].
    pub fn submit(&self, req: PutRequest) {
        let units = req.units.len() as u64;
        // The callback of a refused request runs after the lock is released:
        // it may call back into the store.
        let refused = {
            let tx = self.tx.read();
            match tx.as_ref() {
                None => Some((req, CqError::Closed)),
                Some(tx) => {
                    self.shared
                        .pending_units
                        .fetch_add(units, Ordering::Relaxed);
                    match tx.send(Msg::Put(req)) {
                        Ok(()) => None,
                        Err(failed) => {
                            self.shared
                                .pending_units
                                .fetch_sub(units, Ordering::Relaxed);
                            match failed.0 {
                                Msg::Put(req) => Some((req, thread_gone())),
                                Msg::Barrier(_) => None,
                            }
                        }
                    }
                }
            }
        };
        if let Some((req, err)) = refused {
            (req.done)(Err(err));
        }
    }

    /// Waits until everything queued so far is written (or failed).
    pub fn barrier(&self) -> Result<(), CqError> {
        let (ack_tx, ack_rx) = sync_channel(1);
        {
            let tx = self.tx.read();
            let tx = tx.as_ref().ok_or(CqError::Closed)?;
            tx.send(Msg::Barrier(ack_tx)).map_err(|_| thread_gone())?;
        }
        ack_rx.recv().map_err(|_| thread_gone())
    }

    /// Writes everything queued, then stops and joins the thread. Later
    /// submissions fail with `Closed`. Idempotent.
    pub fn stop(&self) {
        drop(self.tx.write().take());
        let Some(handle) = self.handle.lock().take() else {
            return;
        };
        if handle.thread().id() == std::thread::current().id() {
            // A callback dropped the last handle of the store: the thread
            // cannot join itself. It drains the queue and exits on its own;
            // what it finds after the database closed fails with `Closed`.
            tracing::warn!("rocksdb consume queue closed from its own writer thread");
            return;
        }
        if handle.join().is_err() {
            tracing::error!("the rocksdb consume-queue writer thread panicked");
        }
    }
}

fn thread_gone() -> CqError {
    CqError::Poisoned {
        reason: "the group-commit writer thread is gone".into(),
    }
}

/// The thread's loop. Messages are handled strictly in queue order; it ends
/// when the sender is dropped and the queue is empty.
fn run(shared: &Shared, rx: &Receiver<Msg>, max_units: usize) {
    let mut carry: Option<Msg> = None;
    let mut max_keys = MaxKeys::default();
    loop {
        let first = match carry.take() {
            Some(m) => m,
            None => match rx.recv() {
                Ok(m) => m,
                Err(_) => {
                    max_keys.write(shared);
                    return;
                }
            },
        };
        let first = match first {
            Msg::Put(p) => p,
            Msg::Barrier(ack) => {
                max_keys.write(shared);
                let _ = ack.send(());
                continue;
            }
        };
        let mut units = first.units.len();
        let mut group = vec![first];
        // A barrier found while draining; acknowledged after the group.
        let mut after = None;
        loop {
            match rx.try_recv() {
                Ok(Msg::Put(p)) if units + p.units.len() > max_units => {
                    carry = Some(Msg::Put(p));
                    break;
                }
                Ok(Msg::Put(p)) => {
                    units += p.units.len();
                    group.push(p);
                }
                Ok(Msg::Barrier(ack)) => {
                    after = Some(ack);
                    break;
                }
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        commit_group(shared, group, units, &mut max_keys.dirty);
        max_keys.groups += 1;
        // LMQs beyond the cache's bound go (their keys are all written;
        // they are read from the database when next used).
        if shared.offsets.read().lmq_cached > LMQ_CACHED {
            shared.offsets.write().drop_lmqs();
        }
        if max_keys.groups >= max_key_groups(shared) || after.is_some() {
            max_keys.write(shared);
        }
        if let Some(ack) = after {
            let _ = ack.send(());
        }
    }
}

/// The queues whose max key on disk lags behind the cache.
#[derive(Default)]
struct MaxKeys {
    dirty: FxHashSet<QueueKey>,
    /// Groups written since the last max-key write.
    groups: usize,
}

impl MaxKeys {
    /// Writes the max key of every dirty queue as the cache has it now, in
    /// key order, in one batch. A queue gone from the cache (its topic was
    /// deleted) has no key to write.
    fn write(&mut self, shared: &Shared) {
        self.groups = 0;
        if self.dirty.is_empty() {
            return;
        }
        let mut dirty: Vec<QueueKey> = self.dirty.drain().collect();
        sort_offset_key_order(&mut dirty);
        let guard = shared.db.read();
        let Some(db) = guard.as_ref() else { return };
        let _w = shared.write_lock.lock();
        if shared.check_writable().is_err() {
            return;
        }
        let outcome = db.offsets().and_then(|cf| {
            let mut batch = WriteBatch::default();
            {
                let cache = shared.offsets.read();
                for k in &dirty {
                    if let Some(q) = cache.queues.get(k) {
                        maintain::put_or_delete_max_key(&mut batch, cf, k, q);
                    }
                }
            }
            db.write(batch, "write the max offsets of the rocksdb consume queue")
        });
        if let Err(e) = outcome {
            shared.poison(&e);
        }
    }
}

/// Groups between max-key writes; a test may hold them back until a barrier.
fn max_key_groups(shared: &Shared) -> usize {
    #[cfg(test)]
    if shared.hold_max_keys.load(Ordering::Relaxed) {
        return usize::MAX;
    }
    let _ = shared;
    MAX_KEY_GROUPS
}

/// Sorts queues in the order of their `offset` CF keys: topic length, topic,
/// queue id.
fn sort_offset_key_order(keys: &mut [QueueKey]) {
    keys.sort_unstable_by(|a, b| {
        (a.topic.len(), &a.topic, a.queue_id).cmp(&(b.topic.len(), &b.topic, b.queue_id))
    });
}

/// Writes one group and calls its callbacks in order.
fn commit_group(
    shared: &Shared,
    group: Vec<PutRequest>,
    units: usize,
    dirty: &mut FxHashSet<QueueKey>,
) {
    let outcome = {
        let guard = shared.db.read();
        match guard.as_ref() {
            Some(db) => {
                let _w = shared.write_lock.lock();
                write_locked(shared, db, &group, dirty)
            }
            None => Err(CqError::Closed),
        }
    };
    shared
        .pending_units
        .fetch_sub(units as u64, Ordering::Relaxed);
    if let Err(e) = &outcome {
        // Whatever failed (a read while planning, the write), units of this
        // group are missing: later groups must not write past the gap.
        if !matches!(e, CqError::Poisoned { .. } | CqError::Closed) {
            shared.poison(e);
        }
    }
    let mut batch_error = None;
    let results: Vec<Result<(), CqError>> = match outcome {
        Ok(per_request) => per_request,
        Err(e) => {
            let reason = e.to_string();
            batch_error = Some(e);
            group
                .iter()
                .map(|_| {
                    Err(CqError::Poisoned {
                        reason: reason.clone(),
                    })
                })
                .collect()
        }
    };
    for (i, (req, mut result)) in group.into_iter().zip(results).enumerate() {
        // The first caller gets the write error itself (with its source);
        // the others are told the batch they were in failed.
        if i == 0 {
            if let Some(e) = batch_error.take() {
                result = Err(e);
            }
        }
        let done = req.done;
        if catch_unwind(AssertUnwindSafe(move || done(result))).is_err() {
            tracing::error!("a consume-queue put callback panicked");
        }
    }
}

/// Rejects what the key layout cannot hold.
fn validate(units: &[CqPut]) -> Result<(), CqError> {
    for u in units {
        if u.topic == CHECKPOINT_TOPIC {
            return Err(CqError::InvalidArgument(format!(
                "{CHECKPOINT_TOPIC} is reserved for the dispatch checkpoint"
            )));
        }
        // Big-endian keys sort negative offsets after positive ones.
        if u.queue_offset < 0 || u.phy_offset < 0 || u.size < 0 {
            return Err(CqError::InvalidArgument(format!(
                "{}/{}: negative queue offset {}, phy offset {} or size {}",
                u.topic, u.queue_id, u.queue_offset, u.phy_offset, u.size
            )));
        }
    }
    Ok(())
}

/// A queue's state while a batch is planned.
struct Staged {
    state: QueueState,
    min_dirty: bool,
    max_dirty: bool,
    /// An LMQ the database had no keys for.
    new_lmq: bool,
}

/// Plans and writes the group under the write lock. `Err` means nothing of
/// the group was written (the store is or becomes poisoned); `Ok` holds each
/// request's own result (a request failing validation is skipped whole).
/// Queues whose max key is now behind are added to `dirty`.
fn write_locked(
    shared: &Shared,
    db: &Db,
    group: &[PutRequest],
    dirty: &mut FxHashSet<QueueKey>,
) -> Result<Vec<Result<(), CqError>>, CqError> {
    shared.check_writable()?;
    let commit_log_min = shared.commit_log_min.load(Ordering::Acquire);
    let entries_cf = db.entries()?;
    let mut batch = WriteBatch::default();
    // Keyed by the units' own topic strings: no key is built per unit.
    let mut staged: FxHashMap<(&str, i32), Staged> = FxHashMap::default();
    let mut results = Vec::with_capacity(group.len());
    let mut entries = EntryBatch::default();
    let (old_dispatched, dispatched) = {
        let cache = shared.offsets.read();
        let mut dispatched = cache.dispatched;
        for req in group {
            if let Err(e) = validate(&req.units) {
                results.push(Err(e));
                continue;
            }
            staged.reserve(req.units.len());
            for u in &req.units {
                let st = match staged.entry((u.topic.as_str(), u.queue_id)) {
                    std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                    std::collections::hash_map::Entry::Vacant(v) => {
                        let st = stage(db, &cache, &shared.lmqs, *v.key(), commit_log_min)?;
                        v.insert(st)
                    }
                };
                let verdict = accept(&mut st.state, u);
                if verdict != Verdict::Skip {
                    let value = EntryValue {
                        phy_offset: u.phy_offset,
                        size: u.size,
                        tags_code: u.tags_code,
                        store_timestamp: u.store_timestamp,
                    };
                    entries.push(u, value.encode());
                    // A new LMQ starting at 0 needs no min key: an LMQ
                    // without one starts at 0 (see `offsets::derive`).
                    st.min_dirty |=
                        verdict == Verdict::First && !(st.new_lmq && u.queue_offset == 0);
                    st.state.last = Some(LastUnit {
                        offset: u.queue_offset,
                        phy: u.phy_offset,
                        phy_end: value.phy_end(),
                    });
                    st.max_dirty = true;
                }
            }
            dispatched = dispatched.max(req.dispatched_to);
            results.push(Ok(()));
        }
        (cache.dispatched, dispatched)
    };
    entries.write_sorted(&mut batch, entries_cf);

    let offsets_cf = db.offsets()?;
    // Min keys change on a queue's first unit or a min correction: rare, so
    // written with the group. So are an LMQ's max keys: LMQs are many and
    // mostly short, so deferring theirs saves few writes, and an LMQ with a
    // max key to write could not leave the bounded cache. Key order again
    // (topic length, topic, "max" before "min", queue).
    let mut offset_keys: Vec<(QueueKey, OffsetKind)> = staged
        .iter()
        .flat_map(|(&(topic, queue_id), st)| {
            let max = (st.max_dirty && is_lmq(topic)).then_some(OffsetKind::Max);
            let min = st.min_dirty.then_some(OffsetKind::Min);
            [max, min]
                .into_iter()
                .flatten()
                .map(move |kind| (QueueKey::new(topic, queue_id), kind))
        })
        .collect();
    offset_keys.sort_unstable_by(|(a, ak), (b, bk)| {
        (a.topic.len(), &a.topic, *ak == OffsetKind::Min, a.queue_id).cmp(&(
            b.topic.len(),
            &b.topic,
            *bk == OffsetKind::Min,
            b.queue_id,
        ))
    });
    for (k, kind) in &offset_keys {
        let st = &staged[&(k.topic.as_str(), k.queue_id)];
        match kind {
            OffsetKind::Min => maintain::put_min_key(&mut batch, offsets_cf, k, &st.state),
            OffsetKind::Max => {
                maintain::put_or_delete_max_key(&mut batch, offsets_cf, k, &st.state)
            }
        }
    }
    if dispatched != old_dispatched {
        maintain::put_checkpoint(&mut batch, offsets_cf, dispatched);
    }
    // Before the batch: a reader that finds no LMQ in the filter must find
    // none in the database either.
    for (&(topic, queue_id), _) in staged
        .iter()
        .filter(|(_, st)| st.new_lmq && st.state.last.is_some())
    {
        shared.lmqs.insert(topic, queue_id);
    }
    if !batch.is_empty() {
        #[cfg(test)]
        if shared.fail_next_write.swap(false, Ordering::SeqCst) {
            let e = CqError::io(
                "group commit",
                std::io::Error::other("injected write failure"),
            );
            shared.poison(&e);
            return Err(e);
        }
        if let Err(e) = db.write(batch, "group commit to the rocksdb consume queue") {
            shared.poison(&e);
            return Err(e);
        }
    }
    for (&k, st) in &staged {
        if st.max_dirty && !is_lmq(k.0) && !dirty.contains(&k as &dyn AsQueueKey) {
            dirty.insert(QueueKey::new(k.0, k.1));
        }
    }
    publish(&mut shared.offsets.write(), staged, dispatched);
    Ok(results)
}

/// A group's entries: keys back to back in one buffer, written to the batch
/// in key order.
#[derive(Default)]
struct EntryBatch {
    keys: Vec<u8>,
    /// Key start, key end, value.
    items: Vec<(usize, usize, [u8; key::ENTRY_VALUE_LEN])>,
}

impl EntryBatch {
    fn push(&mut self, u: &CqPut, value: [u8; key::ENTRY_VALUE_LEN]) {
        let start = self.keys.len();
        key::push_entry_key(&mut self.keys, &u.topic, u.queue_id, u.queue_offset);
        self.items.push((start, self.keys.len(), value));
    }

    /// Adds every entry to `batch`. Inserting in key order measured up to
    /// 2x faster than dispatch order (`rmq-bench store`, 1,000 queues): the
    /// memtable skip-list search starts near where the previous insert
    /// ended. Stable: were a key ever written twice in a group, the later
    /// write still wins.
    fn write_sorted(mut self, batch: &mut WriteBatch, cf: &rocksdb::ColumnFamily) {
        let keys = &self.keys;
        self.items
            .sort_by(|a, b| keys[a.0..a.1].cmp(&keys[b.0..b.1]));
        for (start, end, value) in &self.items {
            batch.put_cf(cf, &keys[*start..*end], value);
        }
    }
}

/// The staged state of a queue first touched by this batch, with any pending
/// lazy min correction applied (its keys are written with the batch) so the
/// idempotency rules see what the model would.
fn stage(
    db: &Db,
    cache: &OffsetCache,
    lmqs: &LmqFilter,
    k: (&str, i32),
    commit_log_min: i64,
) -> Result<Staged, CqError> {
    let cached = cache.queues.get(&k as &dyn AsQueueKey).copied();
    let loaded = match cached {
        // An LMQ the cache does not hold (see `OffsetCache`).
        None if is_lmq(k.0) => offsets::load_lmq(lmqs, db, &QueueKey::new(k.0, k.1))?,
        other => other,
    };
    let Some(mut state) = loaded else {
        return Ok(Staged {
            state: QueueState::empty(0, commit_log_min),
            min_dirty: false,
            max_dirty: false,
            new_lmq: is_lmq(k.0),
        });
    };
    let corrected = if state.min_checked >= commit_log_min {
        Correction::Unchanged
    } else {
        maintain::correct_min(db, &QueueKey::new(k.0, k.1), &mut state, commit_log_min)?
    };
    Ok(Staged {
        state,
        min_dirty: corrected != Correction::Unchanged,
        max_dirty: corrected == Correction::Emptied,
        new_lmq: false,
    })
}

/// The model's idempotency rules: skip a unit whose record ends at or before
/// the queue's highest record end, or (in a queue holding units) whose queue
/// offset is below the next one. The first unit of an empty queue sets its
/// min offset.
fn accept(q: &mut QueueState, u: &CqPut) -> Verdict {
    if u.phy_offset + i64::from(u.size) <= q.max_phy_end() {
        return Verdict::Skip;
    }
    if q.last.is_none() {
        q.min = u.queue_offset;
        q.min_phy = u.phy_offset;
        return Verdict::First;
    }
    if u.queue_offset < q.max_offset() {
        return Verdict::Skip;
    }
    Verdict::Next
}

/// What [`accept`] decided about a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// A replay: already written.
    Skip,
    /// The first unit of an empty queue: it sets the min offset.
    First,
    /// The next unit of a queue.
    Next,
}

/// Makes a written batch visible to readers. A queue already known is
/// updated in place; only a new one gets a key of its own.
fn publish(cache: &mut OffsetCache, staged: FxHashMap<(&str, i32), Staged>, dispatched: i64) {
    for (k, st) in staged {
        // A new LMQ that took no unit (all skipped) has no keys yet.
        if st.new_lmq && st.state.last.is_some() {
            cache.lmq_total += 1;
        }
        match cache.queues.get_mut(&k as &dyn AsQueueKey) {
            Some(q) => *q = st.state,
            None => cache.insert(QueueKey::new(k.0, k.1), st.state),
        }
    }
    cache.dispatched = dispatched;
}
