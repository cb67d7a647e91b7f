//! SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE (and the batch flag
//! on code 10, which one real client sends).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use rmq_common::constants::property;
use rmq_common::message::batch::decode_batch;
use rmq_common::message::{MessageToStore, Properties};
use rmq_common::remoting::{
    RemotingCommand, ResponseCode, SendMessageRequestHeader, SendMessageResponseHeader,
};

use super::parts::SendPath;
use super::{Handled, Refusal};
use crate::service::transaction::half_message;
use rmq_remoting::Connection;
use rmq_store::PutStatus;

/// Spreads sends that let the broker choose the queue.
static NEXT_QUEUE: AtomicU32 = AtomicU32::new(0);

/// SEND_MESSAGE, SEND_MESSAGE_V2 (`batch` false) and SEND_BATCH_MESSAGE
/// (`batch` true); the body is `req`'s.
pub(crate) async fn send(
    path: &Arc<SendPath>,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
    mut header: SendMessageRequestHeader,
    batch: bool,
) -> Handled {
    super::validate::send_topic(&header.topic)?;
    // A draining broker (brokerPermission without write) takes no sends;
    // Java refuses only ordered topics there, but its client sends the
    // others elsewhere on NO_PERMISSION, so nothing is lost by refusing.
    if !path.runtime.writable() {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!(
                "the broker[{}] sending message is forbidden",
                path.store_host
            ),
        ));
    }
    let dead_letter = to_dead_letter(path, &mut header);
    let topic = topic_for_send(path, &header, dead_letter).await?;
    let mut queue_id = header.queue_id;
    if queue_id < 0 {
        queue_id = (NEXT_QUEUE.fetch_add(1, Ordering::Relaxed)
            % topic.write_queue_nums.max(1) as u32) as i32;
    }
    // As RocketMQ: any queue the topic has, readable or writable.
    let queues = topic.write_queue_nums.max(topic.read_queue_nums);
    if queue_id >= queues {
        return Err(Refusal::new(
            ResponseCode::SystemError,
            format!(
                "request queueId[{queue_id}] is illegal: topic {} has {queues} queues",
                header.topic
            ),
        ));
    }
    let body = req.body.clone().unwrap_or_default();
    let max = path.settings.store.max_message_size_bytes as usize;
    if body.len() > max {
        return Err(Refusal::new(
            ResponseCode::MessageIllegal,
            format!(
                "message body of {} bytes exceeds maxMessageSize {max}",
                body.len()
            ),
        ));
    }
    let properties =
        Properties::decode(header.properties.as_deref().unwrap_or_default().as_bytes());
    // A dead letter counts under its consumer group and the topic it was
    // consumed from (RocketMQ labels this path with the sender's producer
    // group and the retry topic instead).
    let dead_letter_of = dead_letter.then(|| {
        let group = header
            .topic
            .strip_prefix(rmq_common::constants::DLQ_GROUP_TOPIC_PREFIX)
            .unwrap_or_default()
            .to_owned();
        let origin = properties.get(property::RETRY_TOPIC).map_or_else(
            || format!("{}{group}", rmq_common::constants::RETRY_GROUP_TOPIC_PREFIX),
            str::to_owned,
        );
        (group, origin)
    });
    let prepared = properties.get(property::TRANSACTION_PREPARED) == Some("true");
    let transaction_id = prepared
        .then(|| {
            properties
                .get(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
                .map(str::to_owned)
        })
        .flatten();
    let mut properties = properties;
    // As RocketMQ: every message carries its broker's cluster (a replier
    // builds the reply topic from it).
    properties.insert(
        property::CLUSTER,
        path.settings.broker.broker_cluster_name.as_str(),
    );
    if dead_letter {
        // A dead letter is not delayed again.
        properties.remove(property::DELAY_TIME_LEVEL);
    }
    let template = message_from(path, conn, &header, queue_id, properties, Vec::new());
    let is_batch = header.batch || batch;
    let messages = if is_batch {
        let items = decode_batch(&body)
            .map_err(|e| Refusal::new(ResponseCode::MessageIllegal, e.to_string()))?;
        items
            .into_iter()
            .map(|item| {
                let mut m = template.clone();
                m.flag = item.flag;
                m.body = item.body;
                m.properties = Properties::decode(&item.properties);
                m.properties.insert(
                    property::CLUSTER,
                    path.settings.broker.broker_cluster_name.as_str(),
                );
                m
            })
            .collect::<Vec<MessageToStore>>()
    } else {
        let mut m = template;
        m.body = body.to_vec();
        vec![m]
    };
    // A typed topic checks every message, each of a batch on its own.
    for m in &messages {
        super::topic_attributes::check_send(&topic, &m.properties)?;
    }
    if is_batch
        && messages
            .iter()
            .any(|m| rmq_common::delay::delay_level_of(&m.properties) > 0)
    {
        return Err(Refusal::new(
            ResponseCode::MessageIllegal,
            "a batch cannot be delayed: send delayed messages one by one",
        ));
    }
    if is_batch
        && messages
            .iter()
            .any(crate::service::timer::rewrite::has_timer_property)
    {
        return Err(Refusal::new(
            ResponseCode::MessageIllegal,
            "a batch cannot carry timer properties: send timer messages one by one",
        ));
    }
    let mut messages = if prepared {
        if is_batch {
            return Err(Refusal::new(
                ResponseCode::MessageIllegal,
                "a batch cannot be transactional: send half messages one by one",
            ));
        }
        messages.into_iter().map(half_message).collect()
    } else {
        messages
    };
    let recall_handle = match messages.as_mut_slice() {
        [one] if !is_batch => timer_step(path, one)?,
        _ => None,
    };
    for m in &messages {
        rmq_store::headroom::check(&path.store, m)
            .map_err(|e| Refusal::new(ResponseCode::MessageIllegal, e.to_string()))?;
    }
    // No hand-off to a blocking thread: the append is a copy under the put
    // lock, and a SYNC_FLUSH wait is a future the group commit completes.
    // A SYNC_MASTER waits for a slave to have the bytes meanwhile.
    let replicate = path.role.broker_role() == crate::ha::BrokerRole::SyncMaster
        && messages.first().is_some_and(rmq_store::wants_wait);
    let slave_timeout = std::time::Duration::from_millis(path.settings.broker.slave_timeout_ms);
    // Controller mode: the SyncStateSet decides (allAckInSyncStateSet:
    // every member has the bytes; otherwise the master answers alone).
    let in_sync = path.in_sync.read().clone();
    let controller = &path.settings.broker.controller;
    if let Some(s) = in_sync.as_ref().filter(|_| replicate) {
        if s.in_sync_replicas() < controller.min_in_sync_replicas {
            return Err(Refusal::new(
                ResponseCode::SystemError,
                format!(
                    "in-sync replicas not enough: {} of minInSyncReplicas {}",
                    s.in_sync_replicas(),
                    controller.min_in_sync_replicas
                ),
            ));
        }
    }
    let all_ack = in_sync.filter(|_| replicate && controller.all_ack_in_sync_state_set);
    let replicate = replicate && !controller.enable_controller_mode;
    let putting = path
        .rocketmq
        .rpc
        .processor(crate::metrics::rpc::Processor::AsyncPut);
    let (result, replica) = path
        .store
        .put_async_with(&messages, |end| async move {
            if let Some(s) = all_ack {
                Some(s.wait_all_ack(end, slave_timeout).await)
            } else if replicate {
                Some(path.ha_acks.wait(end, slave_timeout).await)
            } else {
                None
            }
        })
        .await?;
    let wrote: i64 = result.appended.iter().map(|a| i64::from(a.size)).sum();
    drop(putting);
    if let Some(m) = messages.first() {
        let bytes = u64::try_from(wrote).unwrap_or(0);
        path.items
            .topic_put(&m.topic, result.appended.len() as u64, bytes);
        path.rocketmq
            .message_stored(&m.topic, result.appended.len(), bytes);
    }
    let first = result
        .appended
        .first()
        .ok_or_else(|| Refusal::new(ResponseCode::SystemError, "nothing was stored"))?;
    if let Some((group, origin)) = &dead_letter_of {
        path.rocketmq.outcomes.sent_to_dlq(group, origin);
    }
    if prepared {
        path.transactions.half_stored(&header.topic);
    }
    let msg_id = result
        .appended
        .iter()
        .map(|a| a.msg_id.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let mut code = match result.status {
        PutStatus::PutOk => ResponseCode::Success,
        PutStatus::FlushDiskTimeout => ResponseCode::FlushDiskTimeout,
    };
    // SYNC_MASTER: answered once a slave has the bytes; its verdict wins
    // over the flush's, as in RocketMQ. The message is stored either way.
    match replica {
        None | Some(crate::ha::ReplicaStatus::Acked) => {}
        Some(crate::ha::ReplicaStatus::TimedOut) => code = ResponseCode::FlushSlaveTimeout,
        Some(crate::ha::ReplicaStatus::NotAvailable) => code = ResponseCode::SlaveNotAvailable,
    }
    let mut answer = send_answer(
        code,
        &SendMessageResponseHeader {
            msg_id,
            queue_id,
            queue_offset: first.queue_offset,
            transaction_id,
        },
    );
    if let Some(handle) = recall_handle {
        answer.put_ext("recallHandle", handle);
    }
    Ok(answer)
}

/// The timer step of RocketMQ 5.x (`service::timer::rewrite`): a message
/// with timer properties is stored in the timer topic, or refused with
/// 5.x's code and remark. Returns the recall handle its answer carries
/// (none for a retry topic's message, as 5.x).
fn timer_step(path: &SendPath, m: &mut MessageToStore) -> Result<Option<String>, Refusal> {
    use crate::service::timer::{handle::RecallHandle, rewrite};
    let now = path.store.clock().now_ms();
    let timed = rewrite::apply(m, now, &path.settings.store)
        .map_err(|r| Refusal::new(r.code(), r.remark()))?;
    if !timed {
        return Ok(None);
    }
    let p = &m.properties;
    let (Some(real), Some(out), Some(uniq)) = (
        p.get(property::REAL_TOPIC),
        p.get(property::TIMER_OUT_MS)
            .and_then(|v| v.parse::<i64>().ok()),
        p.get(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
    ) else {
        return Ok(None);
    };
    if real.starts_with(rmq_common::constants::RETRY_GROUP_TOPIC_PREFIX) {
        return Ok(None);
    }
    let broker = &path.settings.broker.broker_name;
    Ok(Some(RecallHandle::new(real, broker, out, uniq).encode()))
}

/// The message a send (or reply) header describes, as the broker stores it.
pub(super) fn message_from(
    path: &SendPath,
    conn: &Connection,
    header: &SendMessageRequestHeader,
    queue_id: i32,
    properties: Properties,
    body: Vec<u8>,
) -> MessageToStore {
    MessageToStore {
        topic: header.topic.clone(),
        queue_id,
        flag: header.flag,
        body,
        properties,
        sys_flag: header.sys_flag,
        born_timestamp: header.born_timestamp,
        born_host: conn.peer,
        store_host: path.store_host,
        reconsume_times: header.reconsume_times,
        prepared_transaction_offset: 0,
    }
}

/// A send's (or reply's) answer: its header, plus the region and trace
/// switch Java's broker adds to every one.
pub(super) fn send_answer(
    code: ResponseCode,
    header: &SendMessageResponseHeader,
) -> RemotingCommand {
    let mut resp = RemotingCommand::response(code, None);
    resp.ext_fields = header.to_ext();
    resp.put_ext("MSG_REGION", "DefaultRegion");
    resp.put_ext("TRACE_ON", "true");
    resp
}

/// A send to a group's retry topic whose reconsume count reached the
/// group's limit goes to the group's dead-letter topic instead, as
/// RocketMQ's send processor does (a client that could not send a message
/// back sends it to `%RETRY%<group>` itself). True when rerouted.
fn to_dead_letter(path: &SendPath, header: &mut SendMessageRequestHeader) -> bool {
    let Some(group) = header
        .topic
        .strip_prefix(rmq_common::constants::RETRY_GROUP_TOPIC_PREFIX)
    else {
        return false;
    };
    let max = header.max_reconsume_times.unwrap_or_else(|| {
        path.groups
            .get(group)
            .map_or(path.runtime.max_reconsume_times(), |g| g.retry_max_times)
    });
    if header.reconsume_times < max {
        return false;
    }
    let dlq = format!("{}{group}", rmq_common::constants::DLQ_GROUP_TOPIC_PREFIX);
    tracing::info!(
        group,
        reconsume_times = header.reconsume_times,
        max_reconsume_times = max,
        "message sent to the retry topic moved to the dead-letter topic"
    );
    header.topic = dlq;
    header.queue_id = 0;
    true
}

/// The topic to store into, created on first send when allowed (the new
/// topic is on disk before the send is answered; the wait runs off the
/// async workers).
pub(super) async fn topic_for_send(
    path: &Arc<SendPath>,
    header: &SendMessageRequestHeader,
    dead_letter: bool,
) -> Result<rmq_common::remoting::body::TopicConfig, Refusal> {
    if let Some(t) = path.topics.get(&header.topic) {
        if !t.writable() {
            return Err(Refusal::new(
                ResponseCode::NoPermission,
                format!("the topic[{}] sending message is forbidden", header.topic),
            ));
        }
        return Ok(t);
    }
    let retry_or_dlq = header
        .topic
        .starts_with(rmq_common::constants::RETRY_GROUP_TOPIC_PREFIX)
        || header
            .topic
            .starts_with(rmq_common::constants::DLQ_GROUP_TOPIC_PREFIX);
    // A client may send to a dead-letter topic that exists (an operator
    // re-driving messages), but only its group's retries create one.
    if header
        .topic
        .starts_with(rmq_common::constants::DLQ_GROUP_TOPIC_PREFIX)
        && !dead_letter
    {
        return Err(Refusal::new(
            ResponseCode::TopicNotExist,
            format!(
                "topic[{}] not exist: dead-letter topics are created by their group's retries",
                header.topic
            ),
        ));
    }
    if !path.settings.broker.auto_create_topic_enable && !retry_or_dlq {
        return Err(Refusal::new(
            ResponseCode::TopicNotExist,
            format!("topic[{}] not exist, apply first please!", header.topic),
        ));
    }
    let queues = if retry_or_dlq {
        1
    } else {
        header
            .default_topic_queue_nums
            .clamp(1, path.settings.broker.default_topic_queue_nums)
    };
    let topics = Arc::clone(&path.topics);
    let name = header.topic.clone();
    let (config, created) = super::blocking(move || topics.get_or_create(&name, queues))
        .await?
        .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
    if created {
        tracing::info!(topic = %header.topic, queues, "auto-created topic");
        path.topics_changed.notify_one();
    }
    Ok(config)
}
