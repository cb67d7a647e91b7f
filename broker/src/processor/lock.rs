//! LOCK_BATCH_MQ / UNLOCK_BATCH_MQ: orderly consumers lock queues so that one
//! client of a group consumes each queue at a time.

use std::sync::Arc;

use rmq_common::remoting::body::LockBatchBody;
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};

use super::{success, Handled, Refusal};
use crate::context::BrokerContext;

/// Handles the lock requests.
pub fn handle(ctx: &Arc<BrokerContext>, code: RequestCode, req: &RemotingCommand) -> Handled {
    let body: LockBatchBody = rmq_common::json::from_slice(req.body.as_deref().unwrap_or_default())
        .map_err(|e| {
            Refusal::new(
                ResponseCode::SystemError,
                format!("lock body is not valid: {e}"),
            )
        })?;
    super::validate::group(&body.consumer_group)?;
    for mq in &body.mq_set {
        super::validate::topic(&mq.topic)?;
        super::validate::queue_of(ctx, &mq.topic, mq.queue_id)?;
    }
    match code {
        RequestCode::LockBatchMq => {
            let ok = ctx.locks.lock(
                &body.consumer_group,
                &body.client_id,
                &body.mq_set,
                rmq_common::time::now_ms(),
            );
            let out = serde_json::json!({ "lockOKMQSet": ok }).to_string();
            Ok(success().with_body(out.into_bytes()))
        }
        RequestCode::UnlockBatchMq => {
            ctx.locks
                .unlock(&body.consumer_group, &body.client_id, &body.mq_set);
            Ok(success())
        }
        _ => Err(Refusal::new(
            ResponseCode::RequestCodeNotSupported,
            "not a lock request",
        )),
    }
}
