//! Issue 15: one stored message that a service can never write again does
//! not block the messages behind it. The schedule service and the
//! transaction check walk pass such a message over, record it in
//! `poison/<service>.jsonl` and count it; failures that may pass (a full
//! disk) are retried instead. Store level, manual clock, every backend.

use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use rmq_broker::meta::ConsumerOffsetManager;
use rmq_broker::service::schedule::{PassEnd, Scheduler};
use rmq_broker::service::transaction::{CheckSender, Transactions, TxSettings};
use rmq_common::config::CqBackend;
use rmq_common::constants::{property, SCHEDULE_TOPIC};
use rmq_common::message::record::RecordView;
use rmq_common::message::MessageToStore;
use rmq_common::remoting::CheckTransactionStateRequestHeader;
use rmq_common::time::ManualClock;
use rmq_common::StoreConfig;
use rmq_store::MessageStore;
use rmq_store::{GetRequest, GetStatus, TagFilter};
use rmq_tests::{open_store_with_clock, small_config, wait_dispatched};

/// Levels of these tests: 1 s, 2 s.
const LEVELS: &str = "1s 2s";
const T0: i64 = 1_700_000_000_000;
/// maxMessageSize of these tests.
const MAX: usize = 4096;

fn config(root: &Path, backend: CqBackend) -> StoreConfig {
    StoreConfig {
        message_delay_level: LEVELS.to_owned(),
        max_message_size_bytes: MAX as u64,
        ..small_config(root, backend)
    }
}

fn keys_in(store: &MessageStore, topic: &str) -> Vec<String> {
    let r = store
        .get_message(&GetRequest::new(topic, 0, 0, 64, &TagFilter::all()))
        .unwrap();
    if r.status != GetStatus::Found {
        return Vec::new();
    }
    r.messages
        .iter()
        .map(|sel| {
            RecordView::parse(sel.bytes(), false)
                .unwrap()
                .property(property::KEYS)
                .unwrap_or_default()
                .into_owned()
        })
        .collect()
}

fn poison_lines(root: &Path, service: &str) -> Vec<serde_json::Value> {
    let path = root.join("poison").join(format!("{service}.jsonl"));
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn delayed(topic: &str, key: &str, body_len: usize) -> MessageToStore {
    let mut m = MessageToStore::new(topic, 0, vec![b'b'; body_len]);
    m.properties.insert(property::KEYS, key);
    m.properties.insert(property::DELAY_TIME_LEVEL, "1");
    m
}

/// A level meets two entries that can never be delivered (a schedule record
/// naming the schedule topic itself as its real topic, as a client could
/// once send; and one that grows over maxMessageSize on delivery) and goes
/// on to deliver what follows, in one pass, without retrying them.
fn a_level_passes_poison_over(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let store = Arc::new(
        open_store_with_clock(&config(dir.path(), backend), Arc::clone(&clock) as _).unwrap(),
    );
    let s = Scheduler::open(Arc::clone(&store), Arc::clone(&store) as _).unwrap();

    // 1. Straight into the schedule topic, real topic = itself (the store
    //    takes it: only the request path refuses client sends there).
    let mut looping = MessageToStore::new(SCHEDULE_TOPIC, 0, b"loop".to_vec());
    looping.properties.insert(property::DELAY_TIME_LEVEL, "1");
    looping
        .properties
        .insert(property::REAL_TOPIC, SCHEDULE_TOPIC);
    looping.properties.insert(property::REAL_QUEUE_ID, "0");
    store.put_message(&looping).unwrap();
    // 2. Fits in the schedule topic, not once delivered into a topic with a
    //    longer name plus the original store time.
    let long_topic = "T".repeat(120);
    let mut grows = delayed(&long_topic, "grows", 0);
    let fixed = rmq_common::message::record::encoded_len(&grows).unwrap();
    grows.body = vec![b'g'; MAX - fixed - 50];
    let stored = store.put_message(&grows).unwrap();
    assert_eq!(stored.appended.len(), 1, "the store takes it");
    // 3. Ordinary delayed messages behind them.
    for key in ["after-1", "after-2"] {
        store.put_message(&delayed("Orders", key, 10)).unwrap();
    }
    wait_dispatched(&store);

    clock.set(T0 + 1_000);
    let p = s.pass(1).unwrap();
    assert_eq!((p.delivered, p.skipped), (2, 2), "{p:?}");
    assert_eq!(p.ended, PassEnd::CaughtUp);
    assert_eq!(s.offset(1), 4);
    wait_dispatched(&store);
    assert_eq!(keys_in(&store, "Orders"), ["after-1", "after-2"]);
    assert!(keys_in(&store, &long_topic).is_empty());
    // Nothing was written back into the schedule topic.
    let mut units = Vec::new();
    store
        .consume_queue()
        .get(SCHEDULE_TOPIC, 0, 0, 100, &mut units)
        .unwrap();
    assert_eq!(units.len(), 4);

    assert_eq!(s.poisoned(), 2);
    let lines = poison_lines(dir.path(), "schedule");
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["targetTopic"], SCHEDULE_TOPIC);
    assert_eq!(lines[0]["queueOffset"], 0);
    assert!(lines[0]["reason"]
        .as_str()
        .unwrap()
        .contains("cannot be written"));
    assert_eq!(lines[1]["targetTopic"], long_topic.as_str());
    assert!(lines[1]["reason"]
        .as_str()
        .unwrap()
        .contains("maxMessageSize"));
    assert!(lines[1]["offsetMsgId"].as_str().unwrap().len() == 32);

    // A second pass finds nothing more to do: poison is not retried.
    clock.set(T0 + 5_000);
    let p = s.pass(1).unwrap();
    assert_eq!((p.delivered, p.skipped, p.ended), (0, 0, PassEnd::CaughtUp));
    drop(s);
    Arc::try_unwrap(store).unwrap().shutdown().unwrap();
}

#[test]
fn a_level_passes_poison_over_file() {
    a_level_passes_poison_over(CqBackend::File);
}

#[test]
fn a_level_passes_poison_over_rocksdb() {
    a_level_passes_poison_over(CqBackend::Rocksdb);
}

/// Records every check-back.
#[derive(Debug, Default)]
struct Checks(Mutex<Vec<(String, i64)>>);

impl CheckSender for Checks {
    fn send_check(
        &self,
        group: &str,
        header: &CheckTransactionStateRequestHeader,
        _body: Vec<u8>,
    ) -> bool {
        self.0
            .lock()
            .push((group.to_owned(), header.tran_state_table_offset));
        true
    }
}

fn half(group: &str, key: &str, body_len: usize) -> MessageToStore {
    let mut m = MessageToStore::new("Payments", 0, vec![b'h'; body_len]);
    m.properties.insert(property::KEYS, key);
    m.properties.insert(property::PRODUCER_GROUP, group);
    m.properties.insert(
        property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
        format!("uniq-{key}"),
    );
    m.properties.insert(property::TRANSACTION_PREPARED, "true");
    m.born_timestamp = T0;
    rmq_broker::service::transaction::half_message(m)
}

/// The check walk meets a half immune for ten years and a half whose check
/// copy would be over maxMessageSize, and still checks every other group's
/// halves in the same pass; the immune half is put back at the tail, the
/// oversized one is checked in place and recorded.
fn the_check_walk_passes_poison_over(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let store = Arc::new(
        open_store_with_clock(&config(dir.path(), backend), Arc::clone(&clock) as _).unwrap(),
    );
    let offsets = Arc::new(ConsumerOffsetManager::open(dir.path()).unwrap());
    let tx = Transactions::open(
        Arc::clone(&store),
        offsets,
        TxSettings {
            timeout_ms: 1_000,
            check_max: 15,
        },
    )
    .unwrap();
    let host = "127.0.0.1:10911".parse().unwrap();

    let mut immune = half("g-immune", "immune", 10);
    immune
        .properties
        .insert(property::CHECK_IMMUNITY_TIME_IN_SECONDS, "315360000");
    store.put_message(&immune).unwrap();
    let mut big = half("g-big", "big", 0);
    let fixed = rmq_common::message::record::encoded_len(&big).unwrap();
    big.body = vec![b'x'; MAX - fixed - 5];
    store.put_message(&big).unwrap();
    store.put_message(&half("g-a", "a", 10)).unwrap();
    store.put_message(&half("g-b", "b", 10)).unwrap();
    wait_dispatched(&store);

    clock.set(T0 + 2_000);
    let checks = Checks::default();
    let p = tx.check_pass(&checks, host).unwrap();
    assert_eq!((p.checked, p.deferred), (3, 1), "{p:?}");
    let mut groups: Vec<String> = checks.0.lock().iter().map(|c| c.0.clone()).collect();
    groups.sort();
    assert_eq!(groups, ["g-a", "g-b", "g-big"]);
    // The oversized half was checked in place: by its own queue offset.
    assert!(checks.0.lock().contains(&("g-big".to_owned(), 1)));
    assert_eq!(tx.poisoned(), 1);
    let lines = poison_lines(dir.path(), "transaction");
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["queueOffset"], 1);
    assert!(lines[0]["reason"]
        .as_str()
        .unwrap()
        .contains("checked in place"));

    // Next pass: the immune half is met again at the tail and put back
    // again; the two check copies are younger than the timeout.
    wait_dispatched(&store);
    let checks = Checks::default();
    let p = tx.check_pass(&checks, host).unwrap();
    assert_eq!((p.checked, p.deferred), (0, 1), "{p:?}");
    drop(tx);
    Arc::try_unwrap(store).unwrap().shutdown().unwrap();
}

#[test]
fn the_check_walk_passes_poison_over_file() {
    the_check_walk_passes_poison_over(CqBackend::File);
}

#[test]
fn the_check_walk_passes_poison_over_rocksdb() {
    the_check_walk_passes_poison_over(CqBackend::Rocksdb);
}
