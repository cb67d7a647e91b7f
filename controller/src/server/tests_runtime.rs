//! What a replica does around its elections and settings: it tells every
//! alive member of a set the new master (NOTIFY_BROKER_ROLE_CHANGED), an
//! operator's UPDATE_CONTROLLER_CONFIG changes how it elects at once, and
//! a second replica cannot open the same store folder.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use rmq_common::remoting::{RemotingCommand, ResponseCode};
use rmq_common::time::ManualClock;
use rmq_remoting::{serve, Connection, RequestHandler, ServerOptions};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::server::lock::LockError;
use crate::server::test_broker::{call, code, connect, eventually, ext, metadata, FakeBroker};
use crate::server::tests_single::{start_single_with, wait_alive, WAIT};
use crate::server::{ControllerServer, ControllerSettings, ServerError};
use crate::wire::SyncStateSetBody;

/// A broker's client port as the controller reaches it: records the
/// requests it gets.
struct Inbox(mpsc::UnboundedSender<RemotingCommand>);

impl RequestHandler for Inbox {
    fn handle(
        self: Arc<Self>,
        _conn: Arc<Connection>,
        req: RemotingCommand,
    ) -> BoxFuture<'static, Option<RemotingCommand>> {
        let _ = self.0.send(req);
        Box::pin(async { None })
    }
}

/// A listening broker port and what it received.
async fn broker_port(
    cancel: &CancellationToken,
    tracker: &TaskTracker,
) -> (String, mpsc::UnboundedReceiver<RemotingCommand>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = mpsc::unbounded_channel();
    tracker.spawn(serve(
        listener,
        Arc::new(Inbox(tx)),
        ServerOptions::default(),
        cancel.clone(),
        tracker.clone(),
    ));
    (addr, rx)
}

async fn next_notification(rx: &mut mpsc::UnboundedReceiver<RemotingCommand>) -> RemotingCommand {
    let req = tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("a notification within the wait")
        .expect("the port is open");
    assert_eq!(req.code, 1008, "{req:?}");
    assert!(req.is_oneway(), "{req:?}");
    req
}

fn body(req: &RemotingCommand) -> SyncStateSetBody {
    serde_json::from_slice(req.body.as_deref().unwrap()).unwrap()
}

async fn update(to: &rmq_client::RemotingClient, text: &str) -> RemotingCommand {
    call(
        to,
        RemotingCommand::request(1009).with_body(text.as_bytes().to_vec()),
    )
    .await
}

async fn config(to: &rmq_client::RemotingClient) -> String {
    let resp = call(to, RemotingCommand::request(1010)).await;
    assert_eq!(code(&resp), ResponseCode::Success);
    String::from_utf8(resp.body.unwrap_or_default().to_vec()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elections_notify_alive_members_and_updates_take_effect() {
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let props = tempfile::tempdir().unwrap();
    let props_file = props.path().join("controller.properties");
    let stored = props_file.clone();
    let c = start_single_with(Arc::clone(&clock), move |s| {
        s.elect_retry_pause_ms = 50;
        s.config_store_path = Some(stored);
    })
    .await;
    let h = &c.handle;
    let (cancel, tracker) = (CancellationToken::new(), TaskTracker::new());
    let (addr1, mut in1) = broker_port(&cancel, &tracker).await;
    let (addr2, mut in2) = broker_port(&cancel, &tracker).await;
    let (to1, to2) = (connect(h.addr).await, connect(h.addr).await);
    eventually(WAIT, "the replica leads", || async {
        ext(&metadata(&to2).await, "isLeader") == "true"
    })
    .await;
    let (a1, a2) = (
        FakeBroker::new("broker-a", &addr1),
        FakeBroker::new("broker-a", &addr2),
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

    // Broker 1 elects itself: both alive members are told, on their own
    // ports, with the election's header and SyncStateSet.
    assert_eq!(code(&a1.elect(&to1, 1).await), ResponseCode::Success);
    for inbox in [&mut in1, &mut in2] {
        let n = next_notification(inbox).await;
        assert_eq!(ext(&n, "masterBrokerId"), "1");
        assert_eq!(ext(&n, "masterAddress"), addr1);
        assert_eq!(ext(&n, "masterEpoch"), "1");
        assert_eq!(ext(&n, "syncStateSetEpoch"), "1");
        let b = body(&n);
        assert_eq!(b.sync_state_set, [1].into());
        assert_eq!(b.sync_state_set_epoch, 1);
    }

    // Refused updates change nothing: a black-listed key, a key fixed
    // while running, a value that does not parse.
    let refused = update(
        &to2,
        "configStorePath=/tmp/x\nenableElectUncleanMaster=true",
    )
    .await;
    assert_eq!(code(&refused), ResponseCode::NoPermission);
    assert_eq!(
        refused.remark.as_deref(),
        Some("Can not update config in black list.")
    );
    let refused = update(&to2, "controllerDLegerPeers=n0-127.0.0.1:1").await;
    assert_eq!(code(&refused), ResponseCode::SystemError);
    assert!(refused.remark.unwrap().contains("controllerDLegerPeers"));
    let refused = update(&to2, "enableElectUncleanMaster=maybe").await;
    assert_eq!(code(&refused), ResponseCode::SystemError);
    assert!(refused.remark.unwrap().contains("enableElectUncleanMaster"));
    assert!(config(&to2)
        .await
        .contains("enableElectUncleanMaster=false\n"));

    // The master dies; broker 2 is not in the SyncStateSet, so a clean
    // election finds nobody and the set is left without a master.
    to1.close().await;
    eventually(WAIT, "the dead master is cleared", || async {
        !a2.replica_info(&to2)
            .await
            .ext_fields
            .contains_key("masterBrokerId")
    })
    .await;

    // Unclean elections switched on at run time: the next scan elects
    // broker 2, and it is told.
    let ok = update(&to2, "enableElectUncleanMaster=true\nsomeOtherKey=1\n").await;
    assert_eq!(code(&ok), ResponseCode::Success, "{ok:?}");
    let n = next_notification(&mut in2).await;
    assert_eq!(ext(&n, "masterBrokerId"), "2");
    assert_eq!(ext(&n, "masterAddress"), addr2);
    assert_eq!(body(&n).sync_state_set, [2].into());
    let shown = config(&to2).await;
    assert!(shown.contains("enableElectUncleanMaster=true\n"), "{shown}");
    assert!(shown.contains("notifyBrokerRoleChanged=true\n"), "{shown}");
    let written = std::fs::read_to_string(&props_file).unwrap();
    assert!(
        written.contains("enableElectUncleanMaster=true\n"),
        "{written}"
    );

    to2.close().await;
    c.stop().await;
    cancel.cancel();
    tracker.close();
    tracker.wait().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_replica_on_the_same_folder_fails_at_start() {
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let first = start_single_with(clock, |_| {}).await;
    let dir = first._dir.path().to_path_buf();
    let start_second = || async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let settings =
            ControllerSettings::new(1, BTreeMap::from([(1, addr.to_string())]), dir.clone());
        let (cancel, tracker) = (CancellationToken::new(), TaskTracker::new());
        let started =
            ControllerServer::start(listener, settings, cancel.clone(), tracker.clone()).await;
        (started, cancel, tracker)
    };
    let (second, _, _) = start_second().await;
    match second {
        Err(ServerError::Lock(LockError::Held { dir: held })) => assert_eq!(held, dir),
        other => panic!("a second replica on {} started: {other:?}", dir.display()),
    }
    let text = start_second().await.0.unwrap_err().to_string();
    assert!(text.contains(&dir.display().to_string()), "{text}");

    // Once the first has stopped, the folder is free again.
    let keep = first._dir;
    first.cancel.cancel();
    first.tracker.close();
    first.tracker.wait().await;
    let (again, cancel, tracker) = start_second().await;
    assert!(again.is_ok(), "{again:?}");
    cancel.cancel();
    tracker.close();
    tracker.wait().await;
    drop(keep);
}
