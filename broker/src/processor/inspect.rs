//! Read-only windows into the broker for operators: QUERY_CONSUME_TIME_SPAN
//! (mqadmin consumerProgress' times), VIEW_BROKER_STATS_DATA (statsAll),
//! GET_BROKER_CONSUME_STATS (brokerConsumeStats) and QUERY_CONSUME_QUEUE
//! (queryCq: the consume-queue entries themselves, on either backend).

use std::sync::Arc;

use rmq_common::cq::CqUnit;
use rmq_common::remoting::body::MessageQueue;
use rmq_common::remoting::header::{
    BrokerConsumeStatsRequestHeader, ConsumeTimeSpanRequestHeader, QueryConsumeQueueRequestHeader,
    ViewBrokerStatsRequestHeader,
};
use rmq_common::remoting::ResponseCode;
use serde::Serialize;

use super::parts::Consumption;
use super::stats::{existing_topic, group_offsets, queue, unsubscribed};
use super::{blocking, json_success, success, Handled, Refusal};
use crate::metrics::StatsKind;

/// Most consume-queue entries one QUERY_CONSUME_QUEUE returns.
const MAX_CQ_ENTRIES: usize = 1_000;

/// QUERY_CONSUME_TIME_SPAN.
pub(crate) async fn time_span(cons: &Arc<Consumption>, h: ConsumeTimeSpanRequestHeader) -> Handled {
    let cons = Arc::clone(cons);
    blocking(move || time_spans(&cons, &h.topic, &h.group)).await?
}

/// VIEW_BROKER_STATS_DATA.
pub(crate) fn stats_data(cons: &Consumption, h: ViewBrokerStatsRequestHeader) -> Handled {
    let (name, key) = (h.stats_name.as_str(), h.stats_key.as_str());
    let views = StatsKind::from_name(name)
        .and_then(|kind| cons.items.views(kind, key))
        .ok_or_else(|| {
            Refusal::new(
                ResponseCode::SystemError,
                format!("The stats <{name}> <{key}> not exist"),
            )
        })?;
    json_success(&views)
}

/// GET_BROKER_CONSUME_STATS.
pub(crate) async fn consume_stats(
    cons: &Arc<Consumption>,
    h: BrokerConsumeStatsRequestHeader,
) -> Handled {
    let order_only = h.is_order.unwrap_or(false);
    let cons = Arc::clone(cons);
    blocking(move || broker_consume_stats(&cons, order_only)).await?
}

/// QUERY_CONSUME_QUEUE.
pub(crate) async fn consume_queue(
    cons: &Arc<Consumption>,
    h: QueryConsumeQueueRequestHeader,
) -> Handled {
    let count = h.count.unwrap_or(10);
    let cons = Arc::clone(cons);
    blocking(move || {
        consume_queue_entries(
            &cons,
            &h.topic,
            h.queue_id,
            h.index,
            count,
            h.consumer_group,
        )
    })
    .await?
}

/// Java's `QueueTimeSpan`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct QueueTimeSpan {
    consume_time_stamp: i64,
    consume_time_stamp_str: String,
    delay_time: i64,
    max_time_stamp: i64,
    max_time_stamp_str: String,
    message_queue: MessageQueue,
    min_time_stamp: i64,
    min_time_stamp_str: String,
}

fn time_spans(cons: &Consumption, topic: &str, group: &str) -> Handled {
    let config = existing_topic(cons, topic)?;
    let store = &cons.store;
    let now = store.clock().now_ms();
    let time_at = |q: i32, offset: i64| -> Result<i64, Refusal> {
        if offset < 0 {
            return Ok(-1);
        }
        Ok(store.message_store_time(topic, q, offset)?.unwrap_or(-1))
    };
    let mut spans = Vec::new();
    for q in 0..config.write_queue_nums {
        let max_offset = store.max_offset_in_queue(topic, q)?;
        let min = store.earliest_message_time(topic, q)?.unwrap_or(-1);
        let max = time_at(q, max_offset - 1)?;
        let consumer_offset = cons.offsets.query(group, topic, q).unwrap_or(-1);
        let consumed = if consumer_offset > 0 {
            time_at(q, consumer_offset - 1)?
        } else {
            min
        };
        // How far behind the group is: the age of its next message (Java
        // counts from -1 when that message is gone or never committed;
        // here the age of the oldest one left counts instead).
        let delay = if consumer_offset < max_offset {
            let next = time_at(q, consumer_offset.max(0))?;
            let next = if next < 0 { min } else { next };
            if next < 0 {
                0
            } else {
                now - next
            }
        } else {
            0
        };
        spans.push(QueueTimeSpan {
            consume_time_stamp: consumed,
            consume_time_stamp_str: java_time(consumed),
            delay_time: delay,
            max_time_stamp: max,
            max_time_stamp_str: java_time(max),
            message_queue: queue(cons, topic, q),
            min_time_stamp: min,
            min_time_stamp_str: java_time(min),
        });
    }
    json_success(&serde_json::json!({ "consumeTimeSpanSet": spans }))
}

/// `yyyy-MM-dd#HH:mm:ss:SSS` in UTC (Java prints the broker's zone; this
/// broker's is UTC).
pub(crate) fn java_time(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    // Days since 1970-01-01 to a civil date (Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}#{:02}:{:02}:{:02}:{:03}",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1_000 % 60,
        in_day % 1_000
    )
}

/// Java's `fetchConsumeStatsInBroker`: every subscription group (and every
/// group with offsets), the consume stats of each topic it has offsets
/// for, and the total backlog.
fn broker_consume_stats(cons: &Consumption, order_only: bool) -> Handled {
    let mut groups: std::collections::BTreeSet<String> = cons
        .groups
        .all()
        .into_iter()
        .map(|g| g.group_name)
        .collect();
    groups.extend(cons.offsets.all().into_iter().map(|(g, _, _, _)| g));
    let mut total_diff = 0i64;
    let mut list = Vec::new();
    for group in &groups {
        let mut topics: Vec<String> = cons
            .offsets
            .group_offsets(group)
            .into_iter()
            .map(|(t, _, _)| t)
            .collect();
        topics.sort();
        topics.dedup();
        let online = cons.clients.consumer_connection(group);
        let mut stats = Vec::new();
        for topic in &topics {
            let Some(config) = cons.topics.get(topic) else {
                continue;
            };
            if order_only && !config.order {
                continue;
            }
            if unsubscribed(online.as_ref(), topic) {
                continue;
            }
            let table = group_offsets(cons, group, topic, config.write_queue_nums)?;
            total_diff += table
                .iter()
                .map(|(_, o)| o.broker_offset - o.consumer_offset)
                .sum::<i64>();
            let map = rmq_common::json::write::object_keyed_map(table)
                .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
            stats.push(format!(
                "{{\"consumeTps\":{:?},\"offsetTable\":{map}}}",
                cons.items.group_get_tps(topic, group)
            ));
        }
        list.push(format!(
            "{{{}:[{}]}}",
            serde_json::Value::from(group.as_str()),
            stats.join(",")
        ));
    }
    let body = format!(
        "{{\"brokerAddr\":{},\"consumeStatsList\":[{}],\"totalDiff\":{total_diff}}}",
        serde_json::Value::from(cons.store_host.to_string()),
        list.join(",")
    );
    Ok(success().with_body(body.into_bytes()))
}

/// One consume-queue entry, as Java's `ConsumeQueueData`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ConsumeQueueData {
    eval: bool,
    physic_offset: i64,
    physic_size: i32,
    tags_code: i64,
}

/// QUERY_CONSUME_QUEUE: up to `count` entries of a queue from `index`,
/// read through the configured backend.
fn consume_queue_entries(
    cons: &Consumption,
    topic: &str,
    queue_id: i32,
    index: i64,
    count: i32,
    group: Option<String>,
) -> Handled {
    let store = &cons.store;
    let exists = cons
        .topics
        .get(topic)
        .is_some_and(|c| (0..c.read_queue_nums.max(c.write_queue_nums)).contains(&queue_id));
    if !exists {
        return Err(Refusal::new(
            ResponseCode::SystemError,
            format!("{queue_id}@{topic} is not exist!"),
        ));
    }
    let min = store.min_offset_in_queue(topic, queue_id)?;
    let max = store.max_offset_in_queue(topic, queue_id)?;
    let mut body = serde_json::Map::new();
    body.insert("maxQueueIndex".into(), max.into());
    body.insert("minQueueIndex".into(), min.into());
    if let Some(group) = &group {
        match cons.clients.subscription(group, topic).flatten() {
            Some(sub) => {
                body.insert(
                    "subscriptionData".into(),
                    serde_json::to_value(&sub)
                        .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?,
                );
                body.insert("filterData".into(), "null".into());
            }
            None => {
                body.insert(
                    "filterData".into(),
                    format!("{group}@{topic} is not online!").into(),
                );
            }
        }
    }
    if index < min || index >= max {
        let mut resp = success();
        resp.remark = Some(format!("Index {index} of {queue_id}@{topic} is not exist!"));
        return Ok(resp);
    }
    let mut units: Vec<CqUnit> = Vec::new();
    let count = usize::try_from(count).unwrap_or(0).clamp(1, MAX_CQ_ENTRIES);
    store
        .consume_queue()
        .get(topic, queue_id, index, count, &mut units)
        .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
    let data: Vec<ConsumeQueueData> = units
        .iter()
        .map(|u| ConsumeQueueData {
            eval: false,
            physic_offset: u.phy_offset,
            physic_size: u.size,
            tags_code: u.tags_code,
        })
        .collect();
    body.insert(
        "queueData".into(),
        serde_json::to_value(&data)
            .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?,
    );
    json_success(&body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_time_formats_as_the_broker_does() {
        assert_eq!(java_time(0), "1970-01-01#00:00:00:000");
        assert_eq!(java_time(-1), "1969-12-31#23:59:59:999");
        assert_eq!(java_time(1_796_323_337_123), "2026-12-03#18:42:17:123");
        assert_eq!(java_time(951_782_400_000), "2000-02-29#00:00:00:000");
    }
}
