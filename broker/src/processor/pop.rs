//! POP_MESSAGE and PEEK_MESSAGE (RocketMQ 5.x): hand out messages of a
//! topic to a group, invisible to the group until acked or until their
//! invisible time ends, reading the group's POP retry topic first one time
//! in five (`popFromRetryProbability`). Orderly pops (`order=true`, FIFO
//! groups) skip a queue while its last pop is unacked and invisible.

use std::sync::Arc;

use bytes::Bytes;
use rmq_common::message::record::{encode_record, RecordHeader, RecordView};
use rmq_common::pop::names::{retry_topic_v1, retry_topic_v2};
use rmq_common::pop::{
    ExtraInfo, OffsetInfo, PopCheckPoint, Popped, RetryFlag, MAX_POP_NUMS, ORDER_REVIVE_QUEUE,
};
use rmq_common::remoting::body::PERM_READ;
use rmq_common::remoting::{
    PeekMessageRequestHeader, PopMessageRequestHeader, PopMessageResponseHeader, RemotingCommand,
    ResponseCode,
};
use rmq_store::{GetRequest, GetStatus, MessageFilter, SubscriptionFilter, TagFilter};
use tokio_util::sync::CancellationToken;

use super::parts::PopPath;
use super::pull::build_filter;
use super::{blocking, Handled, Refusal};

use crate::pop::{polling, remaining_poll};

/// A pop whose client sent it this long before its poll time ends is
/// answered at once (RocketMQ's `isTimeoutTooMuch`).
const TOO_LATE_MS: i64 = 500;

/// The `POP_CK` property: a retried message's extraInfo.
const POP_CK: &str = "POP_CK";

/// One POP_MESSAGE as it is served.
#[derive(Debug)]
struct PopJob {
    path: Arc<PopPath>,
    h: PopMessageRequestHeader,
    filter: SubscriptionFilter,
    read_queues: i32,
    order: bool,
}

/// What one pass over the queues found.
#[derive(Debug, Default)]
struct PopOut {
    messages: Vec<Bytes>,
    info: OffsetInfo,
    rest: i64,
    pop_time: i64,
    revive_qid: i32,
}

/// POP_MESSAGE.
pub(crate) async fn pop(
    path: &Arc<PopPath>,
    h: PopMessageRequestHeader,
    conn_gone: impl FnOnce() -> CancellationToken,
) -> Handled {
    let now = rmq_common::time::now_ms();
    let born = h.born_time.filter(|b| *b > 0).unwrap_or(now);
    if now - born - h.poll_time > TOO_LATE_MS {
        return Ok(empty_answer(
            ResponseCode::POLLING_TIMEOUT,
            format!(
                "the broker[{}] pop message is timeout too much",
                path.store_host
            ),
            &h,
            0,
        ));
    }
    if !path.runtime.readable() {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!("the broker[{}] pop message is forbidden", path.store_host),
        ));
    }
    if h.max_msg_nums > MAX_POP_NUMS {
        return Err(Refusal::new(
            ResponseCode::InvalidParameter,
            format!(
                "the broker[{}] pop message's num is greater than {MAX_POP_NUMS}",
                path.store_host
            ),
        ));
    }
    let read_queues = read_queues(path, &h.topic, h.queue_id, &h.consumer_group)?;
    super::pull::group_may_consume(
        &path.groups,
        &path.clients,
        path.settings.broker.auto_create_subscription_group,
        &h.consumer_group,
    )?;
    let filter = build_filter(
        path.settings.broker.enable_property_filter,
        h.exp_type.as_deref(),
        h.exp.as_deref().unwrap_or("*"),
    )?;
    let order = h.order.unwrap_or(false);
    let job = Arc::new(PopJob {
        path: Arc::clone(path),
        h,
        filter,
        read_queues,
        order,
    });
    let out = run(&job).await?;
    if !out.messages.is_empty() {
        return Ok(found_answer(&job, out));
    }
    let rt = &job.path.pop;
    let key = polling::key(&job.h.topic, &job.h.consumer_group, job.h.queue_id);
    let topics = watched_topics(&job);
    let gone = conn_gone();
    let mut last = out;
    loop {
        let now = rmq_common::time::now_ms();
        let Some(left) = remaining_poll(born, job.h.poll_time, now) else {
            break;
        };
        let j = Arc::clone(&job);
        crate::metrics::rpc::mark_suspended();
        let wait = rt
            .polling
            .wait(&key, true, &topics, left, move || has_new(&j));
        let woke = tokio::select! {
            w = wait => w,
            () = gone.cancelled() => Ok(false),
        };
        match woke {
            Err(polling::PollingFull) => {
                return Ok(empty_answer(
                    ResponseCode::POLLING_FULL,
                    "polling full".to_owned(),
                    &job.h,
                    last.rest,
                ))
            }
            Ok(false) => break,
            Ok(true) => {
                last = run(&job).await?;
                if !last.messages.is_empty() {
                    return Ok(found_answer(&job, last));
                }
            }
        }
    }
    Ok(empty_answer(
        ResponseCode::POLLING_TIMEOUT,
        "NO_MESSAGE_IN_QUEUE".to_owned(),
        &job.h,
        last.rest,
    ))
}

/// The topic's read queue count; refuses an unknown or unreadable topic.
fn readable_topic(path: &PopPath, topic: &str) -> Result<i32, Refusal> {
    let config = path.topics.get(topic).ok_or_else(|| {
        Refusal::new(
            ResponseCode::TopicNotExist,
            format!("topic[{topic}] not exist, apply first please!"),
        )
    })?;
    if config.perm & PERM_READ == 0 {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!("the topic[{topic}] peeking message is forbidden"),
        ));
    }
    Ok(config.read_queue_nums)
}

async fn run(job: &Arc<PopJob>) -> Result<PopOut, Refusal> {
    let j = Arc::clone(job);
    blocking(move || pop_once(&j)).await?
}

/// The retry topics a pop of (topic, group) reads, as they exist.
pub(crate) fn retry_topics(path: &PopPath, topic: &str, group: &str) -> Vec<String> {
    let cfg = &path.pop.config;
    let mut out = Vec::new();
    if cfg.enable_retry_topic_v2 {
        out.push(retry_topic_v2(group, topic));
        if cfg.retrieve_from_retry_topic_v1 {
            out.push(retry_topic_v1(group, topic));
        }
    } else {
        out.push(retry_topic_v1(group, topic));
    }
    out.retain(|t| path.topics.get(t).is_some());
    out
}

fn watched_topics(job: &PopJob) -> Vec<String> {
    watched(&job.h.topic, &job.h.consumer_group, job.order)
}

/// The topics whose arrivals wake a waiting pop of (topic, group).
pub(crate) fn watched(topic: &str, group: &str, order: bool) -> Vec<String> {
    let mut t = vec![topic.to_owned()];
    if !order {
        t.push(retry_topic_v1(group, topic));
        t.push(retry_topic_v2(group, topic));
    }
    t
}

/// Whether a pop might find something now.
fn has_new(job: &PopJob) -> bool {
    available(
        &job.path,
        &job.h.topic,
        &job.h.consumer_group,
        job.h.queue_id,
        job.read_queues,
        job.order,
        job.h.attempt_id.as_deref(),
    )
}

/// Whether some queue a pop of (topic, group) reads has messages past the
/// group's offset (and, orderly, is not blocked); NOTIFICATION's answer.
pub(crate) fn available(
    p: &PopPath,
    topic: &str,
    group: &str,
    queue_id: i32,
    read_queues: i32,
    order: bool,
    attempt: Option<&str>,
) -> bool {
    let now = rmq_common::time::now_ms();
    let queues: Vec<i32> = if queue_id < 0 {
        (0..read_queues).collect()
    } else {
        vec![queue_id]
    };
    let behind = |t: &str, q: i32| {
        let max = p.store.max_offset_in_queue(t, q).unwrap_or(0);
        let at = match p.offsets.query(group, t, q) {
            Some(o) => o,
            None => p.store.min_offset_in_queue(t, q).unwrap_or(0),
        };
        max > at
    };
    if queues.iter().any(|q| {
        behind(topic, *q) && !(order && p.pop.orders.blocked(topic, group, *q, now, attempt))
    }) {
        return true;
    }
    !order && retry_topics(p, topic, group).iter().any(|t| behind(t, 0))
}

fn pop_once(job: &PopJob) -> Result<PopOut, Refusal> {
    let rt = &job.path.pop;
    let mut out = PopOut {
        pop_time: rmq_common::time::now_ms(),
        revive_qid: if job.order {
            ORDER_REVIVE_QUEUE
        } else {
            rt.next_revive_qid()
        },
        ..PopOut::default()
    };
    let roll = rt.roll();
    let max = usize::try_from(job.h.max_msg_nums).unwrap_or(1).max(1);
    let retry = if job.order {
        Vec::new()
    } else {
        retry_topics(&job.path, &job.h.topic, &job.h.consumer_group)
    };
    let retry_first = roll < rt.config.pop_from_retry_probability;
    if retry_first {
        for t in &retry {
            read_queue(job, t, 0, max, &mut out)?;
        }
    }
    if job.h.queue_id < 0 {
        let n = job.read_queues.max(1);
        let start = (roll as i32) % n;
        for i in 0..n {
            if out.messages.len() >= max {
                break;
            }
            read_queue(job, &job.h.topic, (start + i) % n, max, &mut out)?;
        }
    } else {
        read_queue(job, &job.h.topic, job.h.queue_id, max, &mut out)?;
    }
    if !retry_first {
        for t in &retry {
            if out.messages.len() >= max {
                break;
            }
            read_queue(job, t, 0, max, &mut out)?;
        }
    }
    if !out.messages.is_empty() && out.rest > 0 {
        rt.polling.wake(&job.h.topic);
    }
    Ok(out)
}

/// Where the group's pops of a queue start: its committed offset, else as
/// `initMode` says (retry topics always from the start).
fn start_offset(job: &PopJob, topic: &str, queue_id: i32) -> Result<i64, Refusal> {
    let p = &job.path;
    if let Some(o) = p.offsets.query(&job.h.consumer_group, topic, queue_id) {
        return Ok(o);
    }
    let min = p.store.min_offset_in_queue(topic, queue_id)?;
    let max = p.store.max_offset_in_queue(topic, queue_id)?;
    // initMode MAX starts at the last message, unless the queue still
    // holds its first (RocketMQ's initPopOffsetByCheckMsgInMem).
    let start = if job.h.init_mode == 0 || topic != job.h.topic || min == 0 {
        min
    } else {
        (max - 1).max(min)
    };
    p.offsets
        .commit(&job.h.consumer_group, topic, queue_id, start);
    Ok(start)
}

fn read_queue(
    job: &PopJob,
    topic: &str,
    queue_id: i32,
    max: usize,
    out: &mut PopOut,
) -> Result<(), Refusal> {
    let p = &job.path;
    let rt = &p.pop;
    let group = &job.h.consumer_group;
    let Some(want) = max.checked_sub(out.messages.len()).filter(|w| *w > 0) else {
        return Ok(());
    };
    let Some(_lock) = rt.try_lock(topic, group, queue_id) else {
        let max_offset = p.store.max_offset_in_queue(topic, queue_id)?;
        let at = p.offsets.query(group, topic, queue_id).unwrap_or(0);
        out.rest += (max_offset - at).max(0);
        return Ok(());
    };
    if job.order
        && rt.orders.blocked(
            topic,
            group,
            queue_id,
            out.pop_time,
            job.h.attempt_id.as_deref(),
        )
    {
        return Ok(());
    }
    let mut offset = start_offset(job, topic, queue_id)?;
    let all = TagFilter::all();
    let filter: &dyn MessageFilter = if topic == job.h.topic {
        &job.filter
    } else {
        &all
    };
    let mut r = p.store.get_message(
        &GetRequest::new(topic, queue_id, offset, want, filter).transfer_limits(p.store.config()),
    )?;
    if matches!(
        r.status,
        GetStatus::OffsetTooSmall | GetStatus::OffsetOverflowBadly | GetStatus::OffsetFoundNull
    ) && r.next_begin_offset != offset
    {
        offset = r.next_begin_offset;
        p.offsets.commit(group, topic, queue_id, offset);
        r = p.store.get_message(
            &GetRequest::new(topic, queue_id, offset, want, filter)
                .transfer_limits(p.store.config()),
        )?;
    }
    out.rest += (r.max_offset - r.next_begin_offset).max(0);
    if r.messages.is_empty() || r.status != GetStatus::Found {
        if !job.order && r.next_begin_offset > offset {
            p.offsets
                .commit(group, topic, queue_id, r.next_begin_offset);
        }
        return Ok(());
    }
    let flag = rmq_common::pop::retry_flag(topic);
    let offsets = r.queue_offsets.clone();
    if job.order {
        let counts = rt.orders.popped(
            topic,
            group,
            queue_id,
            out.pop_time,
            job.h.invisible_time,
            &offsets,
            job.h.attempt_id.as_deref(),
        );
        out.info.add_order_counts(flag, queue_id, &counts);
    } else {
        let ck = PopCheckPoint {
            start_offset: offset,
            pop_time: out.pop_time,
            invisible_time: job.h.invisible_time,
            bit_map: 0,
            num: u8::try_from(offsets.len()).unwrap_or(u8::MAX),
            queue_id,
            topic: topic.to_owned(),
            cid: group.clone(),
            revive_offset: 0,
            queue_offset_diff: offsets
                .iter()
                .map(|o| i32::try_from(o - offset).unwrap_or(i32::MAX))
                .collect(),
            broker_name: rt.broker_name.clone(),
            re_put_times: None,
            revive_time_field: 0,
        };
        rt.state
            .popped(&Popped {
                ck,
                revive_qid: out.revive_qid,
            })
            .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
        rt.metrics
            .ck_written
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        rt.metrics.pairs.add(group, topic, |c| c.ck += 1);
        p.offsets
            .commit(group, topic, queue_id, r.next_begin_offset);
    }
    out.info.add(flag, queue_id, offset, &offsets);
    let extra = ExtraInfo {
        ck_offset: offset,
        pop_time: out.pop_time,
        invisible_time: job.h.invisible_time,
        revive_qid: out.revive_qid,
        retry: flag,
        broker_name: rt.broker_name.clone(),
    };
    let mut bytes_out = 0u64;
    for (sel, qo) in r.messages.iter().zip(&offsets) {
        bytes_out += sel.bytes().len() as u64;
        if flag != RetryFlag::Normal && !rt.config.pop_response_return_actual_retry_topic {
            out.messages.push(as_original(
                sel.bytes(),
                &job.h.topic,
                &extra.with_queue(queue_id, *qo),
            )?);
        } else {
            out.messages.push(Bytes::from_owner(sel.clone()));
        }
    }
    let n = offsets.len() as u64;
    rt.metrics
        .popped
        .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    if flag != RetryFlag::Normal {
        rt.metrics
            .popped_retry
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }
    p.items.group_get(topic, group, n, bytes_out);
    Ok(())
}

/// A retried message as RocketMQ 5.x hands it out: under its original
/// topic, with its extraInfo in `POP_CK`.
fn as_original(record: &[u8], topic: &str, extra: &str) -> Result<Bytes, Refusal> {
    let bad = |e: String| Refusal::new(ResponseCode::SystemError, format!("retry message: {e}"));
    let view = RecordView::parse(record, false).map_err(|e| bad(e.to_string()))?;
    let mut m = view.to_message();
    m.topic = topic.to_owned();
    m.properties.insert(POP_CK, extra);
    m.store_host = view.store_host();
    m.born_host = view.born_host();
    let header = RecordHeader {
        queue_offset: view.queue_offset(),
        physical_offset: view.physical_offset(),
        store_timestamp: view.store_timestamp(),
    };
    encode_record(&m, header)
        .map(Bytes::from)
        .map_err(|e| bad(e.to_string()))
}

fn found_answer(job: &PopJob, out: PopOut) -> RemotingCommand {
    let rt = &job.path.pop;
    rt.metrics
        .pop_requests
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut resp = RemotingCommand::response(ResponseCode::Success, Some("FOUND".into()));
    resp.ext_fields = PopMessageResponseHeader {
        pop_time: out.pop_time,
        invisible_time: job.h.invisible_time,
        revive_qid: out.revive_qid,
        rest_num: out.rest,
        start_offset_info: Some(out.info.start_offset_info().to_owned()),
        msg_offset_info: Some(out.info.msg_offset_info().to_owned()),
        order_count_info: Some(out.info.order_count_info().to_owned()).filter(|s| !s.is_empty()),
    }
    .to_ext();
    resp.body_parts = out.messages;
    resp
}

fn empty_answer(
    code: ResponseCode,
    remark: String,
    h: &PopMessageRequestHeader,
    rest: i64,
) -> RemotingCommand {
    let mut resp = RemotingCommand::response(code, Some(remark));
    resp.ext_fields = PopMessageResponseHeader {
        pop_time: rmq_common::time::now_ms(),
        invisible_time: h.invisible_time,
        revive_qid: 0,
        rest_num: rest,
        ..PopMessageResponseHeader::default()
    }
    .to_ext();
    resp
}

/// The topic's read queue count; refuses an unknown or unreadable topic,
/// and a queue id past its read queues (negative: every queue).
fn read_queues(path: &PopPath, topic: &str, queue_id: i32, group: &str) -> Result<i32, Refusal> {
    let read_queues = readable_topic(path, topic)?;
    if queue_id >= read_queues {
        return Err(Refusal::new(
            ResponseCode::InvalidParameter,
            format!(
                "queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{read_queues}] consumer:[{group}]"
            ),
        ));
    }
    Ok(read_queues)
}

/// The checks of PEEK_MESSAGE, NOTIFICATION and POLLING_INFO: the broker
/// readable, the topic and queue, and the group (unless groups are made
/// on first use). Returns the topic's read queue count.
pub(crate) fn peek_checks(
    path: &PopPath,
    topic: &str,
    queue_id: i32,
    group: &str,
) -> Result<i32, Refusal> {
    if !path.runtime.readable() {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!(
                "the broker[{}] peeking message is forbidden",
                path.store_host
            ),
        ));
    }
    let read_queues = read_queues(path, topic, queue_id, group)?;
    if path.groups.get(group).is_none() && !path.settings.broker.auto_create_subscription_group {
        return Err(Refusal::new(
            ResponseCode::SubscriptionGroupNotExist,
            format!("subscription group [{group}] does not exist"),
        ));
    }
    Ok(read_queues)
}

/// PEEK_MESSAGE: what a pop would read, without popping.
pub(crate) async fn peek(path: &Arc<PopPath>, h: PeekMessageRequestHeader) -> Handled {
    let read_queues = peek_checks(path, &h.topic, h.queue_id, &h.consumer_group)?;
    let p = Arc::clone(path);
    blocking(move || peek_once(&p, &h, read_queues)).await?
}

fn peek_once(p: &PopPath, h: &PeekMessageRequestHeader, read_queues: i32) -> Handled {
    let max = usize::try_from(h.max_msg_nums).unwrap_or(1).max(1);
    let mut body = Vec::new();
    let mut rest = 0i64;
    let all = TagFilter::all();
    let mut topics: Vec<(String, Vec<i32>)> = Vec::new();
    let retry = retry_topics(p, &h.topic, &h.consumer_group);
    let queues: Vec<i32> = if h.queue_id < 0 {
        (0..read_queues).collect()
    } else {
        vec![h.queue_id]
    };
    let retry_first = p.pop.roll() < 20;
    if retry_first {
        topics.extend(retry.iter().map(|t| (t.clone(), vec![0])));
    }
    topics.push((h.topic.clone(), queues));
    if !retry_first {
        topics.extend(retry.iter().map(|t| (t.clone(), vec![0])));
    }
    for (topic, queues) in topics {
        for q in queues {
            let want = max.saturating_sub(body.len());
            let offset = match p.offsets.query(&h.consumer_group, &topic, q) {
                Some(o) => o,
                None => p.store.min_offset_in_queue(&topic, q)?,
            };
            let r = p
                .store
                .get_message(&GetRequest::new(&topic, q, offset, want.max(1), &all))?;
            rest += (r.max_offset - r.next_begin_offset).max(0);
            if want == 0 {
                continue;
            }
            body.extend(r.messages.iter().map(|s| Bytes::from_owner(s.clone())));
        }
    }
    let code = if body.is_empty() {
        ResponseCode::PullNotFound
    } else {
        ResponseCode::Success
    };
    let mut resp = RemotingCommand::response(code, None);
    resp.ext_fields = PopMessageResponseHeader {
        rest_num: rest,
        ..PopMessageResponseHeader::default()
    }
    .to_ext();
    resp.body_parts = body;
    Ok(resp)
}
