//! Brokers in controller mode (RocketMQ 5.x automatic failover) under this
//! project's controller (one replica, in-process): the first broker to
//! register is elected master (epoch 1), the second follows it as a slave,
//! each keeps the id the controller gave it; when the master dies the
//! controller elects the slave (epoch 2), which takes writes at once and
//! is the master the NameServer routes to.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_broker::ha::BrokerRole;
use rmq_client::OutMessage;
use rmq_client::{Producer, ProducerOptions};
use rmq_common::config::CqBackend;
use rmq_common::time::SystemClock;
use rmq_tests::controller_fixture::{
    controller_group, create_topic, held, start_master_and_slave, wait_in_sync, wait_role,
    wait_routed_master, SET,
};
use rmq_tests::fixtures::TestNameServer;

/// Bound of every wait for a role.
const WAIT: Duration = Duration::from_secs(20);

fn identity(root: &Path) -> String {
    std::fs::read_to_string(root.join("brokerIdentity")).unwrap_or_default()
}

/// Creates `topic` on the master at `master` and sends to it through the
/// NameServer's route.
pub(crate) async fn send_ok(ns: SocketAddr, master: SocketAddr, topic: &str, n: usize) {
    create_topic(master, topic, 2).await;
    let producer = Producer::new(
        ns,
        ProducerOptions {
            timeout: Duration::from_secs(5),
            ..ProducerOptions::default()
        },
        Arc::new(SystemClock),
    );
    let msg = OutMessage {
        body: b"ctl".to_vec(),
        tags: None,
        keys: vec![],
        properties: vec![],
    };
    for _ in 0..n {
        let sent = producer
            .send(topic, msg.clone())
            .await
            .expect("send to the master");
        assert_eq!(sent.broker_name, SET);
    }
}

async fn roles_and_failover(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let ctl = controller_group(dir.path(), 1).await;
    let ctl_addr = ctl[0].handle.addr.to_string();
    let ns = TestNameServer::start(rmq_common::time::now_ms()).await;
    let ns_addr = ns.ns.addr.to_string();
    let (ra, rb) = (dir.path().join("a"), dir.path().join("b"));
    let (a, b) = start_master_and_slave(dir.path(), backend, &ns_addr, &ctl_addr, WAIT).await;
    assert_eq!(identity(&ra), format!("DefaultCluster#{SET}#1"));
    assert_eq!(identity(&rb), format!("DefaultCluster#{SET}#2"));
    assert_eq!(a.context().role.broker_id(), 0);
    assert_eq!(b.context().role.broker_id(), 2);
    // The slave refuses writes; the master takes them.
    assert!(b.context().store.is_replica_only());
    send_ok(ns.ns.addr, a.addr(), "CtlTopic", 20).await;
    // The slave catches up and the master reports it in sync; from then
    // on every send waits for it (allAckInSyncStateSet).
    wait_in_sync(&a, 2, WAIT).await;
    send_ok(ns.ns.addr, a.addr(), "CtlTopic", 30).await;
    let acked = held(&a, "CtlTopic", 2, 50, WAIT).await;
    assert_eq!(acked, 50);

    let killed_at = Instant::now();
    a.halt().await;
    wait_role(&b, BrokerRole::SyncMaster, 2, WAIT).await;
    let elected_in = killed_at.elapsed();
    assert!(!b.context().store.is_replica_only());
    wait_routed_master(&ns, b.addr(), WAIT).await;
    // Every acknowledged message is on the new master, and it takes more.
    assert_eq!(
        held(&b, "CtlTopic", 2, acked, WAIT).await,
        acked,
        "acknowledged messages missing"
    );
    send_ok(ns.ns.addr, b.addr(), "CtlTopic2", 5).await;
    assert_eq!(b.context().store.last_epoch(), 2);
    eprintln!("controller_mode {backend:?}: slave elected master {elected_in:?} after the kill");
    assert!(
        elected_in < Duration::from_secs(5),
        "election took {elected_in:?}"
    );
    b.shutdown().await;
    ns.stop().await;
    ctl[0].stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_elects_the_slave_when_the_master_dies_file() {
    roles_and_failover(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_elects_the_slave_when_the_master_dies_rocksdb() {
    roles_and_failover(CqBackend::Rocksdb).await;
}
