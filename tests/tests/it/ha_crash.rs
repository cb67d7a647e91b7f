//! A SYNC_MASTER under SYNC_FLUSH is killed with SIGKILL while four senders
//! stream to it, 20 times; after each kill, every message it acknowledged
//! (SUCCESS: on its disk and on the slave) is on the slave and pulled from
//! it there with its body, while the master is still down. The master is a
//! child process (`ha-master`) restarted on its own store and ports each
//! round; the slave runs here and follows it across the restarts (and one
//! restart of its own, half way, from its own tail). Both backends, and a
//! RocksDB slave of a file master.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::Rng;
use rmq_broker::broker::Broker;
use rmq_broker::ha::BrokerRole;
use rmq_client::{self as sdk, OutMessage, SendCode};
use rmq_common::config::CqBackend;
use rmq_common::remoting::RequestCode;
use rmq_tests::apache::broker_base_port;
use rmq_tests::fixtures::TestNameServer;

const ROUNDS: usize = 20;
/// Acknowledgements to see in a round before the kill is armed.
const ACKS_BEFORE_KILL: usize = 30;
/// The kill lands at a random moment up to this long after that.
const MAX_EXTRA_RUN: Duration = Duration::from_millis(300);
const SENDERS: usize = 4;
const TOPIC: &str = "HaCrash";
const QUEUES: i32 = 2;
/// Longest any one step may take (a start, the first acks, a catch-up).
const STEP: Duration = Duration::from_secs(60);

#[derive(Debug, Clone)]
struct Ack {
    queue: i32,
    offset: i64,
    token: String,
}

fn body(token: &str) -> Vec<u8> {
    format!("{token};").repeat(1 + token.len() % 5).into_bytes()
}

/// Starts the master child on `root` and waits for its `READY`.
pub(crate) fn spawn_master(root: &Path, backend: CqBackend, port: u16, ha: u16, ns: &str) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ha-master"))
        .args([
            root.to_str().unwrap(),
            backend.as_str(),
            &port.to_string(),
            &ha.to_string(),
            ns,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line == "READY" {
                let _ = tx.send(());
            }
        }
    });
    if rx.recv_timeout(STEP).is_err() {
        let _ = child.kill();
        panic!("the master child did not start within {STEP:?}");
    }
    child
}

/// Sends from [`SENDERS`] connections until the master dies; returns what
/// it acknowledged. The kill comes [`ACKS_BEFORE_KILL`] acks in, plus a
/// random moment.
async fn send_until_killed(
    master: &mut Child,
    addr: std::net::SocketAddr,
    round: usize,
) -> Vec<Ack> {
    let acks = Arc::new(Mutex::new(Vec::new()));
    let mut senders = Vec::new();
    for k in 0..SENDERS {
        let acks = Arc::clone(&acks);
        let c = sdk::connect(addr).await.unwrap();
        senders.push(tokio::spawn(async move {
            for n in 0u64.. {
                let token = format!("r{round}-s{k}-n{n}");
                let queue = (n % QUEUES as u64) as i32;
                let m = OutMessage {
                    body: body(&token),
                    tags: None,
                    keys: vec![token.clone()],
                    properties: vec![],
                };
                let Ok(r) = sdk::send(&c, SendCode::V2, "p", TOPIC, queue, &[m]).await else {
                    return; // the master is gone
                };
                // Anything else (SLAVE_NOT_AVAILABLE while the slave
                // reconnects) was not acknowledged: nothing is owed.
                if r.code == 0 {
                    acks.lock().push(Ack {
                        queue,
                        offset: r.queue_offset,
                        token,
                    });
                }
            }
        }));
    }
    let deadline = Instant::now() + STEP;
    while acks.lock().len() < ACKS_BEFORE_KILL {
        if Instant::now() > deadline {
            let _ = master.kill();
            panic!(
                "round {round}: only {} acks within {STEP:?}",
                acks.lock().len()
            );
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let extra = rand::thread_rng().gen_range(Duration::ZERO..MAX_EXTRA_RUN);
    tokio::time::sleep(extra).await;
    master.kill().unwrap(); // SIGKILL
    master.wait().unwrap();
    for s in senders {
        tokio::time::timeout(STEP, s)
            .await
            .expect("senders end once the master is gone")
            .unwrap();
    }
    let acks = acks.lock().clone();
    acks
}

/// Every message of `queue` the broker at `addr` serves, by queue offset.
async fn pull_all(c: &rmq_client::RemotingClient, queue: i32) -> BTreeMap<i64, Vec<u8>> {
    let mut got = BTreeMap::new();
    let mut offset = 0;
    loop {
        let r = sdk::pull(
            c,
            &sdk::PullRequest {
                group: "HaCrashCheck".into(),
                topic: TOPIC.into(),
                queue_id: queue,
                offset,
                max_msgs: 32,
                subscription: Some("*".into()),
                suspend: None,
                commit_offset: None,
            },
        )
        .await
        .unwrap();
        if r.messages.is_empty() {
            return got;
        }
        for (m, o) in r.messages.into_iter().zip(r.queue_offsets) {
            got.insert(o, m.body);
        }
        offset = r.next_begin_offset;
    }
}

async fn crash_rounds(master_backend: CqBackend, slave_backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let ns = TestNameServer::start(1_700_000_000_000).await;
    let ns_addr = ns.ns.addr.to_string();
    // The master's fast port is listenPort - 2: all three free.
    let port = broker_base_port();
    let ha = port + 1;
    let maddr = rmq_tests::apache::local(port);
    let mroot = dir.path().join("master");
    let mut master = spawn_master(&mroot, master_backend, port, ha, &ns_addr);
    let c = sdk::connect(maddr).await.unwrap();
    sdk::call(
        &c,
        sdk::request(
            RequestCode::UpdateAndCreateTopic,
            &[
                ("topic", TOPIC.into()),
                ("readQueueNums", QUEUES.to_string()),
                ("writeQueueNums", QUEUES.to_string()),
            ],
        ),
    )
    .await
    .unwrap();
    drop(c);
    let mut ss = rmq_tests::broker_settings(&dir.path().join("slave"), slave_backend);
    ss.broker.broker_role = BrokerRole::Slave;
    ss.broker.broker_id = 1;
    ss.broker.namesrv_listen_port = -1;
    ss.broker.namesrv_addr = ns_addr;
    ss.broker.ha_master_address = format!("127.0.0.1:{ha}");
    ss.broker.ha_send_heartbeat_interval_ms = 200;
    ss.broker.ha_housekeeping_interval_ms = 2_000;
    let mut s = Broker::start(ss.clone()).await.unwrap();
    let mut sctx = Arc::clone(s.context());
    let deadline = Instant::now() + STEP;
    while sctx.topics.get(TOPIC).is_none() {
        assert!(Instant::now() < deadline, "the slave copied the topic");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut sc = sdk::connect(s.addr()).await.unwrap();
    let mut all: Vec<Ack> = Vec::new();
    for round in 0..ROUNDS {
        if round == ROUNDS / 2 {
            // A slave restart resumes from its own tail.
            let tail = sctx.store.max_phy_offset();
            s.shutdown().await;
            s = Broker::start(ss.clone()).await.unwrap();
            sctx = Arc::clone(s.context());
            sc = sdk::connect(s.addr()).await.unwrap();
            assert_eq!(
                sctx.store.max_phy_offset(),
                tail,
                "the slave reopened at its tail"
            );
        }
        if round > 0 {
            master = spawn_master(&mroot, master_backend, port, ha, &ns.ns.addr.to_string());
        }
        let acks = send_until_killed(&mut master, maddr, round).await;
        all.extend(acks);
        // The master is down: the slave alone must serve every ack so far.
        let deadline = Instant::now() + STEP;
        loop {
            let mut missing = Vec::new();
            for q in 0..QUEUES {
                let got = pull_all(&sc, q).await;
                for a in all.iter().filter(|a| a.queue == q) {
                    if got.get(&a.offset).map(Vec::as_slice) != Some(body(&a.token).as_slice()) {
                        missing.push(a.clone());
                    }
                }
            }
            if missing.is_empty() {
                break;
            }
            // Acknowledged means the slave had the bytes; its reput may
            // still be dispatching them.
            assert!(
                Instant::now() < deadline,
                "{master_backend} -> {slave_backend}, round {round}: {} acknowledged messages \
                 not served by the slave, first {:?}",
                missing.len(),
                &missing[..missing.len().min(5)]
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    assert!(all.len() >= ROUNDS * ACKS_BEFORE_KILL);
    assert_eq!(sctx.store.reput_failures(), 0);
    s.shutdown().await;
    ns.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkilled_sync_master_loses_nothing_acknowledged_file() {
    crash_rounds(CqBackend::File, CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkilled_sync_master_loses_nothing_acknowledged_rocksdb() {
    crash_rounds(CqBackend::Rocksdb, CqBackend::Rocksdb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkilled_sync_master_loses_nothing_acknowledged_to_a_rocksdb_slave() {
    crash_rounds(CqBackend::File, CqBackend::Rocksdb).await;
}
