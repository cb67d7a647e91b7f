//! POP through Apache's rocketmq-proxy 5.3.3 (cluster mode): the stock gRPC
//! client (rocketmq-client-java 5.0.7) consumes from this broker. A
//! SimpleConsumer receives and acks exactly what gRPC sent, each once, and
//! a tag filter gets exactly its tag; an unacked message comes back after
//! its invisible time with delivery attempt 2, and a shortened invisible
//! time (CHANGE_MESSAGE_INVISIBLETIME) brings it back sooner; a FIFO group
//! (consumeMessageOrderly, which the proxy reads with
//! GET_SUBSCRIPTIONGROUP_CONFIG) on a FIFO topic gets each message group in
//! send order, and nothing of a group while an earlier one is unacked; a
//! PushConsumer gets every message once.
//! On both consume-queue backends, the RocksDB one with the RocksDB POP
//! state and the file one with the revive topic. The Java side checks
//! attempts and timing; these tests check the content.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rmq_broker::broker::Broker;
use rmq_client as sdk;
use rmq_common::config::CqBackend;
use rmq_common::remoting::{RemotingCommand, RequestCode};
use rmq_tests::java::{self, Client};

use crate::proxy_grpc::{
    broker_and_proxy, create_topic, lines, paired_pop_settings, scenario, Line, CALL_TIMEOUT,
};

/// Creates the subscription group `name` (the proxy refuses a group the
/// broker does not know), FIFO when `orderly`.
pub(crate) async fn create_group(broker: &Broker, name: &str, orderly: bool) {
    let client = sdk::connect(broker.addr()).await.unwrap();
    let mut req = RemotingCommand::request(RequestCode::UpdateAndCreateSubscriptionGroup);
    let body = serde_json::json!({"groupName": name, "consumeMessageOrderly": orderly});
    req.body = Some(body.to_string().into_bytes().into());
    let resp = client.invoke(req, CALL_TIMEOUT).await.unwrap();
    assert_eq!(resp.code, 0, "create group {name}: {:?}", resp.remark);
}

/// Sends `count` messages with `tag` through the proxy (`send` scenario),
/// in `message_groups` message groups when not 0; the SENT lines.
pub(crate) async fn send(
    home: &Path,
    endpoint: &str,
    topic: &str,
    tag: &str,
    mode: &str,
    count: usize,
    message_groups: usize,
) -> BTreeSet<Line> {
    let (count, groups) = (count.to_string(), message_groups.to_string());
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
            &count,
            "--tag",
            tag,
            "--mode",
            mode,
            "--message-groups",
            &groups,
        ],
    )
    .await;
    let sent = lines(&run, "SENT");
    assert_eq!(sent.len().to_string(), count, "{}", run.report("send"));
    sent
}

/// The RECV lines of a consuming scenario, in the order received.
pub(crate) fn received_in_order(run: &java::JavaRun) -> Vec<Line> {
    run.stdout
        .lines()
        .filter(|l| l.starts_with("RECV\t"))
        .map(|l| {
            let f: Vec<&str> = l.splitn(5, '\t').collect();
            let field = |i: usize| f.get(i).copied().unwrap_or_default().to_owned();
            (field(1), field(2), field(3), field(4))
        })
        .collect()
}

/// SimpleConsumer receive and ack, and a tag filter.
pub(crate) async fn simple(broker: &Broker, home: &Path, endpoint: &str) {
    let topic = "GrpcPopTopic";
    create_topic(broker, topic, 4, "NORMAL").await;
    for g in ["GrpcPopAll", "GrpcPopTagA"] {
        create_group(broker, g, false).await;
    }
    let tag_a = send(home, endpoint, topic, "TagA", "sync", 5, 0).await;
    let tag_b = send(home, endpoint, topic, "TagB", "async", 5, 0).await;
    let all: BTreeSet<Line> = tag_a.union(&tag_b).cloned().collect();
    for (group, filter, want) in [("GrpcPopAll", "*", &all), ("GrpcPopTagA", "TagA", &tag_a)] {
        let count = want.len().to_string();
        let run = scenario(
            home,
            &[
                "--scenario",
                "simple",
                "--endpoint",
                endpoint,
                "--topic",
                topic,
                "--group",
                group,
                "--filter",
                filter,
                "--count",
                &count,
            ],
        )
        .await;
        let got = received_in_order(&run);
        let distinct: BTreeSet<Line> = got.iter().cloned().collect();
        assert_eq!(
            got.len(),
            distinct.len(),
            "a message twice\n{}",
            run.report(group)
        );
        assert_eq!(
            &distinct,
            want,
            "{group} ({filter}) received\n{}",
            run.report(group)
        );
    }
}

/// Redelivery after the invisible time, and after a shortened one.
pub(crate) async fn redeliver(broker: &Broker, home: &Path, endpoint: &str) {
    let topic = "GrpcRedeliverTopic";
    create_topic(broker, topic, 1, "NORMAL").await;
    create_group(broker, "GrpcRedeliverGroup", false).await;
    let sent = send(home, endpoint, topic, "TagA", "sync", 1, 0).await;
    let run = scenario(
        home,
        &[
            "--scenario",
            "redeliver",
            "--endpoint",
            endpoint,
            "--topic",
            topic,
            "--group",
            "GrpcRedeliverGroup",
        ],
    )
    .await;
    let got = received_in_order(&run);
    let once: Vec<Line> = sent.into_iter().collect();
    assert_eq!(
        got,
        [once.clone(), once.clone(), once].concat(),
        "{}",
        run.report("redeliver")
    );
}

/// FIFO topic, FIFO group: each message group in send order.
pub(crate) async fn fifo(broker: &Broker, home: &Path, endpoint: &str) {
    let topic = "GrpcFifoTopic";
    let (count, groups) = (12, 3);
    create_topic(broker, topic, 2, "FIFO").await;
    create_group(broker, "GrpcFifoGroup", true).await;
    let sent = send(home, endpoint, topic, "TagA", "sync", count, groups).await;
    let run = scenario(
        home,
        &[
            "--scenario",
            "fifo",
            "--endpoint",
            endpoint,
            "--topic",
            topic,
            "--group",
            "GrpcFifoGroup",
            "--count",
            &count.to_string(),
        ],
    )
    .await;
    let got = received_in_order(&run);
    let distinct: BTreeSet<Line> = got.iter().cloned().collect();
    assert_eq!(
        (got.len(), &distinct),
        (count, &sent),
        "{}",
        run.report("fifo")
    );
    assert_send_order_per_group(&got, groups, &run.report("fifo"));
}

/// Bodies `<mode>-body-i` were sent to message group i mod `groups`, in
/// ascending i: each group's messages must arrive ascending.
pub(crate) fn assert_send_order_per_group(got: &[Line], groups: usize, report: &str) {
    let mut order: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (_, _, _, body) in got {
        let i: usize = body
            .rsplit('-')
            .next()
            .and_then(|i| i.parse().ok())
            .unwrap_or_else(|| panic!("body {body:?} does not end in -<index>\n{report}"));
        order.entry(i % groups).or_default().push(i);
    }
    for (g, seq) in &order {
        let mut sorted = seq.clone();
        sorted.sort_unstable();
        assert_eq!(
            seq, &sorted,
            "group-{g} out of order; received {got:?}\n{report}"
        );
    }
}

/// The PushConsumer gets every message once.
pub(crate) async fn push(broker: &Broker, home: &Path, endpoint: &str) {
    let (topic, group) = ("GrpcPushTopic", "GrpcPushGroup");
    create_topic(broker, topic, 4, "NORMAL").await;
    create_group(broker, group, false).await;
    let sent = send(home, endpoint, topic, "TagA", "async", 10, 0).await;
    let run = scenario(
        home,
        &[
            "--scenario",
            "push",
            "--endpoint",
            endpoint,
            "--topic",
            topic,
            "--group",
            group,
            "--count",
            "10",
        ],
    )
    .await;
    let got = received_in_order(&run);
    let distinct: BTreeSet<Line> = got.iter().cloned().collect();
    assert_eq!(
        (got.len(), &distinct),
        (10, &sent),
        "{}",
        run.report("push")
    );
}

async fn pop_through_proxy(backend: CqBackend) {
    java::require_java_and_jars(Client::Grpc);
    let dir = tempfile::tempdir().unwrap();
    let settings = paired_pop_settings(dir.path(), backend);
    let (broker, proxy) = broker_and_proxy(dir.path(), settings, serde_json::Map::new()).await;
    let home = dir.path().join("java");
    std::fs::create_dir_all(&home).unwrap();
    let endpoint = proxy.grpc_endpoint();
    simple(&broker, &home, &endpoint).await;
    redeliver(&broker, &home, &endpoint).await;
    fifo(&broker, &home, &endpoint).await;
    push(&broker, &home, &endpoint).await;
    drop(proxy);
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_simple_consumer_pops_through_apache_proxy_file_cq() {
    pop_through_proxy(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_simple_consumer_pops_through_apache_proxy_rocks_cq() {
    pop_through_proxy(CqBackend::Rocksdb).await;
}
