//! SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE (and the batch flag
//! on code 10, which one real client sends).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use rmq_common::constants::property;
use rmq_common::message::batch::decode_batch;
use rmq_common::message::{MessageToStore, Properties};
use rmq_common::names::validate_topic;
use rmq_common::remoting::{
    RemotingCommand, RequestCode, ResponseCode, SendMessageRequestHeader, SendMessageResponseHeader,
};

use super::{Handled, Refusal};
use crate::context::BrokerContext;
use crate::remoting::Connection;
use crate::service::transaction::half_message;
use crate::store::PutStatus;

/// Spreads sends that let the broker choose the queue.
static NEXT_QUEUE: AtomicU32 = AtomicU32::new(0);

/// Handles a send request.
pub async fn handle(
    ctx: &Arc<BrokerContext>,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
) -> Handled {
    let header = SendMessageRequestHeader::from_ext(&req.ext())?;
    validate_topic(&header.topic)
        .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
    let topic = topic_for_send(ctx, &header)?;
    let mut queue_id = header.queue_id;
    if queue_id < 0 {
        queue_id = (NEXT_QUEUE.fetch_add(1, Ordering::Relaxed)
            % topic.write_queue_nums.max(1) as u32) as i32;
    }
    if queue_id >= topic.write_queue_nums {
        return Err(Refusal::new(
            ResponseCode::SystemError,
            format!(
                "queueId {queue_id} is illegal: topic {} has {} write queues",
                header.topic, topic.write_queue_nums
            ),
        ));
    }
    let body = req.body.clone().unwrap_or_default();
    let max = ctx.settings.store.max_message_size_bytes as usize;
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
    let prepared = properties.get(property::TRANSACTION_PREPARED) == Some("true");
    let transaction_id = prepared
        .then(|| {
            properties
                .get(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
                .map(str::to_owned)
        })
        .flatten();
    let template = MessageToStore {
        topic: header.topic.clone(),
        queue_id,
        flag: header.flag,
        body: Vec::new(),
        properties,
        sys_flag: header.sys_flag,
        born_timestamp: header.born_timestamp,
        born_host: conn.peer,
        store_host: ctx.store_host,
        reconsume_times: header.reconsume_times,
        prepared_transaction_offset: 0,
    };
    let is_batch = header.batch || req.code == i32::from(RequestCode::SendBatchMessage);
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
                m
            })
            .collect::<Vec<MessageToStore>>()
    } else {
        let mut m = template;
        m.body = body.to_vec();
        vec![m]
    };
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
    let messages = if prepared {
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
    // No hand-off to a blocking thread: the append is a copy under the put
    // lock, and a SYNC_FLUSH wait is a future the group commit completes.
    let result = ctx.store.put_async(&messages).await?;
    let first = result
        .appended
        .first()
        .ok_or_else(|| Refusal::new(ResponseCode::SystemError, "nothing was stored"))?;
    let msg_id = result
        .appended
        .iter()
        .map(|a| a.msg_id.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let code = match result.status {
        PutStatus::PutOk => ResponseCode::Success,
        PutStatus::FlushDiskTimeout => ResponseCode::FlushDiskTimeout,
    };
    let mut resp = RemotingCommand::response(code, None);
    resp.ext_fields = SendMessageResponseHeader {
        msg_id,
        queue_id,
        queue_offset: first.queue_offset,
        transaction_id,
    }
    .to_ext();
    resp.put_ext("MSG_REGION", "DefaultRegion");
    resp.put_ext("TRACE_ON", "true");
    Ok(resp)
}

/// The topic to store into, created on first send when allowed.
fn topic_for_send(
    ctx: &BrokerContext,
    header: &SendMessageRequestHeader,
) -> Result<rmq_common::remoting::body::TopicConfig, Refusal> {
    if let Some(t) = ctx.topics.get(&header.topic) {
        if !t.writable() {
            return Err(Refusal::new(
                ResponseCode::NoPermission,
                format!("the topic[{}] sending message is forbidden", header.topic),
            ));
        }
        return Ok(t);
    }
    let retry = header
        .topic
        .starts_with(rmq_common::constants::RETRY_GROUP_TOPIC_PREFIX);
    if !ctx.settings.broker.auto_create_topic_enable && !retry {
        return Err(Refusal::new(
            ResponseCode::TopicNotExist,
            format!("topic[{}] not exist, apply first please!", header.topic),
        ));
    }
    let queues = header
        .default_topic_queue_nums
        .clamp(1, ctx.settings.broker.default_topic_queue_nums);
    let (config, created) = ctx
        .topics
        .get_or_create(&header.topic, queues)
        .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
    if created {
        tracing::info!(topic = %header.topic, queues, "auto-created topic");
        ctx.topics_changed.notify_one();
    }
    Ok(config)
}
