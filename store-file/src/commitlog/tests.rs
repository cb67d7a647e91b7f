use std::sync::Arc;
use std::time::Duration;

use rmq_common::message::record::RecordView;
use rmq_common::message::MessageToStore;
use rmq_common::time::ManualClock;
use rmq_common::{FlushDiskType, StoreConfig};

use super::flush::FlushSettings;
use super::*;

fn config(dir: &std::path::Path, seg: u64) -> StoreConfig {
    StoreConfig {
        mapped_file_size_commit_log_bytes: seg,
        max_message_size_bytes: 2048,
        ..StoreConfig::with_root(dir)
    }
}

fn open(c: &StoreConfig, abnormal: bool) -> (CommitLog, RecoveryReport) {
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    CommitLog::open(
        c,
        clock,
        RecoverOptions {
            abnormal,
            check_crc: true,
            scan_from: 0,
        },
    )
    .unwrap()
}

fn msg(topic: &str, q: i32, body: &[u8]) -> MessageToStore {
    MessageToStore::new(topic, q, body)
}

#[test]
fn append_assigns_offsets_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path(), 64 * 1024);
    let (log, report) = open(&c, false);
    assert_eq!(report.tail, 0);
    let a = log.append(&msg("T", 0, b"a")).unwrap();
    let b = log.append(&msg("T", 0, b"b")).unwrap();
    let c1 = log.append(&msg("T", 1, b"c")).unwrap();
    assert_eq!((a.queue_offset, b.queue_offset, c1.queue_offset), (0, 1, 0));
    assert_eq!(a.phy_offset, 0);
    assert_eq!(b.phy_offset, a.end_offset());
    assert_eq!(log.max_offset(), c1.end_offset());
    let sel = log.select(b.phy_offset, b.size as usize).unwrap();
    let view = RecordView::parse(sel.bytes(), true).unwrap();
    assert_eq!(view.body(), b"b");
    assert_eq!(view.queue_offset(), 1);
    assert_eq!(view.physical_offset(), b.phy_offset);
    assert_eq!(view.store_timestamp(), 1_700_000_000_000);
    assert_eq!(b.msg_id.len(), 32);
    assert!(log.select(log.max_offset(), 1).is_none());
}

#[test]
fn batch_is_contiguous_and_numbers_each_queue() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(&config(dir.path(), 64 * 1024), false);
    log.append(&msg("T", 0, b"x")).unwrap();
    let r = log
        .append_batch(&[
            msg("T", 0, b"1"),
            msg("T", 0, b"2"),
            msg("U", 0, b"3"),
            msg("T", 0, b"4"),
        ])
        .unwrap();
    let offs: Vec<i64> = r.iter().map(|x| x.queue_offset).collect();
    assert_eq!(offs, vec![1, 2, 0, 3]);
    for w in r.windows(2) {
        assert_eq!(w[0].end_offset(), w[1].phy_offset);
    }
    assert_eq!(log.queue_offset("T", 0), 4);
    assert_eq!(log.queue_offset("U", 0), 1);
}

#[test]
fn bad_messages_get_named_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(&config(dir.path(), 64 * 1024), false);
    let big = msg("T", 0, &[0u8; 4096]);
    assert!(matches!(
        log.append(&big),
        Err(StoreError::MessageIllegal { .. })
    ));
    assert!(matches!(
        log.append(&msg("bad topic", 0, b"x")),
        Err(StoreError::IllegalName(_))
    ));
    assert!(matches!(
        log.append(&msg("T", -1, b"x")),
        Err(StoreError::MessageIllegal { .. })
    ));
    let mut m = msg("T", 0, b"x");
    m.properties.insert("k", "v\u{1}");
    assert!(matches!(
        log.append(&m),
        Err(StoreError::MessageIllegal { .. })
    ));
    assert_eq!(log.max_offset(), 0, "nothing was written");
}

/// Each segment's records from its first: starts and held sizes, a blank
/// tail not listed, and on a replica a record the log ends inside listed
/// with the bytes it holds.
#[test]
fn records_from_lists_starts_and_held_bytes_up_to_a_partial_tail() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path(), 4096);
    let (log, _) = open(&c, false);
    let mut results = Vec::new();
    for i in 0..60 {
        results.push(
            log.append(&msg("T", 0, &vec![i as u8; 100 + i % 50]))
                .unwrap(),
        );
    }
    assert!(log.segments().snapshot().len() > 1);
    for seg in log.segments().snapshot() {
        let base = seg.file_from_offset();
        let want: Vec<_> = results
            .iter()
            .filter(|r| r.phy_offset / 4096 * 4096 == base)
            .map(|r| (r.phy_offset, r.size as usize))
            .collect();
        assert_eq!(log.records_from(base), want, "segment {base}");
        assert_eq!(log.record_held(base), Some(want[0].1));
        // From a later record of the segment: the rest of them.
        assert_eq!(log.records_from(want[1].0), want[1..], "segment {base}");
    }

    // A replica ending 10 bytes into the last record.
    let last = results.last().unwrap();
    let base = last.phy_offset / 4096 * 4096;
    let cut = last.phy_offset + 10;
    let bytes = log
        .select(base, (cut - base) as usize)
        .unwrap()
        .bytes()
        .to_vec();
    let sdir = tempfile::tempdir().unwrap();
    let (slave, _) = open(&config(sdir.path(), 4096), false);
    slave.append_replica(base, &bytes).unwrap();
    let listed = slave.records_from(base);
    assert_eq!(listed.last(), Some(&(last.phy_offset, 10)));
    assert_eq!(slave.record_held(last.phy_offset), Some(10));
    assert_eq!(slave.record_held(last.phy_offset + 1), None);
    assert_eq!(listed.len(), log.records_from(base).len());
}

#[test]
fn records_never_straddle_segments() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path(), 4096);
    let (log, _) = open(&c, false);
    let mut results = Vec::new();
    for i in 0..200 {
        results.push(
            log.append(&msg("T", 0, &vec![i as u8; 100 + i % 50]))
                .unwrap(),
        );
    }
    for r in &results {
        let seg_start = r.phy_offset / 4096 * 4096;
        assert!(
            r.end_offset() + 8 <= seg_start + 4096,
            "record {r:?} leaves room for a blank"
        );
    }
    assert!(log.segments().snapshot().len() > 5);
    drop(log);
    let (log, report) = open(&c, false);
    assert_eq!(report.tail, results.last().unwrap().end_offset());
    assert!(!report.cut);
    assert_eq!(log.max_offset(), report.tail);
    // Appends continue after the recovered tail.
    let next = log.append(&msg("T", 0, b"after")).unwrap();
    assert_eq!(next.phy_offset, report.tail);
}

#[test]
fn sync_flush_group_commit_answers_waiters() {
    let dir = tempfile::tempdir().unwrap();
    let c = StoreConfig {
        flush_disk_type: FlushDiskType::SyncFlush,
        ..config(dir.path(), 4096)
    };
    let (log, _) = open(&c, false);
    let log = Arc::new(log);
    let service = FlushService::spawn(Arc::clone(&log), FlushSettings::from_config(&c)).unwrap();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for i in 0..20 {
                    let r = log.append(&msg("T", t, &[i as u8; 64])).unwrap();
                    log.wait_flushed(r.end_offset(), Duration::from_secs(10))
                        .unwrap();
                    assert!(log.flushed_offset() >= r.end_offset());
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    service.stop();
    assert!(
        log.segments().snapshot().len() > 3,
        "group commit must cross segment ends"
    );
    assert_eq!(log.flushed_offset(), log.max_offset());
}

#[test]
fn flush_wait_times_out_without_a_flush_thread() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = open(&config(dir.path(), 64 * 1024), false);
    let r = log.append(&msg("T", 0, b"x")).unwrap();
    let err = log
        .wait_flushed(r.end_offset(), Duration::from_millis(20))
        .unwrap_err();
    assert!(matches!(err, StoreError::FlushTimeout { .. }), "{err}");
}

#[test]
fn torn_tail_is_cut_and_zeroed() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path(), 64 * 1024);
    let (log, _) = open(&c, false);
    let a = log.append(&msg("T", 0, b"first")).unwrap();
    let b = log.append(&msg("T", 0, b"second-record")).unwrap();
    drop(log);
    // Tear the second record in the middle.
    let path = c.commit_log_dir().join(segment_name(0));
    let mut raw = std::fs::read(&path).unwrap();
    let cut = (b.phy_offset + 30) as usize;
    raw[cut..b.end_offset() as usize].fill(0);
    std::fs::write(&path, &raw).unwrap();
    let (log, report) = open(&c, true);
    assert_eq!(report.tail, a.end_offset());
    assert!(report.cut);
    assert!(report.zeroed_bytes > 0);
    let raw = std::fs::read(&path).unwrap();
    assert!(
        raw[a.end_offset() as usize..].iter().all(|x| *x == 0),
        "garbage past the tail is zeroed"
    );
    assert_eq!(log.max_offset(), a.end_offset());
}

#[test]
fn damage_followed_by_valid_records_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path(), 4096);
    let (log, _) = open(&c, false);
    let mut first_seg = Vec::new();
    for i in 0..100 {
        let r = log.append(&msg("T", 0, &[i as u8; 200])).unwrap();
        if r.phy_offset < 4096 {
            first_seg.push(r);
        }
    }
    drop(log);
    let path = c.commit_log_dir().join(segment_name(0));
    let mut raw = std::fs::read(&path).unwrap();
    raw[first_seg[2].phy_offset as usize + 100] ^= 0xFF; // a body byte
    std::fs::write(&path, &raw).unwrap();
    let err = CommitLog::open(
        &c,
        Arc::new(ManualClock::new(0)),
        RecoverOptions {
            abnormal: true,
            check_crc: true,
            scan_from: 0,
        },
    )
    .unwrap_err();
    assert!(
        matches!(err, StoreError::Corrupt { offset, .. } if offset == first_seg[2].phy_offset),
        "{err}"
    );
}

#[test]
fn put_lock_time_reads_the_holder_and_clears_after_each_append() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path(), 64 * 1024);
    let (log, _) = open(&c, false);
    assert_eq!(log.put_lock_held_ms(), 0);
    // An append that took the lock 250 ms ago (the test clock stands still).
    log.put_locked_since.store(
        1_700_000_000_000 - 250,
        std::sync::atomic::Ordering::Relaxed,
    );
    assert_eq!(log.put_lock_held_ms(), 250);
    log.append(&msg("T", 0, b"a")).unwrap();
    assert_eq!(
        log.put_lock_held_ms(),
        0,
        "an append clears the mark as it unlocks"
    );
}

#[test]
fn replicated_chunks_land_at_the_masters_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path(), 64 * 1024);
    let (master, _) = open(&c, false);
    for i in 0..3 {
        master
            .append(&msg("T", 0, format!("m{i}").as_bytes()))
            .unwrap();
    }
    let end = master.max_offset();
    let bytes = master.select(0, end as usize).unwrap().bytes().to_vec();

    let sdir = tempfile::tempdir().unwrap();
    let (slave, _) = open(&config(sdir.path(), 64 * 1024), false);
    // An empty slave takes a chunk only at a segment boundary.
    assert!(matches!(
        slave.append_replica(5, &bytes),
        Err(StoreError::ReplicaGap { offset: 5, .. })
    ));
    let (a, b) = bytes.split_at(17); // not on a record boundary
    slave.append_replica(0, a).unwrap();
    // A chunk that does not continue the log is refused, nothing written.
    assert!(matches!(
        slave.append_replica(0, b),
        Err(StoreError::ReplicaGap {
            local_end: 17,
            offset: 0
        })
    ));
    slave.append_replica(17, b).unwrap();
    slave.append_replica(end, &[]).unwrap(); // a heartbeat
    assert_eq!(slave.max_offset(), end);
    assert_eq!(slave.select(0, end as usize).unwrap().bytes(), &bytes[..]);
    // A chunk past the segment's end is refused.
    let big = vec![0u8; 64 * 1024];
    assert!(matches!(
        slave.append_replica(end, &big),
        Err(StoreError::MessageIllegal { .. })
    ));

    // An empty slave started at a later segment (the master's last one).
    let ldir = tempfile::tempdir().unwrap();
    let (late, _) = open(&config(ldir.path(), 64 * 1024), false);
    late.append_replica(2 * 64 * 1024, b"xyz").unwrap();
    assert_eq!(late.min_offset(), 2 * 64 * 1024);
    assert_eq!(late.max_offset(), 2 * 64 * 1024 + 3);
}

/// A runtime cut: only record boundaries, later segments gone, a reader's
/// slice of the cut bytes intact, appends continue at the cut, a reopen
/// finds the same tail.
#[test]
fn truncate_to_cuts_at_records_while_readers_hold_the_old_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path(), 4096);
    let (log, _) = open(&c, false);
    let mut ends = Vec::new();
    for i in 0..40u8 {
        ends.push(log.append(&msg("T", 0, &[i; 200])).unwrap());
    }
    assert!(log.segments().snapshot().len() > 2);
    let cut = &ends[5];
    let held = log.select(cut.phy_offset, cut.size as usize).unwrap();
    assert!(matches!(
        log.truncate_to(cut.phy_offset + 1),
        Err(StoreError::NotRecordBoundary { record_start, .. }) if record_start == cut.phy_offset
    ));
    assert!(matches!(
        log.truncate_to(log.max_offset() + 1),
        Err(StoreError::TruncateOutOfRange { .. })
    ));
    log.truncate_to(cut.phy_offset).unwrap();
    assert_eq!(log.max_offset(), cut.phy_offset);
    assert_eq!(log.segments().snapshot().len(), 1);
    assert!(log.select(cut.phy_offset, 8).is_none());
    assert_eq!(
        RecordView::parse(held.bytes(), true).unwrap().body(),
        &[5u8; 200]
    );
    let again = log.append(&msg("T", 0, b"after")).unwrap();
    assert_eq!(again.phy_offset, cut.phy_offset);
    let tail = log.max_offset();
    drop((held, log));
    let (log, report) = open(&c, false);
    assert_eq!(report.tail, tail);
    assert_eq!(log.segments().snapshot().len(), 1);
    // A cut at a segment start keeps that segment, empty.
    for i in 0..30u8 {
        log.append(&msg("T", 0, &[i; 200])).unwrap();
    }
    log.truncate_to(4096).unwrap();
    assert_eq!(log.max_offset(), 4096);
    assert_eq!(log.whole_records_end(0), 4096);
    assert_eq!(log.append(&msg("T", 0, b"x")).unwrap().phy_offset, 4096);
}
