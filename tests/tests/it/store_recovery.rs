//! Recovery (docs/design-notes.md, "Recovery invariants"): torn tails are cut exactly at the last whole
//! record, no consume-queue unit points past the tail, re-dispatch after a
//! crash is idempotent, and queue offsets continue without reuse.

use std::path::Path;

use rmq_common::config::CqBackend;
use rmq_common::StoreConfig;
use rmq_store_file::commitlog::segment_name;
use rmq_tests::{
    copy_dir, message, open_store, read_queue, small_config, wait_dispatched, BACKENDS,
};

const QUEUES: i32 = 2;

/// (queue, queue offset, phy offset, end offset, body) of each record written.
type Sent = Vec<(i32, i64, i64, i64, Vec<u8>)>;

fn write_records(config: &StoreConfig, n: usize) -> Sent {
    let store = open_store(config).unwrap();
    let mut sent = Vec::new();
    for i in 0..n {
        let q = (i % QUEUES as usize) as i32;
        let body = format!("record-{i}-{}", "z".repeat(i * 7 % 40)).into_bytes();
        let mut m = message("Torn", q, body.clone());
        // Properties end every record with a non-zero separator, so any cut
        // inside a record changes it.
        m.properties.insert("KEYS", format!("key-{i}"));
        let r = store.put_message(&m).unwrap();
        let a = &r.appended[0];
        sent.push((q, a.queue_offset, a.phy_offset, a.end_offset(), body));
    }
    wait_dispatched(&store);
    store.shutdown().unwrap();
    sent
}

/// Simulates a crash that left `[cut, end)` of the first segment unwritten.
fn tear(root: &Path, config: &StoreConfig, cut: usize, end: usize) {
    let path = config.commit_log_dir().join(segment_name(0));
    let mut raw = std::fs::read(&path).unwrap();
    raw[cut..end].fill(0);
    std::fs::write(&path, raw).unwrap();
    std::fs::write(root.join("abort"), b"").unwrap();
}

fn check_survivors(config: &StoreConfig, sent: &Sent, tail: i64) {
    let store = open_store(config).unwrap();
    let report = store.startup_report();
    assert!(report.abnormal);
    assert_eq!(report.recovery.tail, tail, "tail");
    assert_eq!(store.max_phy_offset(), tail);
    for q in 0..QUEUES {
        let want: Vec<_> = sent.iter().filter(|s| s.0 == q && s.3 <= tail).collect();
        let got = read_queue(&store, "Torn", q);
        assert_eq!(got.len(), want.len(), "queue {q} with tail {tail}");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!((g.queue_offset, &g.body), (w.1, &w.4));
            assert!(g.phy_offset < tail, "unit points past the tail");
        }
        // Units are removed, not just hidden: the max offset agrees.
        assert_eq!(
            store.max_offset_in_queue("Torn", q).unwrap(),
            want.len() as i64
        );
        // Offsets continue after the survivors.
        let r = store.put_message(&message("Torn", q, "after")).unwrap();
        assert_eq!(r.appended[0].queue_offset, want.len() as i64);
        if q == 0 {
            assert_eq!(
                r.appended[0].phy_offset, tail,
                "appends continue at the tail"
            );
        }
    }
    store.shutdown().unwrap();
}

fn torn_tail_every_cut(backend: CqBackend) {
    let pristine = tempfile::tempdir().unwrap();
    let config = small_config(pristine.path(), backend);
    let sent = write_records(&config, 8);
    let end = sent.last().unwrap().3 as usize;
    // Every cut position inside the last two records.
    let from = sent[sent.len() - 2].2 as usize;
    for cut in from..end {
        let work = tempfile::tempdir().unwrap();
        copy_dir(pristine.path(), work.path());
        let config = small_config(work.path(), backend);
        tear(work.path(), &config, cut, end);
        let tail = sent
            .iter()
            .map(|s| s.3)
            .filter(|e| *e as usize <= cut)
            .max()
            .unwrap_or(0);
        check_survivors(&config, &sent, tail);
    }
}

#[test]
fn torn_tail_every_cut_all_backends() {
    for backend in BACKENDS {
        torn_tail_every_cut(backend);
    }
}

#[test]
fn flipped_body_byte_is_found_by_crc() {
    for backend in BACKENDS {
        let dir = tempfile::tempdir().unwrap();
        let config = small_config(dir.path(), backend);
        let sent = write_records(&config, 6);
        let last = sent.last().unwrap();
        let path = config.commit_log_dir().join(segment_name(0));
        let mut raw = std::fs::read(&path).unwrap();
        // The body sits 4 bytes after its length field; flip one byte of it.
        let body_at = raw[last.2 as usize..last.3 as usize]
            .windows(last.4.len())
            .position(|w| w == last.4.as_slice())
            .unwrap();
        raw[last.2 as usize + body_at] ^= 0x01;
        std::fs::write(&path, raw).unwrap();
        std::fs::write(dir.path().join("abort"), b"").unwrap();
        check_survivors(&config, &sent, last.2);
    }
}

/// Records dispatched after the last durable dispatch checkpoint are
/// dispatched again after a crash; the consume queue must not grow twice.
fn abnormal_restart_is_idempotent(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = small_config(dir.path(), backend);
    config.flush_interval_consume_queue_ms = 600_000;
    let first = write_records(&config, 40);
    let store = open_store(&config).unwrap();
    for i in 0..60 {
        store
            .put_message(&message("Torn", i % QUEUES, format!("second-{i}")))
            .unwrap();
    }
    wait_dispatched(&store);
    let before: Vec<_> = (0..QUEUES).map(|q| read_queue(&store, "Torn", q)).collect();
    store.halt_as_if_crashed();
    drop(store);

    let store = open_store(&config).unwrap();
    let report = store.startup_report().clone();
    assert!(report.abnormal);
    if backend == CqBackend::File {
        assert_eq!(
            report.redispatch_from,
            first.last().unwrap().3,
            "restart from the durable checkpoint"
        );
        assert_eq!(report.redispatched_records, 60);
    }
    for q in 0..QUEUES {
        let after = read_queue(&store, "Torn", q);
        assert_eq!(after, before[q as usize], "queue {q} after re-dispatch");
        assert_eq!(store.max_offset_in_queue("Torn", q).unwrap(), 50);
    }
    store.shutdown().unwrap();
    // And a clean restart after that is not abnormal any more.
    let store = open_store(&config).unwrap();
    assert!(!store.startup_report().abnormal);
    assert_eq!(
        store.startup_report().redispatched_records,
        if backend == CqBackend::Memory { 100 } else { 0 }
    );
}

#[test]
fn abnormal_restart_is_idempotent_all_backends() {
    for backend in BACKENDS {
        abnormal_restart_is_idempotent(backend);
    }
}
