//! A stock RocketMQ client against the broker: the npm package `ali-ons`
//! (pure JavaScript, RocketMQ 4.x protocol) runs `tests/node/ons_check.js`
//! against an in-process broker, across a broker restart on the same store.
//!
//! Needs `node` and the pinned client: `npm ci --prefix tests/node`.
//! `RUST_LOG=debug` shows the broker's logs; `ONS_CHECK_VERBOSE=1` the
//! client's.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_common::config::CqBackend;
use rmq_tests::broker_settings;

/// Longest one phase of the script may run before it is killed (the script
/// bounds itself at 180 s and reports; this is the backstop).
const PHASE_TIMEOUT: Duration = Duration::from_secs(240);
/// Longest `node --version` may take.
const NODE_PROBE_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest a broker shutdown may take once the client has left. ali-ons
/// closes with pulls still held (15 s suspend); they must not delay it.
const SHUTDOWN_BOUND: Duration = Duration::from_secs(5);

const SETUP_HINT: &str = "run `npm ci --prefix tests/node` (needs node and npm) before this test";

fn node_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("node")
}

/// What one run of the script left.
type Outcome = rmq_tests::child::ChildRun;

/// Runs `node <args>` in `tests/node`, output to files under `out_dir`,
/// killed after `timeout`. Blocking: call it from `spawn_blocking`.
fn run_node(args: &[String], out_dir: &Path, tag: &str, timeout: Duration) -> Outcome {
    rmq_tests::child::Child {
        program: "node",
        args,
        cwd: &node_dir(),
        env: &[],
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
    let client = node_dir().join("node_modules").join("ali-ons");
    assert!(
        client.join("package.json").is_file(),
        "{} is missing; {SETUP_HINT}",
        client.display()
    );
}

async fn run_phase(
    phase: &str,
    namesrv: std::net::SocketAddr,
    topic: &str,
    group: &str,
    out_dir: &Path,
) -> Outcome {
    run_phase_with(phase, namesrv, topic, group, out_dir, &[]).await
}

/// [`run_phase`] with more arguments (`--access-key K --secret-key S`).
async fn run_phase_with(
    phase: &str,
    namesrv: std::net::SocketAddr,
    topic: &str,
    group: &str,
    out_dir: &Path,
    more: &[&str],
) -> Outcome {
    assert!(namesrv.ip().is_loopback(), "NameServer on {namesrv}");
    let args: Vec<String> = [
        "ons_check.js",
        "--namesrv",
        &namesrv.to_string(),
        "--phase",
        phase,
        "--topic",
        topic,
        "--group",
        group,
    ]
    .iter()
    .chain(more)
    .map(|s| (*s).to_owned())
    .collect();
    let dir = out_dir.to_path_buf();
    let tag = format!(
        "phase{phase}-{}",
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    tokio::task::spawn_blocking(move || run_node(&args, &dir, &tag, PHASE_TIMEOUT))
        .await
        .unwrap()
}

/// Numbers the runs, so that runs of one phase keep their own output files.
static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

async fn ali_ons_survives_restart(backend: CqBackend) {
    if std::env::var_os("RUST_LOG").is_some() {
        rmq_broker::logging::init();
    }
    require_node_and_client();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let out_dir = dir.path().join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let topic = format!("OnsCheck_{backend}");
    let group = format!("OnsCheckGroup_{backend}");

    let broker = Broker::start(broker_settings(&root, backend))
        .await
        .unwrap();
    let ns = broker.namesrv_addr().expect("embedded NameServer");
    let first = run_phase("1", ns, &topic, &group, &out_dir).await;
    let t = Instant::now();
    broker.shutdown().await;
    let first_shutdown = t.elapsed();
    assert!(
        first.succeeded(),
        "{}",
        first.report(&format!("phase 1 ({backend})"))
    );
    assert!(
        first_shutdown < SHUTDOWN_BOUND,
        "broker shutdown after phase 1 took {first_shutdown:?} (bound {SHUTDOWN_BOUND:?})"
    );

    let broker = Broker::start(broker_settings(&root, backend))
        .await
        .unwrap();
    let ns = broker.namesrv_addr().expect("embedded NameServer");
    let second = run_phase("2", ns, &topic, &group, &out_dir).await;
    let t = Instant::now();
    broker.shutdown().await;
    let second_shutdown = t.elapsed();
    assert!(
        second.succeeded(),
        "{}",
        second.report(&format!("phase 2 ({backend})"))
    );
    assert!(
        second_shutdown < SHUTDOWN_BOUND,
        "broker shutdown after phase 2 took {second_shutdown:?} (bound {SHUTDOWN_BOUND:?})"
    );
    eprintln!(
        "ali-ons {backend}: phase 1 {:?}, shutdown {first_shutdown:?}, phase 2 {:?}, shutdown {second_shutdown:?}\n{}{}",
        first.elapsed, second.elapsed, first.stdout, second.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ali_ons_send_filter_consume_restart_file() {
    ali_ons_survives_restart(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ali_ons_send_filter_consume_restart_rocksdb() {
    ali_ons_survives_restart(CqBackend::Rocksdb).await;
}

/// ali-ons fails messages with ACTION_RETRY: one comes back once from the
/// group's retry topic with reconsumeTimes 1; one that always fails is
/// delivered maxReconsumeTimes + 1 times and then sits in the DLQ, where
/// `rmq-admin read` shows it.
async fn ali_ons_retry_and_dlq(backend: CqBackend) {
    if std::env::var_os("RUST_LOG").is_some() {
        rmq_broker::logging::init();
    }
    require_node_and_client();
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let mut settings = broker_settings(&dir.path().join("store"), backend);
    // Retries use levels 3 and 4 (3 + reconsumeTimes): one second each here.
    settings.store.message_delay_level = "1s 1s 1s 1s 1s 1s".into();
    let topic = format!("OnsRetry_{backend}");
    let group = format!("OnsRetryGroup_{backend}");
    let broker = Broker::start(settings).await.unwrap();
    let ns = broker.namesrv_addr().expect("embedded NameServer");
    let run = run_phase("retry", ns, &topic, &group, &out_dir).await;
    assert!(
        run.succeeded(),
        "{}",
        run.report(&format!("retry ({backend})"))
    );
    let dlq = format!("%DLQ%{group}");
    let out =
        rmq_tools::admin::read_queue(&rmq_client::Connector::new(), broker.addr(), &dlq, 0, 0, 10)
            .await
            .unwrap();
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("topic=")).collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert!(
        lines[0].contains("keys=\"retry-always\"")
            && lines[0].contains("reconsumeTimes=3")
            && lines[0].contains(&format!("retryTopic=\"{topic}\"")),
        "{out}"
    );
    broker.shutdown().await;
    eprintln!("ali-ons retry {backend}: {:?}\n{}", run.elapsed, run.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ali_ons_retry_then_dlq_file() {
    ali_ons_retry_and_dlq(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ali_ons_retry_then_dlq_rocksdb() {
    ali_ons_retry_and_dlq(CqBackend::Rocksdb).await;
}

/// What the `send` phase printed: messages stored per broker name.
fn sent_by_broker(out: &Outcome) -> std::collections::BTreeMap<String, u64> {
    let line = out.stdout.lines().last().unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("send summary is not JSON ({e}): {line}"));
    serde_json::from_value(v["byBroker"].clone()).unwrap()
}

/// The stock client against three brokers behind a standalone NameServer:
/// its sends spread over all three; with one broker killed (no UNREGISTER;
/// the NameServer drops it when its connection closes, and a client may
/// still hold a route naming it) every send succeeds on the other two;
/// after the 120 s expiry (manual clock) the routes still name only those.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ali_ons_fails_over_when_a_broker_dies() {
    use rmq_tests::fixtures::TestNameServer;

    require_node_and_client();
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let cluster = TestNameServer::start(1_700_000_000_000).await;
    let ns = &cluster.ns;
    let topic = "OnsFailover";
    let mut brokers = Vec::new();
    for (name, backend) in [
        ("ons-a", CqBackend::File),
        ("ons-b", CqBackend::Rocksdb),
        ("ons-c", CqBackend::File),
    ] {
        let b = cluster.broker(&dir.path().join(name), name, backend).await;
        rmq_tools::admin::topic_create(&rmq_client::Connector::new(), b.addr(), topic, 4, 6)
            .await
            .unwrap();
        b.registrar().unwrap().register_now().await.unwrap();
        brokers.push(b);
    }

    let all = run_phase("send", ns.addr, topic, "OnsFailoverGroup", &out_dir).await;
    assert!(all.succeeded(), "{}", all.report("send to three brokers"));
    assert_eq!(sent_by_broker(&all).len(), 3, "{}", all.stdout);

    let dead = brokers.pop().unwrap();
    let dead_addr = dead.addr().to_string();
    dead.halt().await;
    let two = run_phase("send", ns.addr, topic, "OnsFailoverGroup", &out_dir).await;
    assert!(
        two.succeeded(),
        "{}",
        two.report("send with ons-c killed (dropped from routes with its connection)")
    );
    let by = sent_by_broker(&two);
    assert!(!by.contains_key("ons-c"), "{}", two.stdout);
    assert_eq!(by.values().sum::<u64>(), 60, "{}", two.stdout);

    cluster.expire(&brokers, "ons-c", &dead_addr).await;
    let after = run_phase("send", ns.addr, topic, "OnsFailoverGroup", &out_dir).await;
    assert!(after.succeeded(), "{}", after.report("send after expiry"));
    assert_eq!(
        sent_by_broker(&after).keys().collect::<Vec<_>>(),
        ["ons-a", "ons-b"],
        "{}",
        after.stdout
    );
    eprintln!(
        "ali-ons failover: {:?} / {:?} / {:?}\n{}{}{}",
        all.elapsed, two.elapsed, after.elapsed, all.stdout, two.stdout, after.stdout
    );
    for b in brokers {
        b.shutdown().await;
    }
    cluster.stop().await;
}

/// ali-ons signing with `accessKey`/`secretKey` against a broker with plain
/// ACL (its own scheme: it also signs an `OnsChannel` field): the right key
/// sends and consumes (every request code it uses checked and taken); a
/// wrong secret, an unknown key and a DENY topic are each refused with
/// NO_PERMISSION and nothing is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ali_ons_signs_and_is_checked_file() {
    ali_ons_signs_and_is_checked(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ali_ons_signs_and_is_checked_rocksdb() {
    ali_ons_signs_and_is_checked(CqBackend::Rocksdb).await;
}

async fn ali_ons_signs_and_is_checked(backend: CqBackend) {
    require_node_and_client();
    let dir = tempfile::tempdir().unwrap();
    let b = crate::acl::start(dir.path(), backend).await;
    let admin = crate::acl::client(&b, "rocketmq2", "87654321").await;
    for t in ["Allowed", "Denied"] {
        let r = admin
            .invoke(crate::acl::create_topic(t), Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(r.code, 0, "{:?}", r.remark);
    }
    let ns = b.namesrv_addr().unwrap();
    let out_dir = dir.path().join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let signed = |phase: &'static str, topic: &'static str, ak: &'static str, sk: &'static str| {
        let out_dir = out_dir.clone();
        async move {
            run_phase_with(
                phase,
                ns,
                topic,
                "GOnsAcl",
                &out_dir,
                &["--access-key", ak, "--secret-key", sk],
            )
            .await
        }
    };
    let ok = signed("acl", "Allowed", "RocketMQ", "12345678").await;
    assert!(ok.succeeded(), "{}", ok.report("ali-ons acl (right key)"));
    assert!(
        ok.stdout.contains(r#""ok":true"#),
        "{}",
        ok.report("ali-ons acl")
    );
    let end = b.context().store.max_phy_offset();
    for (who, topic, ak, sk, says) in [
        (
            "wrong secret",
            "Allowed",
            "RocketMQ",
            "12345679",
            "signature",
        ),
        (
            "unknown key",
            "Allowed",
            "Nobody99",
            "12345678",
            "no account",
        ),
        (
            "DENY topic",
            "Denied",
            "RocketMQ",
            "12345678",
            "topic Denied",
        ),
    ] {
        let r = signed("acl-refused", topic, ak, sk).await;
        assert!(r.succeeded(), "{}", r.report(&format!("ali-ons {who}")));
        assert!(
            r.stdout.contains(r#""refused":true"#)
                && r.stdout.contains(r#""code":16"#)
                && r.stdout.contains(says),
            "{}",
            r.report(&format!("ali-ons {who}"))
        );
    }
    assert_eq!(b.context().store.max_phy_offset(), end, "nothing stored");
    b.shutdown().await;
}
