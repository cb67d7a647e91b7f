//! The auto-switch HA links between real stores on 127.0.0.1: a slave
//! catches up and joins the SyncStateSet, an allAck wait resolves only once
//! it acknowledged, a slave whose log diverged truncates to the last shared
//! epoch and then equals its master byte for byte (three stores), and a
//! slave with no epoch in common retries without overwriting anything.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_broker::ha::acks::ReplicaStatus;
use rmq_broker::ha::switch_master::{SwitchMaster, SwitchMasterShared};
use rmq_broker::ha::switch_slave::{SwitchSlave, SwitchSlaveConfig};
use rmq_broker::ha::switch_sync::{InSync, InSyncSettings};
use rmq_broker::ha::HaSettings;
use rmq_common::message::MessageToStore;
use rmq_common::time::SystemClock;
use rmq_common::StoreConfig;
use rmq_store::MessageStore;
use tokio::sync::watch;

/// Bound on every wait for replication to reach a state.
const WAIT: Duration = Duration::from_secs(20);
/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(10);
/// How long an allAck wait may take when no slave acknowledges.
const ACK_TIMEOUT: Duration = Duration::from_millis(300);
/// A store's wait for its own dispatch.
const DISPATCH: Duration = Duration::from_secs(10);

fn settings() -> HaSettings {
    HaSettings {
        heartbeat: Duration::from_millis(200),
        housekeeping: Duration::from_secs(20),
        batch_bytes: 8 * 1024,
    }
}

fn open(dir: &std::path::Path) -> Arc<MessageStore> {
    let c = StoreConfig {
        mapped_file_size_commit_log_bytes: 64 * 1024,
        max_message_size_bytes: 16 * 1024,
        ..StoreConfig::with_root(dir)
    };
    Arc::new(MessageStore::open(c).unwrap())
}

fn put(store: &MessageStore, n: usize, tag: &str) {
    for i in 0..n {
        let body = format!("{tag}-{i}-{}", "x".repeat(700));
        let m = MessageToStore::new("T", (i % 4) as i32, body);
        store.put_message(&m).unwrap();
    }
}

/// The CommitLog's bytes from its min offset to its end.
fn log_bytes(store: &MessageStore) -> Vec<u8> {
    let log = store.commit_log();
    let mut out = Vec::new();
    let mut at = log.min_offset();
    while at < log.max_offset() {
        let sel = log.select_from(at).unwrap();
        out.extend_from_slice(sel.bytes());
        at += sel.bytes().len() as i64;
        if sel.bytes().is_empty() {
            at = log.roll_next(at);
        }
    }
    out
}

async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(POLL).await;
    }
}

struct Master {
    store: Arc<MessageStore>,
    in_sync: Arc<InSync>,
    link: SwitchMaster,
}

async fn master(store: Arc<MessageStore>, epoch: i32, id: i64) -> Master {
    let s = Arc::clone(&store);
    tokio::task::spawn_blocking(move || s.become_master(epoch, DISPATCH))
        .await
        .unwrap()
        .unwrap();
    let in_sync = Arc::new(InSync::new(
        Arc::clone(&store),
        Arc::new(SystemClock),
        InSyncSettings {
            local_id: id,
            max_not_caught_up: Duration::from_secs(15),
            all_ack: true,
            read_uncommitted: false,
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let link = SwitchMaster::start(
        listener,
        SwitchMasterShared {
            store: Arc::clone(&store),
            in_sync: Arc::clone(&in_sync),
            settings: settings(),
            tls: None,
        },
    )
    .unwrap();
    Master {
        store,
        in_sync,
        link,
    }
}

fn slave(store: &Arc<MessageStore>, master: &Master, id: i64) -> SwitchSlave {
    // The sender goes at once: the address is then fixed.
    let (_tx, rx) = watch::channel(Some(master.link.local_addr().to_string()));
    SwitchSlave::start(
        Arc::clone(store),
        rx,
        SwitchSlaveConfig {
            broker_id: id,
            settings: settings(),
            read_uncommitted: false,
            retry_after: Duration::from_millis(50),
            tls: None,
        },
    )
}

async fn caught_up(slave: &MessageStore, master: &MessageStore) {
    wait_for("the slave to reach the master's end", || {
        slave.max_phy_offset() == master.max_phy_offset()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_catches_up_joins_the_set_and_all_ack_waits_for_it() {
    let (dm, ds) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = master(open(dm.path()), 1, 1).await;
    put(&m.store, 200, "a");
    let mut report = m.in_sync.subscribe();
    let s_store = open(ds.path());
    let s = slave(&s_store, &m, 2);
    caught_up(&s_store, &m.store).await;
    // Expand: the set the master would report now holds the slave.
    tokio::time::timeout(WAIT, report.wait_for(|set| set.contains(&2)))
        .await
        .expect("the slave is proposed for the set")
        .unwrap();
    assert!(m.in_sync.adopt(BTreeSet::from([1, 2]), 1));
    assert_eq!(log_bytes(&s_store), log_bytes(&m.store));
    assert_eq!(s_store.epoch_pairs(), m.store.epoch_pairs());

    // allAck: answered only once the slave has the bytes.
    put(&m.store, 1, "b");
    let end = m.store.max_phy_offset();
    let acked = m.in_sync.wait_all_ack(end, WAIT).await;
    assert_eq!(acked, ReplicaStatus::Acked);
    assert!(
        m.in_sync.acks().contains(&(2, end)),
        "{:?}",
        m.in_sync.acks()
    );
    // The slave's consumers see only what the master confirmed.
    wait_for("the slave's confirm offset", || {
        s_store.confirm_offset() == end
    })
    .await;

    // The slave stops: its connection closing proposes it out at once, and
    // sends waiting for all in-set replicas time out meanwhile.
    s.stop().await;
    tokio::time::timeout(WAIT, report.wait_for(|set| !set.contains(&2)))
        .await
        .expect("the slave is proposed out of the set")
        .unwrap();
    put(&m.store, 1, "c");
    let end = m.store.max_phy_offset();
    assert_eq!(
        m.in_sync.wait_all_ack(end, ACK_TIMEOUT).await,
        ReplicaStatus::TimedOut
    );
    m.link.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_diverged_slave_truncates_to_the_shared_epoch_and_then_equals_its_master() {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let (a, b, c) = (
        open(dirs[0].path()),
        open(dirs[1].path()),
        open(dirs[2].path()),
    );
    // B is master of epoch 1; A follows it to its end.
    let mb = master(Arc::clone(&b), 1, 2).await;
    put(&b, 100, "one");
    let sa = slave(&a, &mb, 1);
    caught_up(&a, &b).await;
    sa.stop().await;
    // B writes more that A never gets, then loses its mastership.
    put(&b, 40, "lost");
    mb.link.stop().await;
    let shared_end = a.max_phy_offset();
    assert!(b.max_phy_offset() > shared_end);
    // A becomes master of epoch 2 and writes on.
    let ma = master(Arc::clone(&a), 2, 1).await;
    put(&a, 30, "two");
    assert_eq!(a.epoch_pairs(), [(1, 0), (2, shared_end)]);
    // B follows A: cut back to where epoch 2 starts, then A's log. C
    // starts empty.
    let sb = slave(&b, &ma, 2);
    let sc = slave(&c, &ma, 3);
    caught_up(&b, &a).await;
    caught_up(&c, &a).await;
    let want = log_bytes(&a);
    assert!(log_bytes(&b) == want, "B's log differs from its master's");
    assert!(log_bytes(&c) == want, "C's log differs from its master's");
    assert_eq!(b.epoch_pairs(), a.epoch_pairs());
    assert_eq!(c.epoch_pairs(), a.epoch_pairs());
    // B's consume queue holds none of the lost messages.
    wait_for("B's dispatch", || {
        b.reput_from_offset() == b.max_phy_offset()
    })
    .await;
    let total: i64 = (0..4).map(|q| b.max_offset_in_queue("T", q).unwrap()).sum();
    assert_eq!(total, 130);
    sb.stop().await;
    sc.stop().await;
    ma.link.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_with_no_common_epoch_retries_and_overwrites_nothing() {
    let (dm, ds) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = master(open(dm.path()), 1, 1).await;
    put(&m.store, 20, "m");
    // The would-be slave wrote its own log as master of epoch 5.
    let other = open(ds.path());
    let o = Arc::clone(&other);
    tokio::task::spawn_blocking(move || o.become_master(5, DISPATCH))
        .await
        .unwrap()
        .unwrap();
    put(&other, 10, "own");
    let before = (log_bytes(&other), other.epoch_pairs());
    let s = slave(&other, &m, 2);
    let mut status = s.status();
    tokio::time::timeout(WAIT, status.wait_for(|st| st.attempts >= 3))
        .await
        .expect("the slave keeps retrying")
        .unwrap();
    let last = status.borrow().last_error.clone().unwrap_or_default();
    assert!(last.contains("no epoch in common"), "{last}");
    s.stop().await;
    assert!(
        (log_bytes(&other), other.epoch_pairs()) == before,
        "the slave's log changed"
    );
    m.link.stop().await;
}
