//! Every row of the request-code table (`docs/request-codes.md`, from
//! `rmq_common::remoting::catalog`) sent to a running broker and its
//! NameServer, with no header: a served code answers anything but
//! REQUEST_CODE_NOT_SUPPORTED where the table says it is served; a code
//! not served answers REQUEST_CODE_NOT_SUPPORTED with the table's reason,
//! never silently. And what the administration codes answer, checked by
//! content on both backends (the Java admin API checks the same answers
//! in `java_client::admin_*`).

use std::time::Duration;

use rmq_broker::broker::Broker;
use rmq_client::{self as sdk, OutMessage, SendCode};
use rmq_common::config::CqBackend;
use rmq_common::remoting::catalog::{Served, CATALOG};
use rmq_common::remoting::{RemotingCommand, RequestCode};

const TIMEOUT: Duration = Duration::from_secs(10);
const NOT_SUPPORTED: i32 = 3;

async fn ask(client: &rmq_client::RemotingClient, req: RemotingCommand) -> RemotingCommand {
    client.invoke(req, TIMEOUT).await.unwrap()
}

/// A broker with its embedded NameServer, and a connection to each.
async fn start(
    backend: CqBackend,
) -> (
    tempfile::TempDir,
    Broker,
    rmq_client::RemotingClient,
    rmq_client::RemotingClient,
) {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(rmq_tests::broker_settings(
        &dir.path().join("store"),
        backend,
    ))
    .await
    .unwrap();
    let b = sdk::connect(broker.addr()).await.unwrap();
    let n = sdk::connect(broker.namesrv_addr().unwrap()).await.unwrap();
    (dir, broker, b, n)
}

async fn walk(backend: CqBackend) {
    let (_dir, broker, b, n) = start(backend).await;
    for entry in CATALOG {
        let code = entry.code;
        let on_broker = ask(&b, RemotingCommand::request(code)).await;
        let on_ns = ask(&n, RemotingCommand::request(code)).await;
        let remark = |r: &RemotingCommand| r.remark.clone().unwrap_or_default();
        match entry.served {
            Served::Broker => {
                assert_ne!(
                    on_broker.code,
                    NOT_SUPPORTED,
                    "{code} on the broker: {}",
                    remark(&on_broker)
                );
                assert_eq!(on_ns.code, NOT_SUPPORTED, "{code} on the NameServer");
                assert!(
                    remark(&on_ns).contains("not served by the NameServer"),
                    "{code}: {}",
                    remark(&on_ns)
                );
            }
            Served::NameServer => {
                assert_ne!(
                    on_ns.code,
                    NOT_SUPPORTED,
                    "{code} on the NameServer: {}",
                    remark(&on_ns)
                );
                if code != RequestCode::GetKvConfig {
                    assert_eq!(on_broker.code, NOT_SUPPORTED, "{code} on the broker");
                    assert!(
                        remark(&on_broker).contains("served by the NameServer"),
                        "{code}: {}",
                        remark(&on_broker)
                    );
                }
            }
            Served::No(why) => {
                for (side, r) in [("broker", &on_broker), ("NameServer", &on_ns)] {
                    assert_eq!(r.code, NOT_SUPPORTED, "{code} on the {side}");
                    assert!(
                        remark(r).contains(why),
                        "{code} on the {side}: {}",
                        remark(r)
                    );
                }
            }
        }
    }
    // A code no table knows is refused by name too.
    let mut unknown = RemotingCommand::request(RequestCode::SendMessage);
    unknown.code = 9_999;
    let r = ask(&b, unknown).await;
    assert_eq!(r.code, NOT_SUPPORTED);
    assert!(r.remark.unwrap().contains("9999"));
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_code_in_the_table_answers_where_it_says_file() {
    walk(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_code_in_the_table_answers_where_it_says_rocksdb() {
    walk(CqBackend::Rocksdb).await;
}

fn ext<'a>(pairs: &[(&'a str, &str)]) -> Vec<(&'a str, String)> {
    pairs.iter().map(|(k, v)| (*k, (*v).to_owned())).collect()
}

async fn ok(
    client: &rmq_client::RemotingClient,
    code: RequestCode,
    pairs: &[(&str, &str)],
) -> RemotingCommand {
    let r = ask(client, sdk::request(code, &ext(pairs))).await;
    assert_eq!(r.code, 0, "{code}: {:?}", r.remark);
    r
}

fn json(r: &RemotingCommand) -> serde_json::Value {
    rmq_common::json::parse::parse(r.body.as_deref().unwrap_or_default()).unwrap()
}

/// The administration answers by content: the same on both backends.
async fn admin_answers(backend: CqBackend) -> Vec<String> {
    let (_dir, broker, b, n) = start(backend).await;
    let mut seen = Vec::new();
    let topic = "CodesTopic";
    ok(
        &b,
        RequestCode::UpdateAndCreateTopic,
        &[
            ("topic", topic),
            ("readQueueNums", "2"),
            ("writeQueueNums", "2"),
            ("perm", "6"),
            ("topicFilterType", "SINGLE_TAG"),
        ],
    )
    .await;
    for i in 0..6 {
        let msg = OutMessage {
            body: format!("m{i}").into_bytes(),
            tags: Some("A".into()),
            keys: vec![],
            properties: vec![],
        };
        sdk::send(&b, SendCode::V2, "CodesProducer", topic, i % 2, &[msg])
            .await
            .unwrap();
    }
    for q in 0..2 {
        ok(
            &b,
            RequestCode::UpdateConsumerOffset,
            &[
                ("consumerGroup", "G1"),
                ("topic", topic),
                ("queueId", &q.to_string()),
                ("commitOffset", "1"),
            ],
        )
        .await;
    }

    rmq_tests::wait_dispatched(&broker.context().store);

    // QUERY_CONSUME_QUEUE: the entries of queue 0, through the backend.
    let cq = json(
        &ok(
            &b,
            RequestCode::QueryConsumeQueue,
            &[
                ("topic", topic),
                ("queueId", "0"),
                ("index", "0"),
                ("count", "10"),
            ],
        )
        .await,
    );
    assert_eq!(cq["maxQueueIndex"], 3);
    assert_eq!(cq["minQueueIndex"], 0);
    let entries = cq["queueData"].as_array().unwrap();
    assert_eq!(entries.len(), 3);
    let offsets: Vec<i64> = entries
        .iter()
        .map(|e| e["physicOffset"].as_i64().unwrap())
        .collect();
    assert!(offsets.windows(2).all(|w| w[0] < w[1]), "{offsets:?}");
    assert!(entries
        .iter()
        .all(|e| e["physicSize"].as_i64().unwrap() > 0));
    seen.push(format!("cq {}", entries.len()));
    let past = ok(
        &b,
        RequestCode::QueryConsumeQueue,
        &[
            ("topic", topic),
            ("queueId", "0"),
            ("index", "3"),
            ("count", "1"),
        ],
    )
    .await;
    assert!(past
        .remark
        .unwrap()
        .contains("Index 3 of 0@CodesTopic is not exist!"));
    let missing = ask(
        &b,
        sdk::request(
            RequestCode::QueryConsumeQueue,
            &ext(&[("topic", "Nope"), ("queueId", "0"), ("index", "0")]),
        ),
    )
    .await;
    assert_eq!(missing.code, 1);

    // QUERY_CONSUME_TIME_SPAN: one span per queue, the group 1 behind 3.
    let span = json(
        &ok(
            &b,
            RequestCode::QueryConsumeTimeSpan,
            &[("topic", topic), ("group", "G1")],
        )
        .await,
    );
    let spans = span["consumeTimeSpanSet"].as_array().unwrap();
    assert_eq!(spans.len(), 2);
    for s in spans {
        assert!(s["minTimeStamp"].as_i64().unwrap() > 0);
        assert!(s["maxTimeStamp"].as_i64().unwrap() >= s["minTimeStamp"].as_i64().unwrap());
        assert!(s["consumeTimeStampStr"].as_str().unwrap().contains('#'));
        assert!(s["delayTime"].as_i64().unwrap() >= 0);
    }
    // GET_BROKER_CONSUME_STATS: G1's backlog is 2 + 2.
    let all = json(
        &ok(
            &b,
            RequestCode::GetBrokerConsumeStats,
            &[("isOrder", "false")],
        )
        .await,
    );
    assert_eq!(all["totalDiff"], 4);
    assert!(all["consumeStatsList"].to_string().contains("G1"));
    // CLONE_GROUP_OFFSET, then QUERY_CORRECTION_OFFSET over both groups.
    ok(
        &b,
        RequestCode::CloneGroupOffset,
        &[("srcGroup", "G1"), ("destGroup", "G2"), ("offline", "true")],
    )
    .await;
    let off = ok(
        &b,
        RequestCode::QueryConsumerOffset,
        &[("consumerGroup", "G2"), ("topic", topic), ("queueId", "1")],
    )
    .await;
    assert_eq!(off.ext().get_str("offset"), Some("1"));
    let corr = json(
        &ok(
            &b,
            RequestCode::QueryCorrectionOffset,
            &[
                ("topic", topic),
                ("compareGroup", "G3"),
                ("filterGroups", "G2"),
            ],
        )
        .await,
    );
    assert_eq!(corr["correctionOffsets"]["0"], 1);
    seen.push(format!("corr {}", corr["correctionOffsets"]));
    // VIEW_BROKER_STATS_DATA: the puts are counted (views fill as the
    // sampler runs: the item exists at once).
    let stats = json(
        &ok(
            &b,
            RequestCode::ViewBrokerStatsData,
            &[("statsName", "TOPIC_PUT_NUMS"), ("statsKey", topic)],
        )
        .await,
    );
    assert!(stats.get("statsMinute").is_some() && stats.get("statsDay").is_some());
    let none = ask(
        &b,
        sdk::request(
            RequestCode::ViewBrokerStatsData,
            &ext(&[("statsName", "TOPIC_PUT_NUMS"), ("statsKey", "Nope")]),
        ),
    )
    .await;
    assert_eq!(
        none.remark.as_deref(),
        Some("The stats <TOPIC_PUT_NUMS> <Nope> not exist")
    );
    // System topics, subscription groups, producers.
    let sys = json(&ok(&b, RequestCode::GetSystemTopicListFromBroker, &[]).await);
    assert!(sys["topicList"]
        .to_string()
        .contains("DefaultCluster_REPLY_TOPIC"));
    let mut group = RemotingCommand::request(RequestCode::UpdateAndCreateSubscriptionGroup);
    group.body = Some(br#"{"groupName":"G1","retryMaxTimes":"3"}"#.to_vec().into());
    assert_eq!(ask(&b, group).await.code, 0);
    let groups = json(&ok(&b, RequestCode::GetAllSubscriptiongroupConfig, &[]).await);
    assert_eq!(groups["subscriptionGroupTable"]["G1"]["retryMaxTimes"], 3);
    assert!(groups["dataVersion"]["counter"].as_i64().unwrap() >= 1);
    let producers = json(&ok(&b, RequestCode::GetAllProducerInfo, &[]).await);
    assert!(producers.get("data").is_some());
    // UPDATE_BROKER_CONFIG: a drain refuses sends; a start-only key is
    // refused by name and changes nothing.
    let mut update = RemotingCommand::request(RequestCode::UpdateBrokerConfig);
    update.body = Some(b"brokerPermission=4\n".to_vec().into());
    assert_eq!(ask(&b, update).await.code, 0);
    let msg = OutMessage {
        body: b"x".to_vec(),
        tags: None,
        keys: vec![],
        properties: vec![],
    };
    let refused = sdk::send(
        &b,
        SendCode::V2,
        "CodesProducer",
        topic,
        0,
        std::slice::from_ref(&msg),
    )
    .await
    .unwrap_err();
    assert!(
        refused.to_string().contains("sending message is forbidden"),
        "{refused}"
    );
    let mut bad = RemotingCommand::request(RequestCode::UpdateBrokerConfig);
    bad.body = Some(
        b"brokerPermission=6\nflushDiskType=SYNC_FLUSH\n"
            .to_vec()
            .into(),
    );
    let bad = ask(&b, bad).await;
    assert_eq!(bad.code, 1);
    assert!(bad.remark.unwrap().contains("flushDiskType"));
    let config = String::from_utf8(
        ok(&b, RequestCode::GetBrokerConfig, &[])
            .await
            .body
            .unwrap()
            .to_vec(),
    )
    .unwrap();
    assert!(config.contains("brokerPermission=4"), "{config}");
    let mut back = RemotingCommand::request(RequestCode::UpdateBrokerConfig);
    back.body = Some(b"brokerPermission=6\n".to_vec().into());
    assert_eq!(ask(&b, back).await.code, 0);
    sdk::send(&b, SendCode::V2, "CodesProducer", topic, 0, &[msg])
        .await
        .unwrap();

    // RESUME_CHECK_HALF_MESSAGE: a half is put back with its check count
    // at 0; a message that is not a half is refused by name.
    let tx = rmq_client::TransactionProducer::connect(
        broker.addr(),
        "CodesTx",
        "127.0.0.1@codes-tx",
        std::sync::Arc::new(|_: &rmq_client::CheckedHalf| rmq_client::LocalTxState::Unknown),
    )
    .await
    .unwrap();
    let half_msg = OutMessage {
        body: b"half".to_vec(),
        tags: None,
        keys: vec![],
        properties: vec![],
    };
    let (half, _) = tx.send_half(topic, 0, &half_msg).await.unwrap();
    let half_queue = |b: &Broker| {
        b.context()
            .store
            .max_offset_in_queue(rmq_common::constants::TRANS_HALF_TOPIC, 0)
            .unwrap()
    };
    rmq_tests::wait_dispatched(&broker.context().store);
    let before = half_queue(&broker);
    ok(
        &b,
        RequestCode::ResumeCheckHalfMessage,
        &[("msgId", &half.msg_id)],
    )
    .await;
    rmq_tests::wait_dispatched(&broker.context().store);
    assert_eq!(half_queue(&broker), before + 1);
    let plain = sdk::send(&b, SendCode::V2, "CodesProducer", topic, 0, &[half_msg])
        .await
        .unwrap();
    let refused = ask(
        &b,
        sdk::request(
            RequestCode::ResumeCheckHalfMessage,
            &ext(&[("msgId", &plain.msg_id)]),
        ),
    )
    .await;
    assert_eq!(refused.code, 1);
    assert!(refused.remark.unwrap().contains("not a half message"));
    tx.close().await;

    // NameServer: KV config, topic lists, write perm, settings.
    ok(
        &n,
        RequestCode::PutKvConfig,
        &[("namespace", "NS"), ("key", "k"), ("value", "v")],
    )
    .await;
    let got = ok(
        &n,
        RequestCode::GetKvConfig,
        &[("namespace", "NS"), ("key", "k")],
    )
    .await;
    assert_eq!(got.ext().get_str("value"), Some("v"));
    let list = json(
        &ok(
            &n,
            RequestCode::GetKvlistByNamespace,
            &[("namespace", "NS")],
        )
        .await,
    );
    assert_eq!(list, serde_json::json!({"table": {"k": "v"}}));
    ok(
        &n,
        RequestCode::DeleteKvConfig,
        &[("namespace", "NS"), ("key", "k")],
    )
    .await;
    let gone = ask(
        &n,
        sdk::request(
            RequestCode::GetKvConfig,
            &ext(&[("namespace", "NS"), ("key", "k")]),
        ),
    )
    .await;
    assert_eq!(
        (gone.code, gone.remark.as_deref()),
        (22, Some("No config item, Namespace: NS Key: k"))
    );
    broker.registrar().unwrap().register_now().await.unwrap();
    let by_cluster = json(
        &ok(
            &n,
            RequestCode::GetTopicsByCluster,
            &[("cluster", "DefaultCluster")],
        )
        .await,
    );
    assert!(by_cluster["topicList"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t == topic));
    let sys_ns = json(&ok(&n, RequestCode::GetSystemTopicListFromNs, &[]).await);
    assert!(sys_ns["topicList"].to_string().contains("broker-a"));
    assert_eq!(sys_ns["brokerAddr"], broker.addr().to_string());
    let wiped = ok(
        &n,
        RequestCode::WipeWritePermOfBroker,
        &[("brokerName", "broker-a")],
    )
    .await;
    let count: usize = wiped
        .ext()
        .get_str("wipeTopicCount")
        .unwrap()
        .parse()
        .unwrap();
    assert!(count >= 1);
    let route = json(&ok(&n, RequestCode::GetRouteInfoByTopic, &[("topic", topic)]).await);
    assert_eq!(route["queueDatas"][0]["perm"], 4);
    // The broker's routine re-registration leaves the wipe in place.
    broker.registrar().unwrap().register_now().await.unwrap();
    let route = json(&ok(&n, RequestCode::GetRouteInfoByTopic, &[("topic", topic)]).await);
    assert_eq!(route["queueDatas"][0]["perm"], 4);
    let added = ok(
        &n,
        RequestCode::AddWritePermOfBroker,
        &[("brokerName", "broker-a")],
    )
    .await;
    assert_eq!(
        added
            .ext()
            .get_str("addTopicCount")
            .unwrap()
            .parse::<usize>()
            .unwrap(),
        count
    );
    let route = json(&ok(&n, RequestCode::GetRouteInfoByTopic, &[("topic", topic)]).await);
    assert_eq!(route["queueDatas"][0]["perm"], 6);
    let cfg = String::from_utf8(
        ok(&n, RequestCode::GetNamesrvConfig, &[])
            .await
            .body
            .unwrap()
            .to_vec(),
    )
    .unwrap();
    assert!(
        cfg.contains("namesrvBrokerExpiry=") && cfg.contains("kvConfigPath="),
        "{cfg}"
    );
    let mut path = RemotingCommand::request(RequestCode::UpdateNamesrvConfig);
    path.body = Some(b"kvConfigPath=/tmp/elsewhere\n".to_vec().into());
    let path = ask(&n, path).await;
    assert_eq!(
        (path.code, path.remark.as_deref()),
        (16, Some("Can not update config path"))
    );
    seen.push(format!("wiped {count}"));
    broker.shutdown().await;
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_codes_answer_the_same_on_both_backends() {
    let file = admin_answers(CqBackend::File).await;
    let rocks = admin_answers(CqBackend::Rocksdb).await;
    assert_eq!(file, rocks);
}

async fn heartbeat(client: &rmq_client::RemotingClient, group: &str, topic: &str, model: &str) {
    let mut hb = RemotingCommand::request(RequestCode::HeartBeat);
    hb.body = Some(
        serde_json::json!({
            "clientID": format!("127.0.0.1@{group}"),
            "consumerDataSet": [{
                "groupName": group, "consumeType": "CONSUME_PASSIVELY",
                "messageModel": model, "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
                "subscriptionDataSet": [{"topic": topic, "subString": "*", "subVersion": 1}]
            }]
        })
        .to_string()
        .into_bytes()
        .into(),
    );
    assert_eq!(ask(client, hb).await.code, 0);
}

async fn make_group(client: &rmq_client::RemotingClient, body: serde_json::Value) {
    let mut req = RemotingCommand::request(RequestCode::UpdateAndCreateSubscriptionGroup);
    req.body = Some(body.to_string().into_bytes().into());
    assert_eq!(ask(client, req).await.code, 0);
}

fn pull_of(group: &str, topic: &str) -> sdk::PullRequest {
    sdk::PullRequest {
        group: group.into(),
        topic: topic.into(),
        queue_id: 0,
        offset: 0,
        max_msgs: 8,
        subscription: Some("*".into()),
        suspend: None,
        commit_offset: None,
    }
}

/// Subscription groups are enforced as Java enforces them: consumeEnable,
/// consumeBroadcastEnable, retryQueueNums (the retry topic's queues) and
/// creation on first use; with autoCreateSubscriptionGroup off an unknown
/// group may not pull.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscription_groups_are_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = rmq_tests::broker_settings(&dir.path().join("store"), CqBackend::File);
    settings.broker.namesrv_listen_port = -1;
    let broker = Broker::start(settings).await.unwrap();
    let b = sdk::connect(broker.addr()).await.unwrap();
    let topic = "GroupsTopic";
    ok(
        &b,
        RequestCode::UpdateAndCreateTopic,
        &[
            ("topic", topic),
            ("readQueueNums", "1"),
            ("writeQueueNums", "1"),
        ],
    )
    .await;

    make_group(
        &b,
        serde_json::json!({"groupName": "Off", "consumeEnable": false}),
    )
    .await;
    let e = sdk::pull(&b, &pull_of("Off", topic)).await.unwrap_err();
    assert!(
        e.to_string()
            .contains("subscription group no permission, Off"),
        "{e}"
    );

    make_group(
        &b,
        serde_json::json!({"groupName": "NoBcast", "consumeBroadcastEnable": "false"}),
    )
    .await;
    heartbeat(&b, "NoBcast", topic, "BROADCASTING").await;
    let e = sdk::pull(&b, &pull_of("NoBcast", topic)).await.unwrap_err();
    assert!(
        e.to_string().contains("can not consume by broadcast way"),
        "{e}"
    );

    make_group(
        &b,
        serde_json::json!({"groupName": "Wide", "retryQueueNums": 3}),
    )
    .await;
    heartbeat(&b, "Wide", topic, "CLUSTERING").await;
    let retry = broker.context().topics.get("%RETRY%Wide").unwrap();
    assert_eq!((retry.read_queue_nums, retry.write_queue_nums), (3, 3));
    sdk::pull(&b, &pull_of("Wide", topic)).await.unwrap();

    // First use creates the group with the defaults.
    heartbeat(&b, "Fresh", topic, "CLUSTERING").await;
    let all = json(&ok(&b, RequestCode::GetAllSubscriptiongroupConfig, &[]).await);
    assert_eq!(all["subscriptionGroupTable"]["Fresh"]["retryMaxTimes"], 16);
    broker.shutdown().await;

    // Without auto-creation an unknown group may not pull; a made one may.
    let mut settings = rmq_tests::broker_settings(&dir.path().join("store"), CqBackend::File);
    settings.broker.namesrv_listen_port = -1;
    settings.broker.auto_create_subscription_group = false;
    let broker = Broker::start(settings).await.unwrap();
    let b = sdk::connect(broker.addr()).await.unwrap();
    let e = sdk::pull(&b, &pull_of("Unknown", topic)).await.unwrap_err();
    assert!(
        e.to_string()
            .contains("subscription group [Unknown] does not exist"),
        "{e}"
    );
    sdk::pull(&b, &pull_of("Fresh", topic)).await.unwrap();
    broker.shutdown().await;
}
