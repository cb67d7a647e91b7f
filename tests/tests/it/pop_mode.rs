//! Server-side assignment and POP mode for remoting clients (RocketMQ
//! 5.x): SET_MESSAGE_REQUEST_MODE with 5.3.3's refusals, the table in
//! `config/messageRequestMode.json` (GET_ALL_MESSAGE_REQUEST_MODE, kept
//! over a restart), QUERY_ASSIGNMENT over the group's online clients,
//! heartbeat v2 on the wire; and end to end, on both consume-queue
//! backends, a group switched to POP by the stock mqadmin 5.3.3
//! (`setConsumeMode`) and a stock 5.3.3 DefaultMQPushConsumer with
//! clientRebalance off that pops every message once and, once they are
//! acked, gets none again (`PopModeScenario.java`, with heartbeat v2 on).

use std::path::Path;
use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_client::{self as sdk, RemotingClient};
use rmq_common::config::CqBackend;
use rmq_common::remoting::{RemotingCommand, RequestCode};
use rmq_tests::java::{self, Client};

use crate::mqadmin::{ADMIN_MAIN, LOGBACK_TOOLS};

/// Longest one request may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Longest one mqadmin command may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// The Java scenario's own deadline (`--timeout-ms`).
const SCENARIO_DEADLINE: Duration = Duration::from_secs(90);
/// Backstop: a Java run alive this long is killed.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// Pause between probes of a bounded wait.
const PROBE: Duration = Duration::from_millis(50);
/// Queues of the test topics.
const QUEUES: i32 = 4;

async fn call(b: &RemotingClient, code: RequestCode, body: serde_json::Value) -> RemotingCommand {
    let req = RemotingCommand::request(code).with_body(body.to_string().into_bytes());
    b.invoke(req, TIMEOUT).await.unwrap()
}

fn json(r: &RemotingCommand) -> serde_json::Value {
    serde_json::from_slice(r.body.as_deref().unwrap_or_default())
        .unwrap_or_else(|e| panic!("answer {} ({:?}) is not JSON: {e}", r.code, r.remark))
}

async fn create_topic(b: &RemotingClient, topic: &str) {
    let q = QUEUES.to_string();
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

async fn create_group(b: &RemotingClient, group: &str) {
    let r = call(
        b,
        RequestCode::UpdateAndCreateSubscriptionGroup,
        serde_json::json!({ "groupName": group }),
    )
    .await;
    assert_eq!(r.code, 0, "create group {group}: {:?}", r.remark);
}

fn heartbeat_body(
    client: &str,
    group: &str,
    topic: &str,
    v2: Option<(i32, bool)>,
) -> serde_json::Value {
    let (fingerprint, without_sub) = v2.unwrap_or((0, false));
    let subs = if without_sub {
        serde_json::json!([])
    } else {
        serde_json::json!([{ "topic": topic, "subString": "*", "subVersion": 1 }])
    };
    serde_json::json!({
        "clientID": client,
        "producerDataSet": [],
        "consumerDataSet": [{
            "groupName": group, "consumeType": "CONSUME_PASSIVELY",
            "messageModel": "CLUSTERING", "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
            "subscriptionDataSet": subs
        }],
        "heartbeatFingerprint": fingerprint,
        "withoutSub": without_sub
    })
}

/// The (queue id, mode) pairs of a QUERY_ASSIGNMENT answer; `None` when
/// the set is absent.
async fn assignment(
    b: &RemotingClient,
    topic: &str,
    group: &str,
    client: &str,
    strategy: &str,
) -> Option<Vec<(i64, String)>> {
    let r = call(
        b,
        RequestCode::QueryAssignment,
        serde_json::json!({
            "topic": topic, "consumerGroup": group, "clientId": client,
            "strategyName": strategy, "messageModel": "CLUSTERING"
        }),
    )
    .await;
    assert_eq!(r.code, 0, "QUERY_ASSIGNMENT: {:?}", r.remark);
    let body = json(&r);
    let set = body.get("messageQueueAssignments")?.as_array()?.clone();
    let mut out: Vec<(i64, String)> = set
        .iter()
        .map(|a| {
            assert_eq!(a["messageQueue"]["topic"], topic, "{a}");
            assert_eq!(a["messageQueue"]["brokerName"], "broker-a", "{a}");
            (
                a["messageQueue"]["queueId"].as_i64().unwrap(),
                a["mode"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    out.sort();
    Some(out)
}

fn pull(ids: &[i64]) -> Vec<(i64, String)> {
    ids.iter().map(|i| (*i, "PULL".to_owned())).collect()
}

#[tokio::test]
async fn set_mode_refusals_table_and_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = rmq_tests::broker_settings(&dir.path().join("store"), CqBackend::File);
    // An unknown group is refused only when groups are not made on use
    // (with autoCreateSubscriptionGroup, Java's findSubscriptionGroupConfig
    // creates it; lmq_admin checks that side).
    settings.broker.auto_create_subscription_group = false;
    let broker = Broker::start(settings.clone()).await.unwrap();
    let b = sdk::connect(broker.addr()).await.unwrap();
    create_topic(&b, "ModeT").await;
    create_group(&b, "ModeG").await;
    let set = |topic: &str, group: &str| serde_json::json!({"topic": topic, "consumerGroup": group, "mode": "POP", "popShareQueueNum": 1});
    for (body, code, remark) in [
        (
            set("%RETRY%ModeG", "ModeG"),
            16,
            "retry topic is not allowed to set mode".to_owned(),
        ),
        (
            set("NoSuchT", "ModeG"),
            17,
            "topic[NoSuchT] not exist".to_owned(),
        ),
        (
            set("ModeT", "NoSuchG"),
            26,
            "subscription group does not exist".to_owned(),
        ),
    ] {
        let r = call(&b, RequestCode::SetMessageRequestMode, body.clone()).await;
        assert_eq!(
            (r.code, r.remark.as_deref()),
            (code, Some(remark.as_str())),
            "{body}"
        );
    }
    let r = call(
        &b,
        RequestCode::SetMessageRequestMode,
        serde_json::json!("not an object"),
    )
    .await;
    assert_ne!(r.code, 0, "a body that is not the request is refused");
    let r = call(
        &b,
        RequestCode::SetMessageRequestMode,
        set("ModeT", "ModeG"),
    )
    .await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let want = serde_json::json!({"messageRequestModeMap": {"ModeT": {"ModeG":
        {"topic": "ModeT", "consumerGroup": "ModeG", "mode": "POP", "popShareQueueNum": 1}}}});
    let all = call(
        &b,
        RequestCode::GetAllMessageRequestMode,
        serde_json::Value::Null,
    )
    .await;
    assert_eq!((all.code, json(&all)), (0, want.clone()));
    let file = settings
        .store
        .store_path_root_dir
        .join("config/messageRequestMode.json");
    let on_disk: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(on_disk, want, "written before the answer");
    drop(b);
    broker.shutdown().await;

    let broker = Broker::start(settings).await.unwrap();
    let b = sdk::connect(broker.addr()).await.unwrap();
    let all = call(
        &b,
        RequestCode::GetAllMessageRequestMode,
        serde_json::Value::Null,
    )
    .await;
    assert_eq!(json(&all), want, "kept over a restart");
    broker.shutdown().await;
}

#[tokio::test]
async fn query_assignment_over_online_clients_in_pull_and_pop_mode() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(rmq_tests::broker_settings(
        &dir.path().join("store"),
        CqBackend::Rocksdb,
    ))
    .await
    .unwrap();
    let b = sdk::connect(broker.addr()).await.unwrap();
    create_topic(&b, "AsgT").await;
    // Nobody online yet: no result.
    assert_eq!(assignment(&b, "AsgT", "AsgG", "c0", "AVG").await, None);
    // Two clients of the group, each on its own connection.
    let c0 = sdk::connect(broker.addr()).await.unwrap();
    let c1 = sdk::connect(broker.addr()).await.unwrap();
    for (conn, id) in [(&c0, "c0"), (&c1, "c1")] {
        let r = call(
            conn,
            RequestCode::HeartBeat,
            heartbeat_body(id, "AsgG", "AsgT", None),
        )
        .await;
        assert_eq!(r.code, 0, "{:?}", r.remark);
    }
    assert_eq!(
        assignment(&b, "AsgT", "AsgG", "c0", "AVG").await,
        Some(pull(&[0, 1]))
    );
    assert_eq!(
        assignment(&b, "AsgT", "AsgG", "c1", "AVG").await,
        Some(pull(&[2, 3]))
    );
    assert_eq!(
        assignment(&b, "AsgT", "AsgG", "c1", "AVG_BY_CIRCLE").await,
        Some(pull(&[1, 3]))
    );
    assert_eq!(
        assignment(&b, "AsgT", "AsgG", "stranger", "AVG").await,
        Some(vec![])
    );
    assert_eq!(
        assignment(&b, "AsgT", "AsgG", "c0", "CONSISTENT_HASH").await,
        None
    );
    assert_eq!(assignment(&b, "NoSuchT", "AsgG", "c0", "AVG").await, None);
    // A client that left no longer counts.
    c1.close().await;
    let start = Instant::now();
    while assignment(&b, "AsgT", "AsgG", "c0", "AVG").await != Some(pull(&[0, 1, 2, 3])) {
        assert!(start.elapsed() < TIMEOUT, "c1 still counted after it left");
        tokio::time::sleep(PROBE).await;
    }

    // Switched to POP: with one client any share is "every queue".
    let r = call(
        &b,
        RequestCode::SetMessageRequestMode,
        serde_json::json!({"topic": "AsgT", "consumerGroup": "AsgG", "mode": "POP", "popShareQueueNum": 1}),
    )
    .await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let pop = Some(vec![(-1, "POP".to_owned())]);
    assert_eq!(assignment(&b, "AsgT", "AsgG", "c0", "AVG").await, pop);
    // The group's retry topic stays PULL.
    assert_eq!(
        assignment(&b, "%RETRY%AsgG", "AsgG", "c0", "AVG").await,
        Some(pull(&[0]))
    );
    drop(c0);
    broker.shutdown().await;
}

#[tokio::test]
async fn heartbeat_v2_answers_and_keeps_subscriptions() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(rmq_tests::broker_settings(
        &dir.path().join("store"),
        CqBackend::File,
    ))
    .await
    .unwrap();
    let c = sdk::connect(broker.addr()).await.unwrap();
    let beat = |v2: Option<(i32, bool)>| {
        let c = &c;
        async move {
            let r = call(
                c,
                RequestCode::HeartBeat,
                heartbeat_body("hb@1", "HbG", "HbT", v2),
            )
            .await;
            assert_eq!(r.code, 0, "{:?}", r.remark);
            let get = |k: &str| r.ext_fields.get(k).cloned().unwrap_or_default();
            assert_eq!(get("IS_SUPPORT_HEART_BEAT_V2"), "true", "{v2:?}");
            get("IS_SUB_CHANGE")
        }
    };
    assert_eq!(beat(None).await, "true", "v1 always says changed");
    assert_eq!(beat(Some((7, false))).await, "true", "first v2 after v1");
    assert_eq!(beat(Some((7, false))).await, "false");
    assert_eq!(
        beat(Some((7, true))).await,
        "false",
        "without subscriptions, same print"
    );
    let subs = |r: &RemotingCommand| json(r)["subscriptionTable"].clone();
    let conns = sdk::call(
        &c,
        sdk::request(
            RequestCode::GetConsumerConnectionList,
            &[("consumerGroup", "HbG".into())],
        ),
    )
    .await
    .unwrap();
    assert!(
        subs(&conns).get("HbT").is_some(),
        "withoutSub kept the subscription: {}",
        json(&conns)
    );
    assert_eq!(
        beat(Some((8, true))).await,
        "true",
        "a new print asks for the full heartbeat"
    );
    broker.shutdown().await;
}

// ---- the stock 5.3.3 client and mqadmin -----------------------------------

/// Runs the stock mqadmin 5.3.3 (`MQAdminStartup`) with `args -n ns`;
/// it exits 0 even when a command fails, so the output must hold `want`.
async fn mqadmin(home: &Path, ns: std::net::SocketAddr, args: &[&str], want: &str) {
    let mut all: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    all.extend(["-n".to_owned(), ns.to_string()]);
    let run = java::run_main(Client::V5, ADMIN_MAIN, &all, home, COMMAND_TIMEOUT).await;
    let what = format!("mqadmin {}", args.join(" "));
    assert!(run.succeeded(), "{}", run.report(&what));
    assert!(
        run.stdout.contains(want) && !run.stderr.contains("Exception"),
        "{what} should print {want:?}\n{}",
        run.report(&what)
    );
}

async fn push_consumer_switched_to_pop(backend: CqBackend) {
    if std::env::var_os("RUST_LOG").is_some() {
        rmq_broker::logging::init();
    }
    java::require_java_and_jars(Client::V5);
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("java");
    std::fs::create_dir_all(home.join("conf")).unwrap();
    std::fs::write(home.join("conf/logback_tools.xml"), LOGBACK_TOOLS).unwrap();
    let settings = crate::proxy_grpc::paired_pop_settings(dir.path(), backend);
    let broker = Broker::start(settings).await.unwrap();
    let ns = broker.namesrv_addr().expect("embedded NameServer");
    let addr = broker.addr().to_string();
    // PopModeScenario's names: <prefix>_popmode_<role>.
    let prefix = format!("PopMode{backend}");
    let (topic, group) = (format!("{prefix}_popmode_t"), format!("{prefix}_popmode_g"));
    let q = QUEUES.to_string();
    mqadmin(
        &home,
        ns,
        &["updateTopic", "-b", &addr, "-t", &topic, "-r", &q, "-w", &q],
        "success",
    )
    .await;
    mqadmin(
        &home,
        ns,
        &["updateSubGroup", "-b", &addr, "-g", &group],
        "success",
    )
    .await;
    mqadmin(
        &home,
        ns,
        &[
            "setConsumeMode",
            "-b",
            &addr,
            "-t",
            &topic,
            "-g",
            &group,
            "-m",
            "POP",
            "-q",
            "2",
        ],
        &format!("topic[{topic}] group[{group}] consume mode[POP] popShareQueueNum[2]"),
    )
    .await;

    let args: Vec<String> = [
        "--namesrv",
        &ns.to_string(),
        "--scenario",
        "popmode",
        "--topic-prefix",
        &prefix,
        "--timeout-ms",
        &SCENARIO_DEADLINE.as_millis().to_string(),
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let run = java::run_main_with(
        Client::V5,
        &["-Dcom.rocketmq.heartbeat.v2=true"],
        "rmqcheck.ClientSuite",
        &args,
        &home,
        RUN_TIMEOUT,
    )
    .await;
    broker.shutdown().await;
    let what = format!(
        "java V5 popmode ({backend}; client log under {})",
        home.join("logs").display()
    );
    assert!(run.succeeded(), "{}", run.report(&what));
    for line in ["PASS popmode", "\"check\":\"heartbeat v2\""] {
        assert!(
            run.stdout.lines().any(|l| l.contains(line)),
            "{}",
            run.report(&format!("{what} printed no {line:?}"))
        );
    }
    eprintln!("{what}:\n{}", run.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java5_push_consumer_switched_to_pop_file() {
    push_consumer_switched_to_pop(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java5_push_consumer_switched_to_pop_rocksdb() {
    push_consumer_switched_to_pop(CqBackend::Rocksdb).await;
}
