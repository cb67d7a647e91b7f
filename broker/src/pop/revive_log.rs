//! POP state as RocketMQ 5.x keeps it: each pop's checkpoint and each ack
//! is a message of the revive topic `rmq_sys_REVIVE_LOG_<cluster>` (tags
//! `ck`, `ack`, `bAck`, with RocketMQ's JSON bodies), in the revive queue
//! the receipt handle names. The live view is in memory; the revive topic
//! is what rebuilds it after a restart.
//!
//! Progress per revive queue is the offset of group
//! `CID_RMQ_SYS_REVIVE_GROUP` on it (in `consumerOffset.json`, as in
//! RocketMQ): the first record not yet settled. A checkpoint is settled
//! once every offset is acked or re-delivered; a re-delivery is recorded
//! as an ack of the offsets it re-delivered, so a restart does not
//! re-deliver them again. Differences from RocketMQ: no timer holds the
//! records back until their due time (the live view knows the due times),
//! and the offset stored is the next record to read, not the last read.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;

use parking_lot::Mutex;
use rmq_common::constants::property;
use rmq_common::message::record::RecordView;
use rmq_common::message::MessageToStore;
use rmq_common::pop::names::REVIVE_GROUP;
use rmq_common::pop::records::merge_key;
use rmq_common::pop::{
    AckMsg, Acked, Due, PopCheckPoint, PopOffset, PopStateError, PopStateStore, Popped,
    ACK_TIME_INTERVAL_MS,
};
use rmq_store::{GetRequest, GetStatus, MessageStore, TagFilter};

use crate::meta::ConsumerOffsetManager;

const FORM: &str = "revive-topic";

/// Records read per step when the revive topic is replayed.
const REPLAY_BATCH: usize = 256;

/// Longest the replay waits for reput to dispatch what the CommitLog holds.
const REPLAY_DISPATCH_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// The revive-topic form of [`PopStateStore`].
#[derive(Debug)]
pub struct RevivePopState {
    store: Arc<MessageStore>,
    offsets: Arc<ConsumerOffsetManager>,
    topic: String,
    broker_name: String,
    store_host: SocketAddr,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Entry {
    ck: PopCheckPoint,
    revive_qid: i32,
    /// Bit i: the i-th offset is acked (or re-delivered).
    settled: u64,
}

impl Entry {
    fn all_bits(&self) -> u64 {
        if self.ck.num >= 64 {
            u64::MAX
        } else {
            (1u64 << self.ck.num) - 1
        }
    }

    fn open_offsets(&self) -> Vec<i64> {
        (0..usize::from(self.ck.num))
            .filter(|i| self.settled & (1 << i) == 0)
            .map(|i| self.ck.offset_at(i))
            .collect()
    }
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    /// (revive time, key) of every entry.
    by_time: BTreeSet<(i64, String)>,
    /// Per revive queue: records not yet settled, by (offset or lower
    /// bound, id). A pop being written holds the queue's max offset from
    /// before its write, which its record's offset cannot be below.
    unsettled: HashMap<i32, BTreeSet<(i64, u64)>>,
    /// Per revive queue: the highest record offset seen.
    highest: HashMap<i32, i64>,
    next_id: u64,
    /// Entry key → its id in `unsettled`.
    ids: HashMap<String, u64>,
    open: u64,
    /// Per (group, topic, queue): the end of every pop replayed, settled
    /// or not, so pops continue after them even when the consumer offsets
    /// on disk are older than the revive topic.
    replayed_ends: BTreeMap<(String, String, i32), i64>,
}

impl Inner {
    fn insert(&mut self, key: String, entry: Entry, ro: i64, id: u64) {
        if self.entries.contains_key(&key) {
            return;
        }
        self.open += u64::from(entry.ck.num) - u64::from(entry.settled.count_ones() as u8);
        self.by_time.insert((entry.ck.revive_time(), key.clone()));
        self.unsettled
            .entry(entry.revive_qid)
            .or_default()
            .insert((ro, id));
        self.ids.insert(key.clone(), id);
        self.entries.insert(key, entry);
    }

    /// Applies acks; removes the entry once every offset is settled.
    /// Returns the revive queue whose progress may move.
    fn settle(&mut self, key: &str, offsets: &[i64]) -> Option<i32> {
        let entry = self.entries.get_mut(key)?;
        for o in offsets {
            if let Some(i) = entry.ck.index_of(*o) {
                if entry.settled & (1 << i) == 0 {
                    entry.settled |= 1 << i;
                    self.open = self.open.saturating_sub(1);
                }
            }
        }
        if entry.settled != entry.all_bits() {
            return None;
        }
        let qid = entry.revive_qid;
        let (time, ro) = (entry.ck.revive_time(), entry.ck.revive_offset);
        self.entries.remove(key);
        self.by_time.remove(&(time, key.to_owned()));
        if let Some(id) = self.ids.remove(key) {
            if let Some(u) = self.unsettled.get_mut(&qid) {
                u.remove(&(ro, id));
            }
        }
        Some(qid)
    }

    fn seen(&mut self, qid: i32, offset: i64) {
        let h = self.highest.entry(qid).or_insert(-1);
        *h = (*h).max(offset);
    }

    /// Where replay of `qid` would start: the first unsettled record, else
    /// past the highest seen.
    fn progress(&self, qid: i32) -> Option<i64> {
        match self.unsettled.get(&qid).and_then(|u| u.first()) {
            Some((ro, _)) => Some(*ro),
            None => self.highest.get(&qid).map(|h| h + 1),
        }
    }
}

impl RevivePopState {
    /// Opens the state of revive topic `topic` (its `queues` queues must
    /// exist), replaying each queue from its stored progress.
    pub fn open(
        store: Arc<MessageStore>,
        offsets: Arc<ConsumerOffsetManager>,
        topic: String,
        queues: i32,
        broker_name: String,
        store_host: SocketAddr,
    ) -> Result<Self, PopStateError> {
        // The replay reads the revive queues: everything the CommitLog
        // holds must be in them first (reput catches up after a restart).
        let end = store.max_phy_offset();
        if !store.wait_dispatched_to(end, REPLAY_DISPATCH_WAIT) {
            return Err(PopStateError::Read {
                form: FORM,
                reason: format!(
                    "{topic}: reput did not reach the CommitLog's end {end} within {REPLAY_DISPATCH_WAIT:?}"
                ),
            });
        }
        let s = Self {
            store,
            offsets,
            topic,
            broker_name,
            store_host,
            inner: Mutex::new(Inner::default()),
        };
        for qid in 0..queues {
            s.replay(qid)?;
        }
        Ok(s)
    }

    fn read_err(&self, e: impl std::fmt::Display) -> PopStateError {
        PopStateError::Read {
            form: FORM,
            reason: format!("{}: {e}", self.topic),
        }
    }

    fn replay(&self, qid: i32) -> Result<(), PopStateError> {
        let min = self
            .store
            .min_offset_in_queue(&self.topic, qid)
            .map_err(|e| self.read_err(e))?;
        let mut from = self
            .offsets
            .query(REVIVE_GROUP, &self.topic, qid)
            .unwrap_or(min)
            .max(min);
        let filter = TagFilter::all();
        let (mut cks, mut acks) = (0u64, 0u64);
        loop {
            let req = GetRequest::new(&self.topic, qid, from, REPLAY_BATCH, &filter);
            let r = self.store.get_message(&req).map_err(|e| self.read_err(e))?;
            if r.status != GetStatus::Found {
                if r.next_begin_offset > from && r.next_begin_offset < r.max_offset {
                    from = r.next_begin_offset;
                    continue;
                }
                break;
            }
            for (m, offset) in r.messages.iter().zip(&r.queue_offsets) {
                match self.apply_record(qid, *offset, m.bytes()) {
                    Ok(Record::Ck) => cks += 1,
                    Ok(Record::Ack) => acks += 1,
                    Ok(Record::Other) => {}
                    Err(e) => tracing::warn!(error = %e, "revive record skipped"),
                }
            }
            from = r.next_begin_offset;
        }
        self.inner.lock().seen(qid, from - 1);
        self.commit(qid);
        if cks + acks > 0 {
            tracing::info!(topic = %self.topic, queue = qid, checkpoints = cks, acks, "POP state replayed");
        }
        Ok(())
    }

    fn apply_record(&self, qid: i32, offset: i64, bytes: &[u8]) -> Result<Record, PopStateError> {
        let corrupt = |reason: String| PopStateError::Corrupt {
            form: FORM,
            at: format!("{}:{qid}:{offset}", self.topic),
            reason,
        };
        let view = RecordView::parse(bytes, false).map_err(|e| corrupt(e.to_string()))?;
        let tags = view.property(property::TAGS).unwrap_or_default();
        let mut inner = self.inner.lock();
        inner.seen(qid, offset);
        match tags.as_ref() {
            "ck" => {
                let mut ck: PopCheckPoint =
                    serde_json::from_slice(view.body()).map_err(|e| corrupt(e.to_string()))?;
                if ck.topic.is_empty() || ck.cid.is_empty() {
                    return Ok(Record::Other);
                }
                ck.revive_offset = offset;
                let end = ck.offsets().into_iter().max().unwrap_or(ck.start_offset) + 1;
                let slot = inner
                    .replayed_ends
                    .entry((ck.cid.clone(), ck.topic.clone(), ck.queue_id))
                    .or_insert(end);
                *slot = (*slot).max(end);
                let settled = u64::from(ck.bit_map as u32);
                let key = ck.merge_key();
                let id = inner.next_id;
                inner.next_id += 1;
                let entry = Entry {
                    ck,
                    revive_qid: qid,
                    settled,
                };
                inner.insert(key.clone(), entry, offset, id);
                inner.settle(&key, &[]);
                Ok(Record::Ck)
            }
            "ack" | "bAck" => {
                let ack: AckMsg =
                    serde_json::from_slice(view.body()).map_err(|e| corrupt(e.to_string()))?;
                let key = ack.merge_key(&self.broker_name);
                inner.settle(&key, &ack.offsets());
                Ok(Record::Ack)
            }
            _ => Ok(Record::Other),
        }
    }

    /// Stores the revive queue's progress as the revive group's offset.
    fn commit(&self, qid: i32) {
        if let Some(p) = self.inner.lock().progress(qid) {
            self.offsets.commit(REVIVE_GROUP, &self.topic, qid, p);
        }
    }

    fn record(
        &self,
        qid: i32,
        tags: &str,
        uniq: String,
        body: Vec<u8>,
        deliver_ms: i64,
    ) -> MessageToStore {
        let mut m = MessageToStore::new(self.topic.clone(), qid, body);
        m.properties.insert(property::TAGS, tags);
        m.properties
            .insert(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, uniq);
        m.properties
            .insert("TIMER_DELIVER_MS", deliver_ms.to_string());
        m.born_timestamp = rmq_common::time::now_ms();
        m.born_host = self.store_host;
        m.store_host = self.store_host;
        m
    }

    fn write(&self, what: &'static str, m: &MessageToStore) -> Result<i64, PopStateError> {
        let r = self
            .store
            .put_message(m)
            .map_err(|e| PopStateError::Write {
                form: FORM,
                what,
                reason: e.to_string(),
            })?;
        Ok(r.appended.first().map_or(-1, |a| a.queue_offset))
    }

    fn write_ack(&self, a: &AckMsg, revive_qid: i32, deliver_ms: i64) -> Result<(), PopStateError> {
        let tags = if a.ack_offset_list.is_empty() {
            "ack"
        } else {
            "bAck"
        };
        let uniq = format!(
            "{}@{}@{}@{}@{}@{}@ack",
            a.topic, a.queue_id, a.ack_offset, a.consumer_group, a.pop_time, a.broker_name
        );
        let body = serde_json::to_vec(a).unwrap_or_default();
        let m = self.record(revive_qid, tags, uniq, body, deliver_ms);
        let offset = self.write("ack", &m)?;
        let key = a.merge_key(&self.broker_name);
        let moved = {
            let mut inner = self.inner.lock();
            inner.seen(revive_qid, offset);
            inner.settle(&key, &a.offsets())
        };
        if let Some(qid) = moved {
            self.commit(qid);
        }
        Ok(())
    }
}

enum Record {
    Ck,
    Ack,
    Other,
}

impl PopStateStore for RevivePopState {
    fn name(&self) -> &'static str {
        FORM
    }

    fn popped(&self, p: &Popped) -> Result<(), PopStateError> {
        let ck = &p.ck;
        let key = ck.merge_key();
        let id = {
            let mut inner = self.inner.lock();
            let id = inner.next_id;
            inner.next_id += 1;
            id
        };
        // Hold the queue's progress below this record while it is written.
        let bound = self
            .store
            .max_offset_in_queue(&self.topic, p.revive_qid)
            .unwrap_or(0);
        self.inner
            .lock()
            .unsettled
            .entry(p.revive_qid)
            .or_default()
            .insert((bound, id));
        let uniq = format!(
            "{}@{}@{}@{}@{}@{}@ck",
            ck.topic, ck.queue_id, ck.start_offset, ck.cid, ck.pop_time, ck.broker_name
        );
        let m = self.record(
            p.revive_qid,
            "ck",
            uniq,
            ck.to_json(),
            ck.revive_time() - ACK_TIME_INTERVAL_MS,
        );
        let written = self.write("checkpoint", &m);
        let mut inner = self.inner.lock();
        if let Some(u) = inner.unsettled.get_mut(&p.revive_qid) {
            u.remove(&(bound, id));
        }
        let ro = written?;
        inner.seen(p.revive_qid, ro);
        let mut ck = ck.clone();
        ck.revive_offset = ro;
        let entry = Entry {
            settled: u64::from(ck.bit_map as u32),
            ck,
            revive_qid: p.revive_qid,
        };
        inner.insert(key, entry, ro, id);
        Ok(())
    }

    fn acked(&self, a: &Acked) -> Result<(), PopStateError> {
        let key = merge_key(
            &a.topic,
            &a.group,
            a.queue_id,
            a.start_offset,
            a.pop_time,
            &a.broker_name,
        );
        // An ack whose pop is settled (or unknown) changes nothing.
        let open: Vec<i64> = {
            let inner = self.inner.lock();
            match inner.entries.get(&key) {
                None => return Ok(()),
                Some(e) => {
                    let open = e.open_offsets();
                    a.offsets
                        .iter()
                        .copied()
                        .filter(|o| open.contains(o))
                        .collect()
                }
            }
        };
        if open.is_empty() {
            return Ok(());
        }
        let ack = AckMsg {
            ack_offset: if open.len() == 1 { open[0] } else { -1 },
            start_offset: a.start_offset,
            consumer_group: a.group.clone(),
            topic: a.topic.clone(),
            queue_id: a.queue_id,
            pop_time: a.pop_time,
            broker_name: a.broker_name.clone(),
            ack_offset_list: if open.len() == 1 { Vec::new() } else { open },
        };
        self.write_ack(
            &ack,
            a.revive_qid,
            a.pop_time.saturating_add(a.invisible_time),
        )
    }

    fn due(&self, now_ms: i64, max: usize) -> Result<Vec<Due>, PopStateError> {
        let inner = self.inner.lock();
        let mut out = Vec::new();
        for (time, key) in &inner.by_time {
            if *time > now_ms || out.len() >= max {
                break;
            }
            if let Some(e) = inner.entries.get(key) {
                let offsets = e.open_offsets();
                if !offsets.is_empty() {
                    out.push(Due {
                        ck: e.ck.clone(),
                        revive_qid: e.revive_qid,
                        offsets,
                    });
                }
            }
        }
        Ok(out)
    }

    fn revived(&self, done: &[Due]) -> Result<(), PopStateError> {
        for d in done {
            let ack = AckMsg {
                ack_offset: -1,
                start_offset: d.ck.start_offset,
                consumer_group: d.ck.cid.clone(),
                topic: d.ck.topic.clone(),
                queue_id: d.ck.queue_id,
                pop_time: d.ck.pop_time,
                broker_name: d.ck.broker_name.clone(),
                ack_offset_list: d.offsets.clone(),
            };
            self.write_ack(&ack, d.revive_qid, rmq_common::time::now_ms())?;
        }
        Ok(())
    }

    fn pop_offsets(&self) -> Vec<PopOffset> {
        let inner = self.inner.lock();
        let mut next = inner.replayed_ends.clone();
        for e in inner.entries.values() {
            let end =
                e.ck.offsets()
                    .into_iter()
                    .max()
                    .unwrap_or(e.ck.start_offset)
                    + 1;
            let k = (e.ck.cid.clone(), e.ck.topic.clone(), e.ck.queue_id);
            let v = next.entry(k).or_insert(end);
            *v = (*v).max(end);
        }
        next.into_iter()
            .map(|((group, topic, queue_id), next_offset)| PopOffset {
                group,
                topic,
                queue_id,
                next_offset,
            })
            .collect()
    }

    fn in_flight(&self) -> u64 {
        self.inner.lock().open
    }
}
