//! Automatic failover, twenty times over, under the stock Java client's
//! sync sends (4.9.8, scenario `killloop` of `tests/java`): two brokers of
//! one set in controller mode (this broker's binary as child processes,
//! SYNC_FLUSH, `allAckInSyncStateSet`) under this project's controller (one
//! replica, in-process) and NameServer. Each round waits until both brokers
//! are in the SyncStateSet and the client's sends go through, SIGKILLs the
//! master, waits for the controller to elect the other, and restarts the
//! dead one on its own store (it comes back as a slave, truncates to the
//! last common epoch and catches up). The scenario then checks no queue
//! offset was acknowledged twice and a new consumer group reads every
//! acknowledged message at its offset; it prints each kill's send outage.
//! Both consume-queue backends.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rmq_common::config::CqBackend;
use rmq_common::remoting::{RemotingCommand, RequestCode};
use rmq_controller::state::BrokerSet;
use rmq_tests::apache;
use rmq_tests::fixtures::TestNameServer;
use rmq_tests::java::{self, Client, JavaRun};

use rmq_tests::controller_fixture::{controller_group, ControllerReplica};

use crate::broker_process::BrokerProcess;

const ROUNDS: usize = 20;
const SET: &str = "failover-a";
/// The scenario's topic (prefix `Loop`).
const TOPIC: &str = "Loop_killloop_t";
/// Acknowledged sends each round waits for before its kill.
const STEP: u64 = 100;
/// Longest a round's stage may take (a restarted broker catching up, the
/// client finding the new master).
const STAGE: Duration = Duration::from_secs(60);
/// The bound on an election once the controller noticed the death
/// (here it notices at once: the master's connection closes).
const ELECTION_BOUND: Duration = Duration::from_secs(5);
const RUN_TIMEOUT: Duration = Duration::from_secs(900);

/// One broker of the set: its folder and fixed ports, and the process when
/// it runs.
struct Node {
    dir: PathBuf,
    conf: PathBuf,
    addr: String,
    proc: Option<BrokerProcess>,
    starts: usize,
}

impl Node {
    fn new(dir: PathBuf, backend: CqBackend, ns: &str, ctl: &str) -> Self {
        std::fs::create_dir_all(&dir).unwrap();
        // listenPort - 2 (fast) and + 1 (HA) are free too.
        let port = apache::broker_base_port();
        let conf = dir.join("broker.conf");
        // As an operator writes it (Apache RocketMQ's keys).
        let text = format!(
            "brokerClusterName=DefaultCluster\n\
             brokerName={SET}\n\
             listenPort={port}\n\
             namesrvAddr={ns}\n\
             namesrvListenPort=-1\n\
             metricsPort=-1\n\
             grpcServerPort=-1\n\
             storePathRootDir={store}\n\
             consumeQueueStore={backend}\n\
             mappedFileSizeCommitLog=16777216\n\
             flushDiskType=SYNC_FLUSH\n\
             enableControllerMode=true\n\
             controllerAddr={ctl}\n\
             allAckInSyncStateSet=true\n\
             brokerHeartbeatInterval=200\n\
             controllerHeartBeatTimeoutMills=3000\n\
             syncBrokerMetadataPeriod=500\n\
             checkSyncStateSetPeriod=500\n\
             haSendHeartbeatInterval=500\n\
             haHousekeepingInterval=5000\n",
            store = dir.join("store").display(),
        );
        std::fs::write(&conf, text).unwrap();
        Self {
            dir,
            conf,
            addr: format!("127.0.0.1:{port}"),
            proc: None,
            starts: 0,
        }
    }

    async fn start(&mut self) {
        self.starts += 1;
        let args = ["-c".to_owned(), self.conf.display().to_string()];
        let tag = format!("broker-{}", self.starts);
        let p = BrokerProcess::start(&self.dir, &tag, &args)
            .await
            .unwrap_or_else(|e| panic!("{} does not start: {e}", self.addr));
        assert_eq!(p.addr.to_string(), self.addr);
        self.proc = Some(p);
    }

    /// The last lines of each start's log.
    fn log(&self) -> String {
        let mut out = String::new();
        for i in 1..=self.starts {
            let text = std::fs::read_to_string(self.dir.join(format!("broker-{i}.stderr")))
                .unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(30)..].join("\n");
            out.push_str(&format!("--- {} start {i} ---\n{tail}\n", self.addr));
        }
        out
    }

    fn kill9(&mut self) {
        self.proc.take().expect("a running broker").kill9();
    }
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

fn acked(home: &Path) -> u64 {
    std::fs::read_to_string(home.join("acked"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

fn set_now(ctl: &ControllerReplica) -> Option<BrokerSet> {
    ctl.handle.state().set(SET).cloned()
}

/// Both members in sync with a master: a kill now has a candidate.
fn healthy(ctl: &ControllerReplica) -> Option<BrokerSet> {
    set_now(ctl).filter(|s| s.master.is_some() && s.sync_state_set.len() == 2)
}

/// Whether the broker at `addr` has [`TOPIC`] in its topic table (a slave
/// copies it from its master a few seconds after it was created; a slave
/// elected before that would create it anew with the client's default
/// queue count, as RocketMQ's would).
async fn has_topic(addr: &str) -> bool {
    let Ok(c) = rmq_client::connect(addr.parse().unwrap()).await else {
        return false;
    };
    let req = RemotingCommand::request(RequestCode::GetAllTopicConfig);
    match rmq_client::call(&c, req).await {
        Ok(r) => String::from_utf8_lossy(r.body.as_deref().unwrap_or_default())
            .contains(&format!("\"{TOPIC}\"")),
        Err(_) => false,
    }
}

/// Waits until `ok`, failing with `what` after [`STAGE`] or once the
/// scenario ended, with what the scenario printed so far and the brokers'
/// logs.
async fn wait(
    what: &str,
    run: &mut tokio::task::JoinHandle<JavaRun>,
    nodes: &[Node],
    home: &Path,
    mut ok: impl FnMut() -> bool,
) {
    let deadline = Instant::now() + STAGE;
    while !ok() {
        if run.is_finished() || Instant::now() >= deadline {
            let ended = if run.is_finished() {
                run.await.unwrap().report("the scenario")
            } else {
                format!("still running:\n{}", printed(home))
            };
            let logs: String = nodes.iter().map(Node::log).collect();
            panic!("{what}: not within {STAGE:?}; {ended}\n{logs}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What the scenario printed so far (its stdout files in `home`).
fn printed(home: &Path) -> String {
    std::fs::read_dir(home)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".stdout"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect()
}

async fn kill_loop(backend: CqBackend) {
    java::require_java_and_jars(Client::V4);
    let dir = tempfile::tempdir().unwrap();
    let ctl = controller_group(dir.path(), 1).await.remove(0);
    let ctl_addr = ctl.handle.addr.to_string();
    let ns = TestNameServer::start(rmq_common::time::now_ms()).await;
    let ns_addr = ns.ns.addr.to_string();
    let mut nodes = [
        Node::new(dir.path().join("a"), backend, &ns_addr, &ctl_addr),
        Node::new(dir.path().join("b"), backend, &ns_addr, &ctl_addr),
    ];
    nodes[0].start().await;
    nodes[1].start().await;

    let home = dir.path().join("java");
    let args = [
        "--namesrv",
        &ns_addr,
        "--scenario",
        "killloop",
        "--topic-prefix",
        "Loop",
        "--read-within-ms",
        "60000",
        "--timeout-ms",
        "840000",
    ];
    let mut run = java::spawn_suite(Client::V4, &args, &home, RUN_TIMEOUT);
    let mut elections = Vec::new();
    let mut last_acked = 0;
    let deadline = Instant::now() + STAGE;
    for n in &nodes {
        while !has_topic(&n.addr).await {
            assert!(Instant::now() < deadline, "{} never had {TOPIC}", n.addr);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    for round in 1..=ROUNDS {
        wait(
            &format!("round {round}: {STEP} more acknowledged sends"),
            &mut run,
            &nodes,
            &home,
            || acked(&home) >= last_acked + STEP,
        )
        .await;
        wait(
            &format!("round {round}: both brokers in the SyncStateSet"),
            &mut run,
            &nodes,
            &home,
            || healthy(&ctl).is_some(),
        )
        .await;
        let before = healthy(&ctl).unwrap();
        let master = before.master_addr().unwrap().to_owned();
        let victim = nodes.iter().position(|n| n.addr == master).unwrap();
        let killed_at = Instant::now();
        nodes[victim].kill9();
        let mut kills = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(home.join("kills"))
            .unwrap();
        writeln!(kills, "{}", now_ms()).unwrap();
        drop(kills);
        wait(
            &format!("round {round}: a master other than {master}"),
            &mut run,
            &nodes,
            &home,
            || {
                set_now(&ctl).is_some_and(|s| {
                    s.master_epoch > before.master_epoch
                        && s.master_addr().is_some_and(|a| a != master)
                })
            },
        )
        .await;
        let elected_in = killed_at.elapsed();
        elections.push(elected_in);
        assert!(
            elected_in < ELECTION_BOUND,
            "round {round}: election took {elected_in:?}"
        );
        nodes[victim].start().await;
        last_acked = acked(&home);
    }
    wait(
        "sends after the last round",
        &mut run,
        &nodes,
        &home,
        || acked(&home) >= last_acked + STEP,
    )
    .await;
    std::fs::write(home.join("stop-sending"), "").unwrap();
    let r = run.await.unwrap();
    assert!(r.succeeded(), "{}", r.report("java failover"));
    elections.sort();
    let outages: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("FAILOVER kills="))
        .collect();
    eprintln!(
        "controller_kill_loop {backend:?}: {ROUNDS} kills, elections median {:?} max {:?}; send outage {outages:?}",
        elections[elections.len() / 2],
        elections[elections.len() - 1],
    );
    for n in &mut nodes {
        if let Some(p) = n.proc.take() {
            p.stop().await;
        }
    }
    ns.stop().await;
    ctl.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_master_kills_under_java_sync_sends_lose_nothing_file() {
    kill_loop(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_master_kills_under_java_sync_sends_lose_nothing_rocksdb() {
    kill_loop(CqBackend::Rocksdb).await;
}
