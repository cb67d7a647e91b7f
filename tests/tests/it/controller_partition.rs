//! A partition that isolates the master ends with one master, never two
//! taking writes for the same brokerName (issue 35, item 5).
//!
//! The master's every link but its clients' goes through a [`LinkProxy`]
//! the test stalls: to the controller (its `controllerAddr` is a proxy,
//! which names itself as the controller leader, so every call goes
//! through it; the controller's notifications go only to brokers whose
//! heartbeats it still gets, so none reach the isolated master),
//! to the NameServer (its `namesrvAddr` is a proxy), and its slave's HA
//! link (the proxy in front of the master's HA port is the `haServerAddr`
//! the NameServer hands the slave: the master's NameServer proxy
//! translates the address the master registers, as NAT would). Clients
//! reach both brokers throughout. With `allAckInSyncStateSet` and
//! SYNC_FLUSH the contract is:
//! - once the links stall the old master answers no send with SEND_OK:
//!   its in-sync slave's acknowledgements cannot reach it, and it cannot
//!   drop the slave from its SyncStateSet without the controller;
//! - the controller elects the slave after the heartbeat timeout; it takes
//!   writes at a higher epoch;
//! - healed, the old master learns the newer epoch, becomes a slave, drops
//!   what it appended unacknowledged and replicates from the new master;
//! - in the end one master, which holds every acknowledged message at the
//!   queue offset its acknowledgement named, and no queue offset was
//!   acknowledged twice.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rmq_broker::broker::Broker;
use rmq_broker::ha::BrokerRole;
use rmq_client::{OutMessage, RemotingClient, SendCode};
use rmq_common::config::CqBackend;
use rmq_tests::apache::free_port;
use rmq_tests::controller_fixture::{
    assert_acked_on, controller_group, controller_mode_settings, create_topic, wait_in_sync,
    wait_role, wait_routed_master, Acked,
};
use rmq_tests::fixtures::TestNameServer;
use rmq_tests::proxy::{Link, LinkProxy, Rewrite};
use tokio_util::sync::CancellationToken;

/// Bound of the waits for roles, routes and messages.
const WAIT: Duration = Duration::from_secs(20);
/// Bound of an election across the partition (3 s heartbeat timeout, the
/// 200 ms scan) and of the old master's return as a slave once healed.
const FAILOVER_WAIT: Duration = Duration::from_secs(30);
/// How long a master waits for its in-sync slaves before answering
/// FLUSH_SLAVE_TIMEOUT (`slaveTimeout`, shortened so the test sends to the
/// isolated master often).
const SLAVE_TIMEOUT_MS: u64 = 1_000;
/// `haMaxTimeSlaveNotCatchup` of the old master: shorter than the
/// partition lasts (the heartbeat timeout alone is 3 s), so the isolated
/// master wants its stalled slave out of the SyncStateSet while it is cut
/// off from the controller.
const NOT_CAUGHT_UP_MS: u64 = 1_500;
/// Acknowledged sends before the partition, to the new master during it,
/// and after it healed.
const SENDS: usize = 10;
/// Answers wanted from the isolated master after the slave's election.
const OLD_MASTER_ANSWERS_AFTER_ELECTION: usize = 2;
const TOPIC: &str = "PartTopic";
const QUEUES: i32 = 2;

/// What a send to the old master was answered, and when.
#[derive(Debug)]
struct Answer {
    at: Instant,
    /// The response code, or the error.
    outcome: Result<i32, String>,
    acked: Option<Acked>,
}

async fn send(client: &RemotingClient, queue_id: i32, body: Vec<u8>) -> Answer {
    let msg = OutMessage {
        body: body.clone(),
        tags: None,
        keys: vec![],
        properties: vec![],
    };
    let r = rmq_client::send(client, SendCode::V2, "PartGroup", TOPIC, queue_id, &[msg]).await;
    let at = Instant::now();
    match r {
        Ok(r) => Answer {
            at,
            outcome: Ok(r.code),
            acked: (r.code == 0).then_some(Acked {
                queue_id,
                queue_offset: r.queue_offset,
                body,
            }),
        },
        Err(e) => Answer {
            at,
            outcome: Err(e.to_string()),
            acked: None,
        },
    }
}

/// Sends `n` messages to `addr`, every one of which must be acknowledged.
async fn send_all_ok(addr: SocketAddr, tag: &str, n: usize) -> Vec<Acked> {
    let client = RemotingClient::connect(addr).await.unwrap();
    let mut acked = Vec::new();
    for i in 0..n {
        let q = i32::try_from(i).unwrap() % QUEUES;
        let a = send(&client, q, format!("{tag}-{i}").into_bytes()).await;
        let Some(m) = a.acked else {
            panic!("{tag}-{i} to {addr} not acknowledged: {:?}", a.outcome);
        };
        acked.push(m);
    }
    client.close().await;
    acked
}

/// Sends to the isolated old master one message at a time until stopped,
/// keeping every answer.
fn send_to_old_master(
    addr: SocketAddr,
    answers: Arc<Mutex<Vec<Answer>>>,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let client = RemotingClient::connect(addr).await.unwrap();
        for i in 0.. {
            let body = format!("old-{i}").into_bytes();
            let answer = tokio::select! {
                biased;
                () = stop.cancelled() => break,
                a = send(&client, i % QUEUES, body) => a,
            };
            answers.lock().push(answer);
        }
        client.close().await;
    })
}

/// Waits until `a` holds exactly what `b` holds in [`TOPIC`] (same queue
/// offsets, CommitLog offsets and bodies).
async fn wait_same_queues(a: &Broker, b: &Broker) {
    let read = |x: &Broker| {
        (0..QUEUES)
            .map(|q| rmq_tests::read_queue(&x.context().store, TOPIC, q))
            .collect::<Vec<_>>()
    };
    let deadline = Instant::now() + WAIT;
    loop {
        let (on_a, on_b) = (read(a), read(b));
        if on_a == on_b {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the old master's queues never matched the new master's: {on_a:?} vs {on_b:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn partition_isolating_the_master(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let ctl = controller_group(dir.path(), 1).await;
    let ns = TestNameServer::start(rmq_common::time::now_ms()).await;
    let (ra, rb) = (dir.path().join("a"), dir.path().join("b"));

    // The master-to-be: every link of its own through a proxy.
    let ha_port = free_port();
    let mut sa = controller_mode_settings(&ra, backend, "", "");
    let a_ha: SocketAddr = format!("{}:{ha_port}", sa.broker.ha_ip()).parse().unwrap();
    let ha_proxy = LinkProxy::start(a_ha).await;
    // The controller names its leader by its own address, which the
    // broker then calls: through this proxy it names the proxy.
    let ctl_addr = ctl[0].handle.addr;
    let ctl_proxy = LinkProxy::start_rewriting(ctl_addr, |me| Rewrite {
        from: ctl_addr.to_string(),
        to: me.to_string(),
    })
    .await;
    let ns_proxy = LinkProxy::start_rewriting(ns.ns.addr, |_| Rewrite {
        from: a_ha.to_string(),
        to: ha_proxy.addr().to_string(),
    })
    .await;
    sa.broker.ha_listen_port = i32::from(ha_port);
    sa.broker.namesrv_addr = ns_proxy.addr().to_string();
    sa.broker.controller.controller_addr = ctl_proxy.addr().to_string();
    sa.broker.slave_timeout_ms = SLAVE_TIMEOUT_MS;
    sa.broker.controller.ha_max_time_slave_not_catchup_ms = NOT_CAUGHT_UP_MS;
    let a = Broker::start(sa).await.unwrap();
    wait_role(&a, BrokerRole::SyncMaster, 1, WAIT).await;
    let ns_addr = ns.ns.addr.to_string();
    let mut sb = controller_mode_settings(&rb, backend, &ns_addr, &ctl_addr.to_string());
    sb.broker.slave_timeout_ms = SLAVE_TIMEOUT_MS;
    let b = Broker::start(sb).await.unwrap();
    wait_role(&b, BrokerRole::Slave, 1, WAIT).await;
    let (a_id, b_id) = (
        a.context().role.now().controller_id,
        b.context().role.now().controller_id,
    );
    create_topic(a.addr(), TOPIC, QUEUES.unsigned_abs()).await;
    wait_in_sync(&a, b_id, WAIT).await;
    let mut acked = send_all_ok(a.addr(), "before", SENDS).await;

    let proxies = [&ctl_proxy, &ns_proxy, &ha_proxy];
    for p in proxies {
        p.set(Link::Stalled);
    }
    let stalled_at = Instant::now();
    let answers = Arc::new(Mutex::new(Vec::new()));
    let stop = CancellationToken::new();
    let old = send_to_old_master(a.addr(), Arc::clone(&answers), stop.clone());
    wait_role(&b, BrokerRole::SyncMaster, 2, FAILOVER_WAIT).await;
    let elected_at = Instant::now();
    acked.extend(send_all_ok(b.addr(), "during", SENDS).await);
    // The isolated master keeps being asked after the election.
    let deadline = Instant::now() + WAIT;
    while answers.lock().iter().filter(|x| x.at > elected_at).count()
        < OLD_MASTER_ANSWERS_AFTER_ELECTION
    {
        assert!(
            Instant::now() < deadline,
            "the old master answered nothing after the election"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Cut off from the controller, the old master could not drop its
    // slave from the SyncStateSet it acts on.
    let partitioned_for = stalled_at.elapsed();
    assert!(partitioned_for > Duration::from_millis(2 * NOT_CAUGHT_UP_MS));
    let kept = a.context().role.now();
    assert!(
        kept.sync_state_set.contains(&b_id) && kept.master_epoch == 1,
        "the isolated master changed its SyncStateSet without the controller: {kept:?}"
    );
    for p in proxies {
        p.set(Link::Up);
    }
    wait_role(&a, BrokerRole::Slave, 2, FAILOVER_WAIT).await;
    stop.cancel();
    old.await.unwrap();
    let answers = std::mem::take(&mut *answers.lock());
    let split: Vec<&Answer> = answers.iter().filter(|x| x.acked.is_some()).collect();
    assert!(
        split.is_empty(),
        "the isolated old master acknowledged {} sends after its links stalled \
         (the slave was elected {:?} after the stall): {split:?}",
        split.len(),
        elected_at - stalled_at
    );

    // The old master rejoins as an in-sync slave of the new one.
    wait_in_sync(&b, a_id, WAIT).await;
    acked.extend(send_all_ok(b.addr(), "after", SENDS).await);
    assert_eq!(a.context().role.now().role, BrokerRole::Slave);
    assert!(a.context().store.is_replica_only());
    assert_eq!(b.context().role.now().role, BrokerRole::SyncMaster);
    assert!(!b.context().store.is_replica_only());
    wait_routed_master(&ns, b.addr(), WAIT).await;
    assert_acked_on(&b, TOPIC, &acked, WAIT).await;
    wait_same_queues(&a, &b).await;
    eprintln!(
        "controller_partition {backend:?}: slave elected {:?} after the stall; the \
         isolated master answered {} sends, none SEND_OK ({:?}); {} sends acknowledged",
        elected_at - stalled_at,
        answers.len(),
        answers.iter().map(|x| &x.outcome).collect::<Vec<_>>(),
        acked.len()
    );
    a.shutdown().await;
    b.shutdown().await;
    ns.stop().await;
    ctl[0].stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_isolating_the_master_leaves_one_master_file() {
    partition_isolating_the_master(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_isolating_the_master_leaves_one_master_rocksdb() {
    partition_isolating_the_master(CqBackend::Rocksdb).await;
}
