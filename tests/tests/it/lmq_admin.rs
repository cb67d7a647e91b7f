//! Light message queues in the broker's admin surface, over the wire:
//! QUERY_ASSIGNMENT answers an LMQ as RocketMQ 5.3.3's
//! QueryAssignmentProcessor does (clustering: the one queue
//! `(lmq, brokerName, 0)` shared out over the group's clients, with or
//! without `enableLmq`; broadcasting: nothing, as an LMQ has no route);
//! SET_MESSAGE_REQUEST_MODE on an LMQ and a group made on use; stats items
//! and Prometheus labels fold every LMQ into `%LMQ%` unless
//! `enableLmqStats`; DELETE_SUBSCRIPTIONGROUP with 5.x's `cleanOffset`
//! (or 4.x's `removeOffset`) drops the group's LMQ offsets.

use std::time::Duration;

use rmq_broker::broker::Broker;
use rmq_broker::config::Settings;
use rmq_client::{self as sdk, OutMessage, RemotingClient, SendCode};
use rmq_common::config::CqBackend;
use rmq_common::remoting::{RemotingCommand, RequestCode};

use crate::metrics::{parse, scrape, scrape_until, Sample};

/// Longest one request may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// LMQs the stats test pulls.
const LMQS: usize = 40;

fn lmq_settings(root: &std::path::Path, backend: CqBackend) -> Settings {
    let mut s = rmq_tests::broker_settings(root, backend);
    s.store.enable_lmq = true;
    s.store.enable_multi_dispatch = true;
    s
}

async fn call(b: &RemotingClient, code: RequestCode, body: serde_json::Value) -> RemotingCommand {
    let req = RemotingCommand::request(code).with_body(body.to_string().into_bytes());
    b.invoke(req, TIMEOUT).await.unwrap()
}

async fn create_topic(b: &RemotingClient, topic: &str, queues: i32) {
    let q = queues.to_string();
    let r = sdk::call(
        b,
        sdk::request(
            RequestCode::UpdateAndCreateTopic,
            &[
                ("topic", topic.into()),
                ("readQueueNums", q.clone()),
                ("writeQueueNums", q),
            ],
        ),
    )
    .await;
    assert!(r.is_ok(), "create {topic}: {r:?}");
}

async fn heartbeat(b: &RemotingClient, client: &str, group: &str, topic: &str) {
    let body = serde_json::json!({
        "clientID": client,
        "producerDataSet": [],
        "consumerDataSet": [{
            "groupName": group, "consumeType": "CONSUME_PASSIVELY",
            "messageModel": "CLUSTERING", "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
            "subscriptionDataSet": [{ "topic": topic, "subString": "*", "subVersion": 1 }]
        }]
    });
    let r = call(b, RequestCode::HeartBeat, body).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
}

/// The (topic, broker, queue id, mode) of a QUERY_ASSIGNMENT answer;
/// `None` when the set is absent.
async fn assignment(
    b: &RemotingClient,
    topic: &str,
    group: &str,
    client: &str,
    model: &str,
) -> Option<Vec<(String, String, i64, String)>> {
    let r = call(
        b,
        RequestCode::QueryAssignment,
        serde_json::json!({
            "topic": topic, "consumerGroup": group, "clientId": client,
            "strategyName": "AVG", "messageModel": model
        }),
    )
    .await;
    assert_eq!(r.code, 0, "QUERY_ASSIGNMENT: {:?}", r.remark);
    let body: serde_json::Value =
        serde_json::from_slice(r.body.as_deref().unwrap_or_default()).unwrap();
    let set = body.get("messageQueueAssignments")?.as_array()?.clone();
    let mut out: Vec<_> = set
        .iter()
        .map(|a| {
            let q = &a["messageQueue"];
            (
                q["topic"].as_str().unwrap().to_owned(),
                q["brokerName"].as_str().unwrap().to_owned(),
                q["queueId"].as_i64().unwrap(),
                a["mode"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    out.sort();
    Some(out)
}

fn one(topic: &str, queue: i64, mode: &str) -> Option<Vec<(String, String, i64, String)>> {
    Some(vec![(
        topic.to_owned(),
        "broker-a".to_owned(),
        queue,
        mode.to_owned(),
    )])
}

async fn query_assignment_of_an_lmq(enable_lmq: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = lmq_settings(&dir.path().join("store"), CqBackend::File);
    settings.store.enable_lmq = enable_lmq;
    settings.store.enable_multi_dispatch = enable_lmq;
    let broker = Broker::start(settings).await.unwrap();
    let b = sdk::connect(broker.addr()).await.unwrap();
    let lmq = "%LMQ%asg";
    let c0 = sdk::connect(broker.addr()).await.unwrap();
    let c1 = sdk::connect(broker.addr()).await.unwrap();
    heartbeat(&c0, "c0", "AsgG", lmq).await;
    heartbeat(&c1, "c1", "AsgG", lmq).await;
    // Clustering: the LMQ's one queue on this broker, to the first client
    // (AVG over one queue and two clients), whether or not LMQs are served.
    assert_eq!(
        assignment(&b, lmq, "AsgG", "c0", "CLUSTERING").await,
        one(lmq, 0, "PULL"),
        "enableLmq={enable_lmq}"
    );
    assert_eq!(
        assignment(&b, lmq, "AsgG", "c1", "CLUSTERING").await,
        Some(vec![]),
        "enableLmq={enable_lmq}"
    );
    // Broadcasting reads the NameServer route in Java; an LMQ has none.
    assert_eq!(
        assignment(&b, lmq, "AsgG", "c0", "BROADCASTING").await,
        None,
        "enableLmq={enable_lmq}"
    );
    // SET_MESSAGE_REQUEST_MODE as LMQPushPopConsumer's switchPop sends it:
    // an LMQ topic and a group nobody created.
    let set = serde_json::json!({"topic": lmq, "consumerGroup": "CID_LMQ_POP_1",
        "mode": "POP", "popShareQueueNum": 8});
    let r = call(&b, RequestCode::SetMessageRequestMode, set).await;
    if !enable_lmq {
        // No topic config answers an LMQ name: Java's TOPIC_NOT_EXIST.
        assert_eq!(
            (r.code, r.remark.as_deref()),
            (17, Some("topic[%LMQ%asg] not exist"))
        );
        broker.shutdown().await;
        return;
    }
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let all = call(
        &b,
        RequestCode::GetAllSubscriptiongroupConfig,
        serde_json::Value::Null,
    )
    .await;
    let all: serde_json::Value =
        serde_json::from_slice(all.body.as_deref().unwrap_or_default()).unwrap();
    assert!(
        all["subscriptionGroupTable"].get("CID_LMQ_POP_1").is_some(),
        "the group was made on use: {all}"
    );
    heartbeat(&c0, "c0", "CID_LMQ_POP_1", lmq).await;
    // One client, share 8: "any queue" (-1) of the LMQ, by POP.
    assert_eq!(
        assignment(&b, lmq, "CID_LMQ_POP_1", "c0", "CLUSTERING").await,
        one(lmq, -1, "POP")
    );
    broker.shutdown().await;
}

#[tokio::test]
async fn query_assignment_and_request_mode_on_an_lmq() {
    query_assignment_of_an_lmq(true).await;
}

#[tokio::test]
async fn query_assignment_of_an_lmq_without_enable_lmq() {
    query_assignment_of_an_lmq(false).await;
}

fn lmq_name(i: usize) -> String {
    format!("%LMQ%stat{i}")
}

/// Sends one message into every one of [`LMQS`] LMQs (through a parent
/// topic), then group `G` pulls each LMQ and commits its offset.
async fn traffic(broker: &Broker) {
    let b = sdk::connect(broker.addr()).await.unwrap();
    create_topic(&b, "StatParent", 1).await;
    for i in 0..LMQS {
        let m = OutMessage {
            body: format!("m{i}").into_bytes(),
            properties: vec![("INNER_MULTI_DISPATCH".into(), lmq_name(i))],
            ..OutMessage::default()
        };
        sdk::send(&b, SendCode::V2, "p", "StatParent", 0, &[m])
            .await
            .unwrap();
    }
    for i in 0..LMQS {
        let pr = sdk::PullRequest {
            group: "G".into(),
            topic: lmq_name(i),
            queue_id: 0,
            offset: 0,
            max_msgs: 32,
            subscription: Some("*".into()),
            suspend: None,
            commit_offset: None,
        };
        let mut got = sdk::pull(&b, &pr).await.unwrap();
        for _ in 0..50 {
            if !got.messages.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            got = sdk::pull(&b, &pr).await.unwrap();
        }
        assert_eq!(got.messages.len(), 1, "{}", lmq_name(i));
        // Committed short of the end: the lag series has something to say.
        sdk::commit_offset(&b, "G", &lmq_name(i), 0, 0)
            .await
            .unwrap();
    }
}

/// The topic (or group) label values of `broker`'s series that name an LMQ.
fn lmq_labels(samples: &[Sample], broker: &str) -> std::collections::BTreeSet<String> {
    samples
        .iter()
        .filter(|s| s.label("broker") == Some(broker))
        .flat_map(|s| {
            s.labels
                .iter()
                .filter(|(k, v)| {
                    ["topic", "group", "consumer_group"].contains(&k.as_str())
                        && v.starts_with("%LMQ%")
                })
                .map(|(_, v)| v.clone())
                .collect::<Vec<_>>()
        })
        .collect()
}

async fn view(b: &RemotingClient, name: &str, key: &str) -> RemotingCommand {
    let req = sdk::request(
        RequestCode::ViewBrokerStatsData,
        &[("statsName", name.into()), ("statsKey", key.into())],
    );
    b.invoke(req, TIMEOUT).await.unwrap()
}

async fn stats_of_many_lmqs(backend: CqBackend, lmq_stats: bool) {
    let dir = tempfile::tempdir().unwrap();
    let test = if lmq_stats {
        "lmq-stats-on"
    } else {
        "lmq-stats"
    };
    let mut settings = rmq_tests::metered_settings(dir.path(), backend, test);
    settings.store.enable_lmq = true;
    settings.store.enable_multi_dispatch = true;
    settings.broker.enable_lmq_stats = lmq_stats;
    let name = settings.broker.broker_name.clone();
    let broker = Broker::start(settings).await.unwrap();
    let addr = broker.metrics_addr().expect("metrics endpoint");
    traffic(&broker).await;
    // One dispatch-delay observation per record, not per unit: each of the
    // LMQS records has two units (its parent queue's and its LMQ's).
    let delays = |samples: &[Sample]| -> f64 {
        samples
            .iter()
            .filter(|s| {
                s.label("broker") == Some(name.as_str())
                    && s.name == "rmq_dispatch_delay_seconds_count"
            })
            .map(|s| s.value)
            .sum()
    };
    let samples = scrape_until(addr, "dispatch delays", |s| delays(s) >= LMQS as f64).await;
    assert_eq!(delays(&samples), LMQS as f64, "one observation per record");

    let b = sdk::connect(broker.addr()).await.unwrap();
    let folded = view(&b, "GROUP_GET_NUMS", "%LMQ%@G").await;
    let single = view(&b, "GROUP_GET_NUMS", &format!("{}@G", lmq_name(3))).await;
    if lmq_stats {
        assert_eq!(single.code, 0, "{:?}", single.remark);
        assert_ne!(folded.code, 0, "nothing is folded with enableLmqStats");
    } else {
        assert_eq!(folded.code, 0, "{:?}", folded.remark);
        assert_ne!(single.code, 0, "no item per LMQ: {:?}", single.remark);
    }

    // The sampler labels every series of a group's LMQs `%LMQ%`.
    let want = |samples: &[Sample]| {
        let labels = lmq_labels(samples, &name);
        if lmq_stats {
            labels.len() >= LMQS
        } else {
            labels.contains("%LMQ%")
        }
    };
    let samples = scrape_until(addr, "LMQ series", want).await;
    let labels = lmq_labels(&samples, &name);
    if lmq_stats {
        assert!(
            labels.contains(&lmq_name(0)) && !labels.contains("%LMQ%"),
            "{labels:?}"
        );
    } else {
        let lag: Vec<&Sample> = samples
            .iter()
            .filter(|s| {
                s.label("broker") == Some(name.as_str())
                    && s.name == "rocketmq_consumer_lag_messages"
                    && s.label("topic") == Some("%LMQ%")
            })
            .collect();
        assert_eq!(lag.len(), 1, "one lag series for every LMQ of G: {lag:?}");
        assert_eq!(lag[0].value, LMQS as f64, "the lags of all LMQs summed");
        // Once more after another sampling pass: still only `%LMQ%`.
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        let labels = lmq_labels(&parse(&scrape(addr).await), &name);
        assert_eq!(
            labels,
            std::collections::BTreeSet::from(["%LMQ%".to_owned()]),
            "{backend}"
        );
    }
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_and_metrics_fold_lmqs_file() {
    stats_of_many_lmqs(CqBackend::File, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_and_metrics_fold_lmqs_rocksdb() {
    stats_of_many_lmqs(CqBackend::Rocksdb, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_and_metrics_per_lmq_with_enable_lmq_stats() {
    stats_of_many_lmqs(CqBackend::File, true).await;
}

/// The `topic@group` keys of the broker's consumer offsets.
async fn offset_keys(b: &RemotingClient) -> Vec<String> {
    let r = call(
        b,
        RequestCode::GetAllConsumerOffset,
        serde_json::Value::Null,
    )
    .await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let v: serde_json::Value =
        serde_json::from_slice(r.body.as_deref().unwrap_or_default()).unwrap();
    v["offsetTable"]
        .as_object()
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn delete_group_with_clean_offset_drops_its_lmq_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(lmq_settings(&dir.path().join("store"), CqBackend::Rocksdb))
        .await
        .unwrap();
    let b = sdk::connect(broker.addr()).await.unwrap();
    create_topic(&b, "DelT", 1).await;
    // An ordinary group and an LMQ group, each with offsets on LMQs; the
    // 5.x flag for one, the 4.x one for the other.
    sdk::commit_offset(&b, "Keep", "%LMQ%d1", 0, 5)
        .await
        .unwrap();
    for (group, flag) in [("DelG", "cleanOffset"), ("%LMQ%delg", "removeOffset")] {
        for topic in ["%LMQ%d1", "%LMQ%d2"] {
            sdk::commit_offset(&b, group, topic, 0, 3).await.unwrap();
        }
        let mine = |keys: &[String]| {
            keys.iter()
                .filter(|k| k.ends_with(&format!("@{group}")))
                .count()
        };
        assert_eq!(mine(&offset_keys(&b).await), 2, "{group}");
        let r = sdk::call(
            &b,
            sdk::request(
                RequestCode::DeleteSubscriptionGroup,
                &[("groupName", group.into()), (flag, "true".into())],
            ),
        )
        .await;
        assert!(r.is_ok(), "{r:?}");
        let keys = offset_keys(&b).await;
        assert_eq!(mine(&keys), 0, "{group} ({flag}): {keys:?}");
        assert!(
            keys.contains(&"%LMQ%d1@Keep".to_owned()),
            "other groups keep theirs: {keys:?}"
        );
    }
    broker.shutdown().await;
}
