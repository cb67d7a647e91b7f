//! GET_TOPIC_STATS_INFO, GET_CONSUME_STATS and QUERY_TOPIC_CONSUME_BY_WHO:
//! the offsets mqadmin's topicStatus and consumerProgress print. Answers
//! keyed by queue are written as fastjson writes them (object keys), which
//! is what the Java admin client decodes.

use std::collections::BTreeSet;
use std::sync::Arc;

use rmq_common::json::write::object_keyed_map;
use rmq_common::remoting::body::{
    ConsumerConnection, MessageQueue, OffsetWrapper, TopicConfig, TopicOffset,
};
use rmq_common::remoting::header::{
    ConsumeStatsRequestHeader, TopicConsumeByWhoRequestHeader, TopicStatsRequestHeader,
};
use rmq_common::remoting::ResponseCode;
use serde::Serialize;

use super::parts::Consumption;
use super::{blocking, json_success, success, Handled, Refusal};

/// GET_TOPIC_STATS_INFO.
pub(crate) async fn topic_stats(cons: &Arc<Consumption>, h: TopicStatsRequestHeader) -> Handled {
    let cons = Arc::clone(cons);
    blocking(move || topic_offsets(&cons, &h.topic)).await?
}

/// GET_CONSUME_STATS.
pub(crate) async fn consume_stats(
    cons: &Arc<Consumption>,
    h: ConsumeStatsRequestHeader,
) -> Handled {
    let cons = Arc::clone(cons);
    blocking(move || group_consume_stats(&cons, &h.consumer_group, h.topic.as_deref())).await?
}

/// QUERY_TOPIC_CONSUME_BY_WHO.
pub(crate) fn consumed_by(cons: &Consumption, h: TopicConsumeByWhoRequestHeader) -> Handled {
    let topic = h.topic.as_str();
    let mut groups: BTreeSet<String> = cons.offsets.groups_of_topic(topic).into_iter().collect();
    for g in cons.clients.consumer_groups() {
        if matches!(cons.clients.subscription(&g, topic), Some(Some(_))) {
            groups.insert(g);
        }
    }
    json_success(&serde_json::json!({ "groupList": groups }))
}

/// Queue `queue_id` of `topic` on this broker, as answers name it.
pub(crate) fn queue(cons: &Consumption, topic: &str, queue_id: i32) -> MessageQueue {
    MessageQueue {
        topic: topic.to_owned(),
        broker_name: cons.broker_name.clone(),
        queue_id,
    }
}

/// The topic's config; TOPIC_NOT_EXIST (Java's remark) if there is none.
pub(crate) fn existing_topic(cons: &Consumption, topic: &str) -> Result<TopicConfig, Refusal> {
    cons.topics.get(topic).ok_or_else(|| {
        Refusal::new(
            ResponseCode::TopicNotExist,
            format!("topic[{topic}] not exist"),
        )
    })
}

fn topic_offsets(cons: &Consumption, topic: &str) -> Handled {
    let config = existing_topic(cons, topic)?;
    let store = &cons.store;
    let mut table = Vec::new();
    for q in 0..config.write_queue_nums {
        let min_offset = store.min_offset_in_queue(topic, q)?.max(0);
        let max_offset = store.max_offset_in_queue(topic, q)?.max(0);
        let last_update_timestamp = if max_offset > 0 {
            store
                .message_store_time(topic, q, max_offset - 1)?
                .unwrap_or(0)
        } else {
            0
        };
        table.push((
            queue(cons, topic, q),
            TopicOffset {
                last_update_timestamp,
                max_offset,
                min_offset,
            },
        ));
    }
    keyed_body("offsetTable", table, None)
}

fn group_consume_stats(cons: &Consumption, group: &str, topic: Option<&str>) -> Handled {
    let topics: BTreeSet<String> = match topic {
        Some(t) => [t.to_owned()].into(),
        None => cons
            .offsets
            .group_offsets(group)
            .into_iter()
            .map(|(t, _, _)| t)
            .collect(),
    };
    let online = cons.clients.consumer_connection(group);
    let mut table = Vec::new();
    let mut consume_tps = 0.0;
    for topic in &topics {
        let Some(config) = cons.topics.get(topic) else {
            continue;
        };
        if unsubscribed(online.as_ref(), topic) {
            continue;
        }
        consume_tps += cons.items.group_get_tps(topic, group);
        table.extend(group_offsets(cons, group, topic, config.read_queue_nums)?);
    }
    // Java's consumeTps: the group's pulls per second over the last
    // minute, summed over its topics.
    let tps = format!("{consume_tps:?}");
    keyed_body("offsetTable", table, Some(("consumeTps", &tps)))
}

/// As Java: an online group that does not subscribe to `topic` (any more)
/// is not reported for it.
pub(crate) fn unsubscribed(online: Option<&ConsumerConnection>, topic: &str) -> bool {
    online.is_some_and(|c| {
        !c.subscription_table.is_empty() && !c.subscription_table.contains_key(topic)
    })
}

/// The group's offsets against the broker's in queues `0..queues` of
/// `topic` (Java's `OffsetWrapper`s).
pub(crate) fn group_offsets(
    cons: &Consumption,
    group: &str,
    topic: &str,
    queues: i32,
) -> Result<Vec<(MessageQueue, OffsetWrapper)>, Refusal> {
    let store = &cons.store;
    let mut table = Vec::new();
    for q in 0..queues {
        let broker_offset = store.max_offset_in_queue(topic, q)?.max(0);
        let consumer_offset = cons.offsets.query(group, topic, q).unwrap_or(0).max(0);
        let last_timestamp = if consumer_offset > 0 {
            store
                .message_store_time(topic, q, consumer_offset - 1)?
                .unwrap_or(0)
        } else {
            0
        };
        table.push((
            queue(cons, topic, q),
            OffsetWrapper {
                broker_offset,
                consumer_offset,
                last_timestamp,
            },
        ));
    }
    Ok(table)
}

/// `{"<extra key>":<extra value>,"<name>":{<queue>:<value>,...}}`.
pub(crate) fn keyed_body<V: Serialize>(
    name: &str,
    entries: Vec<(MessageQueue, V)>,
    extra: Option<(&str, &str)>,
) -> Handled {
    let map = object_keyed_map(entries)
        .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
    let mut body = String::from("{");
    if let Some((k, v)) = extra {
        body.push_str(&format!("\"{k}\":{v},"));
    }
    body.push_str(&format!("\"{name}\":{map}}}"));
    Ok(success().with_body(body.into_bytes()))
}
