//! What `rmq-admin` does, as functions that return the text it prints, so
//! the output is testable. Each connects through the [`Connector`] it is
//! given (TLS, ACL credentials).

use std::fmt::Write as _;
use std::net::SocketAddr;

use rmq_common::message::decode_offset_msg_id;
use rmq_common::message::record::RecordView;
use rmq_common::remoting::{RemotingCommand, RequestCode};

use rmq_client::{self as sdk, Connector, SdkError};
use rmq_common::remoting::body::{ClusterInfo, TopicConfig, TopicConfigSerializeWrapper};

/// UPDATE_AND_CREATE_TOPIC for `topic` with `queues` read and write queues,
/// as Apache RocketMQ's broker takes it too.
pub fn topic_create_request(topic: &str, queues: i32, perm: i32) -> RemotingCommand {
    sdk::request(
        RequestCode::UpdateAndCreateTopic,
        &[
            ("topic", topic.to_owned()),
            ("readQueueNums", queues.to_string()),
            ("writeQueueNums", queues.to_string()),
            ("perm", perm.to_string()),
            // Java's CreateTopicRequestHeader refuses a request without
            // these (they are @CFNotNull); this broker has defaults.
            ("defaultTopic", "TBW102".to_owned()),
            ("topicFilterType", "SINGLE_TAG".to_owned()),
            ("topicSysFlag", "0".to_owned()),
            ("order", "false".to_owned()),
        ],
    )
}

/// Creates or updates a topic on a broker (this one or Apache RocketMQ's).
pub async fn topic_create(
    conn: &Connector,
    broker: SocketAddr,
    topic: &str,
    queues: i32,
    perm: i32,
) -> Result<String, SdkError> {
    let c = conn.connect(broker).await?;
    sdk::call(&c, topic_create_request(topic, queues, perm)).await?;
    Ok(format!(
        "topic {topic} created with {queues} queues (perm {perm}) on {broker}\n"
    ))
}

/// Creates or updates `count` topics `<prefix><n>` (n from 0) on a broker
/// in requests of up to 5,000 (UPDATE_AND_CREATE_TOPIC_LIST): one journal
/// line and one registration per request.
pub async fn topic_create_many(
    conn: &Connector,
    broker: SocketAddr,
    prefix: &str,
    count: usize,
    queues: i32,
) -> Result<String, SdkError> {
    let c = conn.connect(broker).await?;
    let names: Vec<String> = (0..count).map(|n| format!("{prefix}{n}")).collect();
    for chunk in names.chunks(TOPIC_LIST_CHUNK) {
        let list: Vec<TopicConfig> = chunk.iter().map(|n| TopicConfig::new(n, queues)).collect();
        let body = serde_json::to_vec(&serde_json::json!({ "topicConfigList": list }))
            .map_err(|e| SdkError::BadAnswer(e.to_string()))?;
        let req = RemotingCommand::request(RequestCode::UpdateAndCreateTopicList).with_body(body);
        sdk::call(&c, req).await?;
    }
    Ok(format!(
        "{count} topics {prefix}0..{prefix}{} created with {queues} queues on {broker}\n",
        count.saturating_sub(1)
    ))
}

/// Topics per UPDATE_AND_CREATE_TOPIC_LIST request of
/// [`topic_create_many`] (about 1 MiB of JSON).
const TOPIC_LIST_CHUNK: usize = 5_000;

async fn topics(
    conn: &Connector,
    broker: SocketAddr,
) -> Result<TopicConfigSerializeWrapper, SdkError> {
    let c = conn.connect(broker).await?;
    let resp = sdk::call(&c, RemotingCommand::request(RequestCode::GetAllTopicConfig)).await?;
    rmq_common::json::from_slice(resp.body.as_deref().unwrap_or_default())
        .map_err(|e| SdkError::BadAnswer(e.to_string()))
}

/// Lists the broker's topics.
pub async fn topic_list(conn: &Connector, broker: SocketAddr) -> Result<String, SdkError> {
    let t = topics(conn, broker).await?;
    let mut out = format!(
        "{:<40} {:>6} {:>6} {:>5}\n",
        "TOPIC", "READ", "WRITE", "PERM"
    );
    for (name, c) in &t.topic_config_table {
        let _ = writeln!(
            out,
            "{name:<40} {:>6} {:>6} {:>5}",
            c.read_queue_nums, c.write_queue_nums, c.perm
        );
    }
    Ok(out)
}

async fn read_queues(conn: &Connector, broker: SocketAddr, topic: &str) -> Result<i32, SdkError> {
    let t = topics(conn, broker).await?;
    t.topic_config_table
        .get(topic)
        .map(|c| c.read_queue_nums)
        .ok_or_else(|| SdkError::BadAnswer(format!("topic {topic} does not exist on {broker}")))
}

/// Per-queue min and max offsets of a topic.
pub async fn topic_status(
    conn: &Connector,
    broker: SocketAddr,
    topic: &str,
) -> Result<String, SdkError> {
    let queues = read_queues(conn, broker, topic).await?;
    let c = conn.connect(broker).await?;
    let mut out = format!("{:>6} {:>14} {:>14}\n", "QUEUE", "MIN", "MAX");
    for q in 0..queues {
        let min = sdk::queue_offset(&c, RequestCode::GetMinOffset, topic, q).await?;
        let max = sdk::queue_offset(&c, RequestCode::GetMaxOffset, topic, q).await?;
        let _ = writeln!(out, "{q:>6} {min:>14} {max:>14}");
    }
    Ok(out)
}

/// A consumer group's progress and lag per queue of a topic.
pub async fn consumer_progress(
    conn: &Connector,
    broker: SocketAddr,
    group: &str,
    topic: &str,
) -> Result<String, SdkError> {
    let queues = read_queues(conn, broker, topic).await?;
    let c = conn.connect(broker).await?;
    let mut out = format!(
        "{:>6} {:>14} {:>14} {:>10}\n",
        "QUEUE", "BROKER_MAX", "CONSUMER", "LAG"
    );
    let mut total = 0;
    for q in 0..queues {
        let max = sdk::queue_offset(&c, RequestCode::GetMaxOffset, topic, q).await?;
        let req = sdk::request(
            RequestCode::QueryConsumerOffset,
            &[
                ("consumerGroup", group.to_owned()),
                ("topic", topic.to_owned()),
                ("queueId", q.to_string()),
            ],
        );
        let resp = c.invoke(req, sdk::DEFAULT_TIMEOUT).await?;
        let consumed = if resp.code == 0 {
            resp.ext().req_i64("offset").unwrap_or(0)
        } else {
            0
        };
        let lag = (max - consumed).max(0);
        total += lag;
        let _ = writeln!(out, "{q:>6} {max:>14} {consumed:>14} {lag:>10}");
    }
    let _ = writeln!(out, "total lag: {total}");
    Ok(out)
}

/// Up to `count` messages of one queue from `offset`, read with a pull
/// (nothing is committed), e.g. to inspect a dead-letter queue.
pub async fn read_queue(
    conn: &Connector,
    broker: SocketAddr,
    topic: &str,
    queue_id: i32,
    offset: i64,
    count: i32,
) -> Result<String, SdkError> {
    let c = conn.connect(broker).await?;
    let req = sdk::request(
        RequestCode::PullMessage,
        &[
            ("consumerGroup", READ_GROUP.to_owned()),
            ("topic", topic.to_owned()),
            ("queueId", queue_id.to_string()),
            ("queueOffset", offset.to_string()),
            ("maxMsgNums", count.clamp(1, 1024).to_string()),
            // SUBSCRIPTION only: no commit, no long polling.
            (
                "sysFlag",
                rmq_common::remoting::pull_sys_flag::SUBSCRIPTION.to_string(),
            ),
            ("commitOffset", "-1".into()),
            ("suspendTimeoutMillis", "0".into()),
            ("subscription", "*".into()),
            ("subVersion", "0".into()),
            ("expressionType", "TAG".into()),
        ],
    );
    let resp = c.invoke(req, sdk::DEFAULT_TIMEOUT).await?;
    let h = rmq_common::remoting::PullMessageResponseHeader::from_ext(&resp.ext())
        .map_err(|e| SdkError::BadAnswer(e.to_string()))?;
    let mut out = format!(
        "{topic} queue {queue_id}: min {} max {} (code {} {})\n",
        h.min_offset,
        h.max_offset,
        resp.code,
        resp.remark.as_deref().unwrap_or("")
    );
    out.push_str(&describe(resp.body.as_deref().unwrap_or_default()));
    Ok(out)
}

/// The consumer group `rmq-admin read` pulls as (it never commits).
const READ_GROUP: &str = "rmq-admin-read";

fn describe(bytes: &[u8]) -> String {
    let mut out = String::new();
    let mut pos = 0;
    while pos < bytes.len() {
        match RecordView::parse(&bytes[pos..], true) {
            Ok(v) => {
                let _ = writeln!(
                    out,
                    "topic={} queue={} queueOffset={} commitLogOffset={} storeTimestamp={} reconsumeTimes={} retryTopic={:?} originMsgId={:?} keys={:?} tags={:?} body={:?}",
                    v.topic(),
                    v.queue_id(),
                    v.queue_offset(),
                    v.physical_offset(),
                    v.store_timestamp(),
                    v.reconsume_times(),
                    v.property("RETRY_TOPIC").unwrap_or_default(),
                    v.property("ORIGIN_MESSAGE_ID").unwrap_or_default(),
                    v.property("KEYS").unwrap_or_default(),
                    v.property("TAGS").unwrap_or_default(),
                    String::from_utf8_lossy(&v.body()[..v.body().len().min(200)]),
                );
                pos += v.total_size();
            }
            Err(e) => {
                let _ = writeln!(out, "undecodable record at byte {pos}: {e}");
                break;
            }
        }
    }
    out
}

/// Messages of a topic with a key.
pub async fn query_key(
    conn: &Connector,
    broker: SocketAddr,
    topic: &str,
    key: &str,
) -> Result<String, SdkError> {
    let c = conn.connect(broker).await?;
    let req = sdk::request(
        RequestCode::QueryMessage,
        &[
            ("topic", topic.to_owned()),
            ("key", key.to_owned()),
            ("maxNum", "32".into()),
            ("beginTimestamp", "0".into()),
            ("endTimestamp", i64::MAX.to_string()),
        ],
    );
    let resp = sdk::call(&c, req).await?;
    Ok(describe(resp.body.as_deref().unwrap_or_default()))
}

/// A message by its offsetMsgId (the broker address is in the id).
pub async fn query_id(conn: &Connector, msg_id: &str) -> Result<String, SdkError> {
    let (host, offset) =
        decode_offset_msg_id(msg_id).map_err(|e| SdkError::BadAnswer(e.to_string()))?;
    let c = conn.connect(host).await?;
    let resp = sdk::call(
        &c,
        sdk::request(
            RequestCode::ViewMessageById,
            &[("offset", offset.to_string())],
        ),
    )
    .await?;
    Ok(describe(resp.body.as_deref().unwrap_or_default()))
}

/// Brokers and clusters known to a NameServer, with each broker's role,
/// CommitLog end and replication lag: on a master the largest of its
/// slaves', on a slave how far its log ends behind its master's ("-" where
/// a broker does not answer or, like Apache RocketMQ 4.9, does not say).
pub async fn cluster_list(conn: &Connector, namesrv: SocketAddr) -> Result<String, SdkError> {
    let c = conn.connect(namesrv).await?;
    let resp = sdk::call(
        &c,
        RemotingCommand::request(RequestCode::GetBrokerClusterInfo),
    )
    .await?;
    let info: ClusterInfo = rmq_common::json::from_slice(resp.body.as_deref().unwrap_or_default())
        .map_err(|e| SdkError::BadAnswer(e.to_string()))?;
    let mut out = format!(
        "{:<20} {:<20} {:>4} {:<22} {:<13} {:>14} {:>12}\n",
        "CLUSTER", "BROKER", "ID", "ADDRESS", "ROLE", "MAX OFFSET", "LAG BYTES"
    );
    for (cluster, names) in &info.cluster_addr_table {
        for name in names {
            let Some(b) = info.broker_addr_table.get(name) else {
                continue;
            };
            let mut rows = Vec::new();
            for (id, addr) in &b.broker_addrs {
                rows.push((*id, addr, runtime_info(conn, addr).await));
            }
            let master_end = rows
                .iter()
                .find(|(id, _, _)| *id == 0)
                .and_then(|(_, _, t)| t.as_ref()?.get("commitLogMaxOffset")?.parse::<i64>().ok());
            for (id, addr, table) in &rows {
                let get = |k: &str| table.as_ref().and_then(|t| t.get(k)).cloned();
                let end = get("commitLogMaxOffset");
                let lag = if *id == 0 {
                    get("haMaxLagBytes")
                } else {
                    master_end
                        .zip(end.as_ref().and_then(|e| e.parse::<i64>().ok()))
                        .map(|(m, e)| (m - e).max(0).to_string())
                };
                let dash = || "-".to_owned();
                let _ = writeln!(
                    out,
                    "{cluster:<20} {name:<20} {id:>4} {addr:<22} {:<13} {:>14} {:>12}",
                    get("brokerRole").unwrap_or_else(dash),
                    end.unwrap_or_else(dash),
                    lag.unwrap_or_else(dash),
                );
            }
        }
    }
    Ok(out)
}

/// A broker's GET_BROKER_RUNTIME_INFO table, or `None` if it does not
/// answer within 3 s.
async fn runtime_info(
    conn: &Connector,
    addr: &str,
) -> Option<std::collections::BTreeMap<String, String>> {
    #[derive(serde::Deserialize)]
    struct KvTable {
        table: std::collections::BTreeMap<String, String>,
    }
    let ask = async {
        let c = conn.connect(addr.parse().ok()?).await.ok()?;
        let resp = sdk::call(
            &c,
            RemotingCommand::request(RequestCode::GetBrokerRuntimeInfo),
        )
        .await
        .ok()?;
        let t: KvTable = rmq_common::json::from_slice(resp.body.as_deref()?).ok()?;
        Some(t.table)
    };
    tokio::time::timeout(std::time::Duration::from_secs(3), ask)
        .await
        .ok()
        .flatten()
}

/// Asks the broker for a clean pass now; returns its report (JSON).
pub async fn clean(conn: &Connector, broker: SocketAddr) -> Result<String, SdkError> {
    let c = conn.connect(broker).await?;
    let req = RemotingCommand::request(RequestCode::DeleteExpiredCommitlog);
    let resp = sdk::call(&c, req).await?;
    Ok(String::from_utf8_lossy(resp.body.as_deref().unwrap_or_default()).into_owned() + "\n")
}

/// The broker's effective configuration, `key=value` lines.
pub async fn broker_config(conn: &Connector, broker: SocketAddr) -> Result<String, SdkError> {
    let c = conn.connect(broker).await?;
    let resp = sdk::call(&c, RemotingCommand::request(RequestCode::GetBrokerConfig)).await?;
    Ok(String::from_utf8_lossy(resp.body.as_deref().unwrap_or_default()).into_owned() + "\n")
}
