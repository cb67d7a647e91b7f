//! A stock Java consumer (rocketmq-client 4.9.8, scenario `failover` of
//! `tests/java`) rides out its master's absence on the slave: what a
//! SYNC_MASTER acknowledged is consumed from the slave while the master is
//! stopped, the offsets are committed on the slave, and once the master is
//! back (same store, same address) the consumer goes on with new messages,
//! nothing delivered twice or lost; the offsets it then commits on the
//! master are past everything it consumed. The master on the file backend,
//! the slave on RocksDB; a standalone NameServer, so the route outlives the
//! master.

use std::path::Path;
use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_broker::config::Settings;
use rmq_broker::ha::BrokerRole;
use rmq_common::config::CqBackend;
use rmq_tests::fixtures::TestNameServer;
use rmq_tests::java::{self, Client};

const PREFIX: &str = "Failover";
const TOPIC: &str = "Failover_failover_t";
const GROUP: &str = "Failover_failover_g";
/// Messages the scenario sends before and after the master's absence
/// (`FailoverScenario.BEFORE` / `AFTER`).
const BEFORE: i64 = 20;
const AFTER: i64 = 20;
/// Longest the test waits for a stage of the scenario or of the brokers.
const STAGE: Duration = Duration::from_secs(60);
const RUN_TIMEOUT: Duration = Duration::from_secs(200);

fn master_settings(root: &Path, ns: &str) -> Settings {
    let mut s = rmq_tests::broker_settings(root, CqBackend::File);
    s.broker.broker_role = BrokerRole::SyncMaster;
    s.broker.namesrv_listen_port = -1;
    s.broker.namesrv_addr = ns.to_owned();
    s
}

/// Waits until `ok`, failing with `what` after [`STAGE`] or as soon as the
/// scenario has ended.
async fn wait_for(
    what: &str,
    run: &mut tokio::task::JoinHandle<java::JavaRun>,
    mut ok: impl FnMut() -> bool,
) {
    java::wait_while_running(what, run, STAGE, async || ok()).await;
}

fn committed(ctx: &rmq_broker::context::BrokerContext) -> i64 {
    (0..2)
        .map(|q| ctx.offsets.query(GROUP, TOPIC, q).unwrap_or(0))
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stock_consumer_reads_the_slave_while_the_master_is_down_and_goes_on_after() {
    java::require_java_and_jars(Client::V4);
    let dir = tempfile::tempdir().unwrap();
    let ns = TestNameServer::start(1_700_000_000_000).await;
    let ns_addr = ns.ns.addr.to_string();
    let mroot = dir.path().join("master");
    let m = Broker::start(master_settings(&mroot, &ns_addr))
        .await
        .unwrap();
    let (mport, haport) = (m.addr().port(), m.context().ha_addr.get().unwrap().port());
    let mut ss = rmq_tests::broker_settings(&dir.path().join("slave"), CqBackend::Rocksdb);
    ss.broker.broker_role = BrokerRole::Slave;
    ss.broker.broker_id = 1;
    ss.broker.namesrv_listen_port = -1;
    ss.broker.namesrv_addr = ns_addr.clone();
    let s = Broker::start(ss).await.unwrap();
    let sctx = std::sync::Arc::clone(s.context());
    let home = dir.path().join("java");
    std::fs::create_dir_all(&home).unwrap();
    let mut run = java::spawn_suite(
        Client::V4,
        &[
            "--namesrv",
            &ns_addr,
            "--scenario",
            "failover",
            "--topic-prefix",
            PREFIX,
            "--timeout-ms",
            "180000",
        ],
        &home,
        RUN_TIMEOUT,
    );

    // Stage 1: everything sent is on the slave, with the topic; stop the master.
    wait_for("the scenario's sends", &mut run, || {
        home.join("ready-master-down").exists()
    })
    .await;
    let end = m.context().store.max_phy_offset();
    wait_for(
        "the slave holding the master's log and topic",
        &mut run,
        || sctx.store.max_phy_offset() >= end && sctx.topics.get(TOPIC).is_some(),
    )
    .await;
    m.shutdown().await;
    std::fs::write(home.join("go-master-down"), b"").unwrap();

    // Stage 2: consumed on the slave; the offsets are committed there.
    wait_for("consumption from the slave", &mut run, || {
        home.join("ready-master-back").exists()
    })
    .await;
    wait_for("the offsets committed on the slave", &mut run, || {
        committed(&sctx) == BEFORE
    })
    .await;
    let mut again = master_settings(&mroot, &ns_addr);
    again.broker.listen_port = mport;
    again.broker.ha_listen_port = i32::from(haport);
    let m = Broker::start(again).await.unwrap();
    let mctx = std::sync::Arc::clone(m.context());
    wait_for("the slave following the master again", &mut run, || {
        mctx.ha_acks.slaves() == 1
    })
    .await;
    std::fs::write(home.join("go-master-back"), b"").unwrap();

    let r = run.await.unwrap();
    assert!(r.succeeded(), "{}", r.report("java failover"));
    assert!(
        r.stdout.lines().any(|l| l.starts_with("PASS failover")),
        "{}",
        r.report("java failover printed no PASS line")
    );
    // The consumer's last commit (at its shutdown) went to the master: past
    // everything, never behind what the slave had.
    let deadline = Instant::now() + STAGE;
    while committed(&mctx) != BEFORE + AFTER {
        assert!(
            Instant::now() < deadline,
            "master offsets {} (want {})",
            committed(&mctx),
            BEFORE + AFTER
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    s.shutdown().await;
    m.shutdown().await;
    ns.stop().await;
}
