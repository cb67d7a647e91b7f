//! SendMessage: each message is checked as the proxy checks it, stored
//! through the broker's own send processor (SEND_MESSAGE on the client's
//! connection, so the same limits, ACL, typed-topic and timer steps run),
//! in a queue picked as the proxy picks one: by the message group's hash
//! for FIFO messages (Guava's `consistentHash` of Java's `String.hashCode`),
//! round-robin otherwise. RecallMessage goes the same way.

use std::sync::atomic::Ordering;

use rmq_common::attributes::TopicMessageType;
use rmq_common::message::{decode_offset_msg_id, java_string_hash};
use rmq_common::remoting::body::TopicConfig;
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};
use rmq_grpc::pb;

use super::convert::{send_properties, send_sys_flag, timestamp_ms};
use super::service::Caller;
use super::service::Inner;
use super::status::{self, Failure};
use super::transaction::{Half, HALF_TTL_MS};

/// Guava's `Hashing.consistentHash(long, int)`: the bucket of `input`
/// among `buckets`, moving as few inputs as possible when buckets are added.
pub(crate) fn consistent_hash(input: i64, buckets: i32) -> i32 {
    let mut state = input as u64;
    let mut candidate: i32 = 0;
    loop {
        state = state
            .wrapping_mul(2_862_933_555_777_941_757)
            .wrapping_add(1);
        let next_double = f64::from(((state >> 33) as i32).wrapping_add(1)) / 2_147_483_648.0;
        let next = (f64::from(candidate + 1) / next_double) as i64;
        if next >= 0 && next < i64::from(buckets) {
            candidate = next as i32;
        } else {
            return candidate;
        }
    }
}

/// The message type a topic takes, as the 5.x proxy reads it: a topic
/// without the `message.type` attribute is NORMAL.
pub(crate) fn topic_type(topic: &TopicConfig) -> TopicMessageType {
    TopicMessageType::of_topic(&topic.attributes).unwrap_or(TopicMessageType::Normal)
}

pub(crate) async fn send(
    inner: &Inner,
    caller: &Caller,
    req: pb::SendMessageRequest,
) -> Result<pb::SendMessageResponse, Failure> {
    let Some(first) = req.messages.first() else {
        return Err(Failure::new(
            pb::Code::MessageCorrupted,
            "no message to send",
        ));
    };
    let topic_res = first.topic.clone().unwrap_or_default();
    let topic = inner.check_topic(&topic_res)?;
    let config = inner.ctx.topics.get(&topic).ok_or_else(|| {
        Failure::new(
            pb::Code::TopicNotFound,
            format!("topic {topic} does not exist"),
        )
    })?;
    let writable = config.write_queue_nums.max(0);
    if writable == 0 || config.perm & rmq_common::remoting::body::PERM_WRITE == 0 {
        return Err(Failure::new(
            pb::Code::Forbidden,
            format!("topic {topic} has no writable queue"),
        ));
    }
    let now = rmq_common::time::now_ms();
    let mut entries = Vec::with_capacity(req.messages.len());
    for m in &req.messages {
        if m.topic.as_ref() != Some(&topic_res) {
            return Err(Failure::new(
                pb::Code::MessageCorrupted,
                "topic in message is not same",
            ));
        }
        let entry = match send_one(
            inner,
            caller,
            m,
            &topic,
            &config,
            writable,
            req.messages.len(),
            now,
        )
        .await
        {
            Ok(e) => e,
            Err(f) => pb::SendResultEntry {
                status: Some(f.status()),
                ..Default::default()
            },
        };
        entries.push(entry);
    }
    let codes: Vec<pb::Code> = entries
        .iter()
        .map(|e| {
            e.status
                .as_ref()
                .and_then(|s| pb::Code::try_from(s.code).ok())
                .unwrap_or(pb::Code::InternalServerError)
        })
        .collect();
    Ok(pb::SendMessageResponse {
        status: Some(status::of_entries(&codes, "send status is empty")),
        entries,
    })
}

#[allow(clippy::too_many_arguments)]
async fn send_one(
    inner: &Inner,
    caller: &Caller,
    m: &pb::Message,
    topic: &str,
    config: &TopicConfig,
    writable: i32,
    batch: usize,
    now: i64,
) -> Result<pb::SendResultEntry, Failure> {
    let props = send_properties(m, topic, caller.meta.peer, now, &inner.limits)?;
    use rmq_common::constants::{DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX};
    if !topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) && !topic.starts_with(DLQ_GROUP_TOPIC_PREFIX) {
        let expected = topic_type(config);
        let actual = TopicMessageType::of_message(&props);
        if !expected.accepts(actual) {
            return Err(Failure::new(
                pb::Code::MessagePropertyConflictWithType,
                format!(
                    "TopicMessageType validate failed, the expected type is {expected}, but actual type is {actual}"
                ),
            ));
        }
    }
    let sp = super::convert::system_properties(m);
    let group = sp
        .message_group
        .clone()
        .filter(|g| !g.is_empty() && batch == 1);
    let queue_id = match group {
        Some(g) => consistent_hash(i64::from(java_string_hash(&g)), writable),
        None => (inner.next_queue.fetch_add(1, Ordering::Relaxed) % writable as usize) as i32,
    };
    let born = sp
        .born_timestamp
        .as_ref()
        .and_then(timestamp_ms)
        .unwrap_or(now);
    let properties = String::from_utf8(
        props
            .encode()
            .map_err(|e| Failure::new(pb::Code::MessagePropertiesTooLarge, e.to_string()))?,
    )
    .map_err(|e| Failure::internal(e.to_string()))?;
    let mut cmd = RemotingCommand::request(RequestCode::SendMessage);
    cmd.put_ext("producerGroup", topic);
    cmd.put_ext("topic", topic);
    cmd.put_ext("defaultTopic", rmq_common::constants::AUTO_CREATE_TOPIC);
    cmd.put_ext("defaultTopicQueueNums", 4);
    cmd.put_ext("queueId", queue_id);
    cmd.put_ext("sysFlag", send_sys_flag(m));
    cmd.put_ext("bornTimestamp", born);
    cmd.put_ext("flag", 0);
    cmd.put_ext("properties", properties);
    cmd.put_ext("reconsumeTimes", sp.delivery_attempt.unwrap_or(0));
    cmd.put_ext("unitMode", false);
    cmd.put_ext("batch", false);
    let cmd = cmd.with_body(m.body.clone());
    let resp = inner.call(caller, cmd).await?;
    let code = match ResponseCode::from_i32(resp.code) {
        Some(ResponseCode::Success) => pb::Code::Ok,
        Some(ResponseCode::FlushDiskTimeout) => pb::Code::MasterPersistenceTimeout,
        Some(ResponseCode::FlushSlaveTimeout) => pb::Code::SlavePersistenceTimeout,
        Some(ResponseCode::SlaveNotAvailable) => pb::Code::HaNotAvailable,
        _ => return Err(Failure::remoting(resp.code, resp.remark.as_deref())),
    };
    let ext = resp.ext();
    let offset_msg_id = ext.get_str("msgId").unwrap_or_default().to_owned();
    let queue_offset = ext.get_i64("queueOffset").ok().flatten().unwrap_or(0);
    let transaction_id = ext.get_str("transactionId").unwrap_or_default().to_owned();
    if sp.message_type() == pb::MessageType::Transaction && !transaction_id.is_empty() {
        if let Ok((_, commit_log_offset)) = decode_offset_msg_id(&offset_msg_id) {
            inner.transactions.remember(
                topic,
                &transaction_id,
                Half {
                    commit_log_offset,
                    tran_state_table_offset: queue_offset,
                    expires_ms: now + HALF_TTL_MS,
                },
            );
        }
    }
    let status = if code == pb::Code::Ok {
        status::ok()
    } else {
        status::status(
            code,
            &format!("send message failed, sendStatus={}", send_status_name(code)),
        )
    };
    Ok(pb::SendResultEntry {
        status: Some(status),
        message_id: sp.message_id.clone(),
        transaction_id,
        offset: queue_offset,
        recall_handle: ext.get_str("recallHandle").unwrap_or_default().to_owned(),
    })
}

fn send_status_name(code: pb::Code) -> &'static str {
    match code {
        pb::Code::MasterPersistenceTimeout => "FLUSH_DISK_TIMEOUT",
        pb::Code::SlavePersistenceTimeout => "FLUSH_SLAVE_TIMEOUT",
        pb::Code::HaNotAvailable => "SLAVE_NOT_AVAILABLE",
        _ => "SEND_OK",
    }
}

pub(crate) async fn recall(
    inner: &Inner,
    caller: &Caller,
    req: pb::RecallMessageRequest,
) -> Result<pb::RecallMessageResponse, Failure> {
    let topic = inner.check_topic(&req.topic.clone().unwrap_or_default())?;
    let mut cmd = RemotingCommand::request(RequestCode::RecallMessage);
    cmd.put_ext("topic", &topic);
    cmd.put_ext("producerGroup", &topic);
    cmd.put_ext("recallHandle", &req.recall_handle);
    let resp = inner.call(caller, cmd).await?;
    if resp.code != i32::from(ResponseCode::Success) {
        return Err(Failure::remoting(resp.code, resp.remark.as_deref()));
    }
    Ok(pb::RecallMessageResponse {
        status: Some(status::ok()),
        message_id: resp.ext().get_str("msgId").unwrap_or_default().to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_groups_land_where_guava_puts_them() {
        // Guava's Hashing.consistentHash(group.hashCode(), buckets), run
        // on the Java side for these groups.
        let cases = [
            ("order-1", [3, 3, 3]),
            ("order-2", [2, 2, 11]),
            ("GroupA", [0, 5, 10]),
            ("x", [1, 4, 12]),
            ("消息组", [2, 7, 7]),
        ];
        for (group, want) in cases {
            let got: Vec<i32> = [4, 8, 16]
                .iter()
                .map(|b| consistent_hash(i64::from(java_string_hash(group)), *b))
                .collect();
            assert_eq!(got, want, "{group}");
        }
    }

    #[test]
    fn consistent_hash_stays_in_range_and_moves_little() {
        assert_eq!(consistent_hash(0, 1), 0);
        for buckets in 1..50 {
            for input in [-7i64, 0, 1, 42, 1_000_003, i64::from(i32::MIN)] {
                let b = consistent_hash(input, buckets);
                assert!((0..buckets).contains(&b), "{input} {buckets} -> {b}");
            }
        }
        // Adding a bucket moves an input only to the new bucket.
        for input in 0..500i64 {
            let (a, b) = (consistent_hash(input, 8), consistent_hash(input, 9));
            assert!(a == b || b == 8, "{input}: {a} -> {b}");
        }
    }
}
