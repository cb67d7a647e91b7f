//! Scenario tests of what must survive: truncation, min-offset correction,
//! topic deletion, reopening, corrupt layouts and the mapping budget.

use rmq_common::cq::{ConsumeQueueStore, CqError, CqPut, QueueKey};

use super::tests::{config, dense, files, get, offsets, queue_dir, reopen, unit, FILE_BYTES};
use super::unit::{RawUnit, UNIT};
use super::FileConsumeQueueStore;

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
fn a_cut_during_the_first_flush_redispatches_what_unsynced_queues_lost() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileConsumeQueueStore::open(&config(dir.path())).unwrap();
    // Interleaved records: "a" at 0, 200, 400..., "b" at 100, 300, 500...
    let puts: Vec<CqPut> = (0..5)
        .flat_map(|i| [unit("a", 0, i, i * 200), unit("b", 0, i, i * 200 + 100)])
        .collect();
    s.put(&puts, 1000).unwrap();
    // A power cut in the middle of the store's first flush: "b" was
    // synced, "a" (its folder too) and the checkpoint were not.
    drop(s);
    std::fs::remove_dir_all(dir.path().join("consumequeue/a")).unwrap();
    let s = FileConsumeQueueStore::open(&config(dir.path())).unwrap();
    assert_eq!(s.max_offset("b", 0).unwrap(), 5);
    assert_eq!(
        s.dispatched_phy_offset().unwrap(),
        0,
        "reput must start where every queue still has what it was given"
    );
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

/// What a crash while a queue file was being created leaves: a `.tmp` file
/// (now) or an empty last file (older versions). Both go at open, with the
/// data intact; an empty file that is not the last is still corruption.
#[test]
fn half_created_files_are_removed_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let s = FileConsumeQueueStore::open(&config(dir.path())).unwrap();
    s.put(&dense("t", 0, 0..5), 500).unwrap();
    s.flush().unwrap();
    drop(s);
    let q = queue_dir(dir.path(), "t", 0);
    std::fs::write(q.join("00000000000000000200"), b"").unwrap();
    std::fs::write(q.join("00000000000000000200.1-2.tmp"), b"").unwrap();
    let s = FileConsumeQueueStore::open(&config(dir.path())).unwrap();
    assert_eq!(s.max_offset("t", 0).unwrap(), 5);
    assert_eq!(files(dir.path(), "t", 0), vec!["00000000000000000000"]);
    s.put(&dense("t", 0, 5..25), 2500).unwrap();
    assert_eq!(s.max_offset("t", 0).unwrap(), 25);
    drop(s);

    std::fs::write(q.join("00000000000000000200"), b"").unwrap();
    let e = FileConsumeQueueStore::open(&config(dir.path())).unwrap_err();
    assert!(e.to_string().contains("0 bytes"), "{e}");
}
