//! One store, two kinds of consumer at once: on one topic of this broker, a
//! remoting push consumer group (the stock `rmqcheck.ClientSuite`, 4.9.8 on
//! the file backend, 5.3.3 on the RocksDB one) and a gRPC SimpleConsumer
//! group (the stock 5.0.7 client at the broker's gRPC endpoint) consume at
//! the same time, while gRPC sends more: each group gets every message
//! exactly once.

use std::collections::BTreeSet;
use std::path::Path;

use rmq_common::config::CqBackend;
use rmq_tests::java::{self, Client, JavaRun};

use crate::grpc_direct::start_direct;
use crate::proxy_grpc::{create_topic, lines, scenario, Line, RUN_TIMEOUT, SCENARIO_DEADLINE};
use crate::proxy_grpc_pop::{create_group, received_in_order};

/// Messages sent before the consumers start, and again while they run.
const EACH_BATCH: usize = 10;

async fn send(home: &Path, endpoint: &str, topic: &str, mode: &str, tag: &str) -> JavaRun {
    let count = EACH_BATCH.to_string();
    scenario(
        home,
        &[
            "--scenario",
            "send",
            "--endpoint",
            endpoint,
            "--topic",
            topic,
            "--count",
            &count,
            "--tag",
            tag,
            "--mode",
            mode,
        ],
    )
    .await
}

/// The remoting consumer (`consume` of `rmqcheck.ClientSuite`) of `group`.
async fn remoting_consume(
    client: Client,
    home: &Path,
    namesrv: &str,
    topic: &str,
    group: &str,
    count: usize,
) -> JavaRun {
    let args: Vec<String> = [
        "--namesrv",
        namesrv,
        "--scenario",
        "consume",
        "--topic",
        topic,
        "--group",
        group,
        "--count",
        &count.to_string(),
        "--timeout-ms",
        &SCENARIO_DEADLINE.as_millis().to_string(),
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let run = java::run_main(client, "rmqcheck.ClientSuite", &args, home, RUN_TIMEOUT).await;
    assert!(
        run.succeeded() && run.stdout.lines().any(|l| l.starts_with("PASS consume")),
        "{}",
        run.report(&format!("remoting consumer {client:?}"))
    );
    run
}

fn assert_once(run: &JavaRun, sent: &BTreeSet<Line>, who: &str) {
    let got = received_in_order(run);
    let distinct: BTreeSet<Line> = got.iter().cloned().collect();
    assert_eq!(
        (got.len(), &distinct),
        (sent.len(), sent),
        "{who} must get every message exactly once\n{}",
        run.report(who)
    );
}

async fn mixed(backend: CqBackend, remoting: Client) {
    java::require_java_and_jars(remoting);
    let d = start_direct(backend, |_| {}).await;
    let (topic, remoting_group, grpc_group) =
        ("GrpcMixedTopic", "MixedRemotingGroup", "MixedGrpcGroup");
    create_topic(&d.broker, topic, 4, "NORMAL").await;
    create_group(&d.broker, remoting_group, false).await;
    create_group(&d.broker, grpc_group, false).await;
    let namesrv = d.broker.namesrv_addr().expect("embedded NameServer");
    let (remoting_home, grpc_home) = (d.home.join("remoting"), d.home.join("grpc"));
    for h in [&remoting_home, &grpc_home] {
        std::fs::create_dir_all(h).unwrap();
    }
    let before = send(&grpc_home, &d.endpoint, topic, "sync", "TagA").await;
    let mut sent = lines(&before, "SENT");
    let total = (2 * EACH_BATCH).to_string();
    let namesrv = namesrv.to_string();
    let simple_args = [
        "--scenario",
        "simple",
        "--endpoint",
        &d.endpoint,
        "--topic",
        topic,
        "--group",
        grpc_group,
        "--count",
        &total,
    ];
    let (remote, grpc, during) = tokio::join!(
        remoting_consume(
            remoting,
            &remoting_home,
            &namesrv,
            topic,
            remoting_group,
            2 * EACH_BATCH
        ),
        scenario(&grpc_home, &simple_args),
        send(&grpc_home, &d.endpoint, topic, "async", "TagB"),
    );
    sent.extend(lines(&during, "SENT"));
    assert_eq!(sent.len(), 2 * EACH_BATCH, "{}", during.report("send"));
    assert_once(&remote, &sent, "the remoting group");
    assert_once(&grpc, &sent, "the gRPC group");
    d.broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_and_4x_remoting_groups_share_a_topic_file() {
    mixed(CqBackend::File, Client::V4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_and_5x_remoting_groups_share_a_topic_rocksdb() {
    mixed(CqBackend::Rocksdb, Client::V5).await;
}
