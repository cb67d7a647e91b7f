//! The put path of the facade: append, wake reput, and under SYNC_FLUSH wait
//! for the group commit.

use std::time::Duration;

use rmq_common::constants::property;
use rmq_common::message::MessageToStore;
use rmq_common::FlushDiskType;
use rmq_store_file::commitlog::AppendResult;
use rmq_store_file::StoreError;

use super::delay::schedule_rewrite;
use super::MessageStore;

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

impl MessageStore {
    /// Stores one message. Blocks under SYNC_FLUSH until the flush covers it
    /// (unless the message's WAIT property is "false"). A message with a
    /// DELAY level is stored in the schedule topic instead (see
    /// [`schedule_rewrite`]); the result then names where it waits.
    pub fn put_message(&self, msg: &MessageToStore) -> Result<PutMessageResult, StoreError> {
        self.ensure_running()?;
        self.cleaner.admit_write()?;
        let started = std::time::Instant::now();
        let msg = schedule_rewrite(&self.delay_levels, msg);
        let r = self.commit_log.append(&msg)?;
        self.dispatcher.notify_new_data();
        let status = self.wait_if_sync(r.end_offset(), wants_wait(&msg))?;
        self.metrics.put(&msg.topic, 1, started.elapsed());
        Ok(PutMessageResult {
            status,
            appended: vec![r],
        })
    }

    /// Stores a batch contiguously under one lock. Delay levels do not
    /// apply to batches (RocketMQ refuses them; the send path does too).
    pub fn put_messages(&self, msgs: &[MessageToStore]) -> Result<PutMessageResult, StoreError> {
        self.ensure_running()?;
        self.cleaner.admit_write()?;
        let started = std::time::Instant::now();
        let appended = self.commit_log.append_batch(msgs)?;
        self.dispatcher.notify_new_data();
        let end = appended.last().map_or(0, AppendResult::end_offset);
        let wait = msgs.first().is_none_or(wants_wait);
        let status = self.wait_if_sync(end, wait)?;
        if let Some(first) = msgs.first() {
            self.metrics
                .put(&first.topic, appended.len() as u64, started.elapsed());
        }
        Ok(PutMessageResult { status, appended })
    }

    fn wait_if_sync(&self, end_offset: i64, wait: bool) -> Result<PutStatus, StoreError> {
        if self.config.flush_disk_type != FlushDiskType::SyncFlush || !wait {
            return Ok(PutStatus::PutOk);
        }
        let timeout = Duration::from_millis(self.config.sync_flush_timeout_ms);
        match self.commit_log.wait_flushed(end_offset, timeout) {
            Ok(()) => Ok(PutStatus::PutOk),
            Err(StoreError::FlushTimeout { .. }) => {
                tracing::warn!(
                    end_offset,
                    timeout_ms = self.config.sync_flush_timeout_ms,
                    "flush disk timeout"
                );
                Ok(PutStatus::FlushDiskTimeout)
            }
            Err(e) => Err(e),
        }
    }
}

fn wants_wait(msg: &MessageToStore) -> bool {
    msg.properties.get(property::WAIT_STORE_MSG_OK) != Some("false")
}
