//! The group-commit writer: ordering, visibility, back-pressure, draining at
//! close, and poisoning after a failed write.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rmq_common::cq::{ConsumeQueueStore, CqError};
use rmq_common::StoreConfig;

use super::{config, open, read, unit};
use crate::RocksConsumeQueueStore;

#[test]
fn callbacks_run_in_order_after_units_are_readable() {
    let dir = tempfile::tempdir().unwrap();
    let s = Arc::new(open(dir.path()));
    let seen = Arc::new(Mutex::new(Vec::new()));
    for i in 0..200_i64 {
        let (s2, seen2) = (Arc::clone(&s), Arc::clone(&seen));
        s.put_async(
            vec![unit("t", 0, i, i * 10)],
            i * 10 + 10,
            Box::new(move |r| {
                r.unwrap();
                // Readers see the unit by the time its callback runs.
                let max = s2.max_offset("t", 0).unwrap();
                let mut out = Vec::new();
                s2.get("t", 0, i, 1, &mut out).unwrap();
                seen2.lock().unwrap().push((i, max > i, out.len()));
            }),
        );
    }
    s.flush().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 200);
    for (n, (i, visible, got)) in seen.iter().enumerate() {
        assert_eq!(*i, n as i64, "callbacks out of order");
        assert!(
            *visible && *got == 1,
            "unit {i} not readable in its callback"
        );
    }
}

#[test]
fn back_pressure_with_a_queue_of_one_completes_10k_puts() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = StoreConfig {
        rocksdb_group_commit_queue_capacity: 1,
        rocksdb_group_commit_max_entries: 64,
        ..config(dir.path())
    };
    let s = RocksConsumeQueueStore::open(&cfg).unwrap();
    let done = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    for i in 0..10_000_i64 {
        let done = Arc::clone(&done);
        s.put_async(
            vec![unit("bp", (i % 8) as i32, i / 8, i * 10)],
            i * 10 + 10,
            Box::new(move |r| {
                r.unwrap();
                done.fetch_add(1, Ordering::SeqCst);
            }),
        );
    }
    s.flush().unwrap();
    let elapsed = started.elapsed();
    assert_eq!(done.load(Ordering::SeqCst), 10_000);
    assert_eq!(s.stats().pending_writes, 0);
    for q in 0..8 {
        assert_eq!(s.max_offset("bp", q).unwrap(), 1250);
    }
    assert_eq!(s.dispatched_phy_offset().unwrap(), 100_000);
    eprintln!(
        "10,000 single-unit put_async with queue capacity 1: {elapsed:?} ({:.0} puts/s)",
        10_000.0 / elapsed.as_secs_f64()
    );
}

#[test]
fn group_commit_throughput_with_default_queue() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let started = Instant::now();
    let batches = 2_000_i64;
    for b in 0..batches {
        let batch: Vec<_> = (0..32)
            .map(|i| {
                unit(
                    "tp",
                    i % 16,
                    b * 2 + i64::from(i / 16),
                    (b * 32 + i64::from(i)) * 10,
                )
            })
            .collect();
        s.put_async(batch, (b + 1) * 320, Box::new(|r| r.unwrap()));
    }
    s.flush().unwrap();
    let elapsed = started.elapsed();
    assert_eq!(s.max_offset("tp", 15).unwrap(), batches * 2);
    eprintln!(
        "{} units in {batches} put_async batches of 32: {elapsed:?} ({:.0} units/s)",
        batches * 32,
        (batches * 32) as f64 / elapsed.as_secs_f64()
    );
}

#[test]
fn close_writes_everything_queued() {
    let dir = tempfile::tempdir().unwrap();
    let ok = Arc::new(AtomicUsize::new(0));
    {
        let s = open(dir.path());
        for b in 0..3_000_i64 {
            let ok = Arc::clone(&ok);
            let batch: Vec<_> = (0..10)
                .map(|i| unit("c", 0, b * 10 + i, (b * 10 + i) * 10))
                .collect();
            s.put_async(
                batch,
                (b + 1) * 100,
                Box::new(move |r| {
                    r.unwrap();
                    ok.fetch_add(1, Ordering::SeqCst);
                }),
            );
        }
        s.close().unwrap();
        assert_eq!(ok.load(Ordering::SeqCst), 3_000);
    }
    let s = open(dir.path());
    assert_eq!(s.max_offset("c", 0).unwrap(), 30_000);
    assert_eq!(s.dispatched_phy_offset().unwrap(), 300_000);
    let got = read(&s, "c", 0, 0);
    assert_eq!(got.len(), 30_000);
    assert!(got
        .iter()
        .zip(0..)
        .all(|(u, i)| u.queue_offset == i && u.phy_offset == i * 10));
}

#[test]
fn put_after_close_fails_with_closed_through_the_callback() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.close().unwrap();
    let got = Arc::new(Mutex::new(None));
    let got2 = Arc::clone(&got);
    s.put_async(
        vec![unit("t", 0, 0, 0)],
        10,
        Box::new(move |r| *got2.lock().unwrap() = Some(r)),
    );
    assert!(matches!(
        got.lock().unwrap().take(),
        Some(Err(CqError::Closed))
    ));
}

#[test]
fn a_failed_write_poisons_later_writes_but_not_reads() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    s.put(&[unit("t", 0, 0, 0)], 10).unwrap();
    s.shared().fail_next_write.store(true, Ordering::SeqCst);
    let err = s.put(&[unit("t", 0, 1, 10)], 20).unwrap_err();
    assert!(matches!(err, CqError::Io { .. }), "{err}");
    assert!(
        std::error::Error::source(&err).is_some(),
        "the cause is kept"
    );
    // The failed batch is not visible, and later writes say why they fail.
    assert_eq!(s.max_offset("t", 0).unwrap(), 1);
    assert_eq!(s.dispatched_phy_offset().unwrap(), 10);
    for e in [
        s.put(&[unit("t", 0, 1, 10)], 20).unwrap_err(),
        s.flush().unwrap_err(),
        s.truncate_from_phy(0).unwrap_err(),
        s.delete_topic("t").unwrap_err(),
    ] {
        assert!(
            matches!(&e, CqError::Poisoned { reason } if reason.contains("injected")),
            "{e}"
        );
    }
    assert_eq!(read(&s, "t", 0, 0).len(), 1);
    assert!(matches!(s.close(), Err(CqError::Poisoned { .. })));
}
