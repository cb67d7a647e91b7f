//! Controller mode across implementations: one broker set of this
//! project's broker and Apache RocketMQ 5.3.3's, under this project's
//! controller (in-process, one replica, with our NameServer) or under
//! Apache's (embedded in its 5.3.3 NameServer, one DLedger replica). Each
//! test starts the future master first (the first to register is elected,
//! epoch 1), then the other, which follows it over the auto-switch HA
//! protocol after learning the master's HA address from the NameServer.
//! Sends go straight to the master with `allAckInSyncStateSet`, so once
//! the controller's SyncStateSet holds both ids every acknowledged send is
//! on both. Then the master is killed (SIGKILL for Java, `halt` for ours):
//! the other must be elected (epoch 2) within [`ELECTION_BOUND`], hold
//! every acknowledged message, be the master the NameServer names, and
//! take new sends.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_broker::config::Settings;
use rmq_broker::ha::BrokerRole;
use rmq_broker::replicas::rpc::{Controllers, MasterInfo, Me};
use rmq_client::{self as sdk, Connector, OutMessage, SendCode};
use rmq_common::config::CqBackend;
use rmq_common::remoting::body::ClusterInfo;
use rmq_common::remoting::{RemotingCommand, RequestCode};
use rmq_tests::apache::{self, Jvm};
use rmq_tests::controller_fixture::controller_mode_settings;
use rmq_tests::fixtures::TestNameServer;
use rmq_tools::admin;

/// Bound of every wait for a role, a SyncStateSet or replicated messages
/// (Apache's broker polls the controller and reports over HA once a
/// second with the settings below).
const WAIT: Duration = Duration::from_secs(60);
/// Longest the other broker may take to be elected master after the kill
/// (the killed broker's closed connection makes it dead at once; failing
/// that, its heartbeat timeout, 3 s ours and 10 s Apache's, and a scan,
/// every second or faster).
const ELECTION_BOUND: Duration = Duration::from_secs(15);
/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(100);
const SET: &str = "ctl-interop";
const TOPIC: &str = "CtlInteropTopic";
const QUEUES: i32 = 2;
/// Messages sent before the slave is in the SyncStateSet, and after.
const BEFORE_SYNC: usize = 20;
const AFTER_SYNC: usize = 30;
/// Sends to the new master.
const AFTER_FAILOVER: usize = 5;
/// CommitLog segment size of both sides: replicated offsets fall in the
/// same segments.
const SEGMENT_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctl {
    Ours,
    Apache,
}

/// Whose broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Ours,
    Apache,
}

/// The controller and the NameServer of a run.
struct Cluster {
    /// Our controller (in-process), or Apache's inside `apache_ns`.
    ours: Option<OurController>,
    our_ns: Option<TestNameServer>,
    apache_ns: Option<Jvm>,
    ctl_addr: String,
    ns_addr: SocketAddr,
}

struct OurController {
    handle: rmq_controller::server::ControllerHandle,
    cancel: tokio_util::sync::CancellationToken,
    tracker: tokio_util::task::TaskTracker,
}

async fn our_controller(dir: &Path) -> OurController {
    use rmq_controller::server::{ControllerServer, ControllerSettings};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut settings = ControllerSettings::new(
        1,
        std::collections::BTreeMap::from([(1, addr.to_string())]),
        dir.to_path_buf(),
    );
    settings.scan_interval_ms = 200;
    let (cancel, tracker) = (
        tokio_util::sync::CancellationToken::new(),
        tokio_util::task::TaskTracker::new(),
    );
    let handle = ControllerServer::start(listener, settings, cancel.clone(), tracker.clone())
        .await
        .unwrap();
    OurController {
        handle,
        cancel,
        tracker,
    }
}

impl Cluster {
    async fn start(kind: Ctl, dir: &Path) -> Self {
        match kind {
            Ctl::Ours => {
                let ctl = our_controller(&dir.join("ctl")).await;
                let ns = TestNameServer::start(rmq_common::time::now_ms()).await;
                Self {
                    ctl_addr: ctl.handle.addr.to_string(),
                    ns_addr: ns.ns.addr,
                    ours: Some(ctl),
                    our_ns: Some(ns),
                    apache_ns: None,
                }
            }
            Ctl::Apache => {
                let (jvm, port, ctl) = Jvm::namesrv_5_3_3_on_free_ports(
                    &dir.join("apache-ns"),
                    true,
                    "scanNotActiveBrokerInterval=1000\nscanInactiveMasterInterval=1000\n",
                );
                Self {
                    ctl_addr: format!("127.0.0.1:{}", ctl.unwrap()),
                    ns_addr: apache::local(port),
                    ours: None,
                    our_ns: None,
                    apache_ns: Some(jvm),
                }
            }
        }
    }

    async fn stop(self) {
        if let Some(ns) = self.our_ns {
            ns.stop().await;
        }
        if let Some(ctl) = self.ours {
            ctl.cancel.cancel();
            ctl.tracker.close();
            let _ = tokio::time::timeout(WAIT, ctl.tracker.wait()).await;
        }
        drop(self.apache_ns);
    }

    /// GET_REPLICA_INFO of the set, from the controller leader.
    async fn replica_info(&self) -> Option<MasterInfo> {
        let probe = Controllers::new(
            Connector::new(),
            Me {
                cluster: "DefaultCluster".into(),
                broker_name: SET.into(),
                addr: "127.0.0.1:1".into(),
            },
            vec![self.ctl_addr.clone()],
        );
        probe.find_leader().await.ok()?;
        probe.replica_info().await.ok()
    }

    /// Waits until the controller says `ok` of the set; returns its answer.
    async fn wait_info(&self, what: &str, ok: impl Fn(&MasterInfo) -> bool) -> MasterInfo {
        let deadline = Instant::now() + WAIT;
        loop {
            let info = self.replica_info().await;
            if let Some(i) = info.as_ref().filter(|i| ok(i)) {
                return i.clone();
            }
            assert!(
                Instant::now() < deadline,
                "{what} within {WAIT:?}: the controller says {info:?}"
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// The address the NameServer routes the set's master (id 0) to.
    async fn routed_master(&self) -> Option<String> {
        let c = sdk::connect(self.ns_addr).await.ok()?;
        let r = sdk::call(
            &c,
            RemotingCommand::request(RequestCode::GetBrokerClusterInfo),
        )
        .await
        .ok()?;
        let info: ClusterInfo = rmq_common::json::from_slice(r.body.as_deref()?).ok()?;
        info.broker_addr_table
            .get(SET)?
            .broker_addrs
            .get(&0)
            .cloned()
    }
}

/// One member of the set (ours boxed: a broker is far larger than the
/// handle of a JVM).
enum Member {
    Ours(Box<Broker>),
    Apache { jvm: Jvm, addr: SocketAddr },
}

impl Member {
    fn addr(&self) -> SocketAddr {
        match self {
            Self::Ours(b) => b.addr(),
            Self::Apache { addr, .. } => *addr,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Self::Ours(_) => "our broker",
            Self::Apache { .. } => "Apache's broker",
        }
    }

    /// Messages it holds in [`TOPIC`] (sum of the queues' max offsets).
    async fn held(&self, topic: &str) -> i64 {
        match self {
            Self::Ours(b) => (0..QUEUES)
                .map(|q| b.context().store.max_offset_in_queue(topic, q).unwrap_or(0))
                .sum(),
            Self::Apache { addr, .. } => {
                let Ok(c) = sdk::connect(*addr).await else {
                    return -1;
                };
                let mut sum = 0;
                for q in 0..QUEUES {
                    match sdk::queue_offset(&c, RequestCode::GetMaxOffset, topic, q).await {
                        Ok(n) => sum += n,
                        Err(_) => return -1,
                    }
                }
                sum
            }
        }
    }

    /// Waits (bounded) until it holds `want` messages of `topic`; returns
    /// what it holds then.
    async fn held_at_least(&self, topic: &str, want: i64) -> i64 {
        let deadline = Instant::now() + WAIT;
        loop {
            let n = self.held(topic).await;
            if n >= want || Instant::now() >= deadline {
                return n;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn kill(self) {
        match self {
            Self::Ours(b) => (*b).halt().await,
            Self::Apache { mut jvm, .. } => jvm.kill(),
        }
    }
}

/// How long a master waits for the SyncStateSet's acknowledgements (both
/// sides): RocketMQ's 3 s default answers FLUSH_SLAVE_TIMEOUT when a
/// loaded 2-core machine stalls a slave that long, which says nothing about
/// interoperation and would fail `send_all`.
const SLAVE_TIMEOUT_MS: u64 = 15_000;

fn our_settings(root: &Path, backend: CqBackend, ns: SocketAddr, ctl: &str) -> Settings {
    let mut s = controller_mode_settings(root, backend, &ns.to_string(), ctl);
    s.broker.slave_timeout_ms = SLAVE_TIMEOUT_MS;
    s.store.mapped_file_size_commit_log_bytes = SEGMENT_BYTES;
    s.broker.broker_name = SET.into();
    s
}

/// Apache 5.3.3's broker in controller mode, in the same set, with the
/// same short periods as ours, except the heartbeat timeout: Java's 10 s
/// default, as a JVM starting on a busy machine can pause longer than 3 s
/// between heartbeats (a controller that then drops its master elects
/// again). A killed JVM closes its connection to the controller, which
/// counts it dead at once either way.
fn apache_broker(home: &Path, ns: SocketAddr, ctl: &str) -> Member {
    let extra = format!(
        "brokerName={SET}\nbrokerId=-1\nbrokerRole=SLAVE\nbrokerIP2=127.0.0.1\n\
         namesrvAddr={ns}\nenableControllerMode=true\ncontrollerAddr={ctl}\n\
         allAckInSyncStateSet=true\nmappedFileSizeCommitLog={SEGMENT_BYTES}\n\
         slaveTimeout={SLAVE_TIMEOUT_MS}\n\
         brokerHeartbeatInterval=500\n\
         syncBrokerMetadataPeriod=1000\ncheckSyncStateSetPeriod=1000\n\
         syncControllerMetadataPeriod=2000\nhaSendHeartbeatInterval=1000\n"
    );
    let (jvm, port) = Jvm::broker_5_3_3_on_free_ports(home, &extra);
    Member::Apache {
        jvm,
        addr: apache::local(port),
    }
}

async fn start_member(side: Side, dir: &Path, backend: CqBackend, cl: &Cluster) -> Member {
    if side == Side::Ours {
        let s = our_settings(&dir.join("ours"), backend, cl.ns_addr, &cl.ctl_addr);
        Member::Ours(Box::new(Broker::start(s).await.unwrap()))
    } else {
        apache_broker(&dir.join("apache"), cl.ns_addr, &cl.ctl_addr)
    }
}

/// Waits until our broker is `role` at master epoch `epoch` or later.
async fn wait_our_role(m: &Member, role: BrokerRole, epoch: i32) {
    let Member::Ours(b) = m else {
        return;
    };
    let deadline = Instant::now() + WAIT;
    loop {
        let now = b.context().role.now();
        if now.role == role && now.master_epoch >= epoch && !now.fenced {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "our broker not {role:?} at epoch {epoch} within {WAIT:?}: {now:?}"
        );
        tokio::time::sleep(POLL).await;
    }
}

fn msg(i: usize) -> OutMessage {
    OutMessage {
        body: format!("ctl-interop-{i}").into_bytes(),
        tags: Some("T".into()),
        keys: vec![format!("k{i}")],
        properties: vec![],
    }
}

/// Sends `n` messages to `master`, spread over the queues; each must be
/// acknowledged (SEND_OK: with allAckInSyncStateSet, stored on every
/// member of the SyncStateSet).
async fn send_all(master: SocketAddr, topic: &str, from: usize, n: usize) {
    let c = sdk::connect(master).await.unwrap();
    for i in from..from + n {
        let q = (i % QUEUES as usize) as i32;
        let r = sdk::send(&c, SendCode::V2, "ctl-p", topic, q, &[msg(i)])
            .await
            .unwrap_or_else(|e| panic!("send {i} to the master {master}: {e}"));
        assert_eq!(r.code, 0, "send {i} to {master} not acknowledged");
    }
}

/// Sends message `i` to `broker` until it is acknowledged (bounded): a
/// broker the controller just elected takes writes once it has switched
/// its role (Apache's polls or is notified, then installs the master).
async fn send_until_taken(broker: SocketAddr, topic: &str, i: usize) {
    let deadline = Instant::now() + WAIT;
    let q = (i % QUEUES as usize) as i32;
    loop {
        let refused = match sdk::connect(broker).await {
            Ok(c) => match sdk::send(&c, SendCode::V2, "ctl-p", topic, q, &[msg(i)]).await {
                Ok(r) if r.code == 0 => return,
                Ok(r) => format!("code {}", r.code),
                Err(e) => e.to_string(),
            },
            Err(e) => e.to_string(),
        };
        assert!(
            Instant::now() < deadline,
            "{broker} never took send {i} within {WAIT:?}: {refused}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Creates `topic` on `broker`, retrying (bounded) while it still refuses
/// writes (a master being installed).
async fn create_topic(broker: SocketAddr, topic: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        match admin::topic_create(&Connector::new(), broker, topic, QUEUES, 6).await {
            Ok(_) => return,
            Err(e) => assert!(Instant::now() < deadline, "create {topic} on {broker}: {e}"),
        }
        tokio::time::sleep(POLL).await;
    }
}

/// `first` is started first and so is the first master.
async fn interop(ctl: Ctl, first: Side, backend: CqBackend) {
    // Our brokers' and controller's logs, filtered by RUST_LOG (errors
    // only without it), shown with the test's output.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    apache::require_jars_5_3_3();
    rmq_tests::grpc_proxy::require_jars();
    // RMQ_KEEP_DIRS keeps the stores and the Java logs
    // (<home>/logs/rocketmqlogs) for a look after a failure.
    let dir = tempfile::Builder::new()
        .prefix("ctl-interop")
        .disable_cleanup(std::env::var_os("RMQ_KEEP_DIRS").is_some())
        .tempdir()
        .unwrap();
    eprintln!("controller_interop: folder {}", dir.path().display());
    let cl = Cluster::start(ctl, dir.path()).await;
    let label = format!("{ctl:?} controller, {first:?} master first, {backend:?}");

    // The first to register is elected master at epoch 1 with id 1.
    let master = start_member(first, dir.path(), backend, &cl).await;
    let m_addr = master.addr().to_string();
    let info = cl
        .wait_info("the first broker elected", |i| {
            i.master_addr.as_deref() == Some(m_addr.as_str())
        })
        .await;
    assert_eq!(
        (info.master_id, info.master_epoch),
        (Some(1), 1),
        "{info:?}"
    );
    wait_our_role(&master, BrokerRole::SyncMaster, 1).await;
    let other = if first == Side::Ours {
        Side::Apache
    } else {
        Side::Ours
    };
    let slave = start_member(other, dir.path(), backend, &cl).await;
    wait_our_role(&slave, BrokerRole::Slave, 1).await;

    create_topic(master.addr(), TOPIC).await;
    send_all(master.addr(), TOPIC, 0, BEFORE_SYNC).await;
    // The slave catches up and the master reports it in sync.
    let info = cl
        .wait_info("the slave (id 2) in the SyncStateSet", |i| {
            i.sync_state_set.contains(&1) && i.sync_state_set.contains(&2)
        })
        .await;
    assert_eq!(
        (info.master_id, info.master_epoch),
        (Some(1), 1),
        "{info:?}"
    );
    send_all(master.addr(), TOPIC, BEFORE_SYNC, AFTER_SYNC).await;
    let acked = (BEFORE_SYNC + AFTER_SYNC) as i64;
    assert_eq!(master.held_at_least(TOPIC, acked).await, acked);
    assert_eq!(
        slave.held_at_least(TOPIC, acked).await,
        acked,
        "{} (slave) holds what {} acknowledged",
        slave.name(),
        master.name()
    );

    let killed_at = Instant::now();
    master.kill().await;
    let s_addr = slave.addr().to_string();
    let info = cl
        .wait_info("the slave elected", |i| {
            i.master_id == Some(2) && i.master_epoch >= 2
        })
        .await;
    let elected_in = killed_at.elapsed();
    assert_eq!(info.master_addr.as_deref(), Some(s_addr.as_str()));
    wait_our_role(&slave, BrokerRole::SyncMaster, 2).await;
    // Every acknowledged message is on the new master.
    assert_eq!(
        slave.held_at_least(TOPIC, acked).await,
        acked,
        "acknowledged messages missing on the new master"
    );
    // It takes new sends, and the NameServer routes to it.
    create_topic(slave.addr(), TOPIC).await;
    send_until_taken(slave.addr(), TOPIC, acked as usize).await;
    let writable_in = killed_at.elapsed();
    send_all(slave.addr(), TOPIC, acked as usize + 1, AFTER_FAILOVER - 1).await;
    let total = acked + AFTER_FAILOVER as i64;
    assert_eq!(slave.held_at_least(TOPIC, total).await, total);
    let deadline = Instant::now() + WAIT;
    loop {
        let routed = cl.routed_master().await;
        if routed.as_deref() == Some(s_addr.as_str()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the NameServer routes the master to {routed:?}, not {s_addr}"
        );
        tokio::time::sleep(POLL).await;
    }
    eprintln!(
        "controller_interop ({label}): {acked} acknowledged, {acked} on the new master; \
         elected {elected_in:?} after the kill, writable after {writable_in:?}"
    );
    assert!(
        elected_in < ELECTION_BOUND,
        "election took {elected_in:?} ({label})"
    );
    if let Member::Ours(b) = slave {
        (*b).shutdown().await;
    }
    cl.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_controller_our_master_apache_slave_file() {
    interop(Ctl::Ours, Side::Ours, CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_controller_apache_master_our_slave_file() {
    interop(Ctl::Ours, Side::Apache, CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_controller_our_master_apache_slave_file() {
    interop(Ctl::Apache, Side::Ours, CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_controller_apache_master_our_slave_file() {
    interop(Ctl::Apache, Side::Apache, CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_controller_apache_master_our_slave_rocksdb() {
    interop(Ctl::Ours, Side::Apache, CqBackend::Rocksdb).await;
}

/// An ELECT_MASTER answer as Apache RocketMQ 5.3.3's controller writes it
/// (fastjson leaves the member group's numeric keys bare) is read.
#[test]
fn reads_java_elect_answer_with_bare_map_keys() {
    use rmq_common::remoting::ResponseCode;
    let body = br#"{"brokerMemberGroup":{"brokerAddrs":{1:"127.0.0.1:30911",2:"127.0.0.1:30921"},"brokerName":"broker-a","cluster":"DefaultCluster"},"syncStateSet":[1]}"#;
    let mut resp = RemotingCommand::response(ResponseCode::Success, None);
    resp.put_ext("masterBrokerId", 1);
    resp.put_ext("masterAddress", "127.0.0.1:30911");
    resp.put_ext("masterEpoch", 1);
    resp.put_ext("syncStateSetEpoch", 1);
    let info = MasterInfo::from_answer(&resp.with_body(body.to_vec())).unwrap();
    assert_eq!(
        info,
        MasterInfo {
            master_id: Some(1),
            master_addr: Some("127.0.0.1:30911".into()),
            master_epoch: 1,
            sync_state_set: std::collections::BTreeSet::from([1]),
            sync_state_set_epoch: 1,
        }
    );
}
