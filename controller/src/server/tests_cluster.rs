//! Three controller replicas on 127.0.0.1:0, Raft over the TCP transport:
//! followers refuse leader requests and point at the leader; the leader
//! stops and the other two go on.

use std::collections::BTreeMap;
use std::time::Duration;

use rmq_common::remoting::ResponseCode;
use tempfile::TempDir;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::raft::NodeId;
use crate::server::answers::NOT_LEADER_REMARK;
use crate::server::test_broker::{code, connect, eventually, ext, ext_i64, metadata, FakeBroker};
use crate::server::tests_single::Running;
use crate::server::{ControllerServer, ControllerSettings};

/// Bound of every wait for the group (a leader, a new leader).
const WAIT: Duration = Duration::from_secs(15);

async fn start_group(ids: &[NodeId]) -> BTreeMap<NodeId, Running> {
    let mut listeners = BTreeMap::new();
    for id in ids {
        listeners.insert(*id, TcpListener::bind("127.0.0.1:0").await.unwrap());
    }
    let peers: BTreeMap<NodeId, String> = listeners
        .iter()
        .map(|(id, l)| (*id, l.local_addr().unwrap().to_string()))
        .collect();
    let mut group = BTreeMap::new();
    for (id, listener) in listeners {
        let dir = TempDir::new().unwrap();
        let settings = ControllerSettings::new(id, peers.clone(), dir.path().to_path_buf());
        let (cancel, tracker) = (CancellationToken::new(), TaskTracker::new());
        let handle = ControllerServer::start(listener, settings, cancel.clone(), tracker.clone())
            .await
            .unwrap();
        group.insert(
            id,
            Running {
                handle,
                cancel,
                tracker,
                _dir: dir,
            },
        );
    }
    group
}

/// Waits until every replica of `group` names the same leader, other than
/// `not`, and it says it leads; returns it.
async fn agreed_leader(group: &BTreeMap<NodeId, Running>, not: Option<NodeId>) -> NodeId {
    let mut leader = None;
    eventually(WAIT, "the replicas agree on a leader", || {
        let seen: Vec<Option<NodeId>> = group.values().map(|r| r.handle.leader()).collect();
        let agreed = seen[0].filter(|l| seen.iter().all(|s| *s == Some(*l)) && Some(*l) != not);
        leader = agreed.filter(|l| group.get(l).is_some_and(|r| r.handle.is_leader()));
        let found = leader.is_some();
        async move { found }
    })
    .await;
    leader.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_follow_their_leader_and_survive_its_loss() {
    let mut group = start_group(&[1, 2, 3]).await;
    let leader = agreed_leader(&group, None).await;
    let follower = *group.keys().find(|id| **id != leader).unwrap();
    let leader_addr = group[&leader].handle.addr.to_string();

    // A follower refuses a leader request, and names the leader.
    let to_follower = connect(group[&follower].handle.addr).await;
    let b1 = FakeBroker::new("broker-a", "10.0.0.1:30911");
    let resp = b1.next_broker_id(&to_follower).await;
    assert_eq!(code(&resp), ResponseCode::ControllerNotLeader);
    assert_eq!(resp.remark.as_deref(), Some(NOT_LEADER_REMARK));
    let meta = metadata(&to_follower).await;
    assert_eq!(ext(&meta, "isLeader"), "false");
    assert_eq!(ext(&meta, "controllerLeaderAddress"), leader_addr);
    assert_eq!(ext(&meta, "controllerLeaderId"), leader.to_string());

    // Broker 1 takes its id through the leader; every replica applies it.
    let to_leader = connect(group[&leader].handle.addr).await;
    assert_eq!(
        code(&b1.apply_broker_id(&to_leader, 1).await),
        ResponseCode::Success
    );
    eventually(WAIT, "every replica applied the id", || {
        let all = group
            .values()
            .all(|r| r.handle.state().set("broker-a").is_some());
        async move { all }
    })
    .await;
    to_leader.close().await;
    to_follower.close().await;

    // The leader's server stops; the two others elect a new leader.
    // Its handle is kept, as a process that stops one service keeps its
    // handles: the stop itself must end its Raft node.
    let old = group.remove(&leader).unwrap();
    let old_handle = old.handle.clone();
    old.stop().await;
    let new_leader = agreed_leader(&group, Some(leader)).await;

    // A broker finds it through any survivor and is served by it.
    let any = group.values().next().unwrap().handle.addr;
    let to_any = connect(any).await;
    let new_addr = ext(&metadata(&to_any).await, "controllerLeaderAddress").to_owned();
    assert_eq!(new_addr, group[&new_leader].handle.addr.to_string());
    let to_new = connect(new_addr.parse().unwrap()).await;
    let b2 = FakeBroker::new("broker-a", "10.0.0.2:30911");
    let resp = b2.next_broker_id(&to_new).await;
    assert_eq!(code(&resp), ResponseCode::Success, "{resp:?}");
    assert_eq!(ext_i64(&resp, "nextBrokerId"), 2);
    assert_eq!(
        code(&b2.apply_broker_id(&to_new, 2).await),
        ResponseCode::Success
    );
    assert_eq!(code(&b2.register(&to_new, 2).await), ResponseCode::Success);

    to_any.close().await;
    to_new.close().await;
    for (_, r) in group {
        r.stop().await;
    }
    drop(old_handle);
}
