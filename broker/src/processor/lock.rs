//! LOCK_BATCH_MQ / UNLOCK_BATCH_MQ: orderly consumers lock queues so that one
//! client of a group consumes each queue at a time.

use rmq_common::remoting::body::LockBatchBody;
use rmq_common::remoting::{RemotingCommand, ResponseCode};

use super::{success, Handled, Refusal};
use crate::clients::QueueLockManager;
use crate::meta::TopicConfigManager;

/// The body of either request, its names and queues checked.
fn body(topics: &TopicConfigManager, req: &RemotingCommand) -> Result<LockBatchBody, Refusal> {
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
        super::validate::queue_of(topics, &mq.topic, mq.queue_id)?;
    }
    Ok(body)
}

/// LOCK_BATCH_MQ: the queues locked for the client (all it asked for that
/// nobody else holds).
pub(crate) fn lock(
    locks: &QueueLockManager,
    topics: &TopicConfigManager,
    req: &RemotingCommand,
) -> Handled {
    let body = body(topics, req)?;
    let ok = locks.lock(
        &body.consumer_group,
        &body.client_id,
        &body.mq_set,
        rmq_common::time::now_ms(),
    );
    let out = serde_json::json!({ "lockOKMQSet": ok }).to_string();
    Ok(success().with_body(out.into_bytes()))
}

/// UNLOCK_BATCH_MQ.
pub(crate) fn unlock(
    locks: &QueueLockManager,
    topics: &TopicConfigManager,
    req: &RemotingCommand,
) -> Handled {
    let body = body(topics, req)?;
    locks.unlock(&body.consumer_group, &body.client_id, &body.mq_set);
    Ok(success())
}
