//! Raft groups in one process over the [`Router`]: one node restarted from
//! its folder, three nodes replicating, and a leader cut off.
//!
//! Every wait is bounded by a named timeout and ends on openraft's metrics
//! (`Raft::wait`), never on a fixed sleep.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use openraft::{BasicNode, ServerState};
use tempfile::TempDir;

use crate::event::Event;
use crate::raft::{ControllerRaft, Initialized, NodeId, ProposeError, RaftSettings, Router};
use crate::state::ReplicaState;

/// The longest any wait for the group (leader known, entries applied) may
/// take; far above the 300-600 ms election timeout.
const WAIT: Duration = Duration::from_secs(10);

/// A new leader must be elected within this after the old one is cut off:
/// a follower notices after one election timeout (at most 600 ms), and a
/// split vote costs another.
const ELECTION_BOUND: Duration = Duration::from_secs(5);

fn addr(id: NodeId) -> String {
    format!("127.0.0.1:{}", 9870 + id)
}

fn members(ids: &[NodeId]) -> BTreeMap<NodeId, BasicNode> {
    ids.iter().map(|i| (*i, BasicNode::new(addr(*i)))).collect()
}

fn settings() -> RaftSettings {
    RaftSettings {
        propose_timeout_ms: 1000,
        ..RaftSettings::default()
    }
}

/// A broker taking id `i` in the set `set`.
fn apply_id(set: &str, i: i64) -> Event {
    Event::ApplyBrokerId {
        cluster: "c".into(),
        broker_name: set.into(),
        broker_id: i,
        addr: format!("10.0.0.{i}:10911"),
        check_code: format!("10.0.0.{i}:10911;{i}"),
    }
}

async fn start(
    router: &Router,
    id: NodeId,
    ids: &[NodeId],
    dir: &Path,
    settings: RaftSettings,
) -> ControllerRaft {
    let node = ControllerRaft::start(id, members(ids), dir, router.transport(id), settings)
        .await
        .unwrap();
    router.add(id, node.raft().clone());
    node
}

/// Waits until `node` knows a leader other than `not`; returns it.
async fn wait_leader(node: &ControllerRaft, not: Option<NodeId>) -> NodeId {
    let m = node
        .raft()
        .wait(Some(WAIT))
        .metrics(
            |m| m.current_leader.is_some() && m.current_leader != not,
            "a leader",
        )
        .await
        .unwrap();
    m.current_leader.unwrap()
}

async fn wait_applied(node: &ControllerRaft, index: u64) {
    node.raft()
        .wait(Some(WAIT))
        .applied_index_at_least(Some(index), "applied")
        .await
        .unwrap();
}

fn snapshot(node: &ControllerRaft) -> ReplicaState {
    node.state().clone()
}

/// (a) One node: events proposed, applied, snapshotted (every 8 entries,
/// the log purged behind) and, after a restart from the same folder, the
/// same state (snapshot file plus the log after it); it leads again and
/// takes more proposals.
#[tokio::test]
async fn one_node_restart_keeps_state() {
    let dir = TempDir::new().unwrap();
    let router = Router::new();
    let s = RaftSettings {
        snapshot_every_logs: 8,
        logs_kept_after_snapshot: 0,
        ..settings()
    };
    let node = start(&router, 1, &[1], dir.path(), s.clone()).await;
    assert_eq!(node.initialize().await.unwrap(), Initialized::Now);
    assert_eq!(wait_leader(&node, None).await, 1);
    assert!(node.is_leader());

    let mut last = 0;
    for i in 1..=20 {
        last = node.propose(apply_id("broker-a", i)).await.unwrap();
    }
    let before = snapshot(&node);
    assert_eq!(before.set("broker-a").unwrap().members.len(), 20);
    assert_eq!(before.set("broker-a").unwrap().next_id, 21);
    let m = node
        .raft()
        .wait(Some(WAIT))
        .metrics(
            |m| m.snapshot.is_some() && m.purged.is_some(),
            "snapshot and purge",
        )
        .await
        .unwrap();
    assert!(
        m.snapshot.unwrap().index < last,
        "some entries replayed from the log"
    );
    node.shutdown().await.unwrap();
    router.remove(1);

    let node = start(&router, 1, &[1], dir.path(), s).await;
    assert_eq!(node.initialize().await.unwrap(), Initialized::Already);
    wait_applied(&node, last).await;
    assert_eq!(snapshot(&node), before);
    assert_eq!(wait_leader(&node, None).await, 1);
    let next = node.propose(apply_id("broker-a", 21)).await.unwrap();
    assert!(next > last);
    assert_eq!(node.state().set("broker-a").unwrap().members.len(), 21);
    node.shutdown().await.unwrap();
}

struct Group {
    router: Router,
    nodes: BTreeMap<NodeId, ControllerRaft>,
    _dirs: Vec<TempDir>,
}

impl Group {
    async fn start() -> Self {
        let router = Router::new();
        let ids = [1, 2, 3];
        let mut nodes = BTreeMap::new();
        let mut dirs = Vec::new();
        for id in ids {
            let dir = TempDir::new().unwrap();
            nodes.insert(id, start(&router, id, &ids, dir.path(), settings()).await);
            dirs.push(dir);
        }
        assert_eq!(nodes[&1].initialize().await.unwrap(), Initialized::Now);
        Self {
            router,
            nodes,
            _dirs: dirs,
        }
    }

    /// Waits until every node knows the same leader; returns it.
    async fn leader(&self) -> NodeId {
        let mut seen = Vec::new();
        for n in self.nodes.values() {
            seen.push(wait_leader(n, None).await);
        }
        // Followers may still learn of the leader after the first one did.
        let l = seen[0];
        for n in self.nodes.values() {
            n.raft()
                .wait(Some(WAIT))
                .current_leader(l, "the same leader")
                .await
                .unwrap();
        }
        l
    }

    async fn shutdown(self) {
        for (_, n) in self.nodes {
            n.shutdown().await.unwrap();
        }
    }
}

/// (b) Three nodes: one leader; events proposed on it are applied by all
/// three alike; a follower answers NotLeader naming the leader and its
/// address.
#[tokio::test]
async fn three_nodes_replicate_and_followers_redirect() {
    let g = Group::start().await;
    let l = g.leader().await;
    let leader = &g.nodes[&l];
    assert!(leader.is_leader());

    let mut last = 0;
    for i in 1..=5 {
        last = leader.propose(apply_id("broker-a", i)).await.unwrap();
    }
    for n in g.nodes.values() {
        wait_applied(n, last).await;
    }
    let want = snapshot(leader);
    assert_eq!(want.set("broker-a").unwrap().members.len(), 5);
    for n in g.nodes.values() {
        assert_eq!(snapshot(n), want, "node {}", n.id());
    }

    for (id, n) in &g.nodes {
        if *id == l {
            continue;
        }
        assert!(!n.is_leader());
        assert_eq!(n.leader(), Some(l));
        match n.propose(apply_id("broker-b", 1)).await {
            Err(ProposeError::NotLeader { leader, addr: a }) => {
                assert_eq!(leader, Some(l));
                assert_eq!(a, Some(addr(l)));
            }
            other => panic!("node {id}: expected NotLeader, got {other:?}"),
        }
    }
    assert!(g
        .nodes
        .values()
        .all(|n| n.state().set("broker-b").is_none()));
    g.shutdown().await;
}

/// (c) The leader is cut off: the other two elect a new leader within
/// [`ELECTION_BOUND`] and take proposals; the old leader, which cannot
/// commit, applies nothing meanwhile (what it was asked to write is never
/// applied anywhere), and once healed it follows the new leader and ends
/// with the same state.
#[tokio::test]
async fn cut_off_leader_is_replaced_and_does_not_diverge() {
    let g = Group::start().await;
    let old = g.leader().await;
    let mut last = 0;
    for i in 1..=3 {
        last = g.nodes[&old]
            .propose(apply_id("broker-a", i))
            .await
            .unwrap();
    }
    for n in g.nodes.values() {
        wait_applied(n, last).await;
    }
    let before = snapshot(&g.nodes[&old]);

    let cut_at = Instant::now();
    g.router.cut(old);
    let others: Vec<NodeId> = g.nodes.keys().copied().filter(|i| *i != old).collect();
    let new = wait_leader(&g.nodes[&others[0]], Some(old)).await;
    let elected_in = cut_at.elapsed();
    assert!(elected_in < ELECTION_BOUND, "elected in {elected_in:?}");
    assert!(others.contains(&new));
    g.nodes[&new]
        .raft()
        .wait(Some(WAIT))
        .state(ServerState::Leader, "new leader")
        .await
        .unwrap();

    // The cut-off leader cannot commit what it is asked to write.
    let orphan = g.nodes[&old].propose(apply_id("orphan", 1)).await;
    assert!(
        matches!(
            orphan,
            Err(ProposeError::Timeout(_) | ProposeError::NotLeader { .. })
        ),
        "{orphan:?}"
    );

    for i in 4..=6 {
        last = g.nodes[&new]
            .propose(apply_id("broker-a", i))
            .await
            .unwrap();
    }
    for id in &others {
        wait_applied(&g.nodes[id], last).await;
    }
    let after = snapshot(&g.nodes[&new]);
    assert_eq!(after.set("broker-a").unwrap().members.len(), 6);
    assert_eq!(snapshot(&g.nodes[&others[1]]), after);
    assert_eq!(
        snapshot(&g.nodes[&old]),
        before,
        "the cut-off leader applied nothing"
    );

    g.router.heal(old);
    wait_applied(&g.nodes[&old], last).await;
    g.nodes[&old]
        .raft()
        .wait(Some(WAIT))
        .current_leader(new, "follows the new leader")
        .await
        .unwrap();
    assert_eq!(snapshot(&g.nodes[&old]), after);
    assert!(g.nodes.values().all(|n| n.state().set("orphan").is_none()));
    eprintln!("new leader elected {elected_in:?} after the cut");
    g.shutdown().await;
}
