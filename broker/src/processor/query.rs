//! QUERY_MESSAGE (by key) and VIEW_MESSAGE_BY_ID.

use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};

use super::{blocking, success, Handled, Refusal};
use crate::context::BrokerContext;

/// Handles the query requests.
pub async fn handle(ctx: &Arc<BrokerContext>, code: RequestCode, req: &RemotingCommand) -> Handled {
    let ext = req.ext();
    let store = Arc::clone(&ctx.store);
    match code {
        RequestCode::QueryMessage => {
            let topic = ext.req_str("topic")?.to_owned();
            let key = ext.req_str("key")?.to_owned();
            let max = usize::try_from(ext.req_i32("maxNum")?)
                .unwrap_or(0)
                .clamp(1, 64);
            let begin = ext.get_i64("beginTimestamp")?.unwrap_or(0);
            let end = ext.get_i64("endTimestamp")?.unwrap_or(i64::MAX);
            let found =
                blocking(move || store.query_by_key(&topic, &key, max, begin, end)).await??;
            if found.is_empty() {
                return Err(Refusal::new(
                    ResponseCode::QueryNotFound,
                    "can not find message, maybe time range not correct",
                ));
            }
            let mut body = BytesMut::new();
            for m in &found {
                body.put_slice(m.bytes());
            }
            let mut resp = success().with_body(body.freeze());
            resp.put_ext("indexLastUpdateTimestamp", rmq_common::time::now_ms());
            resp.put_ext("indexLastUpdatePhyoffset", ctx.store.max_phy_offset());
            Ok(resp)
        }
        RequestCode::ViewMessageById => {
            let offset = ext.req_i64("offset")?;
            let found = blocking(move || store.record_at(offset)).await?;
            match found {
                Some(sel) => Ok(success().with_body(sel.bytes().to_vec())),
                None => Err(Refusal::new(
                    ResponseCode::SystemError,
                    format!("can not find message by the offset, {offset}"),
                )),
            }
        }
        _ => Err(Refusal::new(
            ResponseCode::RequestCodeNotSupported,
            "not a query request",
        )),
    }
}
