//! NOTIFICATION and POLLING_INFO (RocketMQ 5.x POP): whether a pop would
//! find something (waiting up to `pollTime` for it), and how many pops wait.

use std::sync::Arc;

use rmq_common::remoting::{
    NotificationRequestHeader, NotificationResponseHeader, PollingInfoRequestHeader,
    PollingInfoResponseHeader,
};
use tokio_util::sync::CancellationToken;

use super::parts::PopPath;
use super::pop::{available, peek_checks as checked, watched};
use super::{blocking, success, Handled};
use crate::pop::{polling, remaining_poll};

/// NOTIFICATION.
pub(crate) async fn notification(
    path: &Arc<PopPath>,
    h: NotificationRequestHeader,
    conn_gone: impl FnOnce() -> CancellationToken,
) -> Handled {
    let read_queues = checked(path, &h.topic, h.queue_id, &h.consumer_group)?;
    let now = rmq_common::time::now_ms();
    let born = h.born_time.filter(|b| *b > 0).unwrap_or(now);
    let order = h.order.unwrap_or(false);
    let h = Arc::new(h);
    let check = {
        let (p, h) = (Arc::clone(path), Arc::clone(&h));
        move || {
            available(
                &p,
                &h.topic,
                &h.consumer_group,
                h.queue_id,
                read_queues,
                order,
                h.attempt_id.as_deref(),
            )
        }
    };
    let c = check.clone();
    let mut answer = NotificationResponseHeader {
        has_msg: blocking(c).await?,
        polling_full: false,
    };
    if !answer.has_msg {
        if let Some(left) = remaining_poll(born, h.poll_time, now) {
            let key = polling::key(&h.topic, &h.consumer_group, h.queue_id);
            let topics = watched(&h.topic, &h.consumer_group, order);
            let gone = conn_gone();
            crate::metrics::rpc::mark_suspended();
            let wait = path.pop.polling.wait(&key, false, &topics, left, check);
            match tokio::select! { w = wait => w, () = gone.cancelled() => Ok(false) } {
                Ok(has) => answer.has_msg = has,
                Err(polling::PollingFull) => answer.polling_full = true,
            }
        }
    }
    let mut resp = success();
    resp.ext_fields = answer.to_ext();
    Ok(resp)
}

/// POLLING_INFO.
pub(crate) fn polling_info(path: &PopPath, h: PollingInfoRequestHeader) -> Handled {
    checked(path, &h.topic, h.queue_id, &h.consumer_group)?;
    let key = polling::key(&h.topic, &h.consumer_group, h.queue_id);
    let n = path.pop.polling.waiting(&key);
    let mut resp = success();
    resp.ext_fields = PollingInfoResponseHeader {
        polling_num: i32::try_from(n).unwrap_or(i32::MAX),
    }
    .to_ext();
    Ok(resp)
}
