//! PULL_MESSAGE: tag filtering, the commit-offset flag, long polling, and
//! the heartbeat subscription when the request carries none.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rmq_common::names::{validate_group, validate_topic};
use rmq_common::remoting::{
    pull_sys_flag, PullMessageRequestHeader, PullMessageResponseHeader, RemotingCommand,
    ResponseCode,
};
use tokio_util::sync::CancellationToken;

use super::parts::PullPath;
use super::{blocking, Handled, Refusal};
use rmq_common::remoting::body::{SubscriptionGroupConfig, PERM_READ};
use rmq_store::{GetMessageResult, GetRequest, GetStatus, SubscriptionFilter, TagFilter};

/// The master's broker id.
const MASTER_ID: i64 = 0;

/// Handles a pull. `conn_gone` gives a token cancelled once the request's
/// connection has closed; a held pull ends then, as nobody is left to answer.
pub(crate) async fn pull(
    path: &Arc<PullPath>,
    h: PullMessageRequestHeader,
    conn_gone: impl FnOnce() -> CancellationToken,
) -> Handled {
    if !path.runtime.readable() {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!(
                "the broker[{}] pulling message is forbidden",
                path.store_host
            ),
        ));
    }
    validate_group(&h.consumer_group)
        .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
    validate_topic(&h.topic).map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
    group_may_pull(path, &h.consumer_group)?;
    let topic = path.topics.get(&h.topic).ok_or_else(|| {
        Refusal::new(
            ResponseCode::TopicNotExist,
            format!("topic[{}] not exist, apply first please!", h.topic),
        )
    })?;
    if topic.perm & PERM_READ == 0 {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!("the topic[{}] pulling message is forbidden", h.topic),
        ));
    }
    if h.queue_id < 0 || h.queue_id >= topic.read_queue_nums {
        return Err(Refusal::new(
            ResponseCode::SystemError,
            format!(
                "queueId[{}] is illegal, topic {} has {} read queues",
                h.queue_id, h.topic, topic.read_queue_nums
            ),
        ));
    }
    let filter = subscription_filter(path, &h)?;
    let slave = path.role.is_slave();
    // A slave keeps only offsets sent with UPDATE_CONSUMER_OFFSET (and
    // those it copies from its master), as RocketMQ's.
    if !slave && pull_sys_flag::has_commit_offset(h.sys_flag) && h.commit_offset >= 0 {
        path.offsets
            .commit(&h.consumer_group, &h.topic, h.queue_id, h.commit_offset);
    }
    // What the client asks for, never more than the broker's transfer
    // limits (the store also applies the on-disk ones per message).
    let store_config = &path.settings.store;
    let limit_bytes = usize::try_from(store_config.max_transfer_bytes_on_message_in_memory_bytes)
        .unwrap_or(usize::MAX);
    let max_bytes = h
        .max_msg_bytes
        .and_then(|b| usize::try_from(b).ok())
        .filter(|b| *b > 0)
        .map_or(limit_bytes, |b| b.min(limit_bytes));
    let max_count = usize::try_from(h.max_msg_nums).unwrap_or(1).clamp(
        1,
        store_config.max_transfer_count_on_message_in_memory as usize,
    );
    let mut result = get(path, &h, max_count, max_bytes, &filter).await?;
    let suspend = pull_sys_flag::has_suspend(h.sys_flag);
    if suspend && pull_code(&result, h.queue_offset) == ResponseCode::PullNotFound {
        let wait = if path.runtime.long_polling_enable() {
            Duration::from_millis(u64::try_from(h.suspend_timeout_millis).unwrap_or(0))
        } else {
            Duration::from_millis(path.runtime.short_polling_time_ms())
        };
        let store = Arc::clone(&path.store);
        let (topic, queue_id, offset) = (h.topic.clone(), h.queue_id, h.queue_offset);
        let gone = conn_gone();
        crate::metrics::rpc::mark_suspended();
        let hold = path.pull_hold.wait(&h.topic, h.queue_id, wait, move || {
            store.max_offset_in_queue(&topic, queue_id).unwrap_or(0) > offset
        });
        let arrived = tokio::select! {
            arrived = hold => arrived,
            () = gone.cancelled() => false,
        };
        if arrived {
            result = get(path, &h, max_count, max_bytes, &filter).await?;
        }
    }
    if !result.messages.is_empty() {
        path.offsets.pulled.pulled(
            &h.consumer_group,
            &h.topic,
            h.queue_id,
            result.next_begin_offset,
        );
        path.items.group_get(
            &h.topic,
            &h.consumer_group,
            result.messages.len() as u64,
            result.total_bytes as u64,
        );
    }
    let mut code = pull_code(&result, h.queue_offset);
    let mut suggest = suggested_broker(path, &h.consumer_group, result.far_behind);
    if slave && code == ResponseCode::PullOffsetMoved && !path.settings.broker.offset_check_in_slave
    {
        // A slave may be behind its master: no correction, ask again.
        code = ResponseCode::PullRetryImmediately;
        suggest = group_config(path, &h.consumer_group).broker_id;
    }
    Ok(response(&result, code, suggest))
}

/// RocketMQ's `suggestWhichBrokerId`: the master, unless slaves may serve
/// reads (`slaveReadEnable`); then the group's `whichBrokerWhenConsumeSlowly`
/// for a consumer far behind, else the group's `brokerId`.
fn suggested_broker(path: &PullPath, group: &str, far_behind: bool) -> i64 {
    if !path.settings.broker.slave_read_enable {
        return MASTER_ID;
    }
    let g = group_config(path, group);
    if far_behind {
        g.which_broker_when_consume_slowly
    } else {
        g.broker_id
    }
}

/// The group's settings (a group not yet stored has the defaults).
fn group_config(path: &PullPath, group: &str) -> SubscriptionGroupConfig {
    path.groups
        .get(group)
        .unwrap_or_else(|| SubscriptionGroupConfig::named(group))
}

/// Java's checks of the subscription group: it exists (or is created on
/// first use), may consume, and may consume by broadcasting if it does.
fn group_may_pull(path: &PullPath, group: &str) -> Result<(), Refusal> {
    group_may_consume(
        &path.groups,
        &path.clients,
        path.settings.broker.auto_create_subscription_group,
        group,
    )
}

/// The group checks of a pull or a pop.
pub(crate) fn group_may_consume(
    groups: &crate::meta::SubscriptionGroupManager,
    clients: &crate::clients::ClientManager,
    auto_create: bool,
    group: &str,
) -> Result<(), Refusal> {
    let permits = match groups.permits(group) {
        Some(p) => p,
        None if auto_create => {
            groups.get_or_create([group]);
            return Ok(());
        }
        None => {
            return Err(Refusal::new(
                ResponseCode::SubscriptionGroupNotExist,
                format!("subscription group [{group}] does not exist"),
            ))
        }
    };
    if !permits.consume_enable {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!("subscription group no permission, {group}"),
        ));
    }
    if !permits.consume_broadcast_enable && clients.is_broadcasting(group) {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!("the consumer group[{group}] can not consume by broadcast way"),
        ));
    }
    Ok(())
}

async fn get(
    path: &Arc<PullPath>,
    h: &PullMessageRequestHeader,
    max_count: usize,
    max_bytes: usize,
    filter: &SubscriptionFilter,
) -> Result<GetMessageResult, Refusal> {
    let store = Arc::clone(&path.store);
    let (group, topic, queue_id, offset, filter) = (
        h.consumer_group.clone(),
        h.topic.clone(),
        h.queue_id,
        h.queue_offset,
        filter.clone(),
    );
    Ok(blocking(move || {
        let req = GetRequest {
            group: &group,
            topic: &topic,
            queue_id,
            offset,
            max_count,
            max_bytes,
            filter: &filter,
            caps: None,
        }
        .transfer_limits(store.config());
        store.get_message(&req)
    })
    .await??)
}

/// The filter of this pull: the request's expression with the SUBSCRIPTION
/// flag, else the group's subscription from its last heartbeat.
fn subscription_filter(
    path: &PullPath,
    h: &PullMessageRequestHeader,
) -> Result<SubscriptionFilter, Refusal> {
    if pull_sys_flag::has_subscription(h.sys_flag) {
        return build_filter(
            path.settings.broker.enable_property_filter,
            h.expression_type.as_deref(),
            h.subscription.as_deref().unwrap_or("*"),
        );
    }
    match path.clients.subscription(&h.consumer_group, &h.topic) {
        None | Some(None) => Err(Refusal::new(
            ResponseCode::SubscriptionNotExist,
            format!(
                "the consumer's subscription of {} in group {} not exist",
                h.topic, h.consumer_group
            ),
        )),
        Some(Some(sub)) if sub.sub_version < h.sub_version => Err(Refusal::new(
            ResponseCode::SubscriptionNotLatest,
            format!(
                "the consumer's subscription not latest (have {}, asked {})",
                sub.sub_version, h.sub_version
            ),
        )),
        Some(Some(sub)) if is_tag_type(sub.expression_type.as_deref()) => {
            Ok(SubscriptionFilter::Tag(if sub.code_set.is_empty() {
                TagFilter::parse(&sub.sub_string)
            } else {
                TagFilter::from_codes(sub.code_set)
            }))
        }
        Some(Some(sub)) => build_filter(
            path.settings.broker.enable_property_filter,
            sub.expression_type.as_deref(),
            &sub.sub_string,
        ),
    }
}

/// RocketMQ's `ExpressionType.isTagType`: absent, empty or `TAG`.
pub(crate) fn is_tag_type(expression_type: Option<&str>) -> bool {
    expression_type.is_none_or(|t| t.is_empty() || t.eq_ignore_ascii_case("TAG"))
}

/// Compiles a subscription expression as the pull path and
/// CHECK_CLIENT_CONFIG do: TAG always; SQL92 only with
/// `enablePropertyFilter` (else SYSTEM_ERROR with Java's remark), and a bad
/// expression answers SUBSCRIPTION_PARSE_FAILED with the parse error.
pub(crate) fn build_filter(
    enable_property_filter: bool,
    expression_type: Option<&str>,
    expression: &str,
) -> Result<SubscriptionFilter, Refusal> {
    if is_tag_type(expression_type) {
        return Ok(SubscriptionFilter::Tag(TagFilter::parse(expression)));
    }
    let kind = expression_type.unwrap_or_default();
    if !kind.eq_ignore_ascii_case("SQL92") {
        return Err(Refusal::new(
            ResponseCode::SubscriptionParseFailed,
            format!("expression type {kind} is not supported; use TAG or SQL92"),
        ));
    }
    if !enable_property_filter {
        return Err(Refusal::new(
            ResponseCode::SystemError,
            format!(
                "The broker does not support consumer to filter message by {kind} \
                 (set enablePropertyFilter=true)"
            ),
        ));
    }
    rmq_common::sql92::Sql92Filter::parse(expression)
        .map(|f| SubscriptionFilter::Sql92(Arc::new(f)))
        .map_err(|e| {
            Refusal::new(
                ResponseCode::SubscriptionParseFailed,
                format!("SQL92 expression {expression:?} does not parse: {e}"),
            )
        })
}

/// RocketMQ's mapping from store status to response code.
fn pull_code(r: &GetMessageResult, requested: i64) -> ResponseCode {
    match r.status {
        GetStatus::Found => ResponseCode::Success,
        GetStatus::NoMatchedMessage | GetStatus::MessageWasRemoving => {
            ResponseCode::PullRetryImmediately
        }
        GetStatus::OffsetFoundNull | GetStatus::OffsetOverflowOne => ResponseCode::PullNotFound,
        GetStatus::OffsetOverflowBadly | GetStatus::OffsetTooSmall => ResponseCode::PullOffsetMoved,
        GetStatus::NoMessageInQueue | GetStatus::NoMatchedLogicQueue => {
            if requested != 0 {
                ResponseCode::PullOffsetMoved
            } else {
                ResponseCode::PullNotFound
            }
        }
    }
}

fn response(r: &GetMessageResult, code: ResponseCode, suggest: i64) -> RemotingCommand {
    let mut resp = RemotingCommand::response(code, Some(format!("{:?}", r.status)));
    resp.ext_fields = PullMessageResponseHeader {
        suggest_which_broker_id: suggest,
        next_begin_offset: r.next_begin_offset,
        min_offset: r.min_offset,
        max_offset: r.max_offset,
    }
    .to_ext();
    if code == ResponseCode::Success {
        // Each record stays in the CommitLog mapping until it is written to
        // the socket (the server writes body parts as they are).
        resp.body_parts = r
            .messages
            .iter()
            .map(|m| Bytes::from_owner(m.clone()))
            .collect();
    }
    resp
}
