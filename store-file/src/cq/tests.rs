//! Scenario tests of the file consume queue, with 10-unit files so that file
//! boundaries are crossed.

use std::path::{Path, PathBuf};

use rmq_common::cq::{
    Boundary, ConsumeQueueStore, CqError, CqPut, CqUnit, QueueKey, StoreTimeSource,
};
use rmq_common::StoreConfig;

use super::unit::{RawUnit, UNIT};
use super::FileConsumeQueueStore;

const UNITS_PER_FILE: u64 = 10;
const FILE_BYTES: u64 = UNITS_PER_FILE * UNIT as u64;

fn config(root: &Path) -> StoreConfig {
    let mut c = StoreConfig::with_root(root);
    c.mapped_file_size_consume_queue_bytes = FILE_BYTES;
    c.max_mapped_consume_queue_files = 16;
    c
}

/// Unit `off` of a queue whose records are 100 bytes apart.
fn unit(topic: &str, q: i32, off: i64, phy: i64) -> CqPut {
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

fn dense(topic: &str, q: i32, offsets: std::ops::Range<i64>) -> Vec<CqPut> {
    offsets.map(|i| unit(topic, q, i, i * 100)).collect()
}

/// Store time = CommitLog offset.
struct PhyTimes;
impl StoreTimeSource for PhyTimes {
    fn store_time(&self, phy: i64, _: i32) -> Option<i64> {
        Some(phy)
    }
}

fn get(
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

fn offsets(units: &[CqUnit]) -> Vec<i64> {
    units.iter().map(|u| u.queue_offset).collect()
}

fn files(root: &Path, topic: &str, q: i32) -> Vec<String> {
    let dir = root.join("consumequeue").join(topic).join(q.to_string());
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

fn reopen(s: FileConsumeQueueStore, root: &Path) -> FileConsumeQueueStore {
    s.close().unwrap();
    FileConsumeQueueStore::open(&config(root)).unwrap()
}

fn queue_dir(root: &Path, topic: &str, q: i32) -> PathBuf {
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
fn truncate_across_files_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileConsumeQueueStore::open(&config(dir.path())).unwrap();
    s.put(&dense("t", 0, 0..25), 2500).unwrap();
    s.put(&dense("t", 1, 0..3), 2500).unwrap();
    s.truncate_from_phy(1250).unwrap();
    assert_eq!(s.max_offset("t", 0).unwrap(), 13);
    assert_eq!(s.max_offset("t", 1).unwrap(), 3);
    assert_eq!(s.dispatched_phy_offset().unwrap(), 1250);
    assert_eq!(
        files(dir.path(), "t", 0).len(),
        2,
        "the file of units 20.. is deleted"
    );
    let bytes = std::fs::read(queue_dir(dir.path(), "t", 0).join("00000000000000000200")).unwrap();
    assert!(
        bytes[3 * UNIT..].iter().all(|b| *b == 0),
        "truncated units are zeroed"
    );

    let s = reopen(s, dir.path());
    assert_eq!(s.max_offset("t", 0).unwrap(), 13);
    assert_eq!(s.dispatched_phy_offset().unwrap(), 1250);
    s.put(&dense("t", 0, 13..14), 1310).unwrap();
    assert_eq!(
        offsets(&get(&s, "t", 0, 10, 10).unwrap()),
        vec![10, 11, 12, 13]
    );

    // Truncating everything keeps the first file (and the queue).
    s.truncate_from_phy(0).unwrap();
    assert_eq!(
        (s.min_offset("t", 0).unwrap(), s.max_offset("t", 0).unwrap()),
        (0, 0)
    );
    assert_eq!(files(dir.path(), "t", 0), vec!["00000000000000000000"]);
    let s = reopen(s, dir.path());
    assert_eq!(
        (s.min_offset("t", 0).unwrap(), s.max_offset("t", 0).unwrap()),
        (0, 0)
    );
    assert_eq!(s.queues().unwrap().len(), 2);
    assert_eq!(s.dispatched_phy_offset().unwrap(), 0);
}

#[test]
fn correct_min_offset_deletes_files() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileConsumeQueueStore::open(&config(dir.path())).unwrap();
    s.put(&dense("t", 0, 0..25), 2500).unwrap();
    s.correct_min_offset(1050).unwrap();
    assert_eq!(s.min_offset("t", 0).unwrap(), 11);
    assert!(matches!(
        get(&s, "t", 0, 10, 1),
        Err(CqError::Compacted { min_offset: 11, .. })
    ));
    assert_eq!(
        files(dir.path(), "t", 0),
        vec!["00000000000000000200", "00000000000000000400"]
    );

    let s = reopen(s, dir.path());
    assert_eq!(s.min_offset("t", 0).unwrap(), 11, "min offset persisted");
    assert_eq!(offsets(&get(&s, "t", 0, 11, 2).unwrap()), vec![11, 12]);

    s.correct_min_offset(100_000).unwrap();
    assert_eq!(
        (s.min_offset("t", 0).unwrap(), s.max_offset("t", 0).unwrap()),
        (25, 25)
    );
    assert_eq!(
        files(dir.path(), "t", 0),
        vec!["00000000000000000400"],
        "the last file stays"
    );
    let s = reopen(s, dir.path());
    assert_eq!(
        (s.min_offset("t", 0).unwrap(), s.max_offset("t", 0).unwrap()),
        (25, 25)
    );
    s.put(&dense("t", 0, 25..26), 2510).unwrap();
    assert_eq!(offsets(&get(&s, "t", 0, 25, 5).unwrap()), vec![25]);
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
fn delete_topic_removes_its_folder() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileConsumeQueueStore::open(&config(dir.path())).unwrap();
    s.put(
        &[
            dense("t", 0, 0..12),
            dense("t", 1, 0..2),
            dense("u", 0, 0..3),
        ]
        .concat(),
        1200,
    )
    .unwrap();
    s.delete_topic("t").unwrap();
    assert_eq!(s.queues().unwrap(), vec![QueueKey::new("u", 0)]);
    assert!(!dir.path().join("consumequeue/t").exists());
    assert_eq!(s.max_offset("t", 0).unwrap(), 0);
    assert!(get(&s, "t", 0, 0, 10).unwrap().is_empty());
    assert!(matches!(
        s.delete_topic("../x"),
        Err(CqError::InvalidArgument(_))
    ));
    s.put(&[unit("t", 0, 0, 5000)], 5010).unwrap();
    let s = reopen(s, dir.path());
    assert_eq!(
        s.queues().unwrap(),
        vec![QueueKey::new("t", 0), QueueKey::new("u", 0)]
    );
    assert_eq!(get(&s, "t", 0, 0, 10).unwrap()[0].phy_offset, 5000);
    assert_eq!(s.stats().queues, 2);
}

#[test]
fn reopen_keeps_offsets_and_dispatched() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileConsumeQueueStore::open(&config(dir.path())).unwrap();
    s.put(&[dense("a", 0, 0..17), dense("b", 3, 0..4)].concat(), 4000)
        .unwrap();
    s.flush().unwrap();
    s.put(&dense("a", 0, 17..18), 4100).unwrap();
    // Dropped without close: the page cache keeps the units, the checkpoint
    // says what the last flush made durable.
    drop(s);
    let s = FileConsumeQueueStore::open(&config(dir.path())).unwrap();
    assert_eq!(s.max_offset("a", 0).unwrap(), 18);
    assert_eq!(s.max_offset("b", 3).unwrap(), 4);
    assert_eq!(s.dispatched_phy_offset().unwrap(), 4000);
    let s = reopen(s, dir.path());
    assert_eq!(s.dispatched_phy_offset().unwrap(), 4000);
    // Without a checkpoint: the highest record end of any queue.
    s.close().unwrap();
    std::fs::remove_file(dir.path().join("consumequeue/.dispatched")).unwrap();
    let s = FileConsumeQueueStore::open(&config(dir.path())).unwrap();
    assert_eq!(s.dispatched_phy_offset().unwrap(), 1710);
}

#[test]
fn corrupt_layout_is_an_error_naming_the_path() {
    let cases: [(&str, &[u8]); 4] = [
        ("t/0/123", &[0u8; FILE_BYTES as usize]),
        ("t/0/00000000000000000000", &[0u8; 7]),
        ("t/x/00000000000000000000", &[0u8; FILE_BYTES as usize]),
        ("t/0/00000000000000000010", &[0u8; FILE_BYTES as usize]),
    ];
    for (rel, content) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("consumequeue").join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        match FileConsumeQueueStore::open(&config(dir.path())) {
            Err(CqError::Corrupt { detail }) => {
                let shown = if rel.starts_with("t/x") { "t/x" } else { rel };
                assert!(detail.contains(shown), "{detail} names {shown}");
            }
            other => panic!("{rel}: expected Corrupt, got {other:?}"),
        }
    }
    // Files that do not follow each other.
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("consumequeue/t/0");
    std::fs::create_dir_all(&q).unwrap();
    std::fs::write(q.join("00000000000000000000"), [0u8; FILE_BYTES as usize]).unwrap();
    std::fs::write(q.join("00000000000000000400"), [0u8; FILE_BYTES as usize]).unwrap();
    assert!(matches!(
        FileConsumeQueueStore::open(&config(dir.path())),
        Err(CqError::Corrupt { .. })
    ));
}

#[test]
fn invalid_unit_ends_the_queue_and_is_scrubbed() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileConsumeQueueStore::open(&config(dir.path())).unwrap();
    s.put(&dense("t", 0, 0..4), 400).unwrap();
    s.close().unwrap();
    let path = queue_dir(dir.path(), "t", 0).join("00000000000000000000");
    let mut bytes = std::fs::read(&path).unwrap();
    let bad = RawUnit {
        phy: 700,
        size: -1,
        tags: 0,
    };
    bytes[4 * UNIT..5 * UNIT].copy_from_slice(&bad.encode());
    bytes[6 * UNIT..7 * UNIT].copy_from_slice(
        &RawUnit {
            phy: 800,
            size: 10,
            tags: 0,
        }
        .encode(),
    );
    std::fs::write(&path, &bytes).unwrap();
    let s = FileConsumeQueueStore::open(&config(dir.path())).unwrap();
    assert_eq!(s.max_offset("t", 0).unwrap(), 4);
    let bytes = std::fs::read(&path).unwrap();
    assert!(
        bytes[4 * UNIT..].iter().all(|b| *b == 0),
        "everything after the end is zeroed"
    );
    s.put(&dense("t", 0, 4..5), 500).unwrap();
    assert_eq!(
        offsets(&get(&s, "t", 0, 0, 10).unwrap()),
        vec![0, 1, 2, 3, 4]
    );
}

#[test]
fn mapping_budget_holds_with_many_queues() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileConsumeQueueStore::open(&config(dir.path())).unwrap();
    let mut phy = 0;
    for round in 0..3 {
        for q in 0..100 {
            let batch: Vec<CqPut> = (0..7)
                .map(|k| {
                    phy += 100;
                    unit("t", q, round * 7 + k, phy)
                })
                .collect();
            s.put(&batch, phy + 10).unwrap();
            assert!(s.stats().mapped_files <= 16, "{:?}", s.stats());
        }
    }
    for q in 0..100 {
        let got = get(&s, "t", q, 0, 100).unwrap();
        assert_eq!(offsets(&got), (0..21).collect::<Vec<_>>());
        assert!(got.windows(2).all(|w| w[0].phy_offset < w[1].phy_offset));
        let stats = s.stats();
        assert!(
            stats.mapped_files <= 16 && stats.open_files <= 16,
            "{stats:?}"
        );
        assert_eq!(stats.mapped_bytes, stats.mapped_files * FILE_BYTES);
    }
    assert_eq!(s.stats().queues, 100);
    let s = reopen(s, dir.path());
    assert_eq!(s.stats().mapped_files, 0, "opening maps nothing");
    assert_eq!(s.queues().unwrap().len(), 100);
    for q in 0..100 {
        assert_eq!(s.max_offset("t", q).unwrap(), 21);
    }
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
