//! Light message queues in the store: the file backend's
//! `maxLmqConsumeQueueNum` guard, and the removal of LMQs whose messages
//! have all expired.

use std::sync::Arc;

use rmq_common::constants::LMQ_QUEUE_ID;
use rmq_common::names::is_lmq;
use rmq_common::CqBackend;
use rmq_store_file::commitlog::CommitLog;
use rmq_store_file::StoreError;

use super::reput::Dispatcher;
use super::MessageStore;

/// Told the names of LMQs removed because every message in them expired
/// (the broker drops their consumer offsets).
pub type LmqRemovedListener = Arc<dyn Fn(&[String]) + Send + Sync>;

/// Removes from every backend the LMQs whose units all lie below the
/// CommitLog min (min offset == max offset > 0), except those the put path
/// has appended to beyond what is dispatched; returns their names.
pub(crate) fn remove_expired_lmqs(
    dispatcher: &Dispatcher,
    commit_log: &CommitLog,
) -> Result<Vec<String>, StoreError> {
    let cq = dispatcher.cq();
    let mut gone = Vec::new();
    for q in cq.queues()? {
        if q.queue_id != LMQ_QUEUE_ID || !is_lmq(&q.topic) {
            continue;
        }
        let max = cq.max_offset(&q.topic, LMQ_QUEUE_ID)?;
        if max == 0 || cq.min_offset(&q.topic, LMQ_QUEUE_ID)? < max {
            continue;
        }
        if commit_log.forget_lmq_unless_ahead(&q.topic, max) {
            gone.push(q.topic);
        }
    }
    for topic in &gone {
        for backend in dispatcher.backends() {
            backend.delete_topic(topic)?;
        }
    }
    if !gone.is_empty() {
        tracing::info!(
            count = gone.len(),
            "removed light message queues whose messages all expired"
        );
    }
    Ok(gone)
}

impl MessageStore {
    /// Whether light message queues are on (`enableLmq` and
    /// `enableMultiDispatch`).
    pub fn lmq_enabled(&self) -> bool {
        self.config.enable_lmq && self.config.enable_multi_dispatch
    }

    /// Removes the LMQs whose messages have all expired (the clean service
    /// does this after deleting CommitLog segments; CLEAN_EXPIRED_CONSUMEQUEUE
    /// at once); returns their names.
    pub fn remove_expired_lmqs(&self) -> Result<Vec<String>, StoreError> {
        if !self.config.enable_lmq {
            return Ok(Vec::new());
        }
        let gone = remove_expired_lmqs(&self.dispatcher, &self.commit_log)?;
        self.cleaner.lmqs_removed(&gone);
        Ok(gone)
    }

    /// Sets who is told of LMQs removed by expiry (once; later calls are
    /// ignored).
    pub fn set_lmq_removed_listener(&self, listener: LmqRemovedListener) {
        self.cleaner.lmq_removed.set(listener);
    }

    /// `Err(LmqQueueNumExceeded)` while the serving file consume queue holds
    /// more LMQ queues than `maxLmqConsumeQueueNum` (RocketMQ 4.x's guard
    /// against a folder per queue: multi-dispatch sends and LMQ pulls are
    /// refused). The RocksDB backend has no such limit.
    pub fn check_lmq_limit(&self) -> Result<(), StoreError> {
        if !self.lmq_enabled() {
            return Ok(());
        }
        let cq = self.consume_queue();
        if cq.backend() != CqBackend::File {
            return Ok(());
        }
        let count = cq.lmq_queues();
        let max = self.config.max_lmq_consume_queue_num;
        if count > u64::from(max) {
            return Err(StoreError::LmqQueueNumExceeded { count, max });
        }
        Ok(())
    }
}
