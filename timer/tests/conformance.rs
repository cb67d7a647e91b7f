//! One suite, both timer stores: the same bodies run against the wheel and
//! RocksDB through the `TimerStore` trait (see `store.rs` for the contract
//! they check: put, slot reads, delete markers, progress, restart and crash
//! recovery, idempotent refiling).

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rmq_timer::{EntryKind, Progress, RocksTimerStore, TimerEntry, TimerStore, WheelTimerStore};

const PRECISION: i64 = 1_000;
/// Small timer-log files, so the suite crosses file ends.
const LOG_FILE: i64 = 4_096;
/// Some time in 2025, a multiple of the precision.
const T0: i64 = 1_750_000_000_000;

type Open = fn(&Path) -> Arc<dyn TimerStore>;

fn wheel(root: &Path) -> Arc<dyn TimerStore> {
    Arc::new(WheelTimerStore::open(root, PRECISION, LOG_FILE).unwrap())
}

fn rocks(root: &Path) -> Arc<dyn TimerStore> {
    Arc::new(RocksTimerStore::open(root).unwrap())
}

fn entry(slot: i64, offset: i64, kind: EntryKind) -> TimerEntry {
    TimerEntry {
        slot_ms: T0 + slot * PRECISION,
        write_ms: T0,
        commit_log_offset: offset,
        size: 100,
        topic_hash: 7,
        kind,
    }
}

fn slot(store: &dyn TimerStore, slot: i64) -> Vec<TimerEntry> {
    let mut out = Vec::new();
    store.read_slot(T0 + slot * PRECISION, &mut out).unwrap();
    out
}

fn offsets(v: &[TimerEntry]) -> Vec<i64> {
    v.iter().map(|e| e.commit_log_offset).collect()
}

fn put_then_read_slots(open: Open) {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    assert_eq!(s.recovered(), None);
    let batch: Vec<TimerEntry> = (0..300)
        .map(|i| entry(i % 3, 1_000 + i * 100, EntryKind::Deliver))
        .collect();
    s.put(&batch).unwrap();
    for k in 0..3 {
        let got = slot(&*s, k);
        let want: Vec<i64> = (0..300)
            .filter(|i| i % 3 == k)
            .map(|i| 1_000 + i * 100)
            .collect();
        assert_eq!(offsets(&got), want, "slot {k}");
        assert!(got
            .iter()
            .all(|e| e.slot_ms == T0 + k * PRECISION && e.size == 100));
    }
    assert!(slot(&*s, 3).is_empty());
    assert!(slot(&*s, -1).is_empty());
    assert_eq!(s.backlog(), 300);
}

fn refiling_is_idempotent(open: Open) {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let e = entry(5, 4_200, EntryKind::Deliver);
    s.put(&[e]).unwrap();
    s.put(&[e, e]).unwrap();
    assert_eq!(slot(&*s, 5), vec![e]);
}

fn delete_markers_come_back_with_their_slot(open: Open) {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let msg = entry(9, 500, EntryKind::Deliver);
    let other = entry(9, 600, EntryKind::Deliver);
    let marker = entry(9, 900, EntryKind::Delete);
    s.put(&[msg, other]).unwrap();
    s.put(&[marker]).unwrap();
    let got = slot(&*s, 9);
    assert_eq!(got.len(), 3);
    assert_eq!(
        got.iter().filter(|e| e.kind == EntryKind::Delete).count(),
        1
    );
    // Backlog: two messages, one recalled.
    assert_eq!(s.backlog(), 1);
    let roll = entry(10, 700, EntryKind::Roll);
    s.put(&[roll]).unwrap();
    assert_eq!(slot(&*s, 10), vec![roll]);
}

fn advance_drops_passed_slots_from_the_backlog(open: Open) {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.advance(T0);
    s.put(&[
        entry(0, 1, EntryKind::Deliver),
        entry(2, 2, EntryKind::Deliver),
    ])
    .unwrap();
    s.put(&[entry(4, 3, EntryKind::Deliver)]).unwrap();
    assert_eq!(s.backlog(), 3);
    s.advance(T0 + PRECISION);
    assert_eq!(s.backlog(), 2);
    s.advance(T0 + 3 * PRECISION);
    assert_eq!(s.backlog(), 1);
}

fn pending_in_counts_the_window_net_of_recalls(open: Open) {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.advance(T0);
    s.put(&[
        entry(0, 1, EntryKind::Deliver),
        entry(2, 2, EntryKind::Deliver),
        entry(2, 3, EntryKind::Deliver),
        entry(5, 4, EntryKind::Deliver),
    ])
    .unwrap();
    s.put(&[entry(2, 3, EntryKind::Delete)]).unwrap();
    let at = |slot: i64| T0 + slot * PRECISION;
    assert_eq!(s.pending_in(at(0), at(6)).unwrap(), 3);
    assert_eq!(s.pending_in(at(1), at(5)).unwrap(), 1);
    assert_eq!(s.pending_in(at(2), at(3)).unwrap(), 1);
    assert_eq!(s.pending_in(at(3), at(5)).unwrap(), 0);
    assert_eq!(s.pending_in(at(5), at(6)).unwrap(), 1);
}

fn restart_recovers_progress_and_entries(open: Open) {
    let dir = tempfile::tempdir().unwrap();
    let p = Progress {
        read_ms: T0 + PRECISION,
        enqueue_offset: 42,
    };
    {
        let s = open(dir.path());
        s.put(
            &(0..200)
                .map(|i| entry(1 + i % 7, i, EntryKind::Deliver))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        s.checkpoint(p).unwrap();
    }
    let s = open(dir.path());
    assert_eq!(s.recovered(), Some(p));
    for k in 1..8 {
        let want: Vec<i64> = (0..200).filter(|i| 1 + i % 7 == k).collect();
        assert_eq!(offsets(&slot(&*s, k)), want, "slot {k}");
    }
    assert_eq!(s.backlog(), 200);
}

/// Entries put before a checkpoint survive a crash; those after may or may
/// not, and filing them again leaves each exactly once.
fn crash_after_checkpoint_loses_nothing_checkpointed(open: Open) {
    let dir = tempfile::tempdir().unwrap();
    let before: Vec<TimerEntry> = (0..150)
        .map(|i| entry(i % 5, i, EntryKind::Deliver))
        .collect();
    let after: Vec<TimerEntry> = (150..300)
        .map(|i| entry(i % 5, i, EntryKind::Deliver))
        .collect();
    let p = Progress {
        read_ms: T0,
        enqueue_offset: 150,
    };
    {
        let s = open(dir.path());
        s.put(&before).unwrap();
        s.checkpoint(p).unwrap();
        s.put(&after).unwrap();
        // Dropped without a checkpoint: a crash.
    }
    let s = open(dir.path());
    assert_eq!(s.recovered(), Some(p));
    for k in 0..5 {
        let got: BTreeSet<i64> = offsets(&slot(&*s, k)).into_iter().collect();
        for e in before.iter().filter(|e| e.slot_ms == T0 + k * PRECISION) {
            assert!(got.contains(&e.commit_log_offset), "lost {e:?}");
        }
    }
    s.put(&after).unwrap();
    for k in 0..5 {
        let got = offsets(&slot(&*s, k));
        let want: Vec<i64> = (0..300).filter(|i| i % 5 == k).collect();
        let mut sorted = got.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, want, "slot {k}: each entry exactly once");
    }
}

/// Random puts, checkpoints, crashes and advances against a model: after
/// every reopen the caller files again what it put since the checkpoint
/// (as the timer service does from the enqueue offset); every slot at or
/// after the read time then holds exactly the model's entries.
fn model_random_ops(open: Open) {
    for seed in 0..4u64 {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut model: BTreeMap<i64, BTreeSet<(i64, EntryKind)>> = BTreeMap::new();
        let mut since_checkpoint: Vec<TimerEntry> = Vec::new();
        let mut read = 0i64;
        let mut next_offset = 0i64;
        let mut s = open(dir.path());
        s.advance(T0);
        for _ in 0..120 {
            match rng.gen_range(0..10) {
                0..=5 => {
                    let n = rng.gen_range(1..40);
                    let batch: Vec<TimerEntry> = (0..n)
                        .map(|_| {
                            next_offset += 1;
                            let kind = if rng.gen_ratio(1, 10) {
                                EntryKind::Delete
                            } else {
                                EntryKind::Deliver
                            };
                            entry(read + rng.gen_range(0..20), next_offset, kind)
                        })
                        .collect();
                    s.put(&batch).unwrap();
                    for e in &batch {
                        model
                            .entry(e.slot_ms)
                            .or_default()
                            .insert((e.commit_log_offset, e.kind));
                    }
                    since_checkpoint.extend(batch);
                }
                6 => {
                    read += rng.gen_range(0..3);
                    s.advance(T0 + read * PRECISION);
                }
                7 | 8 => {
                    s.checkpoint(Progress {
                        read_ms: T0 + read * PRECISION,
                        enqueue_offset: next_offset,
                    })
                    .unwrap();
                    since_checkpoint.clear();
                }
                _ => {
                    drop(s);
                    s = open(dir.path());
                    let p = s.recovered();
                    if let Some(p) = p {
                        read = (p.read_ms - T0) / PRECISION;
                    }
                    s.put(&since_checkpoint).unwrap();
                    s.advance(T0 + read * PRECISION);
                }
            }
            for (&slot_ms, want) in model.range(T0 + read * PRECISION..) {
                let mut got = Vec::new();
                s.read_slot(slot_ms, &mut got).unwrap();
                let got_set: BTreeSet<(i64, EntryKind)> =
                    got.iter().map(|e| (e.commit_log_offset, e.kind)).collect();
                assert_eq!(
                    got.len(),
                    got_set.len(),
                    "seed {seed}: a duplicate in slot {slot_ms}"
                );
                assert_eq!(&got_set, want, "seed {seed}: slot {slot_ms}");
            }
        }
    }
}

macro_rules! conformance {
    ($($name:ident),+ $(,)?) => {
        mod wheel_store {
            $( #[test] fn $name() { super::$name(super::wheel) } )+
        }
        mod rocks_store {
            $( #[test] fn $name() { super::$name(super::rocks) } )+
        }
    };
}

conformance!(
    put_then_read_slots,
    refiling_is_idempotent,
    delete_markers_come_back_with_their_slot,
    advance_drops_passed_slots_from_the_backlog,
    pending_in_counts_the_window_net_of_recalls,
    restart_recovers_progress_and_entries,
    crash_after_checkpoint_loses_nothing_checkpointed,
    model_random_ops,
);

/// Wheel only: a crash part way through a checkpoint (log synced, some
/// wheel pages written, no checkpoint file), or a timer log cut or
/// scribbled at any byte after the checkpoint, still recovers every entry
/// put before the last completed checkpoint, and refiling the rest leaves
/// each entry once.
#[test]
fn wheel_crash_at_any_point_of_a_checkpoint_or_a_log_write() {
    let before: Vec<TimerEntry> = (0..200)
        .map(|i| entry(i % 300, i, EntryKind::Deliver))
        .collect();
    let after: Vec<TimerEntry> = (200..400)
        .map(|i| entry(i % 300, i, EntryKind::Deliver))
        .collect();
    let p = Progress {
        read_ms: T0,
        enqueue_offset: 200,
    };
    // Crash points: wheel pages written before the stop, or bytes cut off
    // the end of the last timer-log file, or garbage written at its end.
    enum Crash {
        MidCheckpoint(usize),
        CutLog(u64),
        Garbage,
    }
    let crashes = [
        Crash::MidCheckpoint(0),
        Crash::MidCheckpoint(1),
        Crash::MidCheckpoint(3),
        Crash::MidCheckpoint(usize::MAX),
        Crash::CutLog(1),
        Crash::CutLog(26),
        Crash::CutLog(52),
        Crash::CutLog(500),
        Crash::Garbage,
    ];
    for crash in crashes {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = WheelTimerStore::open(dir.path(), PRECISION, LOG_FILE).unwrap();
            s.put(&before).unwrap();
            s.checkpoint(p).unwrap();
            s.put(&after).unwrap();
            match crash {
                Crash::MidCheckpoint(pages) => s.crash_during_checkpoint(pages).unwrap(),
                Crash::CutLog(_) | Crash::Garbage => {}
            }
        }
        let log_dir = dir.path().join("timerlog");
        let last = std::fs::read_dir(&log_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .max()
            .unwrap();
        match crash {
            Crash::CutLog(n) => {
                let len = std::fs::metadata(&last).unwrap().len();
                let f = std::fs::OpenOptions::new().write(true).open(&last).unwrap();
                f.set_len(len.saturating_sub(n)).unwrap();
            }
            Crash::Garbage => {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&last)
                    .unwrap();
                f.write_all(&[0xAB; 77]).unwrap();
            }
            Crash::MidCheckpoint(_) => {}
        }
        let s = WheelTimerStore::open(dir.path(), PRECISION, LOG_FILE).unwrap();
        assert_eq!(s.recovered(), Some(p));
        let mut all = BTreeSet::new();
        for k in 0..300 {
            for e in slot(&s, k) {
                assert_eq!(e.slot_ms, T0 + k * PRECISION);
                all.insert(e.commit_log_offset);
            }
        }
        assert!(
            (0..200).all(|i| all.contains(&i)),
            "a checkpointed entry was lost"
        );
        if matches!(crash, Crash::MidCheckpoint(_)) {
            // The log is whole (a process kill leaves the page cache): the
            // replay finds every unit written after the checkpoint too.
            assert!(
                (0..400).all(|i| all.contains(&i)),
                "a unit on disk was not replayed"
            );
        }
        s.put(&after).unwrap();
        let mut n = 0;
        for k in 0..300 {
            let got = offsets(&slot(&s, k));
            let set: BTreeSet<i64> = got.iter().copied().collect();
            assert_eq!(got.len(), set.len(), "duplicate in slot {k}");
            n += got.len();
        }
        assert_eq!(n, 400);
    }
}

/// Wheel only: a sealed timer-log file whose units all point below the
/// CommitLog's min is removed; the file being written never is.
#[test]
fn wheel_releases_timer_log_files_below_the_commit_log_min() {
    let dir = tempfile::tempdir().unwrap();
    let s = WheelTimerStore::open(dir.path(), PRECISION, LOG_FILE).unwrap();
    // 4,096-byte files hold 78 units; 200 units make 3 files.
    let batch: Vec<TimerEntry> = (0..200).map(|i| entry(1, i, EntryKind::Deliver)).collect();
    s.put(&batch).unwrap();
    let files = || {
        std::fs::read_dir(dir.path().join("timerlog"))
            .unwrap()
            .count()
    };
    assert_eq!(files(), 3);
    assert_eq!(s.release(10).unwrap(), 0);
    assert_eq!(s.release(78).unwrap(), 1);
    assert_eq!(s.release(i64::MAX).unwrap(), 1);
    assert_eq!(files(), 1);
}
