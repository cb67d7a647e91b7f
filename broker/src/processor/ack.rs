//! ACK_MESSAGE, BATCH_ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME: a
//! popped message is done, or stays invisible for longer. Orderly handles
//! (reviveQid 999) move the FIFO group's committed offset instead.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rmq_common::pop::names::original_topic;
use rmq_common::pop::{
    Acked, BatchAckBody, ExtraInfo, PopCheckPoint, Popped, RetryFlag, ORDER_REVIVE_QUEUE,
};
use rmq_common::remoting::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
    RemotingCommand, ResponseCode,
};

use super::parts::PopPath;
use super::{success, Handled, Refusal};
use crate::pop::orderly::OrderAck;

/// The queue's read count, refusing an unknown topic or a bad queue as
/// RocketMQ's ack processor does.
fn queue_checked(path: &PopPath, topic: &str, queue_id: i32, group: &str) -> Result<(), Refusal> {
    let config = path.topics.get(topic).ok_or_else(|| {
        Refusal::new(
            ResponseCode::TopicNotExist,
            format!("topic[{topic}] not exist, apply first please!"),
        )
    })?;
    if queue_id < 0 || queue_id >= config.read_queue_nums {
        return Err(Refusal::new(
            ResponseCode::MessageIllegal,
            format!(
                "queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{}] consumer:[{group}]",
                config.read_queue_nums
            ),
        ));
    }
    Ok(())
}

fn extra_info(path: &PopPath, info: &str) -> Result<ExtraInfo, Refusal> {
    let e = ExtraInfo::parse(info)
        .map_err(|e| Refusal::new(ResponseCode::MessageIllegal, e.to_string()))?;
    let queues = path.pop.config.revive_queue_num;
    if e.revive_qid != ORDER_REVIVE_QUEUE && !(0..queues).contains(&e.revive_qid) {
        return Err(Refusal::new(
            ResponseCode::MessageIllegal,
            format!(
                "extraInfo {info:?}: reviveQid {} is not one of this broker's {queues} revive queues",
                e.revive_qid
            ),
        ));
    }
    Ok(e)
}

/// ACK_MESSAGE.
pub(crate) async fn ack(path: &Arc<PopPath>, h: AckMessageRequestHeader) -> Handled {
    queue_checked(path, &h.topic, h.queue_id, &h.consumer_group)?;
    let extra = extra_info(path, &h.extra_info)?;
    let p = Arc::clone(path);
    path.ack_work(move || {
        let min = p.store.min_offset_in_queue(&h.topic, h.queue_id)?;
        let max = p.store.max_offset_in_queue(&h.topic, h.queue_id)?;
        if h.offset < min || h.offset > max {
            return Err(Refusal::new(
                ResponseCode::NoMessage,
                format!(
                    "offset is illegal, key:{}@{}@{}, offset:{}, min:{min}, max:{max}",
                    h.topic, h.consumer_group, h.queue_id, h.offset
                ),
            ));
        }
        ack_offsets(
            &p,
            &h.topic,
            &h.consumer_group,
            h.queue_id,
            &extra,
            &[h.offset],
        )?;
        Ok(success())
    })
    .await?
}

/// Acks `offsets` of one pop of `topic` (the topic read).
fn ack_offsets(
    p: &PopPath,
    topic: &str,
    group: &str,
    queue_id: i32,
    extra: &ExtraInfo,
    offsets: &[i64],
) -> Result<(), Refusal> {
    let rt = &p.pop;
    if extra.revive_qid == ORDER_REVIVE_QUEUE {
        for offset in offsets {
            let committed = p.offsets.query(group, topic, queue_id).unwrap_or(0);
            if *offset < committed {
                continue;
            }
            match rt
                .orders
                .ack(topic, group, queue_id, extra.pop_time, *offset)
            {
                OrderAck::Ignored => {}
                OrderAck::NotPopped => {
                    return Err(Refusal::new(
                        ResponseCode::MessageIllegal,
                        format!("offset {offset} of {topic}:{queue_id} was not popped by this pop"),
                    ))
                }
                OrderAck::Commit(next) => {
                    p.offsets.commit(group, topic, queue_id, next);
                    rt.metrics.acked.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        let original = original_topic(topic, group).unwrap_or(topic);
        rt.polling.wake(original);
        return Ok(());
    }
    rt.state
        .acked(&Acked {
            topic: topic.to_owned(),
            group: group.to_owned(),
            queue_id,
            start_offset: extra.ck_offset,
            pop_time: extra.pop_time,
            invisible_time: extra.invisible_time,
            revive_qid: extra.revive_qid,
            broker_name: extra.broker_name.clone(),
            offsets: offsets.to_vec(),
        })
        .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
    rt.metrics
        .acked
        .fetch_add(offsets.len() as u64, Ordering::Relaxed);
    rt.metrics.ack_written.fetch_add(1, Ordering::Relaxed);
    rt.metrics.pairs.add(group, topic, |c| c.ack += 1);
    Ok(())
}

/// BATCH_ACK_MESSAGE: acks grouped per pop, offsets as a bit set.
pub(crate) async fn batch_ack(path: &Arc<PopPath>, req: &RemotingCommand) -> Handled {
    let body: BatchAckBody = match req.body.as_deref().filter(|b| !b.is_empty()) {
        None => {
            return Err(Refusal::new(
                ResponseCode::NoMessage,
                "batch ack body is empty",
            ))
        }
        Some(b) => serde_json::from_slice(b).map_err(|e| {
            Refusal::new(
                ResponseCode::MessageIllegal,
                format!("batch ack body is not BatchAckMessageRequestBody JSON: {e}"),
            )
        })?,
    };
    let p = Arc::clone(path);
    path.ack_work(move || {
        for a in &body.acks {
            let topic = RetryFlag::from_text(&a.retry).topic(&a.topic, &a.consumer_group);
            if queue_checked(&p, &topic, a.queue_id, &a.consumer_group).is_err() {
                continue;
            }
            let offsets = a
                .offsets()
                .map_err(|e| Refusal::new(ResponseCode::MessageIllegal, e))?;
            let min = p.store.min_offset_in_queue(&topic, a.queue_id)?;
            let max = p.store.max_offset_in_queue(&topic, a.queue_id)?;
            let offsets: Vec<i64> = offsets
                .into_iter()
                .filter(|o| (min..=max).contains(o))
                .collect();
            if offsets.is_empty() {
                continue;
            }
            let extra = ExtraInfo {
                ck_offset: a.start_offset,
                pop_time: a.pop_time,
                invisible_time: a.invisible_time,
                revive_qid: a.revive_queue_id,
                retry: RetryFlag::from_text(&a.retry),
                broker_name: body.broker_name.clone(),
            };
            if let Err(e) = ack_offsets(&p, &topic, &a.consumer_group, a.queue_id, &extra, &offsets)
            {
                tracing::debug!(remark = %e.remark, "batch ack entry not applied");
            }
        }
        Ok(success())
    })
    .await?
}

/// CHANGE_MESSAGE_INVISIBLETIME.
pub(crate) async fn change_invisible(
    path: &Arc<PopPath>,
    h: ChangeInvisibleTimeRequestHeader,
) -> Handled {
    queue_checked(path, &h.topic, h.queue_id, &h.consumer_group)?;
    let extra = extra_info(path, &h.extra_info)?;
    let p = Arc::clone(path);
    path.ack_work(move || {
        let min = p.store.min_offset_in_queue(&h.topic, h.queue_id)?;
        let max = p.store.max_offset_in_queue(&h.topic, h.queue_id)?;
        if h.offset < min || h.offset >= max {
            return Err(Refusal::new(
                ResponseCode::NoMessage,
                format!(
                    "offset is illegal, key:{}@{}@{}, offset:{}, min:{min}, max:{max}",
                    h.topic, h.consumer_group, h.queue_id, h.offset
                ),
            ));
        }
        let rt = &p.pop;
        let now = rmq_common::time::now_ms();
        let header = if extra.revive_qid == ORDER_REVIVE_QUEUE {
            rt.orders.change_invisible(
                &h.topic,
                &h.consumer_group,
                h.queue_id,
                extra.pop_time,
                h.offset,
                now + h.invisible_time,
            );
            ChangeInvisibleTimeResponseHeader {
                pop_time: extra.pop_time,
                invisible_time: now + h.invisible_time - extra.pop_time,
                revive_qid: ORDER_REVIVE_QUEUE,
            }
        } else {
            let ck = PopCheckPoint {
                start_offset: h.offset,
                pop_time: now,
                invisible_time: h.invisible_time,
                bit_map: 0,
                num: 1,
                queue_id: h.queue_id,
                topic: h.topic.clone(),
                cid: h.consumer_group.clone(),
                revive_offset: 0,
                queue_offset_diff: vec![0],
                broker_name: extra.broker_name.clone(),
                re_put_times: None,
                revive_time_field: 0,
            };
            rt.state
                .popped(&Popped {
                    ck,
                    revive_qid: extra.revive_qid,
                })
                .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
            rt.metrics.ck_written.fetch_add(1, Ordering::Relaxed);
            rt.metrics
                .pairs
                .add(&h.consumer_group, &h.topic, |c| c.ck += 1);
            ack_offsets(
                &p,
                &h.topic,
                &h.consumer_group,
                h.queue_id,
                &extra,
                &[h.offset],
            )?;
            ChangeInvisibleTimeResponseHeader {
                pop_time: now,
                invisible_time: h.invisible_time,
                revive_qid: extra.revive_qid,
            }
        };
        rt.metrics.changed.fetch_add(1, Ordering::Relaxed);
        let mut resp = success();
        resp.ext_fields = header.to_ext();
        Ok(resp)
    })
    .await?
}
