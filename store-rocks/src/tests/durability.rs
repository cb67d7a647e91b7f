//! What survives a restart. Contract checked here (WAL off, atomic flush):
//! after a clean close everything is back; after a crash, the reopened
//! checkpoint covers exactly the entries that are present (a consistent
//! prefix of group commits), never more, and at least what the last
//! `flush` covered. Reput re-dispatches the rest from the checkpoint.
//!
//! A crash cannot be simulated inside one process: RocksDB flushes unpersisted
//! memtables when a database with the WAL off is dropped (and the Rust
//! binding cannot set `avoid_flush_during_shutdown`). So the crash tests run
//! this test binary again as a child that writes and then leaves with
//! `std::process::exit`, which runs no destructor: memtables die with it.

use std::path::Path;
use std::process::Command;

use rmq_common::cq::{ConsumeQueueStore, CqPut};

use super::{open, read, read_back, unit};

/// Folder the child process writes into; unset in a normal test run.
const CHILD_ROOT_ENV: &str = "RMQ_STORE_ROCKS_CRASH_CHILD_ROOT";
/// What the child does: `checkpoint` or `torn`.
const CHILD_MODE_ENV: &str = "RMQ_STORE_ROCKS_CRASH_CHILD_MODE";
/// File the child writes (next to the database) once its writes are done;
/// holds the checkpoint its last `flush` made durable.
const CHILD_DONE: &str = "child-done";

/// Queues the torn-write scenario spreads units over.
const TORN_QUEUES: i64 = 4;
/// Units per batch in the torn-write scenario.
const TORN_BATCH: i64 = 400;
/// Batches in the torn-write scenario: ~10 MB of memtable data against 1 MiB
/// write buffers, so RocksDB flushes on its own many times.
const TORN_BATCHES: i64 = 300;
/// The torn-write child flushes explicitly after this many batches.
const TORN_FLUSH_AFTER: i64 = 50;

/// Batch `b` of the torn-write scenario: records of 10 bytes, back to back;
/// `dispatched_to` is the end of the last record.
fn torn_batch(b: i64) -> (Vec<CqPut>, i64) {
    let units = (0..TORN_BATCH)
        .map(|i| {
            let n = b * TORN_BATCH + i;
            unit("torn", (n % TORN_QUEUES) as i32, n / TORN_QUEUES, n * 10)
        })
        .collect();
    (units, (b + 1) * TORN_BATCH * 10)
}

/// Runs [`crash_child`] in a child process writing under `root`; returns the
/// checkpoint its last flush covered.
fn run_child(mode: &str, root: &Path) -> i64 {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args([
            "--exact",
            "tests::durability::crash_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ROOT_ENV, root)
        .env(CHILD_MODE_ENV, mode)
        .output()
        .unwrap();
    let done = std::fs::read_to_string(root.join(CHILD_DONE)).unwrap_or_else(|_| {
        panic!(
            "child did not finish its writes: {:?}\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    done.trim().parse().unwrap()
}

/// The child's side. Passes at once in a normal run.
#[test]
fn crash_child() {
    let (Ok(root), Ok(mode)) = (std::env::var(CHILD_ROOT_ENV), std::env::var(CHILD_MODE_ENV))
    else {
        return;
    };
    let root = Path::new(&root);
    let s = open(root);
    if mode == "torn-held" {
        // Max keys reach the disk only with the flush after batch
        // TORN_FLUSH_AFTER: later entries persist without theirs.
        s.shared()
            .hold_max_keys
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let flushed = match mode.as_str() {
        "checkpoint" => {
            let a: Vec<_> = (0..100).map(|i| unit("cp", 0, i, i * 10)).collect();
            s.put(&a, 1000).unwrap();
            s.flush().unwrap();
            let b: Vec<_> = (100..200).map(|i| unit("cp", 0, i, i * 10)).collect();
            s.put(&b, 2000).unwrap();
            1000
        }
        "torn" | "torn-held" => {
            let mut flushed = 0;
            for b in 0..TORN_BATCHES {
                let (units, to) = torn_batch(b);
                s.put(&units, to).unwrap();
                if b + 1 == TORN_FLUSH_AFTER {
                    s.flush().unwrap();
                    flushed = to;
                }
            }
            flushed
        }
        other => panic!("unknown child mode {other}"),
    };
    std::fs::write(root.join(CHILD_DONE), flushed.to_string()).unwrap();
    // The crash: no destructor runs, the store is neither closed nor flushed.
    std::process::exit(0);
}

#[test]
fn checkpoint_is_durable_only_after_flush() {
    let dir = tempfile::tempdir().unwrap();
    let flushed = run_child("checkpoint", dir.path());
    let s = open(dir.path());
    // The second put only lived in a memtable.
    assert_eq!(s.dispatched_phy_offset().unwrap(), flushed);
    assert_eq!(s.max_offset("cp", 0).unwrap(), 100);
    assert_eq!(read(&s, "cp", 0, 0).len(), 100);
    // Reput re-dispatches from the checkpoint.
    let b: Vec<_> = (100..200).map(|i| unit("cp", 0, i, i * 10)).collect();
    s.put(&b, 2000).unwrap();
    assert_eq!(read(&s, "cp", 0, 0).len(), 200);
}

#[test]
fn crash_leaves_a_consistent_prefix_under_the_checkpoint() {
    crash_then_redispatch("torn");
}

/// The same crash with max keys written only at the flush: the queues end
/// where their entries end, not where their last max keys said.
#[test]
fn crash_with_max_keys_behind_the_entries_loses_no_offset() {
    crash_then_redispatch("torn-held");
}

fn crash_then_redispatch(mode: &str) {
    let dir = tempfile::tempdir().unwrap();
    let flushed = run_child(mode, dir.path());
    let s = open(dir.path());
    let cp = s.dispatched_phy_offset().unwrap();
    let total = TORN_BATCHES * TORN_BATCH * 10;
    eprintln!("crash: flushed checkpoint {flushed}, reopened checkpoint {cp}, written {total}");
    assert!(cp >= flushed, "the last flush was lost");
    assert!(cp <= total);
    assert_eq!(
        cp % (TORN_BATCH * 10),
        0,
        "checkpoint {cp} is not a batch boundary"
    );
    // Every unit the checkpoint covers is there, and nothing beyond it.
    for q in 0..TORN_QUEUES {
        let want: Vec<_> = (0..TORN_BATCHES)
            .flat_map(|b| torn_batch(b).0)
            .filter(|u| i64::from(u.queue_id) == q && u.phy_offset + i64::from(u.size) <= cp)
            .map(|u| read_back(&u))
            .collect();
        assert_eq!(
            s.max_offset("torn", q as i32).unwrap(),
            want.len() as i64,
            "queue {q}"
        );
        assert_eq!(read(&s, "torn", q as i32, 0), want, "queue {q}");
    }
    // Re-dispatch everything from the checkpoint; replays are skipped.
    for b in 0..TORN_BATCHES {
        let (units, to) = torn_batch(b);
        if to > cp {
            s.put(&units, to).unwrap();
        }
    }
    for q in 0..TORN_QUEUES {
        assert_eq!(
            s.max_offset("torn", q as i32).unwrap(),
            TORN_BATCHES * TORN_BATCH / TORN_QUEUES
        );
    }
    assert_eq!(s.dispatched_phy_offset().unwrap(), total);
}

#[test]
fn truncate_from_phy_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path());
        // Queue 0 from offset 0, queue 1 from offset 5, interleaved records.
        let mut batch = Vec::new();
        for i in 0..10 {
            batch.push(unit("t", 0, i, i * 20));
            batch.push(unit("t", 1, 5 + i, i * 20 + 10));
        }
        s.put(&batch, 200).unwrap();
        s.put(&[unit("late", 0, 3, 200)], 210).unwrap();
        // Cuts at the record at 100: queue 0 keeps 0..=4, queue 1 keeps 5..=9.
        s.truncate_from_phy(100).unwrap();
        assert_eq!(s.max_offset("t", 0).unwrap(), 5);
        assert_eq!(s.max_offset("t", 1).unwrap(), 10);
        // A queue truncated to empty keeps its min, and max = min.
        assert_eq!(
            (
                s.min_offset("late", 0).unwrap(),
                s.max_offset("late", 0).unwrap()
            ),
            (3, 3)
        );
        assert_eq!(s.dispatched_phy_offset().unwrap(), 100);
        // Truncating above everything changes nothing.
        s.truncate_from_phy(1_000).unwrap();
        assert_eq!(s.dispatched_phy_offset().unwrap(), 100);
        s.close().unwrap();
    }
    let s = open(dir.path());
    assert_eq!(s.dispatched_phy_offset().unwrap(), 100);
    assert_eq!(
        read(&s, "t", 0, 0)
            .iter()
            .map(|u| u.phy_offset)
            .collect::<Vec<_>>(),
        vec![0, 20, 40, 60, 80]
    );
    assert_eq!(
        read(&s, "t", 1, 5)
            .iter()
            .map(|u| u.phy_offset)
            .collect::<Vec<_>>(),
        vec![10, 30, 50, 70, 90]
    );
    assert_eq!(
        (
            s.min_offset("late", 0).unwrap(),
            s.max_offset("late", 0).unwrap()
        ),
        (3, 3)
    );
    assert!(s.queues().unwrap().iter().any(|k| k.topic == "late"));
    // Re-dispatch after the cut: new records at the same CommitLog offsets.
    s.put(&[unit("t", 0, 5, 100), unit("late", 0, 3, 110)], 120)
        .unwrap();
    assert_eq!(s.max_offset("t", 0).unwrap(), 6);
    assert_eq!(read(&s, "late", 0, 3).len(), 1);
}
