//! Put, get, min/max and their edge cases.

use rmq_common::config::CqBackend;
use rmq_common::constants::CHECKPOINT_TOPIC;
use rmq_common::cq::{ConsumeQueueStore, CqError, QueueKey};

use rmq_common::StoreConfig;

use super::{config, open, read, read_back, unit};
use crate::RocksConsumeQueueStore;

#[test]
fn put_then_get_min_max() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    assert_eq!(s.backend(), CqBackend::Rocksdb);
    let batch: Vec<_> = (0..5).map(|i| unit("t", 0, i, i * 10)).collect();
    s.put(&batch, 50).unwrap();
    assert_eq!(
        (s.min_offset("t", 0).unwrap(), s.max_offset("t", 0).unwrap()),
        (0, 5)
    );
    assert_eq!(s.dispatched_phy_offset().unwrap(), 50);
    assert_eq!(
        read(&s, "t", 0, 0),
        batch.iter().map(read_back).collect::<Vec<_>>()
    );
    let mut out = Vec::new();
    s.get("t", 0, 2, 2, &mut out).unwrap();
    assert_eq!(out, vec![read_back(&batch[2]), read_back(&batch[3])]);
    // At or past max: nothing, not an error (the long-polling case).
    out.clear();
    s.get("t", 0, 5, 10, &mut out).unwrap();
    s.get("t", 0, 99, 10, &mut out).unwrap();
    s.get("t", 0, 0, 0, &mut out).unwrap();
    assert!(out.is_empty());
}

#[test]
fn unknown_queue_is_empty_with_min_max_zero() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    assert_eq!(s.min_offset("nope", 3).unwrap(), 0);
    assert_eq!(s.max_offset("nope", 3).unwrap(), 0);
    assert_eq!(s.dispatched_phy_offset().unwrap(), 0);
    assert!(read(&s, "nope", 3, 0).is_empty());
    assert!(s.queues().unwrap().is_empty());
}

#[test]
fn replay_is_skipped_by_offset_and_by_phy_end() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.put(&[unit("t", 0, 0, 0), unit("t", 0, 1, 10)], 20)
        .unwrap();
    // The same records again, in one batch with a new one.
    s.put(
        &[unit("t", 0, 0, 0), unit("t", 0, 1, 10), unit("t", 0, 2, 20)],
        30,
    )
    .unwrap();
    // A different record claiming an old queue offset: skipped by offset.
    let mut stale = unit("t", 0, 1, 500);
    stale.tags_code = -1;
    // A new queue offset for a record ending at or before the max end:
    // skipped by phy end.
    let old_record = unit("t", 0, 3, 15);
    s.put(&[stale, old_record], 30).unwrap();
    assert_eq!(s.max_offset("t", 0).unwrap(), 3);
    let got = read(&s, "t", 0, 0);
    assert_eq!(
        got.iter().map(|u| u.phy_offset).collect::<Vec<_>>(),
        vec![0, 10, 20]
    );
    // Duplicates within one batch are skipped too.
    s.put(&[unit("t", 0, 3, 30), unit("t", 0, 3, 30)], 40)
        .unwrap();
    assert_eq!(s.max_offset("t", 0).unwrap(), 4);
    // The dispatched offset never goes back on put.
    s.put(&[], 5).unwrap();
    assert_eq!(s.dispatched_phy_offset().unwrap(), 40);
}

#[test]
fn first_offset_above_zero_sets_min() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.put(&[unit("t", 1, 7, 0), unit("t", 1, 8, 10)], 20)
        .unwrap();
    assert_eq!(
        (s.min_offset("t", 1).unwrap(), s.max_offset("t", 1).unwrap()),
        (7, 9)
    );
    let mut out = Vec::new();
    let err = s.get("t", 1, 6, 10, &mut out).unwrap_err();
    assert!(
        matches!(
            err,
            CqError::Compacted {
                min_offset: 7,
                requested: 6,
                queue_id: 1,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(read(&s, "t", 1, 7).len(), 2);
}

#[test]
fn multi_get_stops_at_the_first_missing_key() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    // A hole at 2 (the model accepts an offset past the max).
    s.put(
        &[unit("t", 0, 0, 0), unit("t", 0, 1, 10), unit("t", 0, 3, 20)],
        30,
    )
    .unwrap();
    assert_eq!(s.max_offset("t", 0).unwrap(), 4);
    assert_eq!(read(&s, "t", 0, 0).len(), 2);
    assert!(read(&s, "t", 0, 2).is_empty());
    assert_eq!(read(&s, "t", 0, 3).len(), 1);
}

#[test]
fn reads_larger_than_one_multi_get_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let batch: Vec<_> = (0..10_000).map(|i| unit("big", 0, i, i * 10)).collect();
    s.put(&batch, 100_000).unwrap();
    let got = read(&s, "big", 0, 1);
    assert_eq!(got.len(), 9_999);
    assert!(got
        .iter()
        .zip(1..)
        .all(|(u, i)| u.queue_offset == i && u.phy_offset == i * 10));
}

#[test]
fn queues_are_sorted_and_hide_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.put(
        &[unit("b", 1, 0, 0), unit("a", 2, 0, 10), unit("b", 0, 0, 20)],
        30,
    )
    .unwrap();
    s.flush().unwrap();
    let want = vec![
        QueueKey::new("a", 2),
        QueueKey::new("b", 0),
        QueueKey::new("b", 1),
    ];
    assert_eq!(s.queues().unwrap(), want);
    drop(s);
    let s = open(dir.path());
    assert_eq!(s.queues().unwrap(), want);
    assert_eq!(s.dispatched_phy_offset().unwrap(), 30);
}

#[test]
fn reserved_topic_and_negative_offsets_are_rejected_per_batch() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let err = s
        .put(&[unit("ok", 0, 0, 0), unit(CHECKPOINT_TOPIC, 0, 0, 10)], 20)
        .unwrap_err();
    assert!(matches!(err, CqError::InvalidArgument(_)), "{err}");
    let err = s.put(&[unit("ok", 0, -1, 0)], 20).unwrap_err();
    assert!(matches!(err, CqError::InvalidArgument(_)), "{err}");
    // Nothing of a rejected batch was written, and the store still works.
    assert_eq!(s.max_offset("ok", 0).unwrap(), 0);
    assert_eq!(s.dispatched_phy_offset().unwrap(), 0);
    s.put(&[unit("ok", 0, 0, 0)], 10).unwrap();
    assert_eq!(s.max_offset("ok", 0).unwrap(), 1);
    // Deleting the checkpoint topic is a no-op that keeps the checkpoint.
    s.delete_topic(CHECKPOINT_TOPIC).unwrap();
    assert_eq!(s.dispatched_phy_offset().unwrap(), 10);
}

#[test]
fn close_refuses_later_calls_and_releases_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.put(&[unit("t", 0, 0, 0)], 10).unwrap();
    s.close().unwrap();
    s.close().unwrap();
    assert!(matches!(
        s.put(&[unit("t", 0, 1, 10)], 20),
        Err(CqError::Closed)
    ));
    assert!(matches!(s.flush(), Err(CqError::Closed)));
    assert!(matches!(s.max_offset("t", 0), Err(CqError::Closed)));
    assert!(matches!(
        s.get("t", 0, 0, 1, &mut Vec::new()),
        Err(CqError::Closed)
    ));
    assert!(matches!(s.queues(), Err(CqError::Closed)));
    // The database lock is released at close, not at drop.
    let again = open(dir.path());
    assert_eq!(again.max_offset("t", 0).unwrap(), 1);
    assert_eq!(again.dispatched_phy_offset().unwrap(), 10);
}

#[test]
fn stats_are_non_zero_after_writes() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    for b in 0..20_i64 {
        let batch: Vec<_> = (0..500_i64)
            .map(|i| unit("t", (i % 4) as i32, b * 125 + i / 4, (b * 500 + i) * 10))
            .collect();
        s.put(&batch, (b + 1) * 5000).unwrap();
    }
    let before_flush = s.stats();
    assert_eq!(before_flush.queues, 4);
    assert!(before_flush.memtable_bytes > 0, "{before_flush:?}");
    assert_eq!(before_flush.pending_writes, 0);
    s.flush().unwrap();
    read(&s, "t", 0, 0);
    let after = s.stats();
    assert!(after.open_files > 0, "{after:?}");
    assert!(after.block_cache_usage_bytes > 0, "{after:?}");
    assert!(after.write_stalled <= 1);
    s.close().unwrap();
    assert_eq!(s.stats().memtable_bytes, 0);
}

#[test]
fn open_names_a_bad_rocksdb_key_and_accepts_the_alternatives() {
    let dir = tempfile::tempdir().unwrap();
    for (cfg, key) in [
        (
            StoreConfig {
                rocksdb_compaction_style: "fifo".into(),
                ..config(dir.path())
            },
            "rocksdbCompactionStyle",
        ),
        (
            StoreConfig {
                rocksdb_group_commit_queue_capacity: 0,
                ..config(dir.path())
            },
            "rocksdbGroupCommitQueueCapacity",
        ),
    ] {
        let err = RocksConsumeQueueStore::open(&cfg).unwrap_err();
        assert!(
            matches!(&err, CqError::InvalidArgument(m) if m.contains(key)),
            "{err}"
        );
    }
    // Level compaction, the WAL on and no bloom filter work the same way.
    let cfg = StoreConfig {
        rocksdb_compaction_style: "level".into(),
        rocksdb_wal_enabled: true,
        rocksdb_bloom_bits_per_key: 0,
        ..config(dir.path())
    };
    let s = RocksConsumeQueueStore::open(&cfg).unwrap();
    s.put(&[unit("t", 0, 0, 0)], 10).unwrap();
    s.close().unwrap();
    let s = RocksConsumeQueueStore::open(&cfg).unwrap();
    assert_eq!(read(&s, "t", 0, 0).len(), 1);
}
