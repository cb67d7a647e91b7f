//! A SYNC_MASTER under SYNC_FLUSH is SIGKILLed while the stock Java client
//! (4.9.8, scenario `killmaster` of `tests/java`) sends to it; a consumer of
//! a new group then reads the topic from the slave, and every acknowledged
//! message must arrive within 30 s of the kill. Across implementations:
//!
//! - this broker as the master (a child process, `ha-master`) with Apache
//!   RocketMQ 4.9.7's slave, under Apache's NameServer. The Java slave
//!   copies the topic from the master's fast (VIP) port, listenPort - 2,
//!   and Apache's NameServer drops the master when the connection it
//!   registered over closes.
//! - Apache's 4.9.7 master with this broker as the slave, under this
//!   project's NameServer (its clock stands still, so no expiry can help:
//!   only the closed connection drops the master).
//!
//! Both consume-queue backends on our side.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmq_broker::broker::Broker;
use rmq_broker::ha::BrokerRole;
use rmq_client as sdk;
use rmq_common::config::CqBackend;
use rmq_common::remoting::{RemotingCommand, RequestCode};
use rmq_tests::apache::{self, Jvm};
use rmq_tests::fixtures::TestNameServer;
use rmq_tests::java::{self, Client, JavaRun};

const PREFIX: &str = "Kill";
const TOPIC: &str = "Kill_killmaster_t";
/// Longest a stage of the brokers may take (the Java slave copies topics
/// every 10 s, 3 s after it starts).
const STAGE: Duration = Duration::from_secs(60);
const RUN_TIMEOUT: Duration = Duration::from_secs(240);
/// Both sides' CommitLog segments, so replicated offsets agree.
const SEGMENT: &str = "mapedFileSizeCommitLog=4194304\n";

/// The master child, SIGKILLed when the test is done with it or fails.
struct KilledOnDrop(std::process::Child);

impl KilledOnDrop {
    fn kill(&mut self) {
        let _ = self.0.kill(); // SIGKILL
        let _ = self.0.wait();
    }
}

impl Drop for KilledOnDrop {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts the scenario against `namesrv` with its working folder `home`.
fn scenario(namesrv: &str, home: &Path) -> tokio::task::JoinHandle<JavaRun> {
    let args = [
        "--namesrv",
        namesrv,
        "--scenario",
        "killmaster",
        "--topic-prefix",
        PREFIX,
        "--acks",
        "300",
        "--read-within-ms",
        "30000",
        "--timeout-ms",
        "200000",
    ];
    java::spawn_suite(Client::V4, &args, home, RUN_TIMEOUT)
}

async fn wait_for(
    what: &str,
    run: &mut tokio::task::JoinHandle<JavaRun>,
    ok: impl AsyncFnMut() -> bool,
) {
    java::wait_while_running(what, run, STAGE, ok).await;
}

/// Whether the broker at `addr` has [`TOPIC`] in its topic table.
async fn has_topic(addr: std::net::SocketAddr) -> bool {
    let Ok(c) = sdk::connect(addr).await else {
        return false;
    };
    let req = RemotingCommand::request(RequestCode::GetAllTopicConfig);
    match sdk::call(&c, req).await {
        Ok(r) => {
            let body = r.body.as_deref().unwrap_or_default();
            String::from_utf8_lossy(body).contains(&format!("\"{TOPIC}\""))
        }
        Err(_) => false,
    }
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

/// Kills the master with `kill`, tells the scenario when, and checks it
/// read everything acknowledged in time.
async fn kill_and_check(
    home: &Path,
    mut run: tokio::task::JoinHandle<JavaRun>,
    kill: impl FnOnce(),
) {
    let at = now_ms();
    kill();
    std::fs::write(home.join("go-kill"), at.to_string()).unwrap();
    let r = (&mut run).await.unwrap();
    assert!(r.succeeded(), "{}", r.report("java killmaster"));
    assert!(
        r.stdout.lines().any(|l| l.starts_with("PASS killmaster")),
        "{}",
        r.report("java killmaster printed no PASS line")
    );
    let figures = r
        .stdout
        .lines()
        .find(|l| l.starts_with("KILLMASTER"))
        .unwrap_or_default()
        .to_owned();
    eprintln!("{figures}");
}

/// This broker as the killed master, Apache's 4.9.7 slave and NameServer.
async fn our_master_apache_slave(backend: CqBackend) {
    apache::require_jars();
    java::require_java_and_jars(Client::V4);
    let dir = tempfile::tempdir().unwrap();
    let (_ns, ns_port) = Jvm::namesrv_on_free_port(&dir.path().join("ns"));
    let ns = format!("127.0.0.1:{ns_port}");
    let port = apache::broker_base_port();
    let mut master = KilledOnDrop(crate::ha_crash::spawn_master(
        &dir.path().join("master"),
        backend,
        port,
        port + 1,
        &ns,
    ));
    let (_slave, slave_port) = Jvm::broker_on_free_ports(
        &dir.path().join("java-slave"),
        &ns,
        &format!("brokerId=1\nbrokerRole=SLAVE\nflushDiskType=SYNC_FLUSH\n{SEGMENT}"),
    );
    let home = dir.path().join("java");
    let mut run = scenario(&ns, &home);
    wait_for("the scenario's acknowledged sends", &mut run, async || {
        home.join("ready-kill").exists()
    })
    .await;
    // Apache's slave copies topics from the master's fast port.
    let slave = apache::local(slave_port);
    wait_for(
        "the Java slave copying the topic (from our fast port)",
        &mut run,
        async || has_topic(slave).await,
    )
    .await;
    kill_and_check(&home, run, || master.kill()).await;
}

/// Apache's 4.9.7 master, killed; this broker as the slave; this project's
/// NameServer.
async fn apache_master_our_slave(backend: CqBackend) {
    apache::require_jars();
    java::require_java_and_jars(Client::V4);
    let dir = tempfile::tempdir().unwrap();
    let ns = TestNameServer::start(1_700_000_000_000).await;
    let ns_addr = ns.ns.addr.to_string();
    let (mut master, master_port) = Jvm::broker_on_free_ports(
        &dir.path().join("java-master"),
        &ns_addr,
        &format!("brokerId=0\nbrokerRole=SYNC_MASTER\nflushDiskType=SYNC_FLUSH\n{SEGMENT}"),
    );
    let mut s = rmq_tests::broker_settings(&dir.path().join("ours"), backend);
    s.broker.broker_role = BrokerRole::Slave;
    s.broker.broker_id = 1;
    s.broker.namesrv_listen_port = -1;
    s.broker.namesrv_addr = ns_addr.clone();
    let slave = Broker::start(s).await.unwrap();
    let ctx = std::sync::Arc::clone(slave.context());
    let home = dir.path().join("java");
    let mut run = scenario(&ns_addr, &home);
    wait_for("the scenario's acknowledged sends", &mut run, async || {
        home.join("ready-kill").exists()
    })
    .await;
    wait_for("our slave copying the topic", &mut run, async || {
        ctx.topics.get(TOPIC).is_some()
    })
    .await;
    let master_addr = apache::local(master_port).to_string();
    let routes = std::sync::Arc::clone(ns.ns.routes());
    assert!(
        routes.channel_of(&master_addr).is_some(),
        "the Java master registered over a connection"
    );
    kill_and_check(&home, run, || master.kill()).await;
    assert!(
        routes.channel_of(&master_addr).is_none(),
        "the NameServer dropped the killed master"
    );
    slave.shutdown().await;
    ns.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_slave_serves_all_acknowledged_after_our_file_master_is_killed() {
    our_master_apache_slave(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_slave_serves_all_acknowledged_after_our_rocksdb_master_is_killed() {
    our_master_apache_slave(CqBackend::Rocksdb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_file_slave_serves_all_acknowledged_after_apache_master_is_killed() {
    apache_master_our_slave(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_rocksdb_slave_serves_all_acknowledged_after_apache_master_is_killed() {
    apache_master_our_slave(CqBackend::Rocksdb).await;
}
