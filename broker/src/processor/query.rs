//! QUERY_MESSAGE (by key) and VIEW_MESSAGE_BY_ID.

use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use rmq_common::remoting::header::{QueryMessageRequestHeader, ViewMessageByIdRequestHeader};
use rmq_common::remoting::ResponseCode;

use super::{blocking, success, Handled, Refusal};
use rmq_store::MessageStore;

/// QUERY_MESSAGE: the messages of `topic` with `key`.
pub(crate) async fn by_key(store: &Arc<MessageStore>, h: QueryMessageRequestHeader) -> Handled {
    let QueryMessageRequestHeader {
        topic,
        key,
        max_num,
        begin_timestamp,
        end_timestamp,
    } = h;
    let max = usize::try_from(max_num).unwrap_or(0).clamp(1, 64);
    let begin = begin_timestamp.unwrap_or(0);
    let end = end_timestamp.unwrap_or(i64::MAX);
    let found = {
        let store = Arc::clone(store);
        blocking(move || store.query_by_key(&topic, &key, max, begin, end)).await??
    };
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
    resp.put_ext("indexLastUpdatePhyoffset", store.max_phy_offset());
    Ok(resp)
}

/// VIEW_MESSAGE_BY_ID: the record at a CommitLog offset.
pub(crate) async fn by_offset(
    store: &Arc<MessageStore>,
    h: ViewMessageByIdRequestHeader,
) -> Handled {
    let offset = h.offset;
    let store = Arc::clone(store);
    let found = blocking(move || store.record_at(offset)).await?;
    match found {
        Some(sel) => Ok(success().with_body(sel.bytes().to_vec())),
        None => Err(Refusal::new(
            ResponseCode::SystemError,
            format!("can not find message by the offset, {offset}"),
        )),
    }
}
