//! Transactional messages: half records, END_TRANSACTION, and the check-back
//! walk.
//!
//! A prepared send is stored as a plain record in `RMQ_SYS_TRANS_HALF_TOPIC`
//! queue 0 (real topic and queue in properties), so it is durable but no
//! consumer of the real topic sees it. A commit writes the real message
//! (sysflag COMMIT, preparedTransactionOffset = the half's CommitLog offset)
//! and then an op record (`RMQ_SYS_TRANS_OP_HALF_TOPIC`, tag `d`, body = the
//! half's queue offset); a rollback writes only the op. The check walk reads
//! the half queue from its progress offset; a half with no op that is older
//! than `transactionTimeOut` is re-appended with TRANSACTION_CHECK_TIMES + 1
//! and the copy is sent to a live producer of its group as
//! CHECK_TRANSACTION_STATE; after `transactionCheckMax` checks it is moved to
//! `TRANS_CHECK_MAX_TIME_TOPIC`. Progress is kept, as in RocketMQ, as the
//! consumer offsets of group `CID_RMQ_SYS_TRANS` on the half and op queues.

mod check_body;
mod half_counts;
mod runner;
mod sender;
mod state;

pub use half_counts::HalfCounts;
pub use runner::TransactionService;
pub use sender::ProducerCheckSender;
pub use state::TxState;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use rmq_common::constants::{
    property, TRANS_CHECK_MAX_TIME_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC,
};
use rmq_common::cq::{CqError, CqUnit};
use rmq_common::message::record::RecordView;
use rmq_common::message::{encode_offset_msg_id, sysflag, MessageToStore};
use rmq_common::remoting::{
    end_state, CheckTransactionStateRequestHeader, EndTransactionRequestHeader,
};
use rmq_store_file::commitlog::AppendResult;
use rmq_store_file::StoreError;

use crate::error::{MetaError, ServiceError};

use crate::meta::ConsumerOffsetManager;
use crate::service::poison::{PoisonEntry, PoisonLog};
use rmq_store::MessageStore;

/// The system consumer group whose offsets hold the walk's progress.
pub const TRANS_GROUP: &str = "CID_RMQ_SYS_TRANS";
/// Tag of an op record that resolves a half.
pub const OP_TAG: &str = "d";
/// Property of an op record naming the resolved half's transaction id
/// (its UNIQ_KEY), so re-appended copies of one half resolve together.
/// Not a RocketMQ key.
pub const OP_HALF_ID: &str = "HALF_UNIQ_KEY";
/// Most halves one check pass handles.
pub const MAX_HALVES_PER_PASS: usize = 4096;
/// Units read at a time.
const READ_BATCH: usize = 64;

/// Check-back timing and limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxSettings {
    /// A half younger than this is not checked (`transactionTimeOut`).
    pub timeout_ms: i64,
    /// Checks before a half is given up (`transactionCheckMax`).
    pub check_max: i32,
}

/// The stored half for a prepared message: same message, sysflag reset to
/// a plain record, in the half topic queue 0 with REAL_TOPIC / REAL_QID.
pub fn half_message(mut msg: MessageToStore) -> MessageToStore {
    msg.properties
        .insert(property::REAL_TOPIC, msg.topic.as_str());
    msg.properties
        .insert(property::REAL_QUEUE_ID, msg.queue_id.to_string());
    msg.sys_flag = sysflag::with_transaction_value(msg.sys_flag, sysflag::TRANSACTION_NOT_TYPE);
    msg.topic = TRANS_HALF_TOPIC.to_owned();
    msg.queue_id = 0;
    msg
}

/// Why an END_TRANSACTION was refused. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum EndError {
    /// No half starts at the named offset.
    #[error("no half message at commitLogOffset {0}")]
    NotFound(i64),
    /// The request does not match the stored half.
    #[error("{0}")]
    Mismatch(String),
    /// Already committed, rolled back, or passed by the check walk.
    #[error("{0}")]
    AlreadyResolved(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The half an END_TRANSACTION resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedHalf {
    /// Its real topic (REAL_TOPIC).
    pub topic: String,
    /// When its producer made it, ms.
    pub born_ms: i64,
}

/// What an END_TRANSACTION did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndOutcome {
    /// The real message was written.
    Committed(AppendResult, ResolvedHalf),
    /// Only the op record was written.
    RolledBack(ResolvedHalf),
    /// UNKNOWN: nothing changed; the check walk will ask again.
    Unknown,
}

/// Where check-back requests go.
pub trait CheckSender: Send + Sync + std::fmt::Debug {
    /// Sends CHECK_TRANSACTION_STATE (oneway, `body` = the half record) to
    /// one live producer of `group`; false when there is none.
    fn send_check(
        &self,
        group: &str,
        header: &CheckTransactionStateRequestHeader,
        body: Vec<u8>,
    ) -> bool;
}

/// What one check pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckPass {
    /// Halves re-appended and checked.
    pub checked: usize,
    /// Checks that reached a producer.
    pub sent: usize,
    /// Halves moved to TRANS_CHECK_MAX_TIME_TOPIC.
    pub moved: usize,
    /// Halves found resolved and passed.
    pub resolved: usize,
    /// Halves still within their own check immunity, put back at the tail.
    pub deferred: usize,
}

/// The transaction state of one store.
#[derive(Debug)]
pub struct Transactions {
    store: Arc<MessageStore>,
    offsets: Arc<ConsumerOffsetManager>,
    settings: TxSettings,
    state: Mutex<TxState>,
    checks_sent: AtomicU64,
    poison: PoisonLog,
    /// Unresolved halves per real topic.
    halves: HalfCounts,
}

fn unit_record(store: &MessageStore, unit: &CqUnit) -> Option<Vec<u8>> {
    store.record_at(unit.phy_offset).map(|s| s.bytes().to_vec())
}

impl Transactions {
    /// Resumes from the persisted progress and re-reads the op records that
    /// may resolve halves not yet passed.
    pub fn open(
        store: Arc<MessageStore>,
        offsets: Arc<ConsumerOffsetManager>,
        settings: TxSettings,
    ) -> Result<Self, StoreError> {
        let half_min = store.min_offset_in_queue(TRANS_HALF_TOPIC, 0)?;
        let op_min = store.min_offset_in_queue(TRANS_OP_HALF_TOPIC, 0)?;
        let half = offsets
            .query(TRANS_GROUP, TRANS_HALF_TOPIC, 0)
            .unwrap_or(half_min)
            .max(half_min);
        let op = offsets
            .query(TRANS_GROUP, TRANS_OP_HALF_TOPIC, 0)
            .unwrap_or(op_min)
            .max(op_min);
        let mut tx = Self {
            offsets,
            settings,
            poison: PoisonLog::new(&store.config().store_path_root_dir, "transaction"),
            state: Mutex::new(TxState::new(half, op)),
            checks_sent: AtomicU64::new(0),
            halves: HalfCounts::default(),
            store,
        };
        let counts = {
            let mut state = tx.state.lock();
            tx.read_ops(&mut state)?;
            let started = std::time::Instant::now();
            let counts = half_counts::scan(&tx.store, &state)?;
            tracing::info!(
                half_progress = half,
                op_from = op,
                resolved_pending = state.resolved_pending(),
                unresolved = counts.values().sum::<i64>(),
                scan_ms = started.elapsed().as_millis() as u64,
                "transaction state loaded"
            );
            counts
        };
        tx.halves = HalfCounts::from_counts(counts);
        Ok(tx)
    }

    /// Reads new op records into the state.
    fn read_ops(&self, state: &mut TxState) -> Result<(), StoreError> {
        let mut units = Vec::with_capacity(READ_BATCH);
        loop {
            units.clear();
            match self.store.consume_queue().get(
                TRANS_OP_HALF_TOPIC,
                0,
                state.op_read,
                READ_BATCH,
                &mut units,
            ) {
                Ok(()) => {}
                Err(CqError::Compacted { min_offset, .. }) => {
                    state.op_read = min_offset;
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
            if units.is_empty() {
                return Ok(());
            }
            for unit in &units {
                if let Some(bytes) = unit_record(&self.store, unit) {
                    if let Ok(view) = RecordView::parse(&bytes, false) {
                        match state::op_half_offsets(view.body()) {
                            // Our own ops name one half and its id; a 5.x
                            // batch names several, without ids.
                            Some(halves) if halves.len() == 1 => state.record_op(
                                unit.queue_offset,
                                halves[0],
                                view.property(OP_HALF_ID).as_deref(),
                            ),
                            Some(halves) => {
                                for half in halves {
                                    state.record_op(unit.queue_offset, half, None);
                                }
                            }
                            None => tracing::warn!(
                                op_offset = unit.queue_offset,
                                "op record body is neither a half queue offset nor a list of them; ignored"
                            ),
                        }
                    }
                }
                state.op_read = unit.queue_offset + 1;
            }
        }
    }

    /// Writes the op record resolving the half at `half_offset`.
    fn write_op(
        &self,
        state: &mut TxState,
        half_offset: i64,
        uniq: Option<&str>,
        store_host: std::net::SocketAddr,
    ) -> Result<(), StoreError> {
        let mut op = MessageToStore::new(TRANS_OP_HALF_TOPIC, 0, half_offset.to_string());
        op.properties.insert(property::TAGS, OP_TAG);
        if let Some(id) = uniq {
            op.properties.insert(OP_HALF_ID, id);
        }
        op.store_host = store_host;
        op.born_host = store_host;
        op.born_timestamp = self.store.clock().now_ms();
        let r = self.store.put_message(&op)?;
        if let Some(a) = r.appended.first() {
            state.record_op(a.queue_offset, half_offset, uniq);
        }
        Ok(())
    }

    /// Applies a producer's END_TRANSACTION after checking it names a stored,
    /// unresolved half of its group.
    pub fn end(
        &self,
        h: &EndTransactionRequestHeader,
        store_host: std::net::SocketAddr,
    ) -> Result<EndOutcome, EndError> {
        match h.commit_or_rollback {
            end_state::UNKNOWN => return Ok(EndOutcome::Unknown),
            end_state::COMMIT | end_state::ROLLBACK => {}
            other => {
                return Err(EndError::Mismatch(format!(
                    "commitOrRollback {other} is none of 0 (unknown), 8 (commit), 12 (rollback)"
                )))
            }
        }
        // Every op after start-up is written by `write_op`, which records it
        // in the state: no need to read the op queue here.
        let mut state = self.state.lock();
        let bytes = self
            .store
            .record_at(h.commit_log_offset)
            .map(|s| s.bytes().to_vec())
            .ok_or(EndError::NotFound(h.commit_log_offset))?;
        let view = RecordView::parse(&bytes, false)
            .map_err(|_| EndError::NotFound(h.commit_log_offset))?;
        if view.topic() != TRANS_HALF_TOPIC {
            return Err(EndError::Mismatch(format!(
                "the message at commitLogOffset {} is not a half message (topic {})",
                h.commit_log_offset,
                view.topic()
            )));
        }
        if view.queue_offset() != h.tran_state_table_offset {
            return Err(EndError::Mismatch(format!(
                "the transaction state table offset wrong: {} is not the half's {}",
                h.tran_state_table_offset,
                view.queue_offset()
            )));
        }
        let group = view.property(property::PRODUCER_GROUP).unwrap_or_default();
        if group != h.producer_group {
            return Err(EndError::Mismatch(format!(
                "the producer group wrong: {} is not the half's {group:?}",
                h.producer_group
            )));
        }
        let uniq = view
            .property(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
            .map(|u| u.into_owned());
        let offset_id = encode_offset_msg_id(view.store_host(), view.physical_offset());
        if uniq.as_deref() != Some(h.msg_id.as_str()) && h.msg_id != offset_id {
            return Err(EndError::Mismatch(format!(
                "the msgId wrong: {} names neither the half's UNIQ_KEY nor its offsetMsgId",
                h.msg_id
            )));
        }
        let half_offset = view.queue_offset();
        if state.is_done(half_offset, uniq.as_deref()) {
            return Err(EndError::AlreadyResolved(format!(
                "the half message at queue offset {half_offset} is already resolved or was re-checked; \
                 nothing was written"
            )));
        }
        let half = ResolvedHalf {
            topic: view
                .property(property::REAL_TOPIC)
                .unwrap_or_default()
                .into_owned(),
            born_ms: view.born_timestamp(),
        };
        let outcome = if h.commit_or_rollback == end_state::COMMIT {
            let real = committed_message(&view, h.commit_log_offset)?;
            let r = self.store.put_message(&real)?;
            let appended = r.appended.into_iter().next().ok_or_else(|| {
                EndError::Mismatch("the store wrote nothing for the commit".into())
            })?;
            EndOutcome::Committed(appended, half.clone())
        } else {
            EndOutcome::RolledBack(half.clone())
        };
        self.write_op(&mut state, half_offset, uniq.as_deref(), store_host)?;
        self.halves.add(&half.topic, -1);
        Ok(outcome)
    }

    /// One pass of the check walk at the store clock's now.
    pub fn check_pass(
        &self,
        sender: &dyn CheckSender,
        store_host: std::net::SocketAddr,
    ) -> Result<CheckPass, ServiceError> {
        let mut out = CheckPass::default();
        let mut checks: Vec<(String, CheckTransactionStateRequestHeader, i64)> = Vec::new();
        {
            let mut state = self.state.lock();
            self.read_ops(&mut state)?;
            let min = self.store.min_offset_in_queue(TRANS_HALF_TOPIC, 0)?;
            let max = self.store.max_offset_in_queue(TRANS_HALF_TOPIC, 0)?;
            if state.half_progress < min {
                state.advance_half(min);
            }
            let mut units = Vec::with_capacity(READ_BATCH);
            'walk: while state.half_progress < max
                && out.checked + out.moved + out.resolved + out.deferred < MAX_HALVES_PER_PASS
            {
                units.clear();
                self.store
                    .consume_queue()
                    .get(
                        TRANS_HALF_TOPIC,
                        0,
                        state.half_progress,
                        READ_BATCH,
                        &mut units,
                    )
                    .map_err(StoreError::from)?;
                if units.is_empty() {
                    break;
                }
                for unit in units.iter().filter(|u| u.queue_offset < max) {
                    let o = unit.queue_offset;
                    let Some(bytes) = unit_record(&self.store, unit) else {
                        tracing::warn!(half_offset = o, "half record is gone; passed");
                        state.advance_half(o + 1);
                        continue;
                    };
                    let Ok(view) = RecordView::parse(&bytes, false) else {
                        state.advance_half(o + 1);
                        continue;
                    };
                    let uniq = view
                        .property(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
                        .map(|u| u.into_owned());
                    if state.is_done(o, uniq.as_deref()) {
                        out.resolved += 1;
                        state.advance_half(o + 1);
                        continue;
                    }
                    let times: i32 = view
                        .property(property::TRANSACTION_CHECK_TIMES)
                        .and_then(|t| t.parse().ok())
                        .unwrap_or(0);
                    let poison = |reason: String| PoisonEntry {
                        time_ms: self.store.clock().now_ms(),
                        commit_log_offset: view.physical_offset(),
                        offset_msg_id: Some(encode_offset_msg_id(
                            view.store_host(),
                            view.physical_offset(),
                        )),
                        queue: format!("{TRANS_HALF_TOPIC}:0"),
                        queue_offset: o,
                        target_topic: view.property(property::REAL_TOPIC).map(|t| t.into_owned()),
                        reason,
                    };
                    if times >= self.settings.check_max {
                        let mut m = view.to_message();
                        m.topic = TRANS_CHECK_MAX_TIME_TOPIC.to_owned();
                        m.queue_id = 0;
                        if let Err(reason) = self.put_unless_permanent(&m)? {
                            self.poison.record(&poison(format!(
                                "moving it to {TRANS_CHECK_MAX_TIME_TOPIC} failed: {reason}"
                            )));
                        }
                        self.write_op(&mut state, o, uniq.as_deref(), store_host)?;
                        if let Some(topic) = view.property(property::REAL_TOPIC) {
                            self.halves.add(&topic, -1);
                        }
                        tracing::warn!(
                            half_offset = o,
                            checks = times,
                            group = %view.property(property::PRODUCER_GROUP).unwrap_or_default(),
                            transaction_id = %uniq.as_deref().unwrap_or(""),
                            "half message checked transactionCheckMax times; moved to TRANS_CHECK_MAX_TIME_TOPIC"
                        );
                        out.moved += 1;
                        state.advance_half(o + 1);
                        continue;
                    }
                    let now = self.store.clock().now_ms();
                    let immunity_ms = view
                        .property(property::CHECK_IMMUNITY_TIME_IN_SECONDS)
                        .and_then(|s| s.parse::<i64>().ok())
                        .filter(|s| *s > 0)
                        .map(|s| s.saturating_mul(1000));
                    match immunity_ms {
                        // A producer's own immunity is counted from its
                        // born time (copies keep it) and differs per half:
                        // as RocketMQ does, a half still immune goes back
                        // to the tail of the queue and the walk goes on, so
                        // one long immunity never holds up the halves
                        // behind it. A born time in the future is checked.
                        Some(immunity) => {
                            let age = now - view.born_timestamp();
                            if (0..immunity).contains(&age) {
                                match self.put_unless_permanent(&view.to_message())? {
                                    Ok(_) => {
                                        out.deferred += 1;
                                        state.advance_half(o + 1);
                                        continue;
                                    }
                                    Err(reason) => {
                                        self.poison.record(&poison(format!(
                                            "putting the immune half back failed ({reason}); \
                                             checked now instead"
                                        )));
                                    }
                                }
                            }
                        }
                        None => {
                            let age = now - view.store_timestamp();
                            if age < self.settings.timeout_ms {
                                // Halves are appended in time order: the
                                // rest are younger still.
                                break 'walk;
                            }
                        }
                    }
                    let mut copy = view.to_message();
                    copy.properties
                        .insert(property::TRANSACTION_CHECK_TIMES, (times + 1).to_string());
                    let group = view
                        .property(property::PRODUCER_GROUP)
                        .unwrap_or_default()
                        .into_owned();
                    let tx_id = view
                        .property(property::TRANSACTION_ID)
                        .map(|t| t.into_owned())
                        .or_else(|| uniq.clone());
                    // The check names the copy; when the copy can never be
                    // stored, the half itself (the producer's answer
                    // resolves it all the same), and the walk goes on.
                    let (queue_offset, phy, msg_id) = match self.put_unless_permanent(&copy)? {
                        Ok(a) => (a.queue_offset, a.phy_offset, a.msg_id),
                        Err(reason) => {
                            self.poison.record(&poison(format!(
                                "the check copy cannot be stored ({reason}); checked in place"
                            )));
                            (
                                o,
                                view.physical_offset(),
                                encode_offset_msg_id(view.store_host(), view.physical_offset()),
                            )
                        }
                    };
                    checks.push((
                        group,
                        CheckTransactionStateRequestHeader {
                            tran_state_table_offset: queue_offset,
                            commit_log_offset: phy,
                            msg_id: uniq.clone(),
                            transaction_id: tx_id,
                            offset_msg_id: Some(msg_id),
                            topic: Some(TRANS_HALF_TOPIC.to_owned()),
                            broker_name: None,
                        },
                        phy,
                    ));
                    out.checked += 1;
                    state.advance_half(o + 1);
                }
            }
            self.persist_locked(&state)?;
        }
        // Sent after the progress is persisted, outside the lock (the
        // answers come back as END_TRANSACTION, which takes it).
        for (group, header, phy) in checks {
            let Some(body) = self
                .store
                .record_at(phy)
                .and_then(|s| check_body::check_body(s.bytes()))
            else {
                continue;
            };
            if sender.send_check(&group, &header, body) {
                out.sent += 1;
                self.checks_sent.fetch_add(1, Ordering::Relaxed);
            } else {
                tracing::warn!(
                    group,
                    half_offset = header.tran_state_table_offset,
                    "no live producer of the group to check a half message with; will check again"
                );
            }
        }
        Ok(out)
    }

    fn persist_locked(&self, state: &TxState) -> Result<(), MetaError> {
        self.offsets
            .commit(TRANS_GROUP, TRANS_HALF_TOPIC, 0, state.half_progress);
        self.offsets
            .commit(TRANS_GROUP, TRANS_OP_HALF_TOPIC, 0, state.op_committed());
        self.offsets.persist()
    }

    /// Persists the walk's progress.
    pub fn persist(&self) -> Result<(), MetaError> {
        let state = self.state.lock();
        self.persist_locked(&state)
    }

    /// Halves stored and not yet resolved (an upper bound while re-appended
    /// copies are pending).
    pub fn pending_halves(&self) -> i64 {
        let state = self.state.lock();
        let max = self
            .store
            .max_offset_in_queue(TRANS_HALF_TOPIC, 0)
            .unwrap_or(0);
        let resolved = i64::try_from(state.resolved_pending()).unwrap_or(i64::MAX);
        (max - state.half_progress - resolved).max(0)
    }

    /// A half of real topic `topic` was stored (the send path).
    pub fn half_stored(&self, topic: &str) {
        self.halves.add(topic, 1);
    }

    /// Unresolved halves per real topic (`rocketmq_half_messages`).
    pub fn half_counts(&self) -> Vec<(String, i64)> {
        self.halves.snapshot()
    }

    /// Halves passed over since start because a copy could never be stored.
    pub fn poisoned(&self) -> u64 {
        self.poison.count()
    }

    /// Puts a message the walk writes; `Ok(Err(reason))` when it can never
    /// be stored (the caller passes it over), `Err` when the store failed
    /// for now (the pass ends and the next one tries again).
    fn put_unless_permanent(
        &self,
        msg: &MessageToStore,
    ) -> Result<Result<AppendResult, String>, StoreError> {
        match self.store.put_message(msg) {
            Ok(r) => Ok(r
                .appended
                .into_iter()
                .next()
                .ok_or_else(|| "nothing was stored".into())),
            Err(e) if rmq_store::is_permanent(&e) => Ok(Err(e.to_string())),
            Err(e) => Err(e),
        }
    }

    /// Check-back requests sent since start.
    pub fn checks_sent(&self) -> u64 {
        self.checks_sent.load(Ordering::Relaxed)
    }
}

/// The real message a commit writes for the half `view`.
fn committed_message(view: &RecordView<'_>, half_phy: i64) -> Result<MessageToStore, EndError> {
    let mut m = view.to_message();
    let topic = m
        .properties
        .remove(property::REAL_TOPIC)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| EndError::Mismatch("the half message has no REAL_TOPIC".into()))?;
    let queue_id = m
        .properties
        .remove(property::REAL_QUEUE_ID)
        .and_then(|q| q.parse::<i32>().ok())
        .ok_or_else(|| EndError::Mismatch("the half message has no usable REAL_QID".into()))?;
    m.properties.remove(property::TRANSACTION_PREPARED);
    // Transactional messages ignore delay levels.
    m.properties.remove(property::DELAY_TIME_LEVEL);
    m.topic = topic;
    m.queue_id = queue_id;
    m.sys_flag = sysflag::with_transaction_value(m.sys_flag, sysflag::TRANSACTION_COMMIT_TYPE);
    m.prepared_transaction_offset = half_phy;
    Ok(m)
}
