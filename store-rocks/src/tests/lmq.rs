//! Light message queues are not held in memory: not loaded at open, read
//! from the database when used, dropped from the cache past its bound.

use rmq_common::cq::{Boundary, ConsumeQueueStore};

use super::{open, read, read_back, unit, NoTimes};
use crate::offsets::LMQ_CACHED;

fn lmq(i: usize) -> String {
    format!("%LMQ%t{i}")
}

#[test]
fn lmqs_are_read_from_the_database_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let units: Vec<_> = (0..30)
        .map(|i| unit(&lmq(i % 3), 0, (i / 3) as i64, 100 + 10 * i as i64))
        .chain([unit("Plain", 1, 0, 1000)])
        .collect();
    {
        let store = open(dir.path());
        store.put(&units, 1010).unwrap();
        store.close().unwrap();
    }
    let store = open(dir.path());
    {
        let cache = store.shared().offsets.read();
        assert_eq!(cache.lmq_cached, 0, "no LMQ loaded at open");
        assert_eq!(cache.lmq_total, 3);
        assert_eq!(cache.queues.len(), 1, "only the plain queue");
    }
    assert_eq!(store.lmq_queues(), 3);
    assert_eq!(store.stats().queues, 4);
    for q in 0..3 {
        let want: Vec<_> = units
            .iter()
            .filter(|u| u.topic == lmq(q))
            .map(read_back)
            .collect();
        assert_eq!(read(&store, &lmq(q), 0, 0), want, "{}", lmq(q));
        assert_eq!(store.max_offset(&lmq(q), 0).unwrap(), 10);
        assert_eq!(store.min_offset(&lmq(q), 0).unwrap(), 0);
        assert!(store.has_queue(&lmq(q), 0).unwrap());
        let ts = 100 + 10 * (3 * 4 + q as i64);
        assert_eq!(
            store
                .offset_by_time(&lmq(q), 0, ts, Boundary::Lower, &NoTimes)
                .unwrap(),
            4
        );
    }
    assert!(!store.has_queue(&lmq(9), 0).unwrap());
    assert_eq!(store.max_offset(&lmq(9), 0).unwrap(), 0);
    let all = store.queues().unwrap();
    assert_eq!(all.len(), 4, "{all:?}");
    assert_eq!(store.queues_except_lmq().unwrap().len(), 1);
    // Reads keep nothing in memory.
    assert_eq!(store.shared().offsets.read().lmq_cached, 0);
    // A replayed unit is skipped, the next one appended; the writer now
    // holds that LMQ.
    store
        .put(
            &[
                unit(&lmq(0), 0, 9, 100 + 10 * 27),
                unit(&lmq(0), 0, 10, 2000),
            ],
            2010,
        )
        .unwrap();
    assert_eq!(store.max_offset(&lmq(0), 0).unwrap(), 11);
    assert_eq!(
        read(&store, &lmq(0), 0, 10),
        vec![read_back(&unit(&lmq(0), 0, 10, 2000))]
    );
    assert_eq!(store.shared().offsets.read().lmq_cached, 1);
    // A new LMQ counts; a deleted one no longer does.
    store.put(&[unit(&lmq(7), 0, 0, 3000)], 3010).unwrap();
    assert_eq!(store.lmq_queues(), 4);
    store.delete_topic(&lmq(1)).unwrap();
    store.delete_topic(&lmq(2)).unwrap();
    assert_eq!(store.lmq_queues(), 2);
    assert_eq!(store.max_offset(&lmq(1), 0).unwrap(), 0);
    store.close().unwrap();
    let store = open(dir.path());
    assert_eq!(store.lmq_queues(), 2);
}

#[test]
fn truncation_reaches_lmqs_the_cache_does_not_hold() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path());
        let units: Vec<_> = (0..10).map(|i| unit(&lmq(0), 0, i, 100 + 10 * i)).collect();
        store.put(&units, 200).unwrap();
        store.close().unwrap();
    }
    let store = open(dir.path());
    // The CommitLog's valid tail ends at 150: units from there go.
    store.truncate_from_phy(150).unwrap();
    assert_eq!(store.max_offset(&lmq(0), 0).unwrap(), 5);
    assert_eq!(read(&store, &lmq(0), 0, 0).len(), 5);
    store.close().unwrap();
    let store = open(dir.path());
    assert_eq!(store.max_offset(&lmq(0), 0).unwrap(), 5);
}

#[test]
fn the_cache_holds_at_most_its_bound_of_lmqs() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let n = LMQ_CACHED + 5_000;
    for chunk in (0..n).collect::<Vec<_>>().chunks(5_000) {
        let units: Vec<_> = chunk
            .iter()
            .map(|i| unit(&lmq(*i), 0, 0, 100 + 10 * *i as i64))
            .collect();
        let end = units.last().map_or(0, |u| u.phy_offset + 10);
        store.put(&units, end).unwrap();
    }
    // Max keys are written lazily: drain them, then one more write lets the
    // writer drop what is clean.
    store.flush().unwrap();
    store
        .put(
            &[unit("Plain", 0, 0, 100 + 10 * n as i64)],
            110 + 10 * n as i64,
        )
        .unwrap();
    // The put's answer comes before the writer drops; the next barrier
    // comes after it.
    store.flush().unwrap();
    let cached = store.shared().offsets.read().lmq_cached;
    assert!(cached <= LMQ_CACHED, "{cached} LMQs cached");
    assert_eq!(store.lmq_queues(), n as u64);
    for i in [0, 1, n / 2, n - 1] {
        assert_eq!(store.max_offset(&lmq(i), 0).unwrap(), 1, "{}", lmq(i));
        assert_eq!(read(&store, &lmq(i), 0, 0).len(), 1);
    }
    // A dropped LMQ goes on from its offset.
    store
        .put(
            &[unit(&lmq(0), 0, 1, 200 + 10 * n as i64)],
            210 + 10 * n as i64,
        )
        .unwrap();
    assert_eq!(read(&store, &lmq(0), 0, 0).len(), 2);
}

#[test]
fn an_lmq_max_key_is_written_with_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    // Deferred max keys wait for a barrier that never comes.
    store
        .shared()
        .hold_max_keys
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let units = [
        unit(&lmq(1), 0, 0, 100),
        unit(&lmq(1), 0, 1, 110),
        unit("Plain", 0, 0, 120),
    ];
    store.put(&units, 130).unwrap();
    let guard = store.shared().db.read();
    let db = guard.as_ref().unwrap();
    let raw = |topic: &str| {
        db.db
            .get_cf(
                db.offsets().unwrap(),
                crate::key::offset_key(topic, crate::key::OffsetKind::Max, 0),
            )
            .unwrap()
            .map(|v| crate::key::OffsetValue::decode(&v).unwrap())
    };
    let max = raw(&lmq(1)).expect("the LMQ's max key is written with its units");
    assert_eq!((max.queue_offset, max.phy_offset), (1, 110));
    assert!(raw("Plain").is_none(), "a plain queue's max key waits");
}

#[test]
fn an_lmq_starting_at_zero_has_no_min_key_and_keeps_its_min_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path());
        // One LMQ from 0; another whose first unit is at 7 (its earlier
        // records expired before a rebuild).
        let units = [
            unit(&lmq(1), 0, 0, 100),
            unit(&lmq(1), 0, 1, 110),
            unit(&lmq(2), 0, 7, 120),
        ];
        store.put(&units, 130).unwrap();
        let guard = store.shared().db.read();
        let db = guard.as_ref().unwrap();
        let min_key = |topic: &str| {
            db.db
                .get_cf(
                    db.offsets().unwrap(),
                    crate::key::offset_key(topic, crate::key::OffsetKind::Min, 0),
                )
                .unwrap()
        };
        assert!(min_key(&lmq(1)).is_none(), "no min key for an LMQ from 0");
        assert!(min_key(&lmq(2)).is_some(), "a min key for an LMQ from 7");
        drop(guard);
        store.close().unwrap();
    }
    let store = open(dir.path());
    assert_eq!(store.lmq_queues(), 2);
    assert_eq!(store.min_offset(&lmq(1), 0).unwrap(), 0);
    assert_eq!(store.max_offset(&lmq(1), 0).unwrap(), 2);
    assert_eq!(store.min_offset(&lmq(2), 0).unwrap(), 7);
    assert_eq!(store.max_offset(&lmq(2), 0).unwrap(), 8);
    assert_eq!(read(&store, &lmq(1), 0, 0).len(), 2);
    assert_eq!(read(&store, &lmq(2), 0, 7).len(), 1);
}
