//! Through Apache's rocketmq-proxy 5.3.3 (cluster mode), the stock gRPC
//! client (rocketmq-client-java 5.0.7) uses two more 5.x features of this
//! broker, each on both consume-queue backends:
//!
//! - delay by delivery timestamp: messages sent with
//!   `setDeliveryTimestamp(now + D)` to a DELAY topic (the proxy turns the
//!   timestamp into TIMER_DELIVER_MS, the broker's timer delivers) reach a
//!   SimpleConsumer each exactly once, never before their due time and at
//!   most `timerPrecisionMs` + [`LATE_SLACK_MS`] after it;
//! - transactions with check-back: of the half messages a TransactionProducer
//!   sends, those it commits at once and those its TransactionChecker
//!   commits when the broker's CHECK_TRANSACTION_STATE reaches it (through
//!   the proxy and the gRPC telemetry stream) are delivered, exactly those;
//!   the ones rolled back, at once or by the checker, never are; the checker
//!   is asked about each half left unknown, and sees it under its real
//!   topic.

use std::collections::BTreeSet;
use std::path::Path;

use rmq_broker::broker::Broker;
use rmq_broker::config::Settings;
use rmq_common::config::CqBackend;
use rmq_tests::grpc_proxy::ApacheProxy;
use rmq_tests::java::{self, Client, JavaRun};

use crate::proxy_grpc::{create_topic, lines, scenario, Line};
use crate::proxy_grpc_pop::{create_group, received_in_order};

/// timerPrecisionMs of the broker (the default).
pub(crate) const PRECISION_MS: i64 = 1_000;
/// Past due time plus precision, how late a delayed message may arrive
/// (the timer pass, the POP long poll, the proxy and the client).
const LATE_SLACK_MS: i64 = 2_000;
/// Delivery delays of the delay test, one message each.
pub(crate) const DELAYS_MS: [i64; 2] = [3_000, 6_000];
/// transactionTimeOut and transactionCheckInterval of the transaction
/// test's broker: a half left unknown is checked within a few seconds.
pub(crate) const TX_TIMEOUT_MS: u64 = 2_000;
pub(crate) const TX_CHECK_INTERVAL_MS: u64 = 1_000;
/// Messages of each kind in the transaction test.
pub(crate) const TX_EACH: usize = 2;

/// A broker on `backend` (settings changed by `tune`) and one proxy in
/// front of it with the `proxy.json` keys `extra`.
async fn start(
    dir: &Path,
    backend: CqBackend,
    tune: impl FnOnce(&mut Settings),
    extra: serde_json::Map<String, serde_json::Value>,
) -> (Broker, ApacheProxy) {
    java::require_java_and_jars(Client::Grpc);
    let mut settings = rmq_tests::broker_settings(&dir.join("store"), backend);
    tune(&mut settings);
    let started = crate::proxy_grpc::broker_and_proxy(dir, settings, extra).await;
    std::fs::create_dir_all(dir.join("java")).unwrap();
    started
}

/// One RECV line of the delay scenario: the message, then sent, due and
/// received times (ms) and the delivery timestamp the consumer saw.
struct DelayedRecv {
    line: Line,
    sent_ms: i64,
    due_ms: i64,
    received_ms: i64,
    delivery_timestamp: i64,
}

fn delayed_received(run: &JavaRun) -> Vec<DelayedRecv> {
    run.stdout
        .lines()
        .filter_map(|l| l.strip_prefix("RECV\t"))
        .map(|r| {
            let f: Vec<&str> = r.split('\t').collect();
            assert_eq!(f.len(), 8, "RECV line {r:?}\n{}", run.report("delay"));
            let ms = |i: usize| -> i64 {
                f[i].parse()
                    .unwrap_or_else(|_| panic!("field {i} of {r:?} is not a time"))
            };
            DelayedRecv {
                line: (f[0].into(), f[1].into(), f[2].into(), f[3].into()),
                sent_ms: ms(4),
                due_ms: ms(5),
                received_ms: ms(6),
                delivery_timestamp: ms(7),
            }
        })
        .collect()
}

/// Checks a delay run (`--delays-ms` = `delays`): each sent message
/// received once, never before its due time, at most the timer's precision
/// plus [`LATE_SLACK_MS`] after it, with the due time as the delivery
/// timestamp the consumer saw.
pub(crate) fn assert_delivered_on_time(run: &JavaRun, delays: &[i64]) {
    let sent = lines(run, "SENT");
    let got = delayed_received(run);
    let distinct: BTreeSet<Line> = got.iter().map(|r| r.line.clone()).collect();
    assert_eq!(
        (got.len(), &distinct),
        (delays.len(), &sent),
        "not each sent message once\n{}",
        run.report("delay")
    );
    for r in &got {
        let delay: i64 = r.line.3.rsplit('-').next().unwrap().parse().unwrap();
        assert_eq!(r.due_ms - r.sent_ms, delay, "{}", run.report("delay"));
        assert!(
            r.received_ms >= r.due_ms,
            "{} received {} ms before its due time\n{}",
            r.line.3,
            r.due_ms - r.received_ms,
            run.report("delay")
        );
        assert!(
            r.received_ms <= r.due_ms + PRECISION_MS + LATE_SLACK_MS,
            "{} received {} ms after its due time\n{}",
            r.line.3,
            r.received_ms - r.due_ms,
            run.report("delay")
        );
        assert_eq!(
            r.delivery_timestamp,
            r.due_ms,
            "the delivery timestamp the consumer saw\n{}",
            run.report("delay")
        );
    }
}

async fn delay_by_timestamp(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let (broker, proxy) = start(dir.path(), backend, |_| {}, serde_json::Map::new()).await;
    delivery_timestamp(&broker, &dir.path().join("java"), &proxy.grpc_endpoint()).await;
    drop(proxy);
    broker.shutdown().await;
}

/// Messages sent to `endpoint` with a delivery timestamp each reach a
/// SimpleConsumer once, on time (the topic and group are made on `broker`).
pub(crate) async fn delivery_timestamp(broker: &Broker, home: &Path, endpoint: &str) {
    let (topic, group) = ("GrpcDelayTopic", "GrpcDelayGroup");
    create_topic(broker, topic, 2, "DELAY").await;
    create_group(broker, group, false).await;
    let delays: Vec<String> = DELAYS_MS.iter().map(i64::to_string).collect();
    let run = scenario(
        home,
        &[
            "--scenario",
            "delay",
            "--endpoint",
            endpoint,
            "--topic",
            topic,
            "--group",
            group,
            "--delays-ms",
            &delays.join(","),
        ],
    )
    .await;
    assert_delivered_on_time(&run, &DELAYS_MS);
}

/// The SENT lines of `kind` (their tag).
fn of_kind(sent: &BTreeSet<Line>, kind: &str) -> BTreeSet<Line> {
    sent.iter().filter(|l| l.1 == kind).cloned().collect()
}

/// Checks a transaction run with `each` messages of each kind: the
/// consumer got exactly the committed ones (at once or by the checker),
/// each once, and the checker was asked about exactly the halves left
/// unknown, each under its real topic `topic`.
pub(crate) fn assert_transaction_outcome(run: &JavaRun, topic: &str, each: usize) {
    let sent = lines(run, "SENT");
    assert_eq!(sent.len(), 4 * each, "{}", run.report("transaction"));
    let committed: BTreeSet<Line> = of_kind(&sent, "commit")
        .union(&of_kind(&sent, "checkCommit"))
        .cloned()
        .collect();
    let unknown: BTreeSet<Line> = of_kind(&sent, "checkCommit")
        .union(&of_kind(&sent, "checkRollback"))
        .cloned()
        .collect();
    let got = received_in_order(run);
    let distinct: BTreeSet<Line> = got.iter().cloned().collect();
    assert_eq!(
        (got.len(), &distinct),
        (committed.len(), &committed),
        "the consumer must get exactly the committed messages, each once\n{}",
        run.report("transaction")
    );
    // CHECK <tab> id tag keys body resolution topic.
    let checks: Vec<Vec<&str>> = run
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("CHECK\t"))
        .map(|r| r.split('\t').collect())
        .collect();
    let checked: BTreeSet<Line> = checks
        .iter()
        .map(|f| {
            assert_eq!(f.len(), 6, "CHECK line {f:?}");
            (f[0].into(), f[1].into(), f[2].into(), f[3].into())
        })
        .collect();
    assert_eq!(
        checked,
        unknown,
        "the checker must be asked about exactly the halves left unknown\n{}",
        run.report("transaction")
    );
    for f in &checks {
        assert_eq!(
            f[5],
            topic,
            "the checked message's topic\n{}",
            run.report("transaction")
        );
    }
}

async fn transaction_check_back(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    // The proxy tells the broker its transactional producer groups by a
    // heartbeat every 20 s by default; until the first one the broker has
    // no producer to check with.
    let mut extra = serde_json::Map::new();
    extra.insert("transactionHeartbeatPeriodSecond".into(), 1.into());
    let (broker, proxy) = start(dir.path(), backend, quick_transaction_checks, extra).await;
    transaction_check_back_at(&broker, &dir.path().join("java"), &proxy.grpc_endpoint()).await;
    drop(proxy);
    broker.shutdown().await;
}

/// A half left unknown is checked back within a few seconds.
pub(crate) fn quick_transaction_checks(s: &mut Settings) {
    s.broker.transaction_time_out_ms = TX_TIMEOUT_MS;
    s.broker.transaction_check_interval_ms = TX_CHECK_INTERVAL_MS;
}

/// A TransactionProducer at `endpoint` commits and rolls back, at once and
/// when checked back (`broker` needs [`quick_transaction_checks`]): see
/// [`assert_transaction_outcome`].
pub(crate) async fn transaction_check_back_at(broker: &Broker, home: &Path, endpoint: &str) {
    let (topic, group) = ("GrpcTxTopic", "GrpcTxGroup");
    create_topic(broker, topic, 2, "TRANSACTION").await;
    create_group(broker, group, false).await;
    let each = TX_EACH.to_string();
    let run = scenario(
        home,
        &[
            "--scenario",
            "transaction",
            "--endpoint",
            endpoint,
            "--topic",
            topic,
            "--group",
            group,
            "--commit",
            &each,
            "--rollback",
            &each,
            "--check-commit",
            &each,
            "--check-rollback",
            &each,
        ],
    )
    .await;
    assert_transaction_outcome(&run, topic, TX_EACH);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_delivery_timestamp_through_apache_proxy_file() {
    delay_by_timestamp(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_delivery_timestamp_through_apache_proxy_rocksdb() {
    delay_by_timestamp(CqBackend::Rocksdb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_transaction_check_back_through_apache_proxy_file() {
    transaction_check_back(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_transaction_check_back_through_apache_proxy_rocksdb() {
    transaction_check_back(CqBackend::Rocksdb).await;
}
