//! Lazy min correction and the compaction filter, time lookups, topic
//! deletion.

use rmq_common::cq::{Boundary, ConsumeQueueStore, CqError, MemoryConsumeQueueStore, QueueKey};

use super::{open, read, unit, NoTimes};
use crate::key;

fn raw_entry(
    s: &crate::RocksConsumeQueueStore,
    topic: &str,
    queue_id: i32,
    offset: i64,
) -> Option<Vec<u8>> {
    let guard = s.shared().db.read();
    let db = guard.as_ref().unwrap();
    db.db
        .get_cf(
            db.entries().unwrap(),
            key::entry_key(topic, queue_id, offset),
        )
        .unwrap()
}

#[test]
fn correct_min_offset_is_lazy_and_compaction_drops_old_entries() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let batch: Vec<_> = (0..10)
        .map(|i| unit("t", 0, i, i * 10))
        .chain((0..3).map(|i| unit("old", 0, i, 200 + i)))
        .collect();
    s.put(&batch, 300).unwrap();
    s.put(&[unit("old", 0, 3, 400)], 410).unwrap();
    s.flush().unwrap();
    s.correct_min_offset(35).unwrap();
    // Nothing is rewritten yet: the cached min is still the old one.
    let cached = |topic: &str| s.shared().offsets.read().queues[&QueueKey::new(topic, 0)].min;
    assert_eq!(cached("t"), 0);
    // The first unit at or above CommitLog offset 35 is the one at 40.
    assert_eq!(s.min_offset("t", 0).unwrap(), 4);
    assert_eq!(cached("t"), 4);
    let mut out = Vec::new();
    let err = s.get("t", 0, 3, 10, &mut out).unwrap_err();
    assert!(
        matches!(
            err,
            CqError::Compacted {
                min_offset: 4,
                requested: 3,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(read(&s, "t", 0, 4).len(), 6);
    // A queue entirely above stays as it is.
    assert_eq!(s.min_offset("old", 0).unwrap(), 0);

    // The compaction the call requested runs the filter; run it here rather
    // than wait for the background thread.
    crate::compact::compact_entries(s.shared());
    assert!(
        raw_entry(&s, "t", 0, 3).is_none(),
        "entry below the CommitLog min survived compaction"
    );
    assert!(raw_entry(&s, "t", 0, 4).is_some());

    // Everything of "t" below the new min: emptied, min = max = old max.
    s.correct_min_offset(1_000).unwrap();
    assert_eq!(
        (s.min_offset("t", 0).unwrap(), s.max_offset("t", 0).unwrap()),
        (10, 10)
    );
    assert!(read(&s, "t", 0, 10).is_empty());
    s.close().unwrap();

    // The corrected mins and the CommitLog min survive a restart.
    let s = open(dir.path());
    assert_eq!(
        (s.min_offset("t", 0).unwrap(), s.max_offset("t", 0).unwrap()),
        (10, 10)
    );
    assert_eq!(
        (
            s.min_offset("old", 0).unwrap(),
            s.max_offset("old", 0).unwrap()
        ),
        (4, 4)
    );
    // A lower CommitLog min never lowers a queue's min.
    s.correct_min_offset(0).unwrap();
    assert_eq!(s.min_offset("t", 0).unwrap(), 10);
}

#[test]
fn a_put_after_correct_min_sees_the_corrected_queue() {
    let dir = tempfile::tempdir().unwrap();
    let (s, m) = (open(dir.path()), MemoryConsumeQueueStore::new());
    let batch: Vec<_> = (0..5).map(|i| unit("t", 0, i, i * 10)).collect();
    for store in [&s as &dyn ConsumeQueueStore, &m] {
        store.put(&batch, 50).unwrap();
        store.correct_min_offset(100).unwrap();
        // The queue is empty now; its next unit sets the min again.
        store.put(&[unit("t", 0, 5, 100)], 110).unwrap();
    }
    assert_eq!(s.min_offset("t", 0).unwrap(), m.min_offset("t", 0).unwrap());
    assert_eq!(s.max_offset("t", 0).unwrap(), m.max_offset("t", 0).unwrap());
    assert_eq!(read(&s, "t", 0, 5), read(&m, "t", 0, 5));
}

#[test]
fn offset_by_time_boundaries_match_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let (s, m) = (open(dir.path()), MemoryConsumeQueueStore::new());
    // Offsets 2..6, store times 100, 100, 200, 300.
    let batch: Vec<_> = [100, 100, 200, 300]
        .iter()
        .zip(2..)
        .map(|(ts, off)| {
            let mut u = unit("t", 0, off, off * 10);
            u.store_timestamp = *ts;
            u
        })
        .collect();
    s.put(&batch, 100).unwrap();
    m.put(&batch, 100).unwrap();
    let cases = [
        (50, Boundary::Lower, 2),
        (100, Boundary::Lower, 2),
        (150, Boundary::Lower, 4),
        (300, Boundary::Lower, 5),
        (301, Boundary::Lower, 6),
        (50, Boundary::Upper, 2),
        (100, Boundary::Upper, 3),
        (250, Boundary::Upper, 4),
        (1_000, Boundary::Upper, 5),
    ];
    for (ts, boundary, want) in cases {
        assert_eq!(
            s.offset_by_time("t", 0, ts, boundary, &NoTimes).unwrap(),
            want,
            "{ts} {boundary:?}"
        );
        assert_eq!(
            m.offset_by_time("t", 0, ts, boundary, &NoTimes).unwrap(),
            want,
            "model {ts} {boundary:?}"
        );
    }
    assert_eq!(
        s.offset_by_time("none", 0, 5, Boundary::Lower, &NoTimes)
            .unwrap(),
        0
    );
    assert_eq!(
        s.offset_by_time("none", 0, 5, Boundary::Upper, &NoTimes)
            .unwrap(),
        0
    );
}

#[test]
fn delete_topic_removes_only_that_topic() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.put(
        &[
            unit("a", 0, 0, 0),
            unit("a", 1, 4, 10),
            unit("ab", 0, 0, 20),
            unit("b", 0, 0, 30),
        ],
        40,
    )
    .unwrap();
    s.delete_topic("a").unwrap();
    assert_eq!(
        s.queues().unwrap(),
        vec![QueueKey::new("ab", 0), QueueKey::new("b", 0)]
    );
    assert_eq!(
        (s.min_offset("a", 1).unwrap(), s.max_offset("a", 1).unwrap()),
        (0, 0)
    );
    assert!(raw_entry(&s, "a", 1, 4).is_none());
    assert_eq!(read(&s, "ab", 0, 0).len(), 1);
    assert_eq!(s.dispatched_phy_offset().unwrap(), 40);
    s.close().unwrap();
    let s = open(dir.path());
    assert_eq!(
        s.queues().unwrap(),
        vec![QueueKey::new("ab", 0), QueueKey::new("b", 0)]
    );
    // The topic can come back, starting wherever its first unit says.
    s.put(&[unit("a", 1, 0, 50)], 60).unwrap();
    assert_eq!(
        (s.min_offset("a", 1).unwrap(), s.max_offset("a", 1).unwrap()),
        (0, 1)
    );
}
