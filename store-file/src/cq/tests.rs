//! Scenario tests of the file consume queue's data path, with 10-unit files
//! so that file boundaries are crossed; helpers shared with
//! `recovery_tests`.

use std::path::{Path, PathBuf};

use rmq_common::cq::{
    Boundary, ConsumeQueueStore, CqError, CqPut, CqUnit, QueueKey, StoreTimeSource,
};
use rmq_common::StoreConfig;

use super::unit::{RawUnit, UNIT};
use super::FileConsumeQueueStore;

pub(super) const UNITS_PER_FILE: u64 = 10;
pub(super) const FILE_BYTES: u64 = UNITS_PER_FILE * UNIT as u64;

pub(super) fn config(root: &Path) -> StoreConfig {
    let mut c = StoreConfig::with_root(root);
    c.mapped_file_size_consume_queue_bytes = FILE_BYTES;
    c.max_mapped_consume_queue_files = 16;
    c
}

/// Unit `off` of a queue whose records are 100 bytes apart.
pub(super) fn unit(topic: &str, q: i32, off: i64, phy: i64) -> CqPut {
    CqPut {
        topic: topic.into(),
        queue_id: q,
        queue_offset: off,
        phy_offset: phy,
        size: 10,
        tags_code: phy * 7,
        store_timestamp: phy,
    }
}

pub(super) fn dense(topic: &str, q: i32, offsets: std::ops::Range<i64>) -> Vec<CqPut> {
    offsets.map(|i| unit(topic, q, i, i * 100)).collect()
}

/// Store time = CommitLog offset.
pub(super) struct PhyTimes;
impl StoreTimeSource for PhyTimes {
    fn store_time(&self, phy: i64, _: i32) -> Option<i64> {
        Some(phy)
    }
}

pub(super) fn get(
    s: &FileConsumeQueueStore,
    topic: &str,
    q: i32,
    from: i64,
    n: usize,
) -> Result<Vec<CqUnit>, CqError> {
    let mut out = Vec::new();
    s.get(topic, q, from, n, &mut out)?;
    Ok(out)
}

pub(super) fn offsets(units: &[CqUnit]) -> Vec<i64> {
    units.iter().map(|u| u.queue_offset).collect()
}

pub(super) fn files(root: &Path, topic: &str, q: i32) -> Vec<String> {
    let dir = root.join("consumequeue").join(topic).join(q.to_string());
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

pub(super) fn reopen(s: FileConsumeQueueStore, root: &Path) -> FileConsumeQueueStore {
    s.close().unwrap();
    FileConsumeQueueStore::open(&config(root)).unwrap()
}

pub(super) fn queue_dir(root: &Path, topic: &str, q: i32) -> PathBuf {
    root.join("consumequeue").join(topic).join(q.to_string())
}

#[test]
fn put_get_across_files() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileConsumeQueueStore::open(&config(dir.path())).unwrap();
    s.put(&dense("t", 0, 0..25), 2500).unwrap();
    assert_eq!(
        (s.min_offset("t", 0).unwrap(), s.max_offset("t", 0).unwrap()),
        (0, 25)
    );
    let all = get(&s, "t", 0, 0, 100).unwrap();
    assert_eq!(offsets(&all), (0..25).collect::<Vec<_>>());
    assert_eq!(
        all[13],
        CqUnit {
            queue_offset: 13,
            phy_offset: 1300,
            size: 10,
            tags_code: 9100
        }
    );
    assert_eq!(
        offsets(&get(&s, "t", 0, 8, 5).unwrap()),
        vec![8, 9, 10, 11, 12]
    );
    assert!(
        get(&s, "t", 0, 25, 5).unwrap().is_empty(),
        "at max: nothing"
    );
    assert!(get(&s, "t", 0, 99, 5).unwrap().is_empty());
    assert!(get(&s, "nope", 0, 0, 5).unwrap().is_empty());
    assert_eq!(
        files(dir.path(), "t", 0),
        vec![
            "00000000000000000000",
            "00000000000000000200",
            "00000000000000000400"
        ]
    );
    assert_eq!(s.dispatched_phy_offset().unwrap(), 2500);
    assert_eq!(s.queues().unwrap(), vec![QueueKey::new("t", 0)]);
}

#[test]
fn replays_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileConsumeQueueStore::open(&config(dir.path())).unwrap();
    s.put(&dense("t", 0, 0..5), 500).unwrap();
    s.put(&dense("t", 0, 0..5), 300).unwrap();
    assert_eq!(s.max_offset("t", 0).unwrap(), 5);
    assert_eq!(
        s.dispatched_phy_offset().unwrap(),
        500,
        "max of old and new"
    );
    // A queue offset below max with a new record end: still a replay.
    s.put(&[unit("t", 0, 3, 9_000)], 9_010).unwrap();
    // A record ending at or before the queue's last end: a replay.
    s.put(&[unit("t", 0, 5, 390)], 9_010).unwrap();
    assert_eq!(s.max_offset("t", 0).unwrap(), 5);
    assert_eq!(get(&s, "t", 0, 3, 1).unwrap()[0].phy_offset, 300);
    s.put(&[unit("t", 0, 5, 500)], 510).unwrap();
    assert_eq!(s.max_offset("t", 0).unwrap(), 6);
}

#[test]
fn first_offset_above_zero_fills_blanks_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileConsumeQueueStore::open(&config(dir.path())).unwrap();
    s.put(&[unit("t", 0, 23, 1000)], 1010).unwrap();
    assert_eq!(
        (s.min_offset("t", 0).unwrap(), s.max_offset("t", 0).unwrap()),
        (23, 24)
    );
    assert_eq!(
        files(dir.path(), "t", 0),
        vec!["00000000000000000400"],
        "earlier files not created"
    );
    assert!(matches!(
        get(&s, "t", 0, 22, 5),
        Err(CqError::Compacted {
            min_offset: 23,
            requested: 22,
            ..
        })
    ));
    assert_eq!(offsets(&get(&s, "t", 0, 23, 5).unwrap()), vec![23]);
    s.flush().unwrap();
    let bytes = std::fs::read(queue_dir(dir.path(), "t", 0).join("00000000000000000400")).unwrap();
    for k in 0..3 {
        assert_eq!(
            RawUnit::decode(&bytes[k * UNIT..]),
            Some(RawUnit::BLANK),
            "unit {}",
            20 + k
        );
    }
    assert_eq!(RawUnit::decode(&bytes[3 * UNIT..]).unwrap().phy, 1000);

    let s = reopen(s, dir.path());
    assert_eq!(
        (s.min_offset("t", 0).unwrap(), s.max_offset("t", 0).unwrap()),
        (23, 24)
    );
    s.put(&[unit("t", 0, 24, 1100)], 1110).unwrap();
    assert_eq!(offsets(&get(&s, "t", 0, 23, 5).unwrap()), vec![23, 24]);
    assert!(matches!(
        get(&s, "t", 0, 0, 5),
        Err(CqError::Compacted { min_offset: 23, .. })
    ));
}

#[test]
fn hole_is_filled_with_blanks() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileConsumeQueueStore::open(&config(dir.path())).unwrap();
    s.put(&dense("t", 0, 0..3), 300).unwrap();
    s.put(&[unit("t", 0, 15, 1500)], 1510).unwrap();
    assert_eq!(s.max_offset("t", 0).unwrap(), 16);
    let check = |s: &FileConsumeQueueStore| {
        assert_eq!(
            offsets(&get(s, "t", 0, 0, 100).unwrap()),
            vec![0, 1, 2],
            "stops at the hole"
        );
        assert!(get(s, "t", 0, 3, 100).unwrap().is_empty());
        assert!(get(s, "t", 0, 12, 100).unwrap().is_empty());
        assert_eq!(offsets(&get(s, "t", 0, 15, 100).unwrap()), vec![15]);
        assert_eq!(
            s.offset_by_time("t", 0, 250, Boundary::Lower, &PhyTimes)
                .unwrap(),
            15
        );
        assert_eq!(
            s.offset_by_time("t", 0, 1000, Boundary::Upper, &PhyTimes)
                .unwrap(),
            2
        );
    };
    check(&s);
    assert_eq!(files(dir.path(), "t", 0).len(), 2);
    let s = reopen(s, dir.path());
    check(&s);
    assert_eq!(
        (s.min_offset("t", 0).unwrap(), s.max_offset("t", 0).unwrap()),
        (0, 16)
    );
    // Truncating the record after the hole removes the hole's blanks too.
    s.truncate_from_phy(1500).unwrap();
    assert_eq!(s.max_offset("t", 0).unwrap(), 3);
    assert_eq!(files(dir.path(), "t", 0).len(), 1);
}

#[test]
fn offset_by_time_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileConsumeQueueStore::open(&config(dir.path())).unwrap();
    s.put(&dense("t", 0, 0..25), 2500).unwrap();
    let at = |ts, b| s.offset_by_time("t", 0, ts, b, &PhyTimes).unwrap();
    assert_eq!(at(550, Boundary::Lower), 6);
    assert_eq!(at(600, Boundary::Lower), 6);
    assert_eq!(at(-5, Boundary::Lower), 0);
    assert_eq!(at(10_000, Boundary::Lower), 25, "none at or after: max");
    assert_eq!(at(550, Boundary::Upper), 5);
    assert_eq!(at(600, Boundary::Upper), 6);
    assert_eq!(at(-5, Boundary::Upper), 0, "none at or before: min");
    assert_eq!(at(10_000, Boundary::Upper), 24);
    assert_eq!(
        s.offset_by_time("x", 0, 5, Boundary::Upper, &PhyTimes)
            .unwrap(),
        0
    );
    s.correct_min_offset(1050).unwrap();
    assert_eq!(
        s.offset_by_time("t", 0, -5, Boundary::Upper, &PhyTimes)
            .unwrap(),
        11
    );
    assert_eq!(
        s.offset_by_time("t", 0, 0, Boundary::Lower, &PhyTimes)
            .unwrap(),
        11
    );
}

#[test]
fn closed_store_refuses_calls() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileConsumeQueueStore::open(&config(dir.path())).unwrap();
    s.put(&dense("t", 0, 0..3), 300).unwrap();
    s.close().unwrap();
    assert!(matches!(
        s.put(&dense("t", 0, 3..4), 400),
        Err(CqError::Closed)
    ));
    assert!(matches!(get(&s, "t", 0, 0, 1), Err(CqError::Closed)));
    assert!(matches!(s.flush(), Err(CqError::Closed)));
    assert!(matches!(s.max_offset("t", 0), Err(CqError::Closed)));
    assert_eq!(s.stats().mapped_files, 0);
    s.close().unwrap();
}

#[test]
fn invalid_units_are_rejected_whole_batch() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileConsumeQueueStore::open(&config(dir.path())).unwrap();
    let mut bad = unit("t", 0, 1, 100);
    bad.size = 0;
    let r = s.put(&[unit("t", 0, 0, 0), bad], 200);
    assert!(matches!(r, Err(CqError::InvalidArgument(_))));
    assert_eq!(
        s.max_offset("t", 0).unwrap(),
        0,
        "nothing of the batch was written"
    );
    assert!(matches!(
        s.put(&[unit("a/b", 0, 0, 0)], 10),
        Err(CqError::InvalidArgument(_))
    ));
    s.put(&[unit("t", 0, 0, 0)], 10).unwrap();
}

#[test]
fn concurrent_readers_see_consistent_units() {
    let dir = tempfile::tempdir().unwrap();
    let s = std::sync::Arc::new(FileConsumeQueueStore::open(&config(dir.path())).unwrap());
    let writer = {
        let s = s.clone();
        std::thread::spawn(move || {
            for i in 0..300i64 {
                let batch: Vec<CqPut> = (0..20)
                    .map(|q| unit("t", q, i, (i * 20 + i64::from(q)) * 100))
                    .collect();
                s.put(&batch, (i + 1) * 2000).unwrap();
                if i % 50 == 0 {
                    s.flush().unwrap();
                }
            }
        })
    };
    let readers: Vec<_> = (0..4)
        .map(|r| {
            let s = s.clone();
            std::thread::spawn(move || {
                for n in 0..400 {
                    let q = (n + r) % 20;
                    let max = s.max_offset("t", q).unwrap();
                    let got = get(&s, "t", q, (max - 15).max(0), 30).unwrap();
                    for u in got {
                        assert_eq!(u.phy_offset, (u.queue_offset * 20 + i64::from(q)) * 100);
                    }
                }
            })
        })
        .collect();
    writer.join().unwrap();
    for r in readers {
        r.join().unwrap();
    }
    assert!(s.stats().mapped_files <= 16);
    s.close().unwrap();
}
