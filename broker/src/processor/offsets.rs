//! Consumer offsets and queue offsets: QUERY/UPDATE_CONSUMER_OFFSET,
//! GET_MAX/MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME.

use std::sync::Arc;

use rmq_common::cq::Boundary;
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};

use super::{blocking, success, Handled, Refusal};
use crate::context::BrokerContext;

/// Handles the offset requests.
pub async fn handle(ctx: &Arc<BrokerContext>, code: RequestCode, req: &RemotingCommand) -> Handled {
    let ext = req.ext();
    let topic = ext.req_str("topic")?.to_owned();
    let queue_id = ext.req_i32("queueId")?;
    let store = Arc::clone(&ctx.store);
    match code {
        RequestCode::QueryConsumerOffset => {
            let group = ext.req_str("consumerGroup")?;
            if let Some(offset) = ctx.offsets.query(group, &topic, queue_id) {
                return Ok(with(success(), "offset", offset));
            }
            // A new group starts at 0 while the queue's first message is still
            // stored; otherwise the client decides (QUERY_NOT_FOUND).
            let min = blocking(move || store.min_offset_in_queue(&topic, queue_id)).await??;
            if min <= 0 {
                Ok(with(success(), "offset", 0))
            } else {
                Err(Refusal::new(
                    ResponseCode::QueryNotFound,
                    "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
                ))
            }
        }
        RequestCode::UpdateConsumerOffset => {
            let group = ext.req_str("consumerGroup")?;
            let offset = ext.req_i64("commitOffset")?;
            // As RocketMQ 5.x: offsets are kept only for topics that exist,
            // so a client cannot grow the table with made-up names.
            if ctx.topics.get(&topic).is_none() {
                return Err(Refusal::new(
                    ResponseCode::TopicNotExist,
                    format!("Topic {topic} not exist!"),
                ));
            }
            if offset < 0 {
                return Err(Refusal::new(
                    ResponseCode::SystemError,
                    format!("commitOffset {offset} is negative"),
                ));
            }
            ctx.offsets.commit(group, &topic, queue_id, offset);
            Ok(success())
        }
        RequestCode::GetMaxOffset => {
            let v = blocking(move || store.max_offset_in_queue(&topic, queue_id)).await??;
            Ok(with(success(), "offset", v))
        }
        RequestCode::GetMinOffset => {
            let v = blocking(move || store.min_offset_in_queue(&topic, queue_id)).await??;
            Ok(with(success(), "offset", v))
        }
        RequestCode::SearchOffsetByTimestamp => {
            let ts = ext.req_i64("timestamp")?;
            let boundary = match ext.get_str("boundaryType") {
                Some(b) if b.eq_ignore_ascii_case("UPPER") => Boundary::Upper,
                _ => Boundary::Lower,
            };
            let v =
                blocking(move || store.offset_by_time(&topic, queue_id, ts, boundary)).await??;
            Ok(with(success(), "offset", v))
        }
        RequestCode::GetEarliestMsgStoretime => {
            let v = blocking(move || store.earliest_message_time(&topic, queue_id)).await??;
            match v {
                Some(ts) => Ok(with(success(), "timestamp", ts)),
                None => Err(Refusal::new(
                    ResponseCode::SystemError,
                    "no message in the queue",
                )),
            }
        }
        _ => Err(Refusal::new(
            ResponseCode::RequestCodeNotSupported,
            "not an offset request",
        )),
    }
}

fn with(mut resp: RemotingCommand, key: &str, value: i64) -> RemotingCommand {
    resp.put_ext(key, value);
    resp
}
