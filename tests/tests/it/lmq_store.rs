//! Light message queues in the store, on every backend: a message whose
//! INNER_MULTI_DISPATCH names `%LMQ%` queues takes an offset in each at
//! append (written into INNER_MULTI_QUEUE_OFFSET) and reput writes a unit
//! into each LMQ's queue 0 in the batch of its own unit; offsets continue
//! across a restart; the file backend's `maxLmqConsumeQueueNum`; a shadow
//! backend and `cq verify` cover LMQs.

use rmq_common::config::CqBackend;
use rmq_common::constants::property;
use rmq_common::cq::Boundary;
use rmq_common::message::record::RecordView;
use rmq_common::message::MessageToStore;
use rmq_common::StoreConfig;
use rmq_store::{GetRequest, GetStatus, MessageStore, TagFilter, VerifyOptions};
use rmq_store_file::StoreError;
use rmq_tests::{message, open_store, read_queue, small_config, wait_dispatched, BACKENDS};

const LMQS: usize = 20;
const MESSAGES: usize = 120;

fn lmq(q: usize) -> String {
    format!("%LMQ%q{q}")
}

fn lmq_config(root: &std::path::Path, backend: CqBackend) -> StoreConfig {
    let mut c = small_config(root, backend);
    c.enable_lmq = true;
    c.enable_multi_dispatch = true;
    c
}

/// Message `i` of topic `Parent`: dispatched into LMQs i, i+7 and i+13 (mod
/// LMQS), plus a name that is no LMQ and a repeat, which take no offset.
fn multi(i: usize) -> MessageToStore {
    let mut m = message("Parent", (i % 4) as i32, format!("m{i}"));
    let names = [
        lmq(i % LMQS),
        "Plain".into(),
        lmq((i + 7) % LMQS),
        lmq(i % LMQS),
        lmq((i + 13) % LMQS),
    ];
    m.properties
        .insert(property::INNER_MULTI_DISPATCH, names.join(","));
    m
}

/// The bodies each LMQ must hold after messages `0..n`, in order.
fn expected(n: usize) -> Vec<Vec<Vec<u8>>> {
    let mut want = vec![Vec::new(); LMQS];
    for i in 0..n {
        for q in [i % LMQS, (i + 7) % LMQS, (i + 13) % LMQS] {
            want[q].push(format!("m{i}").into_bytes());
        }
    }
    want
}

fn check_lmqs(store: &MessageStore, n: usize, what: &str) {
    let want = expected(n);
    for (q, bodies) in want.iter().enumerate() {
        let got = read_queue(store, &lmq(q), 0);
        let seen: Vec<Vec<u8>> = got.iter().map(|r| r.body.clone()).collect();
        assert_eq!(&seen, bodies, "{what}: contents of {}", lmq(q));
        let offsets: Vec<i64> = got.iter().map(|r| r.queue_offset).collect();
        assert_eq!(
            offsets,
            (0..bodies.len() as i64).collect::<Vec<_>>(),
            "{what}: offsets of {}",
            lmq(q)
        );
        assert_eq!(store.min_offset_in_queue(&lmq(q), 0).unwrap(), 0);
        assert_eq!(
            store.max_offset_in_queue(&lmq(q), 0).unwrap(),
            bodies.len() as i64
        );
    }
}

/// The offsets a stored record says it took, per name of its list.
fn stamped(store: &MessageStore, topic: &str, queue_id: i32, offset: i64) -> String {
    let r = store
        .get_message(&GetRequest::new(
            topic,
            queue_id,
            offset,
            1,
            &TagFilter::all(),
        ))
        .unwrap();
    assert_eq!(r.status, GetStatus::Found);
    let v = RecordView::parse(r.messages[0].bytes(), true).unwrap();
    v.property(property::INNER_MULTI_QUEUE_OFFSET)
        .map(|s| s.into_owned())
        .unwrap_or_default()
}

#[test]
fn multi_dispatch_fills_every_lmq_exactly_and_survives_a_restart() {
    for backend in BACKENDS {
        let dir = tempfile::tempdir().unwrap();
        let config = lmq_config(dir.path(), backend);
        let store = open_store(&config).unwrap();
        // Single puts, then batches (each message keeps its own list).
        for i in 0..MESSAGES / 2 {
            store.put_message(&multi(i)).unwrap();
        }
        let batch: Vec<MessageToStore> = (MESSAGES / 2..MESSAGES).map(multi).collect();
        for chunk in batch.chunks(10) {
            store.put_messages(chunk).unwrap();
        }
        wait_dispatched(&store);
        check_lmqs(&store, MESSAGES, &format!("{backend}"));
        // Message 0 went first into q0, q7 and q13; "Plain" and the repeat
        // of q0 took nothing.
        assert_eq!(stamped(&store, "Parent", 0, 0), "0,,0,,0", "{backend}");
        assert_eq!(
            store.max_offset_in_queue("Plain", 0).unwrap(),
            0,
            "{backend}"
        );
        // Search by time on an LMQ.
        let first_ts = {
            let r = read_queue(&store, &lmq(0), 0);
            let g = store
                .get_message(&GetRequest::new(&lmq(0), 0, 0, 1, &TagFilter::all()))
                .unwrap();
            let v = RecordView::parse(g.messages[0].bytes(), false).unwrap();
            assert_eq!(r.len(), expected(MESSAGES)[0].len());
            v.store_timestamp()
        };
        assert_eq!(
            store
                .offset_by_time(&lmq(0), 0, first_ts, Boundary::Lower)
                .unwrap(),
            0,
            "{backend}"
        );
        // A message stored straight into an LMQ shares its offsets.
        let direct = store.put_message(&message(&lmq(1), 0, "direct")).unwrap();
        let q1 = expected(MESSAGES)[1].len() as i64;
        assert_eq!(direct.appended[0].queue_offset, q1, "{backend}");
        store.shutdown().unwrap();
        drop(store);

        if backend == CqBackend::Memory {
            continue; // the model keeps nothing across a restart
        }
        let store = open_store(&config).unwrap();
        assert_eq!(
            store.max_offset_in_queue(&lmq(1), 0).unwrap(),
            q1 + 1,
            "{backend}"
        );
        // After the restart the offsets go on from each LMQ's max.
        for i in MESSAGES..MESSAGES + 20 {
            store.put_message(&multi(i)).unwrap();
        }
        store.put_message(&message(&lmq(1), 0, "direct2")).unwrap();
        wait_dispatched(&store);
        let want = expected(MESSAGES + 20);
        for q in [0usize, 2, 7, 13, 19] {
            let got: Vec<Vec<u8>> = read_queue(&store, &lmq(q), 0)
                .into_iter()
                .map(|r| r.body)
                .collect();
            assert_eq!(got, want[q], "{backend} after restart: {}", lmq(q));
        }
        let q1_bodies: Vec<Vec<u8>> = read_queue(&store, &lmq(1), 0)
            .into_iter()
            .map(|r| r.body)
            .collect();
        assert_eq!(q1_bodies.len(), want[1].len() + 2, "{backend}");
        assert_eq!(q1_bodies.last().unwrap(), b"direct2");
        store.shutdown().unwrap();
    }
}

#[test]
fn without_enable_lmq_nothing_is_dispatched_into_lmqs() {
    for (enable_lmq, enable_multi_dispatch) in [(false, false), (false, true), (true, false)] {
        let dir = tempfile::tempdir().unwrap();
        let mut config = small_config(dir.path(), CqBackend::Rocksdb);
        config.enable_lmq = enable_lmq;
        config.enable_multi_dispatch = enable_multi_dispatch;
        let store = open_store(&config).unwrap();
        for i in 0..10 {
            store.put_message(&multi(i)).unwrap();
        }
        wait_dispatched(&store);
        assert_eq!(store.max_offset_in_queue("Parent", 0).unwrap(), 3);
        for q in 0..LMQS {
            assert_eq!(store.max_offset_in_queue(&lmq(q), 0).unwrap(), 0);
        }
        let stamped = stamped(&store, "Parent", 0, 0);
        assert_eq!(
            stamped.is_empty(),
            !enable_lmq,
            "{enable_lmq}/{enable_multi_dispatch}"
        );
        store.shutdown().unwrap();
    }
}

#[test]
fn the_file_backend_refuses_lmq_sends_and_pulls_past_max_lmq_consume_queue_num() {
    for backend in [CqBackend::File, CqBackend::Rocksdb] {
        let dir = tempfile::tempdir().unwrap();
        let mut config = lmq_config(dir.path(), backend);
        config.max_lmq_consume_queue_num = 5;
        let store = open_store(&config).unwrap();
        // Each put creates LMQs; the limit counts queues that exist, so the
        // put that finds more than 5 is the one refused.
        let mut refused = None;
        for i in 0..LMQS {
            let mut m = message("Parent", 0, format!("m{i}"));
            m.properties.insert(property::INNER_MULTI_DISPATCH, lmq(i));
            match store.put_message(&m) {
                Ok(_) => wait_dispatched(&store),
                Err(e) => {
                    refused = Some((i, e));
                    break;
                }
            }
        }
        if backend == CqBackend::Rocksdb {
            assert!(refused.is_none(), "rocksdb has no LMQ limit: {refused:?}");
            assert_eq!(store.consume_queue().lmq_queues(), LMQS as u64);
            continue;
        }
        let (at, e) = refused.expect("the file backend refuses past its limit");
        assert_eq!(at, 6, "{e}");
        assert!(
            matches!(e, StoreError::LmqQueueNumExceeded { count: 6, max: 5 }),
            "{e}"
        );
        assert!(
            e.to_string()
                .starts_with("[LMQ_CONSUME_QUEUE_NUM_EXCEEDED]"),
            "{e}"
        );
        // Plain sends go on; LMQ pulls are refused.
        store.put_message(&message("Parent", 0, "plain")).unwrap();
        let pull = store.get_message(&GetRequest::new(&lmq(0), 0, 0, 1, &TagFilter::all()));
        assert!(
            matches!(pull, Err(StoreError::LmqQueueNumExceeded { .. })),
            "{pull:?}"
        );
        store.shutdown().unwrap();
    }
}

#[test]
fn a_shadow_backend_and_cq_verify_cover_lmqs() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = lmq_config(dir.path(), CqBackend::Rocksdb);
    config.shadow_consume_queue_store = Some(CqBackend::File);
    let store = open_store(&config).unwrap();
    for i in 0..MESSAGES {
        store.put_message(&multi(i)).unwrap();
    }
    wait_dispatched(&store);
    assert!(store.wait_shadow_caught_up(std::time::Duration::from_secs(30)));
    let shadow = store.shadow_consume_queue().unwrap();
    for q in 0..LMQS {
        assert_eq!(
            shadow.max_offset(&lmq(q), 0).unwrap(),
            expected(MESSAGES)[q].len() as i64,
            "shadow {}",
            lmq(q)
        );
    }
    let report = store
        .verify_consume_queues(VerifyOptions::default())
        .unwrap();
    assert!(report.equal(), "{report:?}");
    // Parent's 4 queues and the 20 LMQs; every unit compared.
    assert_eq!(report.queues, 4 + LMQS as u64);
    assert_eq!(report.units_compared, (MESSAGES * 4) as u64);
    store.shutdown().unwrap();
}

/// Past the put path's bound, LMQs whose appends are all dispatched are
/// dropped from its table and read back from the consume queue when next
/// appended to: offsets go on exactly.
#[test]
fn the_put_paths_lmq_table_stays_bounded_and_offsets_go_on() {
    use rmq_store_file::commitlog::LMQ_OFFSETS_KEPT;
    let dir = tempfile::tempdir().unwrap();
    let mut config = lmq_config(dir.path(), CqBackend::Rocksdb);
    config.mapped_file_size_commit_log_bytes = 4 * 1024 * 1024;
    config.message_index_enable = false;
    let store = open_store(&config).unwrap();
    let n = LMQ_OFFSETS_KEPT + 4_000;
    let one = |i: usize, body: &str| {
        let mut m = message("Parent", 0, body);
        m.properties
            .insert(property::INNER_MULTI_DISPATCH, format!("%LMQ%b{i}"));
        m
    };
    for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
        let batch: Vec<MessageToStore> = chunk.iter().map(|i| one(*i, "first")).collect();
        store.put_messages(&batch).unwrap();
        wait_dispatched(&store);
    }
    let held = store.commit_log().lmq_offsets_held();
    assert!(held < n, "the table holds all {held} LMQs");
    for i in [0, 1, n / 2, n - 1] {
        store.put_message(&one(i, "second")).unwrap();
    }
    wait_dispatched(&store);
    for i in [0, 1, n / 2, n - 1] {
        let got: Vec<(i64, Vec<u8>)> = read_queue(&store, &format!("%LMQ%b{i}"), 0)
            .into_iter()
            .map(|r| (r.queue_offset, r.body))
            .collect();
        assert_eq!(
            got,
            vec![(0, b"first".to_vec()), (1, b"second".to_vec())],
            "LMQ {i}"
        );
    }
    store.shutdown().unwrap();
}
