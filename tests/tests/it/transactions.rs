//! Transactional messages through a running broker: half messages stay
//! invisible until committed, rollbacks never show, check-backs resolve
//! unknown outcomes (through any live producer of the group), give up after
//! `transactionCheckMax`, and survive restarts; bad END_TRANSACTIONs write
//! nothing. File and RocksDB backends.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rmq_broker::broker::Broker;
use rmq_broker::config::Settings;
use rmq_client::{CheckedHalf, LocalTxState, OutMessage, SdkError, TransactionProducer};
use rmq_common::config::CqBackend;
use rmq_common::constants::{property, TRANS_CHECK_MAX_TIME_TOPIC};
use rmq_common::message::decode_offset_msg_id;
use rmq_common::message::record::RecordView;
use rmq_common::message::sysflag;
use rmq_common::remoting::{end_state, EndTransactionRequestHeader};
use rmq_common::FlushDiskType;
use rmq_tests::{broker_settings, copy_dir, read_queue};

/// Longest a test waits for check-backs to resolve what it expects.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(30);
/// How often the test looks.
const POLL: Duration = Duration::from_millis(50);
/// Check walk interval and half timeout in these tests.
const CHECK_INTERVAL_MS: u64 = 100;
const TX_TIMEOUT_MS: u64 = 300;
const CHECK_MAX: i32 = 3;
const TOPIC: &str = "TxTopic";
const GROUP: &str = "TxProducers";

fn settings(root: &Path, backend: CqBackend, checks: bool) -> Settings {
    let mut s = broker_settings(root, backend);
    s.store.flush_disk_type = FlushDiskType::SyncFlush;
    s.broker.transaction_time_out_ms = TX_TIMEOUT_MS;
    s.broker.transaction_check_max = CHECK_MAX;
    // Without checks, the walk runs once an hour: nothing happens by itself.
    s.broker.transaction_check_interval_ms = if checks { CHECK_INTERVAL_MS } else { 3_600_000 };
    s
}

/// Answers checks from a table (transaction id or body -> answer), counting
/// them.
#[derive(Default)]
struct Answers {
    table: Mutex<HashMap<String, LocalTxState>>,
    checks: Mutex<HashMap<String, usize>>,
    total: AtomicUsize,
}

impl Answers {
    fn callback(self: &Arc<Self>) -> rmq_client::transaction::CheckCallback {
        let me = Arc::clone(self);
        Arc::new(move |half: &CheckedHalf| {
            me.total.fetch_add(1, Ordering::SeqCst);
            *me.checks
                .lock()
                .entry(half.transaction_id.clone())
                .or_default() += 1;
            let body = String::from_utf8_lossy(&half.message.body).into_owned();
            let table = me.table.lock();
            table
                .get(&half.transaction_id)
                .or_else(|| table.get(&body))
                .copied()
                .unwrap_or(LocalTxState::Unknown)
        })
    }
}

/// A transactional producer of [`GROUP`] answering checks from a fresh table.
async fn producer(broker: &Broker, client_id: &str) -> (Arc<Answers>, TransactionProducer) {
    let answers = Arc::new(Answers::default());
    let p = TransactionProducer::connect(broker.addr(), GROUP, client_id, answers.callback())
        .await
        .unwrap();
    (answers, p)
}

fn body_msg(body: &str) -> OutMessage {
    OutMessage {
        body: body.as_bytes().to_vec(),
        keys: vec![body.to_owned()],
        ..OutMessage::default()
    }
}

/// Bodies of the real topic's queue 0, in order.
fn visible(broker: &Broker) -> Vec<String> {
    read_queue(&broker.context().store, TOPIC, 0)
        .into_iter()
        .map(|r| String::from_utf8(r.body).unwrap())
        .collect()
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + RESOLVE_TIMEOUT;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "{what}: not within {RESOLVE_TIMEOUT:?}"
        );
        tokio::time::sleep(POLL).await;
    }
}

async fn settle(broker: &Broker) {
    let store = Arc::clone(&broker.context().store);
    tokio::task::spawn_blocking(move || rmq_tests::wait_dispatched(&store))
        .await
        .unwrap();
}

async fn commit_rollback_and_checks(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(settings(dir.path(), backend, true))
        .await
        .unwrap();
    let (answers, p) = producer(&broker, "tx-1").await;
    for (body, local, check) in [
        ("commit", LocalTxState::Commit, None),
        ("rollback", LocalTxState::Rollback, None),
        (
            "unknown-commit",
            LocalTxState::Unknown,
            Some(LocalTxState::Commit),
        ),
        (
            "unknown-rollback",
            LocalTxState::Unknown,
            Some(LocalTxState::Rollback),
        ),
    ] {
        let a = Arc::clone(&answers);
        let (sent, state) = p
            .send(TOPIC, 0, &body_msg(body), move |_| local)
            .await
            .unwrap();
        assert_eq!(state, local);
        let _ = sent;
        if let Some(check) = check {
            a.table.lock().insert(body.to_owned(), check);
        }
    }
    let tx = Arc::clone(&broker.context().transactions);
    wait_until("unknown-commit becomes visible", || {
        visible(&broker).contains(&"unknown-commit".to_owned())
    })
    .await;
    wait_until("every half resolved", || tx.pending_halves() == 0).await;
    settle(&broker).await;
    // A few more walks: nothing else appears.
    tokio::time::sleep(Duration::from_millis(CHECK_INTERVAL_MS * 5)).await;
    settle(&broker).await;
    assert_eq!(visible(&broker), ["commit", "unknown-commit"]);
    // The committed record: COMMIT sysflag, the half's offset, no TRAN_MSG.
    let store = &broker.context().store;
    for r in read_queue(store, TOPIC, 0) {
        let sel = store.record_at(r.phy_offset).unwrap();
        let v = RecordView::parse(sel.bytes(), true).unwrap();
        assert_eq!(
            sysflag::transaction_value(v.sys_flag()),
            sysflag::TRANSACTION_COMMIT_TYPE
        );
        let half = store.record_at(v.prepared_transaction_offset()).unwrap();
        let half = RecordView::parse(half.bytes(), true).unwrap();
        assert_eq!(half.topic(), rmq_common::constants::TRANS_HALF_TOPIC);
        assert_eq!(half.body(), v.body());
        assert_eq!(v.property(property::TRANSACTION_PREPARED), None);
        assert_eq!(v.property(property::REAL_TOPIC), None);
    }
    assert!(answers.total.load(Ordering::SeqCst) >= 2);
    assert!(tx.checks_sent() >= 2);
    p.close().await;
    broker.shutdown().await;
}

async fn bad_and_repeated_end_transaction_write_nothing(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(settings(dir.path(), backend, false))
        .await
        .unwrap();
    let (_answers, p) = producer(&broker, "tx-1").await;
    let (sent, uniq) = p.send_half(TOPIC, 0, &body_msg("once")).await.unwrap();
    let (_, offset) = decode_offset_msg_id(&sent.msg_id).unwrap();
    let good = EndTransactionRequestHeader {
        producer_group: GROUP.into(),
        tran_state_table_offset: sent.queue_offset,
        commit_log_offset: offset,
        commit_or_rollback: end_state::COMMIT,
        from_transaction_check: false,
        msg_id: uniq.clone(),
        transaction_id: Some(uniq.clone()),
    };
    let store = Arc::clone(&broker.context().store);
    let refused = |h: EndTransactionRequestHeader, needle: &'static str| {
        let (p, store) = (&p, &store);
        async move {
            let before = store.max_phy_offset();
            let err = p.end(&h).await.unwrap_err();
            assert!(
                matches!(&err, SdkError::Refused { remark, .. } if remark.contains(needle)),
                "{needle}: {err}"
            );
            assert_eq!(
                store.max_phy_offset(),
                before,
                "{needle}: something was written"
            );
        }
    };
    refused(
        EndTransactionRequestHeader {
            producer_group: "Other".into(),
            ..good.clone()
        },
        "producer group",
    )
    .await;
    refused(
        EndTransactionRequestHeader {
            tran_state_table_offset: 7,
            ..good.clone()
        },
        "state table offset",
    )
    .await;
    refused(
        EndTransactionRequestHeader {
            commit_log_offset: offset + 1,
            ..good.clone()
        },
        "no half message",
    )
    .await;
    refused(
        EndTransactionRequestHeader {
            msg_id: "NOPE".into(),
            ..good.clone()
        },
        "msgId",
    )
    .await;
    refused(
        EndTransactionRequestHeader {
            commit_or_rollback: 4,
            ..good.clone()
        },
        "commitOrRollback",
    )
    .await;
    // Unknown changes nothing; then the commit; then every repeat is refused.
    let before = store.max_phy_offset();
    p.end(&EndTransactionRequestHeader {
        commit_or_rollback: end_state::UNKNOWN,
        ..good.clone()
    })
    .await
    .unwrap();
    assert_eq!(store.max_phy_offset(), before);
    p.end(&good).await.unwrap();
    refused(good.clone(), "already resolved").await;
    refused(
        EndTransactionRequestHeader {
            commit_or_rollback: end_state::ROLLBACK,
            ..good.clone()
        },
        "already resolved",
    )
    .await;
    refused(
        EndTransactionRequestHeader {
            from_transaction_check: true,
            ..good.clone()
        },
        "already resolved",
    )
    .await;
    // A regular message's offset is not a half.
    let plain = rmq_client::send(
        p.client(),
        rmq_client::SendCode::V2,
        GROUP,
        TOPIC,
        0,
        &[body_msg("plain")],
    )
    .await
    .unwrap();
    let (_, plain_offset) = decode_offset_msg_id(&plain.msg_id).unwrap();
    refused(
        EndTransactionRequestHeader {
            commit_log_offset: plain_offset,
            ..good.clone()
        },
        "not a half message",
    )
    .await;
    settle(&broker).await;
    assert_eq!(visible(&broker), ["once", "plain"]);
    p.close().await;
    broker.shutdown().await;
}

async fn another_producer_answers_the_check(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(settings(dir.path(), backend, true))
        .await
        .unwrap();
    let (first, a) = producer(&broker, "tx-a").await;
    let (_, uniq) = a.send_half(TOPIC, 0, &body_msg("orphan")).await.unwrap();
    a.close().await;
    let second = Arc::new(Answers::default());
    second
        .table
        .lock()
        .insert(uniq.clone(), LocalTxState::Commit);
    let b = TransactionProducer::connect(broker.addr(), GROUP, "tx-b", second.callback())
        .await
        .unwrap();
    wait_until("the orphan half is committed by the other producer", || {
        visible(&broker) == ["orphan"]
    })
    .await;
    assert_eq!(second.checks.lock().get(&uniq).copied(), Some(1));
    assert_eq!(first.total.load(Ordering::SeqCst), 0);
    b.close().await;
    broker.shutdown().await;
}

async fn check_max_moves_the_half(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(settings(dir.path(), backend, true))
        .await
        .unwrap();
    let (answers, p) = producer(&broker, "tx-1").await;
    let (_, uniq) = p.send_half(TOPIC, 0, &body_msg("undecided")).await.unwrap();
    let store = Arc::clone(&broker.context().store);
    wait_until("the half reaches TRANS_CHECK_MAX_TIME_TOPIC", || {
        store
            .max_offset_in_queue(TRANS_CHECK_MAX_TIME_TOPIC, 0)
            .unwrap_or(0)
            >= 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(CHECK_INTERVAL_MS * 5)).await;
    settle(&broker).await;
    assert_eq!(
        answers.checks.lock().get(&uniq).copied(),
        Some(CHECK_MAX as usize)
    );
    assert_eq!(
        store
            .max_offset_in_queue(TRANS_CHECK_MAX_TIME_TOPIC, 0)
            .unwrap(),
        1
    );
    let moved = read_queue(&store, TRANS_CHECK_MAX_TIME_TOPIC, 0);
    assert_eq!(moved[0].body, b"undecided");
    assert!(visible(&broker).is_empty());
    assert_eq!(broker.context().transactions.pending_halves(), 0);
    p.close().await;
    broker.shutdown().await;
}

/// Halves pending across a restart are checked and resolved afterwards,
/// none lost, none delivered twice. `crash` restarts from a copy of the
/// store taken while the broker runs (what SIGKILL leaves: every SYNC_FLUSH
/// acknowledged half is on disk, no clean-shutdown marker).
async fn pending_halves_survive_restart(backend: CqBackend, crash: bool) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let broker = Broker::start(settings(&root, backend, false))
        .await
        .unwrap();
    let (_answers, p) = producer(&broker, "tx-1").await;
    let mut ids = Vec::new();
    for i in 0..6 {
        let body = format!("pending-{i}");
        let (_, uniq) = p.send_half(TOPIC, 0, &body_msg(&body)).await.unwrap();
        ids.push((uniq, body));
    }
    // One is committed before the restart: it must not come back.
    let (sent, uniq) = p.send_half(TOPIC, 0, &body_msg("early")).await.unwrap();
    let (_, offset) = decode_offset_msg_id(&sent.msg_id).unwrap();
    p.end(&EndTransactionRequestHeader {
        producer_group: GROUP.into(),
        tran_state_table_offset: sent.queue_offset,
        commit_log_offset: offset,
        commit_or_rollback: end_state::COMMIT,
        from_transaction_check: false,
        msg_id: uniq.clone(),
        transaction_id: Some(uniq),
    })
    .await
    .unwrap();
    let start_root = if crash {
        let image = dir.path().join("crash-image");
        copy_dir(&root, &image);
        image
    } else {
        root.clone()
    };
    p.close().await;
    broker.shutdown().await;

    let broker = Broker::start(settings(&start_root, backend, true))
        .await
        .unwrap();
    let answers = Arc::new(Answers::default());
    for (i, (uniq, _)) in ids.iter().enumerate() {
        let state = if i % 2 == 0 {
            LocalTxState::Commit
        } else {
            LocalTxState::Rollback
        };
        answers.table.lock().insert(uniq.clone(), state);
    }
    let p = TransactionProducer::connect(broker.addr(), GROUP, "tx-2", answers.callback())
        .await
        .unwrap();
    let tx = Arc::clone(&broker.context().transactions);
    wait_until("every pending half resolved after the restart", || {
        tx.pending_halves() == 0
    })
    .await;
    tokio::time::sleep(Duration::from_millis(CHECK_INTERVAL_MS * 5)).await;
    settle(&broker).await;
    let want: Vec<String> = std::iter::once("early".to_owned())
        .chain(
            ids.iter()
                .enumerate()
                .filter(|(i, _)| i % 2 == 0)
                .map(|(_, (_, b))| b.clone()),
        )
        .collect();
    let mut got = visible(&broker);
    got.sort();
    let mut want_sorted = want.clone();
    want_sorted.sort();
    assert_eq!(got, want_sorted);
    for (uniq, body) in &ids {
        assert_eq!(answers.checks.lock().get(uniq).copied(), Some(1), "{body}");
    }
    p.close().await;
    broker.shutdown().await;
}

async fn restart_clean(backend: CqBackend) {
    pending_halves_survive_restart(backend, false).await;
}

async fn restart_after_crash(backend: CqBackend) {
    pending_halves_survive_restart(backend, true).await;
}

macro_rules! backends {
    ($($body:ident),* $(,)?) => {
        mod file { $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $body() { super::$body(rmq_common::config::CqBackend::File).await; } )* }
        mod rocksdb { $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $body() { super::$body(rmq_common::config::CqBackend::Rocksdb).await; } )* }
    };
}

backends!(
    commit_rollback_and_checks,
    bad_and_repeated_end_transaction_write_nothing,
    another_producer_answers_the_check,
    check_max_moves_the_half,
    restart_clean,
    restart_after_crash,
);
