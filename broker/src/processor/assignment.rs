//! QUERY_ASSIGNMENT, SET_MESSAGE_REQUEST_MODE and
//! GET_ALL_MESSAGE_REQUEST_MODE: server-side assignment of a group's
//! queues to its clients, in PULL or POP mode (RocketMQ 5.x).

use rmq_common::constants::{LMQ_QUEUE_ID, RETRY_GROUP_TOPIC_PREFIX};
use rmq_common::names::{is_lmq, validate_group};
use rmq_common::remoting::body::{
    MessageQueue, QueryAssignmentAnswer, QueryAssignmentBody, SetMessageRequestModeBody,
};
use rmq_common::remoting::{RemotingCommand, ResponseCode};

use super::parts::PopPath;
use super::{blocking, json_success, success, Handled, Refusal};
use crate::pop::assignment::{assign, mode_for, AssignmentInput};

fn body<T: serde::de::DeserializeOwned>(req: &RemotingCommand, what: &str) -> Result<T, Refusal> {
    let bytes = req.body.as_deref().unwrap_or_default();
    rmq_common::json::from_slice(bytes).map_err(|e| {
        Refusal::new(
            ResponseCode::SystemError,
            format!("{what} body is not valid: {e}"),
        )
    })
}

/// QUERY_ASSIGNMENT: the asking client's queues of the topic and how to
/// read them. Always SUCCESS; the set is absent when it cannot be computed
/// (unknown topic, strategy or model, no client of the group online).
pub(crate) fn query(p: &PopPath, req: &RemotingCommand) -> Handled {
    let q: QueryAssignmentBody = body(req, "QUERY_ASSIGNMENT")?;
    let queues = queues_of(p, &q.topic, &q.message_model);
    let pop = &p.settings.broker.pop;
    let input = AssignmentInput {
        client: &q.client_id,
        strategy: &q.strategy_name,
        message_model: &q.message_model,
        queues,
        clients: p.clients.consumer_ids(&q.consumer_group),
        mode: mode_for(
            p.request_modes.get(&q.topic, &q.consumer_group),
            &q.topic,
            &q.consumer_group,
            pop.default_message_request_mode,
            pop.default_pop_share_queue_num,
        ),
        load_balance: pop.server_load_balancer_enable,
    };
    let answer = QueryAssignmentAnswer {
        message_queue_assignments: assign(input),
    };
    if answer.message_queue_assignments.is_none() && !q.topic.starts_with(RETRY_GROUP_TOPIC_PREFIX)
    {
        tracing::debug!(
            topic = q.topic,
            group = q.consumer_group,
            strategy = q.strategy_name,
            model = q.message_model,
            "QUERY_ASSIGNMENT: no assignment"
        );
    }
    json_success(&answer)
}

/// The queues QUERY_ASSIGNMENT shares out. An LMQ (`%LMQ%` name, whether
/// or not `enableLmq` is on) has no route: clustering gets its one queue on
/// this broker, `(lmq, brokerName, 0)`, and broadcasting nothing, as
/// RocketMQ 5.3.3 answers (its broadcasting set comes from the NameServer
/// route, which no LMQ has).
fn queues_of(p: &PopPath, topic: &str, model: &str) -> Option<Vec<MessageQueue>> {
    let broker_name = &p.settings.broker.broker_name;
    if is_lmq(topic) {
        return (model == "CLUSTERING").then(|| {
            vec![MessageQueue {
                topic: topic.to_owned(),
                broker_name: broker_name.clone(),
                queue_id: LMQ_QUEUE_ID,
            }]
        });
    }
    p.topics.get(topic).map(|t| {
        (0..t.read_queue_nums.max(0))
            .map(|queue_id| MessageQueue {
                topic: topic.to_owned(),
                broker_name: broker_name.clone(),
                queue_id,
            })
            .collect()
    })
}

/// SET_MESSAGE_REQUEST_MODE: refused for a retry topic, an unknown topic
/// or an unknown group (RocketMQ 5.3.3's codes and remarks; with
/// `autoCreateSubscriptionGroup` a valid group name is created, as Java's
/// `findSubscriptionGroupConfig` does, so RocketMQ's LMQPushPopConsumer
/// example can switch a fresh group to POP); otherwise stored and written to `config/messageRequestMode.json` before the
/// answer.
pub(crate) async fn set(p: &std::sync::Arc<PopPath>, req: &RemotingCommand) -> Handled {
    let entry: SetMessageRequestModeBody = body(req, "SET_MESSAGE_REQUEST_MODE")?;
    if entry.topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            "retry topic is not allowed to set mode",
        ));
    }
    if p.topics.get(&entry.topic).is_none() {
        return Err(Refusal::new(
            ResponseCode::TopicNotExist,
            format!("topic[{}] not exist", entry.topic),
        ));
    }
    let group = &entry.consumer_group;
    let auto_create = p.settings.broker.auto_create_subscription_group
        && validate_group(group).is_ok()
        && !group.trim().is_empty();
    if p.groups.get(group).is_none() && !auto_create {
        return Err(Refusal::new(
            ResponseCode::SubscriptionGroupNotExist,
            "subscription group does not exist",
        ));
    }
    if p.groups.get(group).is_none() {
        p.groups.get_or_create([group.as_str()]);
    }
    let table = std::sync::Arc::clone(&p.request_modes);
    blocking(move || table.set(entry))
        .await?
        .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
    Ok(success())
}

/// GET_ALL_MESSAGE_REQUEST_MODE: the table as its file holds it.
pub(crate) fn all(p: &PopPath) -> Handled {
    let bytes = p
        .request_modes
        .encode()
        .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
    Ok(success().with_body(bytes))
}
