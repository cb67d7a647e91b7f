//! In-process controller mode (RocketMQ 5.x automatic failover): controller
//! replicas on 127.0.0.1:0 (a group of one or three), brokers configured to
//! follow them, the waits a failover test needs (a role at an epoch, a
//! SyncStateSet member, the NameServer's master, a Raft leader) and what a
//! broker holds. Every wait is bounded by the caller's deadline.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_broker::config::Settings;
use rmq_broker::ha::BrokerRole;
use rmq_common::config::CqBackend;
use rmq_controller::server::{ControllerHandle, ControllerServer, ControllerSettings};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::fixtures::TestNameServer;

/// The brokerName every broker of these tests shares.
pub const SET: &str = "ctl-a";
/// How often the waits look again when nothing wakes them.
const POLL: Duration = Duration::from_millis(50);
/// Longest a stopped controller replica may take to end its tasks.
const STOP_BOUND: Duration = Duration::from_secs(20);

/// A controller replica running in this process.
pub struct ControllerReplica {
    /// Its address and state.
    pub handle: ControllerHandle,
    cancel: CancellationToken,
    tracker: TaskTracker,
}

impl ControllerReplica {
    /// Stops it as a killed process would look from outside: its listener
    /// and every connection close and its Raft node stops (the shutdown
    /// hands nothing over: no leadership transfer, no last word to peers).
    pub async fn stop(&self) {
        self.cancel.cancel();
        self.tracker.close();
        tokio::time::timeout(STOP_BOUND, self.tracker.wait())
            .await
            .expect("the controller replica stops");
    }
}

/// Starts a group of `n` controller replicas (ids 1..=n) on 127.0.0.1:0,
/// their Raft folders under `root`.
pub async fn controller_group(root: &Path, n: u64) -> Vec<ControllerReplica> {
    let mut listeners = BTreeMap::new();
    for id in 1..=n {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        listeners.insert(id, l);
    }
    let peers: BTreeMap<u64, String> = listeners
        .iter()
        .map(|(id, l)| (*id, l.local_addr().unwrap().to_string()))
        .collect();
    let mut group = Vec::new();
    for (id, listener) in listeners {
        let dir = root.join(format!("ctl-{id}"));
        let mut settings = ControllerSettings::new(id, peers.clone(), dir);
        settings.scan_interval_ms = 200;
        let (cancel, tracker) = (CancellationToken::new(), TaskTracker::new());
        let handle = ControllerServer::start(listener, settings, cancel.clone(), tracker.clone())
            .await
            .unwrap();
        group.push(ControllerReplica {
            handle,
            cancel,
            tracker,
        });
    }
    group
}

/// The `controllerAddr` value naming every replica of `group`.
pub fn controller_addrs(group: &[ControllerReplica]) -> String {
    let addrs: Vec<String> = group.iter().map(|r| r.handle.addr.to_string()).collect();
    addrs.join(";")
}

/// Waits until every replica of `live` names the same leader, other than
/// `not`, and that one says it leads; its index in `live`.
pub async fn agreed_leader(live: &[&ControllerReplica], not: Option<u64>, wait: Duration) -> usize {
    let deadline = Instant::now() + wait;
    loop {
        let seen: Vec<Option<u64>> = live.iter().map(|r| r.handle.leader()).collect();
        let agreed = seen[0].filter(|l| seen.iter().all(|s| *s == Some(*l)) && Some(*l) != not);
        let leading = live.iter().position(|r| r.handle.is_leader());
        if let (Some(_), Some(i)) = (agreed, leading) {
            return i;
        }
        assert!(
            Instant::now() < deadline,
            "no agreed controller leader (other than {not:?}) within {wait:?}: {seen:?}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Settings of a broker of the set [`SET`] in controller mode: its store
/// under `root`, registered with the NameServers `ns`, following the
/// controllers `ctl`; SYNC_FLUSH and `allAckInSyncStateSet` (an
/// acknowledged message is on every in-sync replica), heartbeats every
/// 200 ms and a 3 s heartbeat timeout.
pub fn controller_mode_settings(root: &Path, backend: CqBackend, ns: &str, ctl: &str) -> Settings {
    let mut s = crate::broker_settings(root, backend);
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

/// Starts two brokers of [`SET`] with [`controller_mode_settings`], their
/// stores in `dir/a` and `dir/b`: `a` first, waited for as master at epoch
/// 1, then `b`, waited for as its slave.
pub async fn start_master_and_slave(
    dir: &Path,
    backend: CqBackend,
    ns: &str,
    ctl: &str,
    wait: Duration,
) -> (Broker, Broker) {
    let a = Broker::start(controller_mode_settings(&dir.join("a"), backend, ns, ctl))
        .await
        .unwrap();
    wait_role(&a, BrokerRole::SyncMaster, 1, wait).await;
    let b = Broker::start(controller_mode_settings(&dir.join("b"), backend, ns, ctl))
        .await
        .unwrap();
    wait_role(&b, BrokerRole::Slave, 1, wait).await;
    (a, b)
}

/// Waits until `b` is `role` at a master epoch of at least `epoch`.
pub async fn wait_role(b: &Broker, role: BrokerRole, epoch: i32, wait: Duration) {
    let deadline = Instant::now() + wait;
    let state = &b.context().role;
    loop {
        let mut rx = state.subscribe();
        let now = state.now();
        if now.role == role && now.master_epoch >= epoch && !now.fenced {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "broker {} not {role:?} at epoch {epoch} within {wait:?}: {now:?}",
            b.addr()
        );
        let _ = tokio::time::timeout(POLL * 4, rx.changed()).await;
    }
}

/// Waits until the master `master` reports controller id `member` in its
/// accepted SyncStateSet.
pub async fn wait_in_sync(master: &Broker, member: i64, wait: Duration) {
    let deadline = Instant::now() + wait;
    while !master.context().role.now().sync_state_set.contains(&member) {
        assert!(
            Instant::now() < deadline,
            "{member} never joined the SyncStateSet: {:?}",
            master.context().role.now()
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Waits until the NameServer names `master` as [`SET`]'s master (id 0).
pub async fn wait_routed_master(ns: &TestNameServer, master: SocketAddr, wait: Duration) {
    let want = master.to_string();
    let deadline = Instant::now() + wait;
    loop {
        let route = ns.ns.routes().cluster_info();
        let named = route
            .broker_addr_table
            .get(SET)
            .and_then(|d| d.broker_addrs.get(&0).cloned());
        if named.as_deref() == Some(want.as_str()) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "route names {named:?}, not {want}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Creates `topic` with `queues` read and write queues on the master at
/// `master` (UPDATE_AND_CREATE_TOPIC, which registers it with the
/// NameServers before answering).
pub async fn create_topic(master: SocketAddr, topic: &str, queues: u32) {
    let admin = rmq_client::RemotingClient::connect(master).await.unwrap();
    let create = rmq_client::request(
        rmq_common::remoting::RequestCode::UpdateAndCreateTopic,
        &[
            ("topic", topic.into()),
            ("readQueueNums", queues.to_string()),
            ("writeQueueNums", queues.to_string()),
        ],
    );
    let r = admin.invoke(create, Duration::from_secs(5)).await.unwrap();
    assert_eq!(r.code, 0, "create {topic} on {master}: {:?}", r.remark);
    admin.close().await;
}

/// Messages `b` holds in `topic`'s first `queues` queues, once its
/// dispatch reached `want` (bounded by `wait`; the count then is what it
/// holds).
pub async fn held(b: &Broker, topic: &str, queues: i32, want: i64, wait: Duration) -> i64 {
    let count = || -> i64 {
        (0..queues)
            .map(|q| b.context().store.max_offset_in_queue(topic, q).unwrap_or(0))
            .sum()
    };
    let deadline = Instant::now() + wait;
    while count() < want && Instant::now() < deadline {
        tokio::time::sleep(POLL / 2).await;
    }
    count()
}

/// One acknowledged (SEND_OK) message: where its broker said it stored it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acked {
    /// The queue.
    pub queue_id: i32,
    /// The queue offset the acknowledgement named.
    pub queue_offset: i64,
    /// The body (unique per message in these tests).
    pub body: Vec<u8>,
}

/// The first acknowledged message `b` does not hold at the queue offset
/// its acknowledgement named, if any.
fn first_missing<'a>(b: &Broker, topic: &str, acked: &'a [Acked]) -> Option<&'a Acked> {
    let queues: BTreeSet<i32> = acked.iter().map(|m| m.queue_id).collect();
    let mut held = BTreeMap::new();
    for q in queues {
        for m in crate::read_queue(&b.context().store, topic, q) {
            held.insert((q, m.queue_offset), m.body);
        }
    }
    acked
        .iter()
        .find(|m| held.get(&(m.queue_id, m.queue_offset)) != Some(&m.body))
}

/// The durability contract of a failover: no queue offset of `topic` was
/// acknowledged for two different messages, and every acknowledged message
/// is readable on `b` (the master now) at the queue offset its
/// acknowledgement named, once `b`'s dispatch got there (bounded by
/// `wait`).
pub async fn assert_acked_on(b: &Broker, topic: &str, acked: &[Acked], wait: Duration) {
    let mut at: BTreeMap<(i32, i64), &[u8]> = BTreeMap::new();
    for m in acked {
        if let Some(other) = at.insert((m.queue_id, m.queue_offset), &m.body) {
            assert_eq!(
                other,
                m.body.as_slice(),
                "queue {} offset {} acknowledged for two messages",
                m.queue_id,
                m.queue_offset
            );
        }
    }
    let deadline = Instant::now() + wait;
    while let Some(m) = first_missing(b, topic, acked) {
        assert!(
            Instant::now() < deadline,
            "acknowledged message {:?} at queue {} offset {} is not on {} within {wait:?}",
            String::from_utf8_lossy(&m.body),
            m.queue_id,
            m.queue_offset,
            b.addr()
        );
        tokio::time::sleep(POLL).await;
    }
}
