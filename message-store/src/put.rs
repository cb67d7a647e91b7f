//! The put path of the facade: append, wake reput, and under SYNC_FLUSH wait
//! for the group commit.

use std::time::Duration;

use rmq_common::constants::property;
use rmq_common::message::lmq::names_queues;
use rmq_common::message::MessageToStore;
use rmq_common::FlushDiskType;
use rmq_store_file::commitlog::{AppendResult, FlushFailed};
use rmq_store_file::StoreError;

use super::delay::schedule_rewrite;
use super::MessageStore;

/// Whether a put failed because of the message itself (it can never be
/// stored as it is) rather than the store's state (full, refusing writes,
/// slow to flush), which may pass.
pub fn is_permanent(e: &StoreError) -> bool {
    matches!(
        e,
        StoreError::MessageIllegal { .. } | StoreError::IllegalName(_) | StoreError::Encode(_)
    )
}

/// How a stored message stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutStatus {
    /// Stored (and under SYNC_FLUSH, flushed).
    PutOk,
    /// Stored, but the flush did not complete within `syncFlushTimeout`.
    FlushDiskTimeout,
}

/// The outcome of a put.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutMessageResult {
    /// Durability state.
    pub status: PutStatus,
    /// Where each message landed.
    pub appended: Vec<AppendResult>,
}

/// What an append left to do: the results, and where a SYNC_FLUSH put
/// must wait for the flush to reach (`None`: it need not wait).
struct Appended {
    appended: Vec<AppendResult>,
    flush_to: Option<i64>,
    topic: String,
}

impl MessageStore {
    /// Stores one message. Blocks under SYNC_FLUSH until the flush covers it
    /// (unless the message's WAIT property is "false"). A message with a
    /// DELAY level is stored in the schedule topic instead (see
    /// [`schedule_rewrite`]); the result then names where it waits.
    pub fn put_message(&self, msg: &MessageToStore) -> Result<PutMessageResult, StoreError> {
        let started = std::time::Instant::now();
        let a = self.append_one(msg)?;
        let status = match a.flush_to {
            Some(end) => self.wait_flushed(end)?,
            None => PutStatus::PutOk,
        };
        Ok(self.finish_put(a, status, started))
    }

    /// Stores a batch contiguously under one lock. Delay levels do not
    /// apply to batches (RocketMQ refuses them; the send path does too).
    pub fn put_messages(&self, msgs: &[MessageToStore]) -> Result<PutMessageResult, StoreError> {
        let started = std::time::Instant::now();
        let a = self.append_many(msgs)?;
        let status = match a.flush_to {
            Some(end) => self.wait_flushed(end)?,
            None => PutStatus::PutOk,
        };
        Ok(self.finish_put(a, status, started))
    }

    /// The request path's put of one message or a batch: the append runs on
    /// the caller's task (a copy into the mapped segment under the put
    /// lock), and under SYNC_FLUSH the answer waits for the group commit as
    /// a future that the flush service completes, so no thread is parked
    /// per send. Same rules and results as [`MessageStore::put_message`]
    /// and [`MessageStore::put_messages`].
    pub async fn put_async(&self, msgs: &[MessageToStore]) -> Result<PutMessageResult, StoreError> {
        let (r, ()) = self.put_async_with(msgs, |_| async {}).await?;
        Ok(r)
    }

    /// [`MessageStore::put_async`], and meanwhile `also(end)` (`end`: the
    /// CommitLog offset past what was appended): a SYNC_MASTER waits for
    /// its slave while the group commit flushes, not after it.
    pub async fn put_async_with<F, Fut>(
        &self,
        msgs: &[MessageToStore],
        also: F,
    ) -> Result<(PutMessageResult, Fut::Output), StoreError>
    where
        F: FnOnce(i64) -> Fut,
        Fut: std::future::Future,
    {
        let started = std::time::Instant::now();
        let a = match msgs {
            [one] => self.append_one(one)?,
            many => self.append_many(many)?,
        };
        let end = a.appended.last().map_or(0, AppendResult::end_offset);
        let flush_to = a.flush_to;
        let flushed = async {
            match flush_to {
                Some(end) => self.flushed(end).await,
                None => Ok(PutStatus::PutOk),
            }
        };
        let (status, other) = tokio::join!(flushed, also(end));
        Ok((self.finish_put(a, status?, started), other))
    }

    fn ensure_writable(&self) -> Result<(), StoreError> {
        self.ensure_running()?;
        if self.is_replica_only() {
            return Err(StoreError::Slave);
        }
        Ok(())
    }

    /// A slave stores what its master streamed: `data` at the master's
    /// CommitLog offset `offset` (see `CommitLog::append_replica`), then
    /// wakes reput.
    pub fn append_replica(&self, offset: i64, data: &[u8]) -> Result<(), StoreError> {
        self.ensure_running()?;
        self.commit_log.append_replica(offset, data)?;
        if !data.is_empty() {
            self.dispatcher.notify_new_data();
        }
        Ok(())
    }

    fn append_one(&self, msg: &MessageToStore) -> Result<Appended, StoreError> {
        self.append_one_counted(msg)
            .inspect_err(|_| self.metrics().put_failed())
    }

    fn append_many(&self, msgs: &[MessageToStore]) -> Result<Appended, StoreError> {
        self.append_many_counted(msgs)
            .inspect_err(|_| self.metrics().put_failed())
    }

    fn append_one_counted(&self, msg: &MessageToStore) -> Result<Appended, StoreError> {
        self.ensure_writable()?;
        self.cleaner.admit_write()?;
        self.admit_lmq(std::slice::from_ref(msg))?;
        let msg = schedule_rewrite(&self.delay_levels, msg);
        let r = self.commit_log.append(&msg)?;
        self.dispatcher.notify_new_data();
        self.appended.notify_waiters();
        Ok(Appended {
            flush_to: self.must_wait(wants_wait(&msg)).then(|| r.end_offset()),
            appended: vec![r],
            topic: msg.topic.clone(),
        })
    }

    fn append_many_counted(&self, msgs: &[MessageToStore]) -> Result<Appended, StoreError> {
        self.ensure_writable()?;
        self.cleaner.admit_write()?;
        self.admit_lmq(msgs)?;
        let appended = self.commit_log.append_batch(msgs)?;
        self.dispatcher.notify_new_data();
        self.appended.notify_waiters();
        let end = appended.last().map_or(0, AppendResult::end_offset);
        let wait = msgs.first().is_none_or(wants_wait);
        Ok(Appended {
            flush_to: self.must_wait(wait).then_some(end),
            appended,
            topic: msgs.first().map(|m| m.topic.clone()).unwrap_or_default(),
        })
    }

    fn finish_put(
        &self,
        a: Appended,
        status: PutStatus,
        started: std::time::Instant,
    ) -> PutMessageResult {
        if !a.appended.is_empty() {
            self.metrics
                .put(&a.topic, a.appended.len() as u64, started.elapsed());
        }
        PutMessageResult {
            status,
            appended: a.appended,
        }
    }

    /// Refuses multi-dispatch messages while the file consume queue holds
    /// more LMQ queues than `maxLmqConsumeQueueNum` (as RocketMQ 4.x does;
    /// the RocksDB backend has no such limit).
    fn admit_lmq(&self, msgs: &[MessageToStore]) -> Result<(), StoreError> {
        if !msgs.iter().any(|m| names_queues(&m.properties)) {
            return Ok(());
        }
        self.check_lmq_limit()
    }

    /// Whether a put waits for the flush: SYNC_FLUSH, unless the message
    /// says not to.
    fn must_wait(&self, wants: bool) -> bool {
        self.config.flush_disk_type == FlushDiskType::SyncFlush && wants
    }

    fn sync_flush_timeout(&self) -> Duration {
        Duration::from_millis(self.config.sync_flush_timeout_ms)
    }

    /// Blocks until the flush covers `end_offset`, or `syncFlushTimeout`.
    fn wait_flushed(&self, end_offset: i64) -> Result<PutStatus, StoreError> {
        match self
            .commit_log
            .wait_flushed(end_offset, self.sync_flush_timeout())
        {
            Ok(()) => Ok(PutStatus::PutOk),
            Err(StoreError::FlushTimeout { .. }) => Ok(self.flush_timed_out(end_offset)),
            Err(e) => Err(e),
        }
    }

    /// Completes when the flush covers `end_offset`, or `syncFlushTimeout`.
    async fn flushed(&self, end_offset: i64) -> Result<PutStatus, StoreError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.commit_log.request_flush(
            end_offset,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        match tokio::time::timeout(self.sync_flush_timeout(), rx).await {
            Ok(Ok(Ok(()))) => Ok(PutStatus::PutOk),
            Ok(Ok(Err(FlushFailed(reason)))) => Err(StoreError::Poisoned { reason }),
            Ok(Err(_)) => Err(StoreError::Poisoned {
                reason: "the flush service dropped the request".into(),
            }),
            Err(_) => Ok(self.flush_timed_out(end_offset)),
        }
    }

    fn flush_timed_out(&self, end_offset: i64) -> PutStatus {
        tracing::warn!(
            end_offset,
            timeout_ms = self.config.sync_flush_timeout_ms,
            "flush disk timeout"
        );
        PutStatus::FlushDiskTimeout
    }
}

/// Whether a put of `msg` waits for the disk (SYNC_FLUSH) or a slave
/// (SYNC_MASTER): unless its WAIT property says "false".
pub fn wants_wait(msg: &MessageToStore) -> bool {
    msg.properties.get(property::WAIT_STORE_MSG_OK) != Some("false")
}
