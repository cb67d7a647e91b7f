#![allow(clippy::expect_used, clippy::unwrap_used)]
//! Timer-store A/B run (a program, not a criterion bench): the wheel and
//! RocksDB side by side at a large number of pending timers.
//!
//! For each backend, in a fresh temp folder:
//! 1. insert: file `TIMER_AB_ENTRIES` entries (default 1,000,000) in
//!    batches of 256 (the timer service's read batch), with a checkpoint
//!    every second as the flush thread does; due times spread uniformly
//!    over `TIMER_AB_SPREAD_SECS` (default 30) starting
//!    `TIMER_AB_LEAD_SECS` (default 20) after the run began; report
//!    entries/s, disk bytes and the RSS growth;
//! 2. restart: a crash restart first (the last 10% filed after the last
//!    checkpoint, closed without one, reopened: the wheel replays them),
//!    then a checkpoint, a close and a timed clean open (recovery and
//!    backlog count);
//! 3. due lag: with the real clock, read each slot once its end has
//!    passed, as the dequeue side does, and record for every entry how
//!    long after its slot's end it was read (p50, p99, max).
//!
//! Targets: insert >= 100k/s, lag p99 <= 2 s, restart <= 2 s.
//! Run: `cargo bench -p rmq-timer --bench timer_ab`. Environment:
//! `TIMER_AB_ENTRIES`, `TIMER_AB_LEAD_SECS`, `TIMER_AB_SPREAD_SECS`,
//! `TIMER_AB_BACKENDS` (default wheel,rocksdb), `TIMER_AB_DIR` (parent of
//! the temp folders). Without `--bench` (under `cargo test`) a
//! 20,000-entry smoke run with a 2 s spread is made.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_timer::{EntryKind, Progress, RocksTimerStore, TimerEntry, TimerStore, WheelTimerStore};

const PRECISION: i64 = 1_000;
const BATCH: usize = 256;
const LOG_FILE: i64 = 100 * 1024 * 1024;

fn env_or<T: std::str::FromStr>(key: &str, default: T) -> T {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn now_ms() -> i64 {
    rmq_common::time::now_ms()
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn open(backend: &str, root: &Path) -> Arc<dyn TimerStore> {
    match backend {
        "wheel" => Arc::new(WheelTimerStore::open(root, PRECISION, LOG_FILE).unwrap()),
        "rocksdb" => Arc::new(RocksTimerStore::open(root).unwrap()),
        other => panic!("unknown backend {other}"),
    }
}

fn pct(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

struct Row {
    backend: String,
    entries: usize,
    insert_per_s: f64,
    disk_mib: f64,
    rss_growth_mib: f64,
    restart_ms: u128,
    crash_restart_ms: u128,
    lag_p50_ms: i64,
    lag_p99_ms: i64,
    lag_max_ms: i64,
    read_entries: usize,
}

fn put_range(
    store: &dyn TimerStore,
    range: std::ops::Range<usize>,
    entry: &dyn Fn(usize) -> TimerEntry,
) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut last_ckpt = Instant::now();
    for i in range {
        batch.push(entry(i));
        if batch.len() == BATCH {
            store.put(&batch).unwrap();
            batch.clear();
        }
        if last_ckpt.elapsed() >= Duration::from_secs(1) {
            // As the flush thread: the entries so far become durable.
            store
                .checkpoint(Progress {
                    read_ms: 0,
                    enqueue_offset: 0,
                })
                .unwrap();
            last_ckpt = Instant::now();
        }
    }
    store.put(&batch).unwrap();
}

fn run(backend: &str, entries: usize, lead_ms: i64, spread_ms: i64, parent: &Path) -> Row {
    let dir = tempfile::tempdir_in(parent).unwrap();
    let root = dir.path();
    let start = now_ms();
    let first_slot = {
        let due = start + lead_ms;
        due - due % PRECISION
    };
    let slots = (spread_ms / PRECISION).max(1);
    let rss0 = rss_bytes();
    let write_ms = start - start % PRECISION;
    let store = open(backend, root);
    store.advance(write_ms);
    // Deterministic spread: entry i goes to slot i % slots.
    let entry = move |i: usize| TimerEntry {
        slot_ms: first_slot + (i as i64 % slots) * PRECISION,
        write_ms,
        commit_log_offset: i as i64 * 300,
        size: 300,
        topic_hash: 17,
        kind: EntryKind::Deliver,
    };
    let crash_from = entries - entries / 10;
    let ckpt = Progress {
        read_ms: write_ms,
        enqueue_offset: crash_from as i64,
    };
    let t = Instant::now();
    put_range(&*store, 0..crash_from, &entry);
    store.checkpoint(ckpt).unwrap();
    put_range(&*store, crash_from..entries, &entry);
    let insert_s = t.elapsed().as_secs_f64();
    let rss_growth = rss_bytes().saturating_sub(rss0);
    drop(store); // A crash: no checkpoint after the last 10%.
    let t = Instant::now();
    let store = open(backend, root);
    let crash_restart = t.elapsed().as_millis();
    assert_eq!(store.recovered(), Some(ckpt));
    store
        .checkpoint(Progress {
            read_ms: write_ms,
            enqueue_offset: entries as i64,
        })
        .unwrap();
    drop(store);
    let t = Instant::now();
    let store = open(backend, root);
    let restart = t.elapsed().as_millis();
    let backlog = store.backlog();
    let disk = store.disk_bytes();
    // Due lag: read each slot once its end has passed.
    let mut lags: Vec<i64> = Vec::with_capacity(entries);
    let mut out = Vec::new();
    let mut read = write_ms;
    let end = first_slot + slots * PRECISION;
    while read < end {
        let now = now_ms();
        if read + PRECISION > now {
            std::thread::sleep(Duration::from_millis((read + PRECISION - now) as u64));
            continue;
        }
        out.clear();
        store.read_slot(read, &mut out).unwrap();
        let lag = now_ms() - (read + PRECISION);
        lags.extend(std::iter::repeat_n(lag, out.len()));
        read += PRECISION;
        store.advance(read);
    }
    assert_eq!(
        lags.len() as i64,
        backlog,
        "{backend}: every entry read once"
    );
    lags.sort_unstable();
    Row {
        backend: backend.to_owned(),
        entries,
        insert_per_s: entries as f64 / insert_s,
        disk_mib: disk as f64 / (1 << 20) as f64,
        rss_growth_mib: rss_growth as f64 / (1 << 20) as f64,
        restart_ms: restart,
        crash_restart_ms: crash_restart,
        lag_p50_ms: pct(&lags, 0.50),
        lag_p99_ms: pct(&lags, 0.99),
        lag_max_ms: lags.last().copied().unwrap_or(0),
        read_entries: lags.len(),
    }
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (entries, lead_ms, spread_ms) = if bench {
        (
            env_or("TIMER_AB_ENTRIES", 1_000_000usize),
            env_or("TIMER_AB_LEAD_SECS", 20i64) * 1000,
            env_or("TIMER_AB_SPREAD_SECS", 30i64) * 1000,
        )
    } else {
        (20_000, 3_000, 2_000)
    };
    let backends = std::env::var("TIMER_AB_BACKENDS").unwrap_or_else(|_| "wheel,rocksdb".into());
    let parent = std::env::var("TIMER_AB_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| std::env::temp_dir());
    println!(
        "backend   entries  insert/s  disk MiB  RSS+ MiB  restart ms  crash-restart ms  lag p50 ms  lag p99 ms  lag max ms"
    );
    for backend in backends.split(',') {
        let r = run(backend.trim(), entries, lead_ms, spread_ms, &parent);
        assert_eq!(r.read_entries, r.entries);
        println!(
            "{:<8} {:>8} {:>9.0} {:>9.1} {:>9.1} {:>11} {:>17} {:>11} {:>11} {:>11}",
            r.backend,
            r.entries,
            r.insert_per_s,
            r.disk_mib,
            r.rss_growth_mib,
            r.restart_ms,
            r.crash_restart_ms,
            r.lag_p50_ms,
            r.lag_p99_ms,
            r.lag_max_ms
        );
    }
}
