//! The revive service: pops whose invisible time has ended come back. Each
//! unacked message is read from where it was popped and stored again in the
//! group's POP retry topic (`%RETRY%<group>_<topic>`, or `+` with
//! `enableRetryTopicV2`), queue 0, with reconsumeTimes + 1 and
//! `1ST_POP_TIME`, visible at once; then the pop is marked revived in the
//! POP state. RocketMQ's broker never moves a POP message to its DLQ: the
//! consumer side does that (rocketmq-proxy with CONSUMER_SEND_MSG_BACK).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmq_common::constants::{property, RETRY_GROUP_TOPIC_PREFIX};
use rmq_common::message::record::RecordView;
use rmq_common::message::MessageToStore;
use rmq_common::pop::names::pop_retry_topic;
use rmq_common::pop::{Due, PopStateStore};
use rmq_common::service::Next;
use rmq_store::{GetRequest, GetStatus, MessageStore, TagFilter};
use tokio::sync::Notify;

use crate::meta::{ConsumerOffsetManager, TopicConfigManager};

/// Pops revived per pass.
const REVIVE_BATCH: usize = 256;

/// `1ST_POP_TIME`: when a message was first popped.
pub const FIRST_POP_TIME: &str = "1ST_POP_TIME";

/// What a revive pass reaches.
#[derive(Debug)]
pub struct Reviver {
    pub state: Arc<dyn PopStateStore>,
    pub store: Arc<MessageStore>,
    pub topics: Arc<TopicConfigManager>,
    pub offsets: Arc<ConsumerOffsetManager>,
    pub topics_changed: Arc<Notify>,
    pub store_host: SocketAddr,
    pub retry_v2: bool,
    pub interval: Duration,
    pub metrics: Arc<super::PopMetrics>,
}

impl Reviver {
    /// One pass: revives what is due now.
    pub fn pass(&self) -> Next {
        let now = rmq_common::time::now_ms();
        let due = match self.state.due(now, REVIVE_BATCH) {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "POP revive: listing due pops failed");
                return Next::After(self.interval);
            }
        };
        if let Some(first) = due.first() {
            self.metrics.revive_lag_ms.store(
                (now - first.ck.revive_time()).max(0),
                std::sync::atomic::Ordering::Relaxed,
            );
        } else {
            self.metrics
                .revive_lag_ms
                .store(0, std::sync::atomic::Ordering::Relaxed);
        }
        let full = due.len() == REVIVE_BATCH;
        for d in due {
            match self.revive(&d) {
                Ok(n) => {
                    if let Err(e) = self.state.revived(std::slice::from_ref(&d)) {
                        tracing::warn!(error = %e, "POP revive: marking a pop revived failed");
                        return Next::After(self.interval);
                    }
                    self.metrics
                        .revived
                        .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
                    self.metrics
                        .ack_written
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    self.metrics.pairs.add(&d.ck.cid, &d.ck.topic, |c| {
                        c.retried += n;
                        c.ack += 1;
                    });
                }
                Err(e) => {
                    tracing::warn!(group = %d.ck.cid, topic = %d.ck.topic, queue = d.ck.queue_id, error = %e, "POP revive failed; tried again next pass");
                    return Next::After(self.interval);
                }
            }
        }
        if full {
            Next::Now
        } else {
            Next::After(self.interval)
        }
    }

    /// Stores the due messages of one pop in its retry topic; returns how
    /// many were stored (a message gone from the store is dropped).
    fn revive(&self, d: &Due) -> Result<u64, String> {
        let ck = &d.ck;
        let retry_topic = if ck.topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) {
            ck.topic.clone()
        } else {
            pop_retry_topic(&ck.topic, &ck.cid, self.retry_v2)
        };
        let mut batch = Vec::with_capacity(d.offsets.len());
        for offset in &d.offsets {
            if let Some(m) =
                self.retry_copy(ck.queue_id, &ck.topic, *offset, ck.pop_time, &retry_topic)?
            {
                batch.push(m);
            }
        }
        if batch.is_empty() {
            return Ok(0);
        }
        self.ensure_retry_topic(&retry_topic, &ck.cid)?;
        self.store
            .put_messages(&batch)
            .map_err(|e| format!("storing in {retry_topic}: {e}"))?;
        Ok(batch.len() as u64)
    }

    fn retry_copy(
        &self,
        queue_id: i32,
        topic: &str,
        offset: i64,
        pop_time: i64,
        retry_topic: &str,
    ) -> Result<Option<MessageToStore>, String> {
        let filter = TagFilter::all();
        let req = GetRequest::new(topic, queue_id, offset, 1, &filter);
        let r = self
            .store
            .get_message(&req)
            .map_err(|e| format!("reading {topic}:{queue_id}:{offset}: {e}"))?;
        let Some(sel) = r.messages.first().filter(|_| r.status == GetStatus::Found) else {
            tracing::info!(topic, queue_id, offset, status = ?r.status, "POP revive: message no longer stored, dropped");
            return Ok(None);
        };
        if r.queue_offsets.first() != Some(&offset) {
            tracing::info!(
                topic,
                queue_id,
                offset,
                "POP revive: message no longer stored, dropped"
            );
            return Ok(None);
        }
        let view = RecordView::parse(sel.bytes(), false)
            .map_err(|e| format!("record {topic}:{queue_id}:{offset}: {e}"))?;
        let mut m = view.to_message();
        let old = view.reconsume_times();
        m.topic = retry_topic.to_owned();
        m.queue_id = 0;
        m.reconsume_times = old + 1;
        m.born_host = self.store_host;
        m.store_host = self.store_host;
        if old == 0 || m.properties.get(FIRST_POP_TIME).is_none() {
            m.properties.insert(FIRST_POP_TIME, pop_time.to_string());
        }
        m.properties.remove(property::DELAY_TIME_LEVEL);
        Ok(Some(m))
    }

    /// Creates the retry topic (1 queue) and the group's offset on it.
    fn ensure_retry_topic(&self, topic: &str, group: &str) -> Result<(), String> {
        let (_, created) = self
            .topics
            .get_or_create_deferred(topic, 1)
            .map_err(|e| format!("creating {topic}: {e}"))?;
        if created.is_some() {
            tracing::info!(topic, "created POP retry topic");
            self.topics_changed.notify_one();
        }
        if self.offsets.query(group, topic, 0).is_none() {
            self.offsets.commit(group, topic, 0, 0);
        }
        Ok(())
    }
}
