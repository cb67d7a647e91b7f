//! RocketMQ 5.x POP consumption calls: POP_MESSAGE, ACK_MESSAGE and
//! BATCH_ACK_MESSAGE. A pop's answer carries one header for the whole pop;
//! each message's extraInfo (what an ack names) is built from it as the
//! Java client does (`MQClientAPIImpl.processPopResponse`, see
//! `docs/pop-facts.md` section 2), or taken from the message's `POP_CK`
//! property when the broker put one there (a retried message).

use std::collections::{BTreeMap, HashMap};

use rmq_common::message::record::RecordView;
use rmq_common::message::MessageToStore;
use rmq_common::pop::names::retry_flag;
use rmq_common::pop::{BatchAck, BatchAckBody, ExtraInfo};
use rmq_common::remoting::{PopMessageResponseHeader, RemotingCommand, RequestCode, ResponseCode};

use crate::calls::{call, refused, request, SdkError, DEFAULT_TIMEOUT};
use crate::remoting::RemotingClient;

/// The property holding a popped message's extraInfo.
pub const POP_CK: &str = "POP_CK";

/// One POP_MESSAGE.
#[derive(Debug, Clone)]
pub struct PopRequest {
    /// Consumer group.
    pub group: String,
    /// Topic (the original one, never a retry topic).
    pub topic: String,
    /// Queue; -1 reads every read queue.
    pub queue_id: i32,
    /// Most messages (the broker caps it at 32).
    pub max_msgs: i32,
    /// How long the popped messages stay invisible, ms.
    pub invisible_time_ms: i64,
    /// Long-poll budget, ms (0: answer at once).
    pub poll_time_ms: i64,
    /// Where a group without an offset starts: 0 MIN, 1 MAX.
    pub init_mode: i32,
    /// `TAG` or `SQL92` (`None`: TAG).
    pub exp_type: Option<String>,
    /// Filter expression (`None`: `*`).
    pub exp: Option<String>,
    /// Orderly (FIFO) pop.
    pub order: bool,
    /// The broker's name as the route gives it: extraInfo field 5.
    pub broker_name: String,
}

/// A message handed out by a pop.
#[derive(Debug, Clone)]
pub struct PoppedMessage {
    /// The message as decoded (a retried one under its original topic).
    pub message: MessageToStore,
    /// Its queue offset as stored in the record.
    pub queue_offset: i64,
    /// Its 8-field extraInfo: `ckOffset popTime invisibleTime reviveQid
    /// retryFlag brokerName queueId queueOffset`.
    pub extra_info: String,
}

/// A pop's answer.
#[derive(Debug, Clone)]
pub struct PopResult {
    /// SUCCESS, POLLING_TIMEOUT, PULL_NOT_FOUND or POLLING_FULL.
    pub code: i32,
    /// The answer's header.
    pub header: PopMessageResponseHeader,
    /// The messages, in answer order.
    pub messages: Vec<PoppedMessage>,
}

/// Where an ack of one popped message goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckTarget {
    /// The topic the message was read from (the retry topic for a retried
    /// message).
    pub topic: String,
    /// Its queue there.
    pub queue_id: i32,
    /// Its offset there.
    pub offset: i64,
    /// The extraInfo, sent whole.
    pub extra_info: String,
}

impl AckTarget {
    /// The target of a message popped from `topic` by `group`, from its
    /// 8-field extraInfo.
    pub fn of(extra_info: &str, topic: &str, group: &str) -> Result<Self, SdkError> {
        let e = ExtraInfo::parse(extra_info).map_err(|e| SdkError::BadAnswer(e.to_string()))?;
        let fields: Vec<&str> = extra_info.split(' ').collect();
        let number = |i: usize| -> Result<i64, SdkError> {
            fields
                .get(i)
                .and_then(|f| f.trim().parse().ok())
                .ok_or_else(|| {
                    SdkError::BadAnswer(format!(
                        "extraInfo {extra_info:?} has no number at field {i} (queueId, queueOffset)"
                    ))
                })
        };
        let queue_id = i32::try_from(number(6)?)
            .map_err(|_| SdkError::BadAnswer(format!("extraInfo {extra_info:?}: bad queueId")))?;
        Ok(Self {
            topic: e.retry.topic(topic, group),
            queue_id,
            offset: number(7)?,
            extra_info: extra_info.to_owned(),
        })
    }
}

/// Pops messages. POLLING_TIMEOUT, PULL_NOT_FOUND and POLLING_FULL are
/// answers with no messages; other codes are refusals.
pub async fn pop(client: &RemotingClient, p: &PopRequest) -> Result<PopResult, SdkError> {
    let ext = [
        ("consumerGroup", p.group.clone()),
        ("topic", p.topic.clone()),
        ("queueId", p.queue_id.to_string()),
        ("maxMsgNums", p.max_msgs.to_string()),
        ("invisibleTime", p.invisible_time_ms.to_string()),
        ("pollTime", p.poll_time_ms.to_string()),
        ("bornTime", rmq_common::time::now_ms().to_string()),
        ("initMode", p.init_mode.to_string()),
        (
            "expType",
            p.exp_type.clone().unwrap_or_else(|| "TAG".into()),
        ),
        ("exp", p.exp.clone().unwrap_or_else(|| "*".into())),
        ("order", p.order.to_string()),
    ];
    let req = request(RequestCode::PopMessage, &ext);
    let wait = DEFAULT_TIMEOUT + std::time::Duration::from_millis(p.poll_time_ms.max(0) as u64);
    let resp = client.invoke(req, wait).await?;
    let empty = [
        ResponseCode::POLLING_TIMEOUT,
        ResponseCode::PullNotFound,
        ResponseCode::POLLING_FULL,
    ];
    if empty.iter().any(|c| i32::from(*c) == resp.code) {
        return Ok(PopResult {
            code: resp.code,
            header: PopMessageResponseHeader::from_ext(&resp.ext()).unwrap_or_default(),
            messages: Vec::new(),
        });
    }
    if resp.code != i32::from(ResponseCode::Success) {
        return Err(refused(&resp));
    }
    let header = PopMessageResponseHeader::from_ext(&resp.ext())
        .map_err(|e| SdkError::BadAnswer(e.to_string()))?;
    let (messages, offsets) = decode_records(resp.body.as_deref().unwrap_or_default())?;
    let infos = extra_infos(&header, &p.broker_name, &messages, &offsets)?;
    Ok(PopResult {
        code: resp.code,
        header,
        messages: messages
            .into_iter()
            .zip(offsets)
            .zip(infos)
            .map(|((message, queue_offset), extra_info)| PoppedMessage {
                message,
                queue_offset,
                extra_info,
            })
            .collect(),
    })
}

/// The concatenated records of an answer body, with their queue offsets.
fn decode_records(body: &[u8]) -> Result<(Vec<MessageToStore>, Vec<i64>), SdkError> {
    let (mut msgs, mut offsets) = (Vec::new(), Vec::new());
    let mut pos = 0;
    while pos < body.len() {
        let v = RecordView::parse(&body[pos..], true)
            .map_err(|e| SdkError::BadAnswer(format!("record at {pos}: {e}")))?;
        msgs.push(v.to_message());
        offsets.push(v.queue_offset());
        pos += v.total_size();
    }
    Ok((msgs, offsets))
}

/// Each message's extraInfo, as the Java client builds it: a `POP_CK`
/// property is kept; otherwise the entry of the message's
/// `<retryFlag>@<queueId>` in `startOffsetInfo` gives the checkpoint offset
/// and the message's rank among that entry's messages picks its offset in
/// `msgOffsetInfo`. Without `startOffsetInfo` (older brokers) the first
/// offset of each (topic, queue) in the answer is the checkpoint offset.
pub fn extra_infos(
    h: &PopMessageResponseHeader,
    broker_name: &str,
    messages: &[MessageToStore],
    queue_offsets: &[i64],
) -> Result<Vec<String>, SdkError> {
    let bad = |s: String| SdkError::BadAnswer(s);
    let starts = match &h.start_offset_info {
        Some(s) => Some(parse_start_offsets(s).map_err(bad)?),
        None => None,
    };
    let offsets = parse_msg_offsets(h.msg_offset_info.as_deref().unwrap_or("")).map_err(bad)?;
    let mut rank: HashMap<String, usize> = HashMap::new();
    let mut first: HashMap<(String, i32), i64> = HashMap::new();
    let mut out = Vec::with_capacity(messages.len());
    for (m, qo) in messages.iter().zip(queue_offsets) {
        if let Some(ck) = m.properties.get(POP_CK) {
            out.push(ck.to_owned());
            continue;
        }
        let flag = retry_flag(&m.topic);
        let info = |ck: i64, offset: i64| {
            ExtraInfo {
                ck_offset: ck,
                pop_time: h.pop_time,
                invisible_time: h.invisible_time,
                revive_qid: h.revive_qid,
                retry: flag,
                broker_name: broker_name.to_owned(),
            }
            .with_queue(m.queue_id, offset)
        };
        let Some(starts) = &starts else {
            let ck = *first.entry((m.topic.clone(), m.queue_id)).or_insert(*qo);
            out.push(info(ck, *qo));
            continue;
        };
        let key = format!("{}@{}", flag.digit(), m.queue_id);
        let start = *starts.get(&key).ok_or_else(|| {
            bad(format!(
                "startOffsetInfo {:?} has no entry {key} for the message at offset {qo}",
                h.start_offset_info
            ))
        })?;
        let i = rank.entry(key.clone()).or_insert(0);
        let offset = offsets.get(&key).and_then(|l| l.get(*i)).ok_or_else(|| {
            bad(format!(
                "msgOffsetInfo {:?} has no offset #{i} under {key}",
                h.msg_offset_info
            ))
        })?;
        *i += 1;
        // Should msgOffsetInfo disagree with the record, Java warns and
        // trusts msgOffsetInfo; so do we.
        out.push(info(start, *offset));
    }
    Ok(out)
}

/// `startOffsetInfo`: `<flag> <queueId> <start>` entries separated by `;`,
/// keyed `<flag>@<queueId>`.
fn parse_start_offsets(s: &str) -> Result<HashMap<String, i64>, String> {
    let mut out = HashMap::new();
    for entry in s.split(';').filter(|e| !e.trim().is_empty()) {
        let f: Vec<&str> = entry.split(' ').collect();
        let [flag, queue, start] = f[..] else {
            return Err(format!(
                "startOffsetInfo entry {entry:?} is not `flag queueId offset`"
            ));
        };
        let start = start
            .parse()
            .map_err(|_| format!("startOffsetInfo entry {entry:?}: offset is not a number"))?;
        if out.insert(format!("{flag}@{queue}"), start).is_some() {
            return Err(format!("startOffsetInfo {s:?} names {flag}@{queue} twice"));
        }
    }
    Ok(out)
}

/// `msgOffsetInfo`: `<flag> <queueId> <o1>,<o2>,…` entries separated by `;`.
fn parse_msg_offsets(s: &str) -> Result<HashMap<String, Vec<i64>>, String> {
    let mut out = HashMap::new();
    for entry in s.split(';').filter(|e| !e.trim().is_empty()) {
        let f: Vec<&str> = entry.split(' ').collect();
        let [flag, queue, list] = f[..] else {
            return Err(format!(
                "msgOffsetInfo entry {entry:?} is not `flag queueId o1,o2,...`"
            ));
        };
        let offsets = list
            .split(',')
            .map(|o| o.parse::<i64>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| format!("msgOffsetInfo entry {entry:?}: an offset is not a number"))?;
        if out.insert(format!("{flag}@{queue}"), offsets).is_some() {
            return Err(format!("msgOffsetInfo {s:?} names {flag}@{queue} twice"));
        }
    }
    Ok(out)
}

/// Acks one popped message (ACK_MESSAGE).
pub async fn ack(client: &RemotingClient, group: &str, t: &AckTarget) -> Result<(), SdkError> {
    let ext = [
        ("consumerGroup", group.to_owned()),
        ("topic", t.topic.clone()),
        ("queueId", t.queue_id.to_string()),
        ("extraInfo", t.extra_info.clone()),
        ("offset", t.offset.to_string()),
    ];
    let req = request(RequestCode::AckMessage, &ext);
    call(client, req).await.map(|_| ())
}

/// What the Java client groups batch acks by: retry flag, queue,
/// checkpoint offset, pop time.
type PopKey = (i32, i32, i64, i64);

/// The BATCH_ACK_MESSAGE body acking `extra_infos` of messages popped from
/// `topic` (the original topic) by `group`: one entry per (retry flag,
/// queue, checkpoint offset, pop time), as the Java client groups them.
pub fn batch_ack_body(
    broker_name: &str,
    group: &str,
    topic: &str,
    extra_infos: &[&str],
) -> Result<BatchAckBody, SdkError> {
    let mut groups: BTreeMap<PopKey, (ExtraInfo, Vec<i64>)> = BTreeMap::new();
    for info in extra_infos {
        let t = AckTarget::of(info, topic, group)?;
        let e = ExtraInfo::parse(info).map_err(|e| SdkError::BadAnswer(e.to_string()))?;
        let key = (e.retry.digit(), t.queue_id, e.ck_offset, e.pop_time);
        groups
            .entry(key)
            .or_insert_with(|| (e, Vec::new()))
            .1
            .push(t.offset);
    }
    let acks = groups
        .into_iter()
        .map(|((_, queue_id, _, _), (e, offsets))| BatchAck {
            consumer_group: group.to_owned(),
            topic: topic.to_owned(),
            retry: e.retry.digit().to_string(),
            start_offset: e.ck_offset,
            queue_id,
            revive_queue_id: e.revive_qid,
            pop_time: e.pop_time,
            invisible_time: e.invisible_time,
            bit_set: BatchAck::encode_bits(e.ck_offset, &offsets),
        })
        .collect();
    Ok(BatchAckBody {
        broker_name: broker_name.to_owned(),
        acks,
    })
}

/// Acks several popped messages in one BATCH_ACK_MESSAGE (the broker does
/// not report per-offset failures).
pub async fn batch_ack(
    client: &RemotingClient,
    broker_name: &str,
    group: &str,
    topic: &str,
    extra_infos: &[&str],
) -> Result<(), SdkError> {
    let body = batch_ack_body(broker_name, group, topic, extra_infos)?;
    let json = serde_json::to_vec(&body).map_err(|e| SdkError::BadAnswer(e.to_string()))?;
    let req = RemotingCommand::request(RequestCode::BatchAckMessage).with_body(json);
    call(client, req).await.map(|_| ())
}

#[cfg(test)]
#[path = "pop_tests.rs"]
mod tests;
