//! A second language's stock 5.x gRPC client through Apache's
//! rocketmq-proxy 5.3.3 (cluster mode) in front of this broker: the npm
//! package `rocketmq-client-nodejs` runs `tests/node5/grpc_check.js`. It
//! sends (sync and async with tags and keys, and in message groups to a
//! FIFO topic), a SimpleConsumer receives and acks exactly what was sent,
//! each once, and a FIFO group (consumeMessageOrderly) gets each message
//! group in send order. On both consume-queue backends (RocksDB with the
//! RocksDB POP state, file with the revive topic). The script checks
//! delivery attempts and that nothing of a message group is handed out
//! while an earlier one is unacked; these tests check the content.
//!
//! Needs `node`, the pinned client (`npm ci --prefix tests/node5`) and the
//! proxy's jars, all installed by `scripts/setup.sh`.
//! `GRPC_CHECK_VERBOSE=1` puts the client's whole log in each run's stderr.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rmq_broker::broker::Broker;
use rmq_common::config::CqBackend;
use rmq_tests::child::{Child, ChildRun};

use crate::proxy_grpc::{broker_and_proxy, create_topic, lines, paired_pop_settings, Line};
use crate::proxy_grpc_pop::{assert_send_order_per_group, create_group, received_in_order};

/// The script's own deadline for one scenario (`--timeout-ms`).
const SCENARIO_DEADLINE: Duration = Duration::from_secs(60);
/// Backstop: a run still alive this long is killed.
const RUN_TIMEOUT: Duration = Duration::from_secs(90);
/// Invisible time of the receives whose acks are checked (the proxy's
/// least), and how long after the last ack nothing may come back: past it
/// and the broker's revive scan (1 s), so an ack that did not hold shows.
const ACK_CHECK_INVISIBLE: Duration = Duration::from_secs(10);
const ACK_CHECK_LINGER: Duration = Duration::from_secs(14);
/// Longest `node --version` may take.
const NODE_PROBE_TIMEOUT: Duration = Duration::from_secs(30);
/// The client package the script drives.
const CLIENT: &str = "rocketmq-client-nodejs";

const SETUP_HINT: &str =
    "run `npm ci --prefix tests/node5` (needs node and npm; scripts/setup.sh does it) before this test";

fn node_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("node5")
}

/// Runs `node args...` in `tests/node5`, its output and `HOME` (where a
/// client might write) in `out_dir`. Blocking.
fn run_node(args: &[String], out_dir: &Path, tag: &str, timeout: Duration) -> ChildRun {
    Child {
        program: "node",
        args,
        cwd: &node_dir(),
        env: &[("HOME", out_dir)],
        out_dir,
        tag,
        timeout,
        setup_hint: SETUP_HINT,
    }
    .run()
}

/// Fails (never skips) when node or the pinned client is missing.
fn require_node_and_client() {
    let probe = tempfile::tempdir().unwrap();
    let out = run_node(
        &["--version".to_owned()],
        probe.path(),
        "version",
        NODE_PROBE_TIMEOUT,
    );
    assert!(
        out.succeeded(),
        "`node --version` failed; {SETUP_HINT}\n{}",
        out.report("node --version")
    );
    let client = node_dir().join("node_modules").join(CLIENT);
    assert!(
        client.join("package.json").is_file(),
        "{} is missing; {SETUP_HINT}",
        client.display()
    );
}

/// Numbers the runs, so that each keeps its own output files.
static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Runs one scenario of the script; it must end with `PASS`.
async fn scenario(out_dir: &Path, args: &[&str]) -> ChildRun {
    let mut all: Vec<String> = ["grpc_check.js"]
        .iter()
        .chain(args)
        .map(|s| (*s).to_owned())
        .collect();
    all.push("--timeout-ms".into());
    all.push(SCENARIO_DEADLINE.as_millis().to_string());
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = out_dir.to_path_buf();
    let run = tokio::task::spawn_blocking(move || {
        run_node(&all, &dir, &format!("node-{n}"), RUN_TIMEOUT)
    })
    .await
    .unwrap();
    assert!(
        run.succeeded() && run.stdout.lines().any(|l| l.starts_with("PASS ")),
        "{}",
        run.report(&format!("node grpc_check.js {args:?}"))
    );
    run
}

/// Sends `count` messages with `tag` (`send` scenario), in
/// `message_groups` message groups when not 0; the SENT lines.
async fn send(
    out: &Path,
    endpoint: &str,
    topic: &str,
    (tag, mode): (&str, &str),
    count: usize,
    message_groups: usize,
) -> BTreeSet<Line> {
    let (n, groups) = (count.to_string(), message_groups.to_string());
    let run = scenario(
        out,
        &[
            "--scenario",
            "send",
            "--endpoint",
            endpoint,
            "--topic",
            topic,
            "--count",
            &n,
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
    assert_eq!(sent.len(), count, "{}", run.report("send"));
    sent
}

/// Runs the consuming `scenario` of `group` on `topic` (with `more`
/// arguments); what it received, in order, after checking that it is
/// exactly `want`, each once.
async fn consume(
    out: &Path,
    endpoint: &str,
    (topic, group, filter): (&str, &str, &str),
    (scenario_name, more): (&str, &[&str]),
    want: &BTreeSet<Line>,
) -> Vec<Line> {
    let count = want.len().to_string();
    let mut args = vec![
        "--scenario",
        scenario_name,
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
    ];
    args.extend_from_slice(more);
    let run = scenario(out, &args).await;
    let got = received_in_order(&run);
    let distinct: BTreeSet<Line> = got.iter().cloned().collect();
    assert_eq!(
        got.len(),
        distinct.len(),
        "{group}: a message twice\n{}",
        run.report(scenario_name)
    );
    assert_eq!(
        &distinct,
        want,
        "{group} ({filter}) did not receive exactly what was sent\n{}",
        run.report(scenario_name)
    );
    got
}

/// Plain sends, then SimpleConsumer receive and ack: everything (and then
/// nothing more, past the invisible time: the acks held), and a tag
/// filter's share.
async fn send_and_simple(broker: &Broker, out: &Path, endpoint: &str) {
    let topic = "NodeTopic";
    create_topic(broker, topic, 4, "NORMAL").await;
    for g in ["NodeSimpleAll", "NodeSimpleTagA"] {
        create_group(broker, g, false).await;
    }
    let tag_a = send(out, endpoint, topic, ("TagA", "sync"), 5, 0).await;
    let tag_b = send(out, endpoint, topic, ("TagB", "async"), 5, 0).await;
    let all: BTreeSet<Line> = tag_a.union(&tag_b).cloned().collect();
    assert_eq!(all.len(), 10, "message ids repeat: {all:?}");
    let stored: i64 = (0..4)
        .map(|q| {
            broker
                .context()
                .store
                .max_offset_in_queue(topic, q)
                .unwrap()
        })
        .sum();
    assert_eq!(stored, 10, "messages in {topic} on the broker");
    let invisible = ACK_CHECK_INVISIBLE.as_millis().to_string();
    let linger = ACK_CHECK_LINGER.as_millis().to_string();
    let ack_check: &[&str] = &["--invisible-ms", &invisible, "--linger-ms", &linger];
    consume(
        out,
        endpoint,
        (topic, "NodeSimpleAll", "*"),
        ("simple", ack_check),
        &all,
    )
    .await;
    consume(
        out,
        endpoint,
        (topic, "NodeSimpleTagA", "TagA"),
        ("simple", &[]),
        &tag_a,
    )
    .await;
}

/// Sends in message groups to a FIFO topic; a FIFO group gets each message
/// group in send order.
async fn fifo(broker: &Broker, out: &Path, endpoint: &str) {
    let (topic, group) = ("NodeFifoTopic", "NodeFifoGroup");
    let (count, groups) = (12, 3);
    create_topic(broker, topic, 2, "FIFO").await;
    create_group(broker, group, true).await;
    let sent = send(out, endpoint, topic, ("TagA", "sync"), count, groups).await;
    let got = consume(out, endpoint, (topic, group, "*"), ("fifo", &[]), &sent).await;
    assert_send_order_per_group(&got, groups, "node fifo");
}

async fn node_through_proxy(backend: CqBackend) {
    require_node_and_client();
    let dir = tempfile::tempdir().unwrap();
    let settings = paired_pop_settings(dir.path(), backend);
    let (broker, proxy) = broker_and_proxy(dir.path(), settings, serde_json::Map::new()).await;
    let out = dir.path().join("node");
    std::fs::create_dir_all(&out).unwrap();
    let endpoint = proxy.grpc_endpoint();
    send_and_simple(&broker, &out, &endpoint).await;
    fifo(&broker, &out, &endpoint).await;
    drop(proxy);
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node5_proxy_file() {
    node_through_proxy(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node5_proxy_rocksdb() {
    node_through_proxy(CqBackend::Rocksdb).await;
}
