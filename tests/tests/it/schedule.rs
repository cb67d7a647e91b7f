//! Delay levels at the store level with a manual clock: the put path moves a
//! delayed message into `SCHEDULE_TOPIC_XXXX` with its due time as tagsCode,
//! and the [`Scheduler`] delivers each level in order, never early, across
//! restarts and put failures. Every backend (the scheduler reads its queues
//! through the consume-queue trait).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use rmq_broker::service::schedule::{DeliverySink, PassEnd, PutFailure, Scheduler};
use rmq_common::config::CqBackend;
use rmq_common::constants::{property, SCHEDULE_TOPIC};
use rmq_common::cq::CqUnit;
use rmq_common::message::record::RecordView;
use rmq_common::message::MessageToStore;
use rmq_common::time::ManualClock;
use rmq_common::StoreConfig;
use rmq_store::MessageStore;
use rmq_store::{GetRequest, GetStatus, TagFilter};
use rmq_tests::{open_store_with_clock, small_config, wait_dispatched};

/// Levels of these tests: 1 s, 2 s, 3 s.
const LEVELS: &str = "1s 2s 3s";
const T0: i64 = 1_700_000_000_000;
const TOPIC: &str = "DelayedOrders";

fn config(root: &Path, backend: CqBackend) -> StoreConfig {
    StoreConfig {
        message_delay_level: LEVELS.to_owned(),
        ..small_config(root, backend)
    }
}

fn delayed(queue_id: i32, key: &str, level: i32) -> MessageToStore {
    let mut m = MessageToStore::new(TOPIC, queue_id, format!("body of {key}").into_bytes());
    m.properties.insert(property::KEYS, key);
    m.properties.insert(property::TAGS, "TagD");
    if level != 0 {
        m.properties
            .insert(property::DELAY_TIME_LEVEL, level.to_string());
    }
    m
}

/// A message delivered to the real topic, as a consumer reads it.
#[derive(Debug, Clone)]
struct Delivered {
    key: String,
    store_time: i64,
    origin_store_time: Option<i64>,
    delay_prop: Option<String>,
    real_topic_prop: Option<String>,
    body: Vec<u8>,
    tag: Option<String>,
}

fn read_real(store: &MessageStore, queue_id: i32) -> Vec<Delivered> {
    let mut out = Vec::new();
    let mut offset = 0;
    for _ in 0..1000 {
        let r = store
            .get_message(&GetRequest::new(
                TOPIC,
                queue_id,
                offset,
                32,
                &TagFilter::all(),
            ))
            .unwrap();
        if r.status != GetStatus::Found {
            break;
        }
        for sel in &r.messages {
            let v = RecordView::parse(sel.bytes(), true).unwrap();
            out.push(Delivered {
                key: v.property(property::KEYS).unwrap().into_owned(),
                store_time: v.store_timestamp(),
                origin_store_time: v
                    .property(property::ORIGIN_STORE_TIMESTAMP)
                    .map(|t| t.parse().unwrap()),
                delay_prop: v
                    .property(property::DELAY_TIME_LEVEL)
                    .map(|d| d.into_owned()),
                real_topic_prop: v.property(property::REAL_TOPIC).map(|d| d.into_owned()),
                body: v.body().to_vec(),
                tag: v.property(property::TAGS).map(|d| d.into_owned()),
            });
        }
        offset = r.next_begin_offset;
    }
    out
}

fn schedule_units(store: &MessageStore, level: i32) -> Vec<CqUnit> {
    let mut units = Vec::new();
    store
        .consume_queue()
        .get(SCHEDULE_TOPIC, level - 1, 0, 1000, &mut units)
        .unwrap();
    units
}

/// Runs one pass per level and waits for the deliveries to be dispatched.
fn pass_all(store: &MessageStore, s: &Scheduler) -> Vec<(usize, PassEnd)> {
    let out: Vec<(usize, PassEnd)> = (1..=3)
        .map(|level| {
            let p = s.pass(level).unwrap();
            (p.delivered, p.ended)
        })
        .collect();
    wait_dispatched(store);
    out
}

fn open(
    root: &Path,
    backend: CqBackend,
    clock: &Arc<ManualClock>,
) -> (Arc<MessageStore>, Scheduler) {
    let store =
        Arc::new(open_store_with_clock(&config(root, backend), Arc::clone(clock) as _).unwrap());
    let s = Scheduler::open(Arc::clone(&store), Arc::clone(&store) as _).unwrap();
    (store, s)
}

fn levels_deliver_in_order_never_early(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let (store, s) = open(dir.path(), backend, &clock);

    // Interleaved sends: 4 per level, one beyond the top (clamped to 3),
    // one not delayed. All into queue 0 of the real topic.
    let mut expected_level: BTreeMap<String, i32> = BTreeMap::new();
    for i in 0..4 {
        for level in 1..=3 {
            let key = format!("L{level}-{i}");
            store.put_message(&delayed(0, &key, level)).unwrap();
            expected_level.insert(key, level);
        }
    }
    store.put_message(&delayed(0, "L99", 99)).unwrap();
    store.put_message(&delayed(0, "now", 0)).unwrap();
    wait_dispatched(&store);

    // Only the undelayed one is visible; the rest wait in their level queue
    // with the due time as tagsCode.
    let visible = read_real(&store, 0);
    assert_eq!(
        visible.iter().map(|d| d.key.as_str()).collect::<Vec<_>>(),
        ["now"]
    );
    for level in 1..=3 {
        let units = schedule_units(&store, level);
        let want = if level == 3 { 5 } else { 4 };
        assert_eq!(units.len(), want, "level {level}");
        for u in &units {
            assert_eq!(u.tags_code, T0 + i64::from(level) * 1000, "level {level}");
        }
        assert_eq!(s.pending(level), want as i64);
    }

    // One ms before level 1 is due: nothing moves, every level parks.
    clock.set(T0 + 999);
    let passes = pass_all(&store, &s);
    for (level, (delivered, ended)) in (1..).zip(&passes) {
        assert_eq!(*delivered, 0);
        assert_eq!(
            *ended,
            PassEnd::NotDue {
                due_ms: T0 + level * 1000
            }
        );
    }
    assert_eq!(read_real(&store, 0).len(), 1);

    let mut seen = 1;
    for level in 1..=3i64 {
        clock.set(T0 + level * 1000);
        let passes = pass_all(&store, &s);
        let want = if level == 3 { 5 } else { 4 };
        assert_eq!(
            passes[(level - 1) as usize],
            (want, PassEnd::CaughtUp),
            "level {level}"
        );
        for (other, (delivered, _)) in (1..).zip(&passes) {
            if other != level {
                assert_eq!(*delivered, 0, "level {other} at {level}s");
            }
        }
        let real = read_real(&store, 0);
        assert_eq!(real.len(), seen + want);
        let new = &real[seen..];
        seen = real.len();
        // In order within the level, delivered at (never before) its time.
        let mut keys: Vec<&str> = new.iter().map(|d| d.key.as_str()).collect();
        if level == 3 {
            assert_eq!(keys.pop(), Some("L99"));
        }
        let want_keys: Vec<String> = (0..4).map(|i| format!("L{level}-{i}")).collect();
        assert_eq!(keys, want_keys);
        for d in new {
            assert!(d.store_time >= T0 + level * 1000, "{} early", d.key);
            assert_eq!(d.origin_store_time, Some(T0), "{}", d.key);
            assert_eq!(d.delay_prop, None, "{} keeps DELAY", d.key);
            assert_eq!(d.real_topic_prop.as_deref(), Some(TOPIC));
            assert_eq!(d.body, format!("body of {}", d.key).into_bytes());
            assert_eq!(d.tag.as_deref(), Some("TagD"));
        }
        assert_eq!(s.pending(level as i32), 0);
    }
    // Delivered messages are indexed and filtered like any other: the tag
    // code of the real unit is the tag's hash again.
    let mut units = Vec::new();
    store
        .consume_queue()
        .get(TOPIC, 0, 0, 100, &mut units)
        .unwrap();
    assert!(units
        .iter()
        .all(|u| u.tags_code == rmq_common::message::tags_code(Some("TagD"))));
    store.shutdown().unwrap();
}

fn restart_delivers_each_pending_once(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let (store, s) = open(dir.path(), backend, &clock);
    let mut all = Vec::new();
    for i in 0..30 {
        let level = i % 3 + 1;
        let key = format!("k{i:02}-L{level}");
        store.put_message(&delayed(i % 2, &key, level)).unwrap();
        all.push(key);
    }
    wait_dispatched(&store);
    clock.set(T0 + 1000);
    let passes = pass_all(&store, &s);
    assert_eq!(passes[0].0, 10);
    // A clean stop persists the progress.
    s.persist().unwrap();
    drop(s);
    Arc::try_unwrap(store).unwrap().shutdown().unwrap();

    // Restart half a second later: nothing is due, nothing is early.
    clock.set(T0 + 1500);
    let (store, s) = open(dir.path(), backend, &clock);
    assert_eq!((s.offset(1), s.pending(2), s.pending(3)), (10, 10, 10));
    let passes = pass_all(&store, &s);
    assert!(passes.iter().all(|(d, _)| *d == 0), "{passes:?}");
    // Level 2 is due: delivered; then a crash before any persist.
    clock.set(T0 + 2000);
    let passes = pass_all(&store, &s);
    assert_eq!(passes[1].0, 10);
    drop(s);
    store.halt_as_if_crashed();
    drop(store);

    // After the crash, level 1 (persisted) is not delivered again; level 2
    // (delivered after the last persist) is, at least once, as in RocketMQ.
    clock.set(T0 + 3000);
    let (store, s) = open(dir.path(), backend, &clock);
    assert_eq!(s.offset(1), 10);
    assert_eq!(s.offset(2), 0);
    let passes = pass_all(&store, &s);
    assert_eq!(passes.iter().map(|p| p.0).collect::<Vec<_>>(), [0, 10, 10]);
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for q in 0..2 {
        for d in read_real(&store, q) {
            *count.entry(d.key).or_default() += 1;
        }
    }
    for key in &all {
        let n = count.get(key).copied().unwrap_or(0);
        if key.ends_with("L2") {
            assert_eq!(n, 2, "{key}: delivered before the crash and again after it");
        } else {
            assert_eq!(n, 1, "{key}");
        }
    }
    assert_eq!(count.len(), 30);
    store.shutdown().unwrap();
}

/// Puts through the store, or fails while `failing` is set.
#[derive(Debug)]
struct FlakySink {
    store: Arc<MessageStore>,
    failing: AtomicBool,
    attempts: AtomicUsize,
}

impl DeliverySink for FlakySink {
    fn put(&self, msg: &MessageToStore) -> Result<(), PutFailure> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        if self.failing.load(Ordering::SeqCst) {
            return Err("injected put failure".into());
        }
        self.store.put(msg)
    }
}

fn put_failure_retries_the_same_entry(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let store = Arc::new(
        open_store_with_clock(&config(dir.path(), backend), Arc::clone(&clock) as _).unwrap(),
    );
    let sink = Arc::new(FlakySink {
        store: Arc::clone(&store),
        failing: AtomicBool::new(true),
        attempts: AtomicUsize::new(0),
    });
    let s = Scheduler::open(Arc::clone(&store), Arc::clone(&sink) as _).unwrap();
    for i in 0..3 {
        store.put_message(&delayed(0, &format!("f{i}"), 1)).unwrap();
    }
    wait_dispatched(&store);
    clock.set(T0 + 1000);
    let p = s.pass(1).unwrap();
    assert_eq!(p.delivered, 0);
    assert_eq!(
        p.ended,
        PassEnd::PutFailed {
            retry_at_ms: T0 + 1000 + rmq_broker::service::schedule::PUT_RETRY_DELAY_MS
        }
    );
    assert_eq!(s.offset(1), 0, "a failed entry is not skipped");
    let p = s.pass(1).unwrap();
    assert_eq!(p.delivered, 0);
    assert_eq!(sink.attempts.load(Ordering::SeqCst), 2);
    sink.failing.store(false, Ordering::SeqCst);
    let p = s.pass(1).unwrap();
    assert_eq!((p.delivered, p.ended), (3, PassEnd::CaughtUp));
    wait_dispatched(&store);
    let keys: Vec<String> = read_real(&store, 0).into_iter().map(|d| d.key).collect();
    assert_eq!(keys, ["f0", "f1", "f2"]);
    drop(s);
    drop(sink);
    Arc::try_unwrap(store).unwrap().shutdown().unwrap();
}

fn prepared_messages_ignore_the_delay(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let (store, _s) = open(dir.path(), backend, &clock);
    let mut m = delayed(0, "half", 2);
    m.sys_flag = rmq_common::message::sysflag::TRANSACTION_PREPARED_TYPE;
    let r = store.put_message(&m).unwrap();
    wait_dispatched(&store);
    assert!(schedule_units(&store, 2).is_empty());
    let sel = store.record_at(r.appended[0].phy_offset).unwrap();
    let v = RecordView::parse(sel.bytes(), true).unwrap();
    assert_eq!(v.topic(), TOPIC);
}

macro_rules! backends {
    ($($body:ident),* $(,)?) => {
        mod file { $( #[test] fn $body() { super::$body(rmq_common::config::CqBackend::File); } )* }
        mod rocksdb { $( #[test] fn $body() { super::$body(rmq_common::config::CqBackend::Rocksdb); } )* }
        mod memory { $( #[test] fn $body() { super::$body(rmq_common::config::CqBackend::Memory); } )* }
    };
}

backends!(
    levels_deliver_in_order_never_early,
    restart_delivers_each_pending_once,
    put_failure_retries_the_same_entry,
    prepared_messages_ignore_the_delay,
);
