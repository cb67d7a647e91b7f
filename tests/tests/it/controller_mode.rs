//! Brokers in controller mode (RocketMQ 5.x automatic failover) under this
//! project's controller (one replica, in-process): the first broker to
//! register is elected master (epoch 1), the second follows it as a slave,
//! each keeps the id the controller gave it; when the master dies the
//! controller elects the slave (epoch 2), which takes writes at once and
//! is the master the NameServer routes to.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_broker::config::Settings;
use rmq_broker::ha::BrokerRole;
use rmq_client::OutMessage;
use rmq_client::{Producer, ProducerOptions};
use rmq_common::config::CqBackend;
use rmq_common::time::SystemClock;
use rmq_controller::server::{ControllerHandle, ControllerServer, ControllerSettings};
use rmq_tests::fixtures::TestNameServer;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Bound of every wait for a role.
pub(crate) const WAIT: Duration = Duration::from_secs(20);
pub(crate) const SET: &str = "ctl-a";

/// An in-process controller replica and what stops it.
pub(crate) struct Controller {
    pub(crate) handle: ControllerHandle,
    pub(crate) cancel: CancellationToken,
    pub(crate) tracker: TaskTracker,
}

impl Controller {
    /// Stops it and waits (bounded) for its tasks.
    pub(crate) async fn stop(self) {
        self.cancel.cancel();
        self.tracker.close();
        let _ = tokio::time::timeout(WAIT, self.tracker.wait()).await;
    }
}

/// A one-replica controller group on 127.0.0.1:0, storing in `dir`.
pub(crate) async fn controller(dir: &Path) -> Controller {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut settings = ControllerSettings::new(
        1,
        BTreeMap::from([(1, addr.to_string())]),
        dir.to_path_buf(),
    );
    settings.scan_interval_ms = 200;
    let (cancel, tracker) = (CancellationToken::new(), TaskTracker::new());
    let handle = ControllerServer::start(listener, settings, cancel.clone(), tracker.clone())
        .await
        .unwrap();
    Controller {
        handle,
        cancel,
        tracker,
    }
}

/// A broker of set [`SET`] in controller mode under the controller `ctl`.
pub(crate) fn settings(root: &Path, backend: CqBackend, ns: &str, ctl: &str) -> Settings {
    let mut s = rmq_tests::broker_settings(root, backend);
    s.broker.broker_name = SET.into();
    s.broker.namesrv_listen_port = -1;
    s.broker.namesrv_addr = ns.to_owned();
    s.broker.broker_role = BrokerRole::Slave;
    s.broker.broker_id = -1;
    let c = &mut s.broker.controller;
    c.enable_controller_mode = true;
    c.controller_addr = ctl.to_owned();
    c.broker_heartbeat_interval_ms = 200;
    c.controller_heartbeat_timeout_ms = 3_000;
    c.sync_broker_metadata_period_ms = 500;
    c.check_sync_state_set_period_ms = 500;
    c.all_ack_in_sync_state_set = true;
    s.broker.ha_send_heartbeat_interval_ms = 500;
    s.broker.ha_housekeeping_interval_ms = 5_000;
    s.store.flush_disk_type = rmq_common::FlushDiskType::SyncFlush;
    s
}

/// Waits until `b` is `role` at a master epoch of at least `epoch`.
pub(crate) async fn wait_role(b: &Broker, role: BrokerRole, epoch: i32) {
    let deadline = Instant::now() + WAIT;
    let state = &b.context().role;
    loop {
        let now = state.now();
        if now.role == role && now.master_epoch >= epoch && !now.fenced {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "broker {} not {role:?} at epoch {epoch} within {WAIT:?}: {now:?}",
            b.addr()
        );
        let mut rx = state.subscribe();
        let _ = tokio::time::timeout(Duration::from_millis(200), rx.changed()).await;
    }
}

fn identity(root: &Path) -> String {
    std::fs::read_to_string(root.join("brokerIdentity")).unwrap_or_default()
}

/// Creates `topic` on the master at `master` (UPDATE_AND_CREATE_TOPIC, which
/// registers it with the NameServer before answering) and sends to it
/// through the NameServer's route.
pub(crate) async fn send_ok(
    ns: std::net::SocketAddr,
    master: std::net::SocketAddr,
    topic: &str,
    n: usize,
) {
    let admin = rmq_client::RemotingClient::connect(master).await.unwrap();
    let create = rmq_client::request(
        rmq_common::remoting::RequestCode::UpdateAndCreateTopic,
        &[
            ("topic", topic.into()),
            ("readQueueNums", "2".into()),
            ("writeQueueNums", "2".into()),
        ],
    );
    let r = admin.invoke(create, Duration::from_secs(5)).await.unwrap();
    assert_eq!(r.code, 0, "create {topic} on {master}: {:?}", r.remark);
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

/// Messages `b` holds in `topic`'s two queues, once its dispatch reached
/// `want` (bounded; the count then is what it holds).
async fn held(b: &Broker, topic: &str, want: i64) -> i64 {
    let count = || -> i64 {
        (0..2)
            .map(|q| b.context().store.max_offset_in_queue(topic, q).unwrap_or(0))
            .sum()
    };
    let deadline = Instant::now() + WAIT;
    while count() < want && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    count()
}

/// A controller, a NameServer, and two brokers of [`SET`] under them,
/// each in its folder of `dir`: `a` (`ra`) the master and `b` (`rb`) its
/// slave at epoch 1.
pub(crate) struct SetOfTwo {
    pub(crate) ctl: Controller,
    pub(crate) ns: TestNameServer,
    pub(crate) a: Broker,
    pub(crate) b: Broker,
    pub(crate) ra: std::path::PathBuf,
    pub(crate) rb: std::path::PathBuf,
}

impl SetOfTwo {
    /// Starts them on `backend`, the master first.
    pub(crate) async fn start(dir: &Path, backend: CqBackend) -> Self {
        let ctl = controller(&dir.join("ctl")).await;
        let ctl_addr = ctl.handle.addr.to_string();
        let ns = TestNameServer::start(rmq_common::time::now_ms()).await;
        let ns_addr = ns.ns.addr.to_string();
        let (ra, rb) = (dir.join("a"), dir.join("b"));
        let a = Broker::start(settings(&ra, backend, &ns_addr, &ctl_addr))
            .await
            .unwrap();
        wait_role(&a, BrokerRole::SyncMaster, 1).await;
        let b = Broker::start(settings(&rb, backend, &ns_addr, &ctl_addr))
            .await
            .unwrap();
        wait_role(&b, BrokerRole::Slave, 1).await;
        Self {
            ctl,
            ns,
            a,
            b,
            ra,
            rb,
        }
    }
}

async fn roles_and_failover(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let SetOfTwo {
        ctl,
        ns,
        a,
        b,
        ra,
        rb,
    } = SetOfTwo::start(dir.path(), backend).await;
    assert_eq!(identity(&ra), format!("DefaultCluster#{SET}#1"));
    assert_eq!(identity(&rb), format!("DefaultCluster#{SET}#2"));
    assert_eq!(a.context().role.broker_id(), 0);
    assert_eq!(b.context().role.broker_id(), 2);
    // The slave refuses writes; the master takes them.
    assert!(b.context().store.is_replica_only());
    send_ok(ns.ns.addr, a.addr(), "CtlTopic", 20).await;
    // The slave catches up and the master reports it in sync; from then
    // on every send waits for it (allAckInSyncStateSet).
    let deadline = Instant::now() + WAIT;
    while !a.context().role.now().sync_state_set.contains(&2) {
        assert!(
            Instant::now() < deadline,
            "slave never joined the SyncStateSet: {:?}",
            a.context().role.now()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    send_ok(ns.ns.addr, a.addr(), "CtlTopic", 30).await;
    let acked = held(&a, "CtlTopic", 50).await;
    assert_eq!(acked, 50);

    let killed_at = Instant::now();
    a.halt().await;
    wait_role(&b, BrokerRole::SyncMaster, 2).await;
    let elected_in = killed_at.elapsed();
    assert!(!b.context().store.is_replica_only());
    let b_addr = b.addr().to_string();
    let deadline = Instant::now() + WAIT;
    loop {
        let route = ns.ns.routes().cluster_info();
        let master = route
            .broker_addr_table
            .get(SET)
            .and_then(|d| d.broker_addrs.get(&0).cloned());
        if master.as_deref() == Some(b_addr.as_str()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "route names {master:?}, not {b_addr}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Every acknowledged message is on the new master, and it takes more.
    assert_eq!(
        held(&b, "CtlTopic", acked).await,
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
    ctl.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_elects_the_slave_when_the_master_dies_file() {
    roles_and_failover(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_elects_the_slave_when_the_master_dies_rocksdb() {
    roles_and_failover(CqBackend::Rocksdb).await;
}
