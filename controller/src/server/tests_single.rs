//! One controller replica on 127.0.0.1:0, and a broker set registering
//! with it as 5.3.3 brokers do, until the controller re-elects by itself.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rmq_common::remoting::{RemotingCommand, ResponseCode};
use rmq_common::time::ManualClock;
use tempfile::TempDir;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::server::test_broker::{code, connect, eventually, ext, ext_i64, metadata, FakeBroker};
use crate::server::{ControllerHandle, ControllerServer, ControllerSettings};
use crate::wire::{ElectMasterBody, SyncStateSetBody};

/// Bound of every wait on the controller (leadership, a scan's election).
pub(super) const WAIT: Duration = Duration::from_secs(10);

/// A running replica and what stops it.
pub struct Running {
    /// Its handle.
    pub handle: ControllerHandle,
    /// Stops it.
    pub cancel: CancellationToken,
    /// Its tasks.
    pub tracker: TaskTracker,
    /// Its store, removed when dropped.
    pub _dir: TempDir,
}

impl Running {
    /// Stops it and waits (bounded) until every task ended.
    pub async fn stop(self) {
        self.cancel.cancel();
        self.tracker.close();
        tokio::time::timeout(WAIT, self.tracker.wait())
            .await
            .expect("controller tasks did not end");
    }
}

pub(super) async fn start_single(clock: Arc<ManualClock>) -> Running {
    start_single_with(clock, |_| {}).await
}

/// A single replica whose settings `adjust` changes first.
pub(super) async fn start_single_with(
    clock: Arc<ManualClock>,
    adjust: impl FnOnce(&mut ControllerSettings),
) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let dir = TempDir::new().unwrap();
    let mut settings = ControllerSettings::new(
        1,
        BTreeMap::from([(1, addr.to_string())]),
        dir.path().to_path_buf(),
    );
    settings.scan_interval_ms = 50;
    settings.scan_inactive_master_interval_ms = 50;
    settings.clock = clock;
    adjust(&mut settings);
    let (cancel, tracker) = (CancellationToken::new(), TaskTracker::new());
    let handle = ControllerServer::start(listener, settings, cancel.clone(), tracker.clone())
        .await
        .unwrap();
    Running {
        handle,
        cancel,
        tracker,
        _dir: dir,
    }
}

pub(super) fn sync_state_set(resp: &RemotingCommand) -> SyncStateSetBody {
    serde_json::from_slice(resp.body.as_deref().unwrap()).unwrap()
}

pub(super) async fn wait_alive(h: &ControllerHandle, clock: &ManualClock, name: &str, id: i64) {
    use rmq_common::time::Clock;
    eventually(WAIT, "the heartbeat is recorded", || async {
        h.service().live.lock().alive(name, id, clock.now_ms())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_set_registers_and_the_controller_reelects_when_the_master_dies() {
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let c = start_single(Arc::clone(&clock)).await;
    let h = &c.handle;
    let to = connect(h.addr).await;

    // Not a controller code: Java's answer.
    let resp = crate::server::test_broker::call(&to, RemotingCommand::request(9999)).await;
    assert_eq!(code(&resp), ResponseCode::RequestCodeNotSupported);
    assert_eq!(
        resp.remark.as_deref(),
        Some(" request type 9999 not supported")
    );

    // The broker asks any controller for the leader (3 tries, then every
    // 10 s); a 1-replica group elects itself.
    eventually(WAIT, "the replica leads", || async {
        ext(&metadata(&to).await, "isLeader") == "true"
    })
    .await;
    let meta = metadata(&to).await;
    assert_eq!(ext(&meta, "controllerLeaderAddress"), h.addr.to_string());
    assert_eq!(ext(&meta, "controllerLeaderId"), "1");
    assert_eq!(ext(&meta, "peers"), format!("1:{};", h.addr));
    assert_eq!(ext(&meta, "group"), "group1");

    // Broker 1 of broker-a: next id, apply, register, heartbeat, elect.
    let a1 = FakeBroker::new("broker-a", "10.0.0.1:30911");
    let resp = a1.next_broker_id(&to).await;
    assert_eq!(code(&resp), ResponseCode::Success);
    assert_eq!(ext_i64(&resp, "nextBrokerId"), 1);
    let resp = a1.apply_broker_id(&to, 1).await;
    assert_eq!(code(&resp), ResponseCode::Success, "{resp:?}");
    assert_eq!(ext(&resp, "brokerName"), "broker-a");
    let member = h.state().set("broker-a").unwrap().members[&1].clone();
    assert_eq!(member.check_code, "10.0.0.1:30911;1700000000000");
    assert_eq!(member.addr, "10.0.0.1:30911");
    let resp = a1.register(&to, 1).await;
    assert_eq!(code(&resp), ResponseCode::Success, "{resp:?}");
    assert!(!resp.ext_fields.contains_key("masterBrokerId"));
    a1.heartbeat(&to, 1, 10_000).await;
    wait_alive(h, &clock, "broker-a", 1).await;
    let resp = a1.elect(&to, 1).await;
    assert_eq!(code(&resp), ResponseCode::Success, "{resp:?}");
    assert_eq!(ext_i64(&resp, "masterEpoch"), 1);
    assert_eq!(ext_i64(&resp, "masterBrokerId"), 1);
    assert_eq!(ext(&resp, "masterAddress"), "10.0.0.1:30911");
    let body: ElectMasterBody = serde_json::from_slice(resp.body.as_deref().unwrap()).unwrap();
    assert_eq!(body.sync_state_set.into_iter().collect::<Vec<_>>(), vec![1]);
    let ss_epoch = ext_i64(&resp, "syncStateSetEpoch") as i32;

    // Broker 2 joins and is told the master.
    let a2 = FakeBroker::new("broker-a", "10.0.0.2:30911");
    let resp = a2.next_broker_id(&to).await;
    assert_eq!(ext_i64(&resp, "nextBrokerId"), 2);
    assert_eq!(
        code(&a2.apply_broker_id(&to, 2).await),
        ResponseCode::Success
    );
    // Another broker cannot take id 1.
    assert_eq!(
        code(&a2.apply_broker_id(&to, 1).await),
        ResponseCode::ControllerBrokerIdInvalid
    );
    let resp = a2.register(&to, 2).await;
    assert_eq!(code(&resp), ResponseCode::Success, "{resp:?}");
    assert_eq!(ext_i64(&resp, "masterBrokerId"), 1);
    assert_eq!(ext(&resp, "masterAddress"), "10.0.0.1:30911");
    // Broker 2 stays alive for the rest of the test, whatever the clock.
    a2.heartbeat(&to, 2, 3_600_000).await;
    wait_alive(h, &clock, "broker-a", 2).await;
    let resp = a2.elect(&to, 2).await;
    assert_eq!(code(&resp), ResponseCode::ControllerMasterStillExist);

    // The master adds broker 2 to the SyncStateSet.
    let want = SyncStateSetBody {
        sync_state_set: [1, 2].into(),
        sync_state_set_epoch: ss_epoch,
    };
    let resp = a1.alter(&to, 1, 1, &want).await;
    assert_eq!(code(&resp), ResponseCode::Success, "{resp:?}");
    assert_eq!(
        ext_i64(&resp, "newSyncStateSetEpoch"),
        i64::from(ss_epoch) + 1
    );
    let info = a1.replica_info(&to).await;
    assert_eq!(sync_state_set(&info).sync_state_set, [1, 2].into());

    // The master's heartbeats stop: past its 10 s timeout the scan drops
    // it and the controller elects broker 2 on its own.
    clock.advance(10_001);
    eventually(WAIT, "the controller elects broker 2", || async {
        let info = a2.replica_info(&to).await;
        info.ext_fields.get("masterBrokerId").map(String::as_str) == Some("2")
    })
    .await;
    let info = a2.replica_info(&to).await;
    assert_eq!(ext_i64(&info, "masterEpoch"), 2);
    assert_eq!(ext(&info, "masterAddress"), "10.0.0.2:30911");
    assert_eq!(sync_state_set(&info).sync_state_set, [2].into());

    to.close().await;
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_applications_for_one_id_are_decided_one_at_a_time() {
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let c = start_single(clock).await;
    let to = Arc::new(connect(c.handle.addr).await);
    eventually(WAIT, "the replica leads", || async {
        ext(&metadata(&to).await, "isLeader") == "true"
    })
    .await;
    // Eight new brokers race for the first id of a new set: one wins.
    let mut racing = Vec::new();
    for i in 0..8 {
        let to = Arc::clone(&to);
        racing.push(tokio::spawn(async move {
            let b = FakeBroker::new("broker-c", &format!("10.0.1.{i}:30911"));
            code(&b.apply_broker_id(&to, 1).await)
        }));
    }
    let mut won = 0;
    for r in racing {
        match r.await.unwrap() {
            ResponseCode::Success => won += 1,
            other => assert_eq!(other, ResponseCode::ControllerBrokerIdInvalid),
        }
    }
    assert_eq!(won, 1);
    to.close().await;
    c.stop().await;
}

/// As RocketMQ's controller: a master whose heartbeat connection closes
/// (its process was killed) is dead at once, not at its heartbeat timeout
/// (an hour here, and the clock never moves), and the other in-sync
/// replica is elected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_whose_connection_closes_is_replaced_at_once() {
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let c = start_single(Arc::clone(&clock)).await;
    let h = &c.handle;
    let (to1, to2) = (connect(h.addr).await, connect(h.addr).await);
    eventually(WAIT, "the replica leads", || async {
        ext(&metadata(&to2).await, "isLeader") == "true"
    })
    .await;
    let (a1, a2) = (
        FakeBroker::new("broker-a", "10.0.0.1:30911"),
        FakeBroker::new("broker-a", "10.0.0.2:30911"),
    );
    for (b, to, id) in [(&a1, &to1, 1), (&a2, &to2, 2)] {
        assert_eq!(
            code(&b.apply_broker_id(to, id).await),
            ResponseCode::Success
        );
        assert_eq!(code(&b.register(to, id).await), ResponseCode::Success);
        b.heartbeat(to, id, 3_600_000).await;
        wait_alive(h, &clock, "broker-a", id).await;
    }
    let resp = a1.elect(&to1, 1).await;
    assert_eq!(ext_i64(&resp, "masterBrokerId"), 1);
    let want = SyncStateSetBody {
        sync_state_set: [1, 2].into(),
        sync_state_set_epoch: ext_i64(&resp, "syncStateSetEpoch") as i32,
    };
    assert_eq!(
        code(&a1.alter(&to1, 1, 1, &want).await),
        ResponseCode::Success
    );
    to1.close().await;
    eventually(WAIT, "the controller elects broker 2", || async {
        let info = a2.replica_info(&to2).await;
        info.ext_fields.get("masterBrokerId").map(String::as_str) == Some("2")
    })
    .await;
    assert!(!h.service().live.lock().alive("broker-a", 1, {
        use rmq_common::time::Clock;
        clock.now_ms()
    }));
    to2.close().await;
    c.stop().await;
}
