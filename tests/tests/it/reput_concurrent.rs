//! The concurrent reput (`enableBuildConsumeQueueConcurrently`) builds the
//! same consume queues as the serial one from the same CommitLog: every
//! unit (queue offset, CommitLog offset, size, tagsCode, including the due
//! times of schedule units) across many segment ends, and after a crash in
//! the middle of writing. File and RocksDB backends.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use rmq_common::config::CqBackend;
use rmq_common::constants::{property, SCHEDULE_TOPIC};
use rmq_common::cq::CqUnit;
use rmq_common::StoreConfig;
use rmq_store::MessageStore;
use rmq_tests::{copy_dir, message, open_store, small_config, wait_dispatched};

const TOPICS: [&str; 3] = ["ReputA", "ReputB", "ReputC"];
const QUEUES: i32 = 8;
/// Enough small records for several parser batches (4,096 records each) per
/// pass and several segment ends.
const MESSAGES: usize = 24_000;
/// About 9,000 of these records per segment: two or three parser batches
/// per segment, three segments.
const SEGMENT_BYTES: u64 = 1024 * 1024;

fn config(root: &Path, backend: CqBackend, concurrent: bool) -> StoreConfig {
    StoreConfig {
        enable_build_consume_queue_concurrently: concurrent,
        message_index_enable: false,
        mapped_file_size_commit_log_bytes: SEGMENT_BYTES,
        ..small_config(root, backend)
    }
}

/// Appends `range` of the fixed message sequence: three topics, eight
/// queues, two tags, keys, and every 50th message delayed (schedule units).
fn fill(store: &MessageStore, range: std::ops::Range<usize>) {
    for i in range {
        let topic = TOPICS[i % TOPICS.len()];
        let mut m = message(
            topic,
            (i % QUEUES as usize) as i32,
            format!("m{i}").into_bytes(),
        );
        m.properties
            .insert(property::TAGS, if i % 3 == 0 { "TagA" } else { "TagB" });
        m.properties.insert(property::KEYS, format!("k{i}"));
        if i % 50 == 0 {
            m.properties.insert(property::DELAY_TIME_LEVEL, "3");
        }
        store.put_message(&m).unwrap();
    }
}

/// Every unit of every queue the test writes.
fn units(store: &MessageStore) -> BTreeMap<(String, i32), Vec<CqUnit>> {
    let mut out = BTreeMap::new();
    let queues = TOPICS
        .iter()
        .flat_map(|t| (0..QUEUES).map(move |q| (t.to_string(), q)))
        .chain(std::iter::once((SCHEDULE_TOPIC.to_owned(), 2)));
    for (topic, q) in queues {
        let min = store.min_offset_in_queue(&topic, q).unwrap();
        let max = store.max_offset_in_queue(&topic, q).unwrap();
        let mut all = Vec::new();
        let mut at = min;
        while at < max {
            let mut chunk = Vec::new();
            store
                .consume_queue()
                .get(&topic, q, at, 1000, &mut chunk)
                .unwrap();
            assert!(!chunk.is_empty(), "{topic}/{q} has a hole at {at}");
            at = chunk.last().unwrap().queue_offset + 1;
            all.extend(chunk);
        }
        out.insert((topic, q), all);
    }
    out
}

/// Opens a copy of `from` with its consume queue removed, so it is rebuilt
/// from the CommitLog by the reput chosen by `concurrent`.
fn rebuild(from: &Path, to: &Path, backend: CqBackend, concurrent: bool) -> MessageStore {
    copy_dir(from, to);
    let c = config(to, backend, concurrent);
    for dir in [c.consume_queue_dir(), c.rocksdb_consume_queue_dir()] {
        if dir.exists() {
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
    let store = open_store(&c).unwrap();
    wait_dispatched(&store);
    store
}

fn same_units_as_serial(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let serial_root = dir.path().join("serial");
    let store = open_store(&config(&serial_root, backend, false)).unwrap();
    fill(&store, 0..MESSAGES);
    wait_dispatched(&store);
    let serial = units(&store);
    let segments = std::fs::read_dir(config(&serial_root, backend, false).commit_log_dir())
        .unwrap()
        .count();
    assert!(segments >= 3, "only {segments} segments");
    store.shutdown().unwrap();
    assert_eq!(
        serial.values().map(Vec::len).sum::<usize>(),
        MESSAGES,
        "every message has one unit (delayed ones in the schedule queue)"
    );

    let store = rebuild(&serial_root, &dir.path().join("concurrent"), backend, true);
    assert_eq!(store.startup_report().redispatched_records, MESSAGES as u64);
    assert!(
        units(&store) == serial,
        "concurrent rebuild differs from the serial build"
    );
    store.shutdown().unwrap();
}

fn crash_in_the_middle(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("live");
    // Written with the concurrent reput, crashed half way, reopened (the
    // concurrent reput catches up from the backend's durable point).
    let store = Arc::new(open_store(&config(&root, backend, true)).unwrap());
    fill(&store, 0..MESSAGES / 2);
    store.halt_as_if_crashed();
    drop(store);
    let store = open_store(&config(&root, backend, true)).unwrap();
    fill(&store, MESSAGES / 2..MESSAGES);
    wait_dispatched(&store);
    let live = units(&store);
    store.shutdown().unwrap();
    // The serial reput over the same log builds the same queues.
    let serial = rebuild(&root, &dir.path().join("serial"), backend, false);
    assert!(
        units(&serial) == live,
        "serial rebuild differs from the concurrent build"
    );
    assert_eq!(live.values().map(Vec::len).sum::<usize>(), MESSAGES);
    serial.shutdown().unwrap();
}

macro_rules! backends {
    ($($body:ident),* $(,)?) => {
        mod file { $( #[test] fn $body() { super::$body(rmq_common::config::CqBackend::File); } )* }
        mod rocksdb { $( #[test] fn $body() { super::$body(rmq_common::config::CqBackend::Rocksdb); } )* }
    };
}

backends!(same_units_as_serial, crash_in_the_middle);
