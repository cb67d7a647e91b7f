//! Apache's rocketmq-proxy 5.3.3 (cluster mode) in front of this broker's
//! embedded NameServer, and the stock gRPC client (rocketmq-client-java
//! 5.0.7) sending through it: the proxy starts (it needs the topic named
//! after the cluster, and creates its heartbeat-sync topic on the broker
//! through UPDATE_AND_CREATE_TOPIC, reading the route right after the
//! answer), and messages sent by gRPC, sync and async, with tags and keys,
//! reach a 4.9.8 push consumer on the broker: exactly those, no more.
//!
//! The body takes the endpoint: `grpc_direct_5x` runs it with the client
//! straight at the broker.
//!
//! Needs the proxy's jars ([`rmq_tests::grpc_proxy`]) and the gRPC suite
//! (`tests/java/grpc`), both fetched and built by `scripts/setup.sh`.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use rmq_broker::broker::Broker;
use rmq_broker::config::Settings;
use rmq_client as sdk;
use rmq_common::config::CqBackend;
use rmq_common::remoting::RequestCode;
use rmq_tests::grpc_proxy::ApacheProxy;
use rmq_tests::java::{self, Client, JavaRun};

/// The JVM's own deadline for one scenario (`--timeout-ms`).
pub(crate) const SCENARIO_DEADLINE: Duration = Duration::from_secs(60);
/// Backstop: a run still alive this long is killed.
pub(crate) const RUN_TIMEOUT: Duration = Duration::from_secs(90);
/// Longest one request to the broker may take.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// The heartbeat-sync topic the proxy creates at start (`ProxyConfig`'s
/// `heartbeatSyncerTopicName`).
const HEARTBEAT_TOPIC: &str = "DefaultHeartBeatSyncerTopic";

/// One line `SENT|RECV <tab> id <tab> tag <tab> keys <tab> body` of the
/// suite.
pub(crate) type Line = (String, String, String, String);

pub(crate) fn lines(run: &JavaRun, kind: &str) -> BTreeSet<Line> {
    run.stdout
        .lines()
        .filter_map(|l| l.strip_prefix(kind).and_then(|r| r.strip_prefix('\t')))
        .map(|r| {
            let f: Vec<&str> = r.splitn(4, '\t').collect();
            let field = |i: usize| f.get(i).copied().unwrap_or_default().to_owned();
            (field(0), field(1), field(2), field(3))
        })
        .collect()
}

pub(crate) async fn scenario(home: &Path, args: &[&str]) -> JavaRun {
    let mut all: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    all.push("--timeout-ms".into());
    all.push(SCENARIO_DEADLINE.as_millis().to_string());
    let run = java::run_main(Client::Grpc, "rmqgrpc.GrpcSuite", &all, home, RUN_TIMEOUT).await;
    assert!(
        run.succeeded() && run.stdout.lines().any(|l| l.starts_with("PASS ")),
        "{}",
        run.report(&format!("rmqgrpc {args:?}"))
    );
    run
}

/// Creates `topic` of `message_type` (NORMAL, FIFO...) on the broker
/// (UPDATE_AND_CREATE_TOPIC, which answers once the NameServer has the
/// route).
pub(crate) async fn create_topic(broker: &Broker, topic: &str, queues: i32, message_type: &str) {
    let client = sdk::connect(broker.addr()).await.unwrap();
    let req = sdk::request(
        RequestCode::UpdateAndCreateTopic,
        &[
            ("topic", topic.to_owned()),
            ("readQueueNums", queues.to_string()),
            ("writeQueueNums", queues.to_string()),
            ("perm", "6".to_owned()),
            ("attributes", format!("+message.type={message_type}")),
        ],
    );
    let resp = client.invoke(req, CALL_TIMEOUT).await.unwrap();
    assert_eq!(resp.code, 0, "create {topic}: {:?}", resp.remark);
}

/// A broker with `settings` and Apache's proxy in front of it (under
/// `<dir>/proxy`, with the `proxy.json` keys `extra`).
pub(crate) async fn broker_and_proxy(
    dir: &Path,
    settings: Settings,
    extra: serde_json::Map<String, serde_json::Value>,
) -> (Broker, ApacheProxy) {
    let broker = Broker::start(settings).await.unwrap();
    let namesrv = broker.namesrv_addr().expect("embedded NameServer");
    let cluster = broker.context().settings.broker.broker_cluster_name.clone();
    let proxy = ApacheProxy::start_with(&dir.join("proxy"), namesrv, &cluster, extra).await;
    (broker, proxy)
}

/// Settings on `backend` under `<dir>/store`, the RocksDB consume queue
/// with the RocksDB POP state and the file one with the revive topic, so
/// the tests that run both backends also run both POP-state forms.
pub(crate) fn paired_pop_settings(dir: &Path, backend: CqBackend) -> Settings {
    let mut settings = rmq_tests::broker_settings(&dir.join("store"), backend);
    settings.broker.pop.pop_kv_store = backend == CqBackend::Rocksdb;
    settings
}

/// gRPC sends to `endpoint`, sync and async, with tags and keys, reach a
/// 4.9.8 push consumer on `broker`: exactly those, no more. Makes the topic
/// first (before any gRPC client asks for its route).
pub(crate) async fn sends_reach_a_4x_consumer(broker: &Broker, home: &Path, endpoint: &str) {
    let namesrv = broker.namesrv_addr().expect("embedded NameServer");
    let topic = "GrpcSendTopic";
    create_topic(broker, topic, 4, "NORMAL").await;
    let mut sent = BTreeSet::new();
    for (mode, tag) in [("sync", "TagA"), ("async", "TagB")] {
        let run = scenario(
            home,
            &[
                "--scenario",
                "send",
                "--endpoint",
                endpoint,
                "--topic",
                topic,
                "--count",
                "5",
                "--tag",
                tag,
                "--mode",
                mode,
            ],
        )
        .await;
        let these = lines(&run, "SENT");
        assert_eq!(these.len(), 5, "{}", run.report("send"));
        sent.extend(these);
    }

    let run = scenario(
        home,
        &[
            "--scenario",
            "consume4",
            "--namesrv",
            &namesrv.to_string(),
            "--topic",
            topic,
            "--group",
            "GrpcCheckGroup",
            "--count",
            &sent.len().to_string(),
        ],
    )
    .await;
    let received = lines(&run, "RECV");
    assert_eq!(
        received,
        sent,
        "what the 4.x consumer received is not what gRPC sent\n{}",
        run.report("consume4")
    );
    // Exactly those: the topic holds no other message.
    let store = &broker.context().store;
    let stored: i64 = (0..4)
        .map(|q| store.max_offset_in_queue(topic, q).unwrap())
        .sum();
    assert_eq!(stored, 10, "messages in {topic} on the broker");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_sends_through_apache_proxy_reach_a_4x_consumer() {
    java::require_java_and_jars(Client::Grpc);
    let dir = tempfile::tempdir().unwrap();
    let settings = rmq_tests::broker_settings(&dir.path().join("store"), CqBackend::File);
    let (broker, proxy) = broker_and_proxy(dir.path(), settings, serde_json::Map::new()).await;
    // What the proxy made at start, through the broker's admin code.
    assert!(
        broker.context().topics.get(HEARTBEAT_TOPIC).is_some(),
        "the proxy started without its heartbeat-sync topic on the broker\n{}",
        proxy.report()
    );

    // The topic is made before any gRPC client asks for its route: the
    // proxy caches a missing route for a while.
    let home = dir.path().join("java");
    std::fs::create_dir_all(&home).unwrap();
    sends_reach_a_4x_consumer(&broker, &home, &proxy.grpc_endpoint()).await;
    drop(proxy);
    broker.shutdown().await;
}
