//! Elections go on when a controller replica dies (issue 35, item 5): three
//! in-process controller replicas, two brokers in controller mode whose
//! `controllerAddr` names all three, a producer sending through the
//! NameServer all along. The controller leader is stopped, then the master
//! broker is halted: the two replicas left elect a new leader, the brokers
//! find it, and it elects the slave master at a higher epoch. Every message
//! acknowledged before, during and after is on the new master at the queue
//! offset its acknowledgement named; the new master takes the producer's
//! sends and the NameServer routes to it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rmq_broker::broker::Broker;
use rmq_broker::ha::BrokerRole;
use rmq_client::{OutMessage, Producer, ProducerOptions};
use rmq_common::config::CqBackend;
use rmq_common::time::SystemClock;
use rmq_tests::controller_fixture::{
    agreed_leader, assert_acked_on, controller_addrs, controller_group, create_topic,
    start_master_and_slave, wait_in_sync, wait_role, wait_routed_master, Acked, ControllerReplica,
};
use rmq_tests::fixtures::TestNameServer;
use tokio_util::sync::CancellationToken;

/// Bound of the waits for roles, routes and messages.
const WAIT: Duration = Duration::from_secs(20);
/// Bound of the wait for a Raft leader (elections take a few 300-600 ms
/// timeouts; the rest is slack for a loaded machine).
const LEADER_WAIT: Duration = Duration::from_secs(30);
/// Bound of the failover after the master's halt: the new controller
/// leader, the brokers finding it, the 3 s heartbeat timeout, the scan.
const FAILOVER_WAIT: Duration = Duration::from_secs(30);
/// Acknowledged sends wanted before the kills, and after the election.
const SENDS_EACH_SIDE: usize = 20;
/// Pause after a send that failed or was not acknowledged.
const FAILED_SEND_PAUSE: Duration = Duration::from_millis(20);
const TOPIC: &str = "KillTopic";
const QUEUES: u32 = 2;

/// A producer sending unique bodies through the NameServer's route until
/// stopped, keeping what was acknowledged (SEND_OK).
struct Load {
    acked: Arc<Mutex<Vec<Acked>>>,
    count: Arc<AtomicUsize>,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Load {
    fn start(ns: std::net::SocketAddr) -> Self {
        let producer = Producer::new(
            ns,
            ProducerOptions {
                timeout: Duration::from_secs(5),
                route_refresh_ms: 200,
                ..ProducerOptions::default()
            },
            Arc::new(SystemClock),
        );
        let (acked, count, stop) = (
            Arc::new(Mutex::new(Vec::new())),
            Arc::new(AtomicUsize::new(0)),
            CancellationToken::new(),
        );
        let (a, c, s) = (Arc::clone(&acked), Arc::clone(&count), stop.clone());
        let task = tokio::spawn(async move {
            for i in 0u64.. {
                let body = format!("kill-{i}").into_bytes();
                let msg = OutMessage {
                    body: body.clone(),
                    tags: None,
                    keys: vec![],
                    properties: vec![],
                };
                let sent = tokio::select! {
                    biased;
                    () = s.cancelled() => return,
                    r = producer.send(TOPIC, msg) => r,
                };
                // Failures (the dead master, no route yet) are retried
                // with the next message; only SEND_OK counts.
                match sent {
                    Ok(sent) if sent.result.code == 0 => {
                        a.lock().push(Acked {
                            queue_id: sent.result.queue_id,
                            queue_offset: sent.result.queue_offset,
                            body,
                        });
                        c.fetch_add(1, Ordering::SeqCst);
                    }
                    // No route yet, or the dead master: a pause, not a
                    // busy loop.
                    _ => tokio::time::sleep(FAILED_SEND_PAUSE).await,
                }
            }
        });
        Self {
            acked,
            count,
            stop,
            task,
        }
    }

    fn acked(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    async fn wait_acked(&self, n: usize) {
        let deadline = Instant::now() + WAIT;
        while self.acked() < n {
            assert!(
                Instant::now() < deadline,
                "only {} of {n} sends acknowledged within {WAIT:?}",
                self.acked()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn stop(self) -> Vec<Acked> {
        self.stop.cancel();
        self.task.await.unwrap();
        let acked = self.acked.lock().clone();
        acked
    }
}

/// Waits until `b`'s controller client names `leader` as the controller
/// leader (the brokers found the new one).
async fn wait_named_leader(b: &Broker, leader: std::net::SocketAddr) {
    let want = leader.to_string();
    let manager = b.context().replicas.get().cloned().unwrap();
    let deadline = Instant::now() + LEADER_WAIT;
    while manager.controller_leader().as_deref() != Some(want.as_str()) {
        assert!(
            Instant::now() < deadline,
            "broker {} names {:?} as controller leader, not {want}",
            b.addr(),
            manager.controller_leader()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn leader_and_master_killed(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let group = controller_group(dir.path(), 3).await;
    let all: Vec<&ControllerReplica> = group.iter().collect();
    let first = agreed_leader(&all, None, LEADER_WAIT).await;
    let first_id = group[first].handle.leader().unwrap();
    let ctl = controller_addrs(&group);
    let ns = TestNameServer::start(rmq_common::time::now_ms()).await;
    let ns_addr = ns.ns.addr.to_string();
    let (a, b) = start_master_and_slave(dir.path(), backend, &ns_addr, &ctl, WAIT).await;
    create_topic(a.addr(), TOPIC, QUEUES).await;
    wait_in_sync(&a, b.context().role.now().controller_id, WAIT).await;
    let old_epoch = a.context().role.now().master_epoch;

    let load = Load::start(ns.ns.addr);
    load.wait_acked(SENDS_EACH_SIDE).await;
    group[first].stop().await;
    let killed_at = Instant::now();
    a.halt().await;
    wait_role(&b, BrokerRole::SyncMaster, old_epoch + 1, FAILOVER_WAIT).await;
    let elected_in = killed_at.elapsed();

    let live: Vec<&ControllerReplica> = group
        .iter()
        .enumerate()
        .filter_map(|(i, r)| (i != first).then_some(r))
        .collect();
    let second = agreed_leader(&live, Some(first_id), LEADER_WAIT).await;
    let second_id = live[second].handle.leader().unwrap();
    wait_named_leader(&b, live[second].handle.addr).await;
    assert!(!b.context().store.is_replica_only());
    assert!(b.context().store.last_epoch() > old_epoch);
    wait_routed_master(&ns, b.addr(), WAIT).await;
    // The new master takes the producer's sends.
    load.wait_acked(load.acked() + SENDS_EACH_SIDE).await;
    let acked = load.stop().await;
    assert_acked_on(&b, TOPIC, &acked, WAIT).await;
    eprintln!(
        "controller_replica_kill {backend:?}: controller leader {first_id} stopped, \
         {second_id} leads; slave elected master (epoch {}) {elected_in:?} after the \
         master's halt; {} sends acknowledged",
        b.context().role.now().master_epoch,
        acked.len()
    );
    b.shutdown().await;
    ns.stop().await;
    for r in live {
        r.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_leader_killed_then_master_killed_elects_the_slave_file() {
    leader_and_master_killed(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_leader_killed_then_master_killed_elects_the_slave_rocksdb() {
    leader_and_master_killed(CqBackend::Rocksdb).await;
}
