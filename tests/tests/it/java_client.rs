//! The stock RocketMQ Java client (`rocketmq-client` 4.9.8) against the
//! broker: `tests/java` (`rmqcheck.ClientSuite`) runs one scenario per JVM
//! against an in-process broker with its embedded NameServer, one broker and
//! store per test so the tests run in parallel.
//!
//! Scenarios: `send` (sync, async, oneway, batch; read back exactly),
//! `orderly` (selector by order id, MessageListenerOrderly with queue locks),
//! `tags`, `sql92` (broker-side property filter), `litepull` (subscribe, and
//! assign + seek), `broadcast`, `delay`, `dlq`, `transaction` (commit,
//! rollback, unknown then checked back), `resume` (offsets committed at a
//! clean client shutdown survive a broker restart: no redelivery) and
//! `request` (request-reply, sync and async: the broker pushes the reply to
//! the requester), `lmq` (multi-dispatch into light message queues, each
//! pulled exactly), `lmqpush` (a push consumer on an LMQ) and `lmqpop`
//! (5.3.3: POP on an LMQ through the broker's assignment).
//!
//! Needs a JDK 17 and the suite built by `scripts/setup.sh`
//! (`mvn -f tests/java/pom.xml package dependency:copy-dependencies`); runs
//! through [`rmq_tests::java`]. `RUST_LOG=debug` shows the broker's logs;
//! the client's own log is in the test's temp folder, named in a failure's
//! report.

use std::path::Path;
use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_broker::config::Settings;
use rmq_common::config::CqBackend;
use rmq_tests::broker_settings;
use rmq_tests::java::{self, Client, JavaRun};

/// The JVM's own deadline for one scenario run (`--timeout-ms`): past it
/// the suite prints its threads and halts.
const SCENARIO_DEADLINE: Duration = Duration::from_secs(60);
/// Backstop: a run still alive this long is killed (JVM start-up included).
const RUN_TIMEOUT: Duration = Duration::from_secs(90);
/// Longest a broker shutdown may take once the client has left.
const SHUTDOWN_BOUND: Duration = Duration::from_secs(5);

/// Delay levels for `delay` and `dlq`: level 2 (the delayed send) is 2 s;
/// retries use levels 3 and 4 (3 + reconsumeTimes), 2 s each. Levels may not
/// decrease.
const DELAY_LEVELS: &str = "1s 2s 2s 2s 2s 2s";
/// Level 2 of [`DELAY_LEVELS`], handed to the suite as `--delay-ms`.
const DELAY_LEVEL_2_MS: u64 = 2_000;
/// Transaction check walk interval and half-message age before a check-back,
/// so the `UNKNOW` half is checked about 1-2 s after its send.
const TRANSACTION_CHECK_MS: u64 = 1_000;

const SUITE_MAIN: &str = "rmqcheck.ClientSuite";

/// Fails (never skips) when Java, the jars or the suite's classes are missing.
fn require_suite(client: Client) {
    java::require_java_and_jars(client);
    let main = client.target().join("classes/rmqcheck/ClientSuite.class");
    assert!(
        main.is_file(),
        "{} is missing; {}",
        main.display(),
        java::SETUP_HINT
    );
}

/// Runs one scenario (one phase) in its own JVM against `namesrv`; the
/// client's logs go to `home/logs`.
async fn run_scenario(
    client: Client,
    namesrv: std::net::SocketAddr,
    scenario: &str,
    phase: u32,
    prefix: &str,
    home: &Path,
) -> JavaRun {
    assert!(namesrv.ip().is_loopback(), "NameServer on {namesrv}");
    let args: Vec<String> = [
        "--namesrv",
        &namesrv.to_string(),
        "--scenario",
        scenario,
        "--phase",
        &phase.to_string(),
        "--topic-prefix",
        prefix,
        "--delay-ms",
        &DELAY_LEVEL_2_MS.to_string(),
        "--timeout-ms",
        &SCENARIO_DEADLINE.as_millis().to_string(),
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    java::run_main(client, SUITE_MAIN, &args, home, RUN_TIMEOUT).await
}

/// The broker settings a scenario needs on top of the test defaults.
fn settings_for(scenario: &str, root: &Path, backend: CqBackend) -> Settings {
    let mut s = broker_settings(root, backend);
    match scenario {
        "delay" | "dlq" => s.store.message_delay_level = DELAY_LEVELS.into(),
        "transaction" => {
            s.broker.transaction_check_interval_ms = TRANSACTION_CHECK_MS;
            s.broker.transaction_time_out_ms = TRANSACTION_CHECK_MS;
        }
        "sql92" => s.broker.enable_property_filter = true,
        "lmq" | "lmqpush" | "lmqpop" => {
            s.store.enable_lmq = true;
            s.store.enable_multi_dispatch = true;
        }
        _ => {}
    }
    s
}

/// Runs `scenario` against a fresh broker on `backend`; `resume` runs phase
/// 1, restarts the broker on the same store, then runs phase 2.
async fn java_scenario(client: Client, scenario: &str, backend: CqBackend) {
    if std::env::var_os("RUST_LOG").is_some() {
        rmq_broker::logging::init();
    }
    require_suite(client);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let home = dir.path().join("java");
    std::fs::create_dir_all(&home).unwrap();
    let prefix = format!("Java{backend}");
    let phases = if scenario == "resume" { 2 } else { 1 };
    let mut summary = String::new();
    for phase in 1..=phases {
        let broker = Broker::start(settings_for(scenario, &root, backend))
            .await
            .unwrap();
        let ns = broker.namesrv_addr().expect("embedded NameServer");
        let run = run_scenario(client, ns, scenario, phase, &prefix, &home).await;
        let t = Instant::now();
        broker.shutdown().await;
        let shutdown = t.elapsed();
        let what = format!(
            "java {client:?} {scenario} phase {phase} ({backend}; client log under {})",
            home.join("logs").display()
        );
        assert!(run.succeeded(), "{}", run.report(&what));
        assert!(
            run.stdout
                .lines()
                .any(|l| l.starts_with(&format!("PASS {scenario}"))),
            "{}",
            run.report(&format!("{what} printed no PASS line"))
        );
        assert!(
            shutdown < SHUTDOWN_BOUND,
            "broker shutdown after {what} took {shutdown:?} (bound {SHUTDOWN_BOUND:?})"
        );
        summary.push_str(&format!(
            "phase {phase}: {:?}, broker shutdown {shutdown:?}\n{}",
            run.elapsed, run.stdout
        ));
    }
    eprintln!("java {client:?} {scenario} {backend}:\n{summary}");
}

/// One test per client, scenario and backend, each with its own broker.
macro_rules! java_scenarios {
    ($($client:ident $scenario:literal => $file:ident, $rocksdb:ident;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $file() {
            java_scenario(Client::$client, $scenario, CqBackend::File).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $rocksdb() {
            java_scenario(Client::$client, $scenario, CqBackend::Rocksdb).await;
        }
    )*};
}

java_scenarios! {
    V4 "send" => java_send_file, java_send_rocksdb;
    V4 "orderly" => java_orderly_file, java_orderly_rocksdb;
    V4 "tags" => java_tags_file, java_tags_rocksdb;
    V4 "sql92" => java_sql92_file, java_sql92_rocksdb;
    V4 "litepull" => java_litepull_file, java_litepull_rocksdb;
    V4 "broadcast" => java_broadcast_file, java_broadcast_rocksdb;
    V4 "delay" => java_delay_file, java_delay_rocksdb;
    V4 "dlq" => java_dlq_file, java_dlq_rocksdb;
    V4 "transaction" => java_transaction_file, java_transaction_rocksdb;
    V4 "resume" => java_resume_file, java_resume_rocksdb;
    // No V5 "request": the 5.3.3 client's sync `request` counts its reply
    // latch down when the request's send succeeds
    // (`RequestResponseFuture.acquireCountDownLatch`), so it reports "wait
    // reply message timeout" before any replier can answer, on any broker.
    V4 "request" => java_request_file, java_request_rocksdb;
    // The admin API (DefaultMQAdminExt 4.9.8) against every administration
    // answer, the consumer's own ones relayed through the broker.
    V4 "admin" => java_admin_file, java_admin_rocksdb;
    // An offset reset with the push consumer online: the broker pushes the
    // new offsets to it and it reads again (ResetOnlineScenario.java).
    V4 "resetonline" => java_resetonline_file, java_resetonline_rocksdb;
    // Light message queues: a multi-dispatch send, then each LMQ pulled
    // exactly (LmqScenario.java).
    V4 "lmq" => java_lmq_file, java_lmq_rocksdb;
    // A push consumer on an LMQ with the route injected, as RocketMQ's
    // LMQPushConsumer example does (LmqPushScenario.java).
    V4 "lmqpush" => java_lmqpush_file, java_lmqpush_rocksdb;
    V5 "send" => java5_send_file, java5_send_rocksdb;
    V5 "orderly" => java5_orderly_file, java5_orderly_rocksdb;
    V5 "tags" => java5_tags_file, java5_tags_rocksdb;
    V5 "sql92" => java5_sql92_file, java5_sql92_rocksdb;
    V5 "litepull" => java5_litepull_file, java5_litepull_rocksdb;
    V5 "broadcast" => java5_broadcast_file, java5_broadcast_rocksdb;
    V5 "delay" => java5_delay_file, java5_delay_rocksdb;
    V5 "dlq" => java5_dlq_file, java5_dlq_rocksdb;
    V5 "transaction" => java5_transaction_file, java5_transaction_rocksdb;
    V5 "resume" => java5_resume_file, java5_resume_rocksdb;
    // RocketMQ 5.x POP through the 5.3.3 client's own pop, ack and
    // change-invisible-time calls (PopScenario.java).
    V5 "pop" => java5_pop_file, java5_pop_rocksdb;
    V5 "lmq" => java5_lmq_file, java5_lmq_rocksdb;
    V5 "lmqpush" => java5_lmqpush_file, java5_lmqpush_rocksdb;
    // POP on an LMQ through the broker's assignment, as RocketMQ's
    // LMQPushPopConsumer example does (LmqPopScenario.java).
    V5 "lmqpop" => java5_lmqpop_file, java5_lmqpop_rocksdb;
}
