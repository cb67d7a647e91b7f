//! Switching `consumeQueueStore` on a store root with data: the new backend is
//! rebuilt from the CommitLog, clients see the same answers, and the old
//! backend's files are left as they were.

use std::collections::BTreeMap;
use std::path::Path;

use rmq_common::config::CqBackend;
use rmq_common::constants::property;
use rmq_common::message::record::RecordView;
use rmq_store::MessageStore;
use rmq_store::{GetRequest, GetStatus, TagFilter};
use rmq_tests::{message, open_store, small_config, wait_dispatched};

const TOPICS: [&str; 2] = ["SwitchA", "SwitchB"];
const QUEUES: i32 = 25;
const MESSAGES: usize = 3000;

/// Every answer a client could observe for every queue: full reads with and
/// without a tag filter, and the edge statuses.
fn answers(store: &MessageStore) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for topic in TOPICS {
        for q in 0..QUEUES {
            let min = store.min_offset_in_queue(topic, q).unwrap();
            let max = store.max_offset_in_queue(topic, q).unwrap();
            for (name, filter) in [
                ("all", TagFilter::all()),
                ("tagB", TagFilter::parse("TagB")),
            ] {
                let mut offset = min;
                let mut seen = Vec::new();
                for _ in 0..1000 {
                    let r = store
                        .get_message(&GetRequest::new(topic, q, offset, 7, &filter))
                        .unwrap();
                    let bodies: Vec<String> = r
                        .messages
                        .iter()
                        .map(|m| {
                            String::from_utf8_lossy(
                                RecordView::parse(m.bytes(), true).unwrap().body(),
                            )
                            .into_owned()
                        })
                        .collect();
                    seen.push(format!(
                        "{:?}@{}->{} {:?} {:?}",
                        r.status, offset, r.next_begin_offset, r.queue_offsets, bodies
                    ));
                    if r.next_begin_offset == offset
                        || r.status != GetStatus::Found && r.next_begin_offset >= max
                    {
                        break;
                    }
                    offset = r.next_begin_offset;
                }
                out.insert(format!("{topic}/{q}/{name}"), seen.join("\n"));
            }
            for probe in [max, max + 5] {
                let r = store
                    .get_message(&GetRequest::new(topic, q, probe, 7, &TagFilter::all()))
                    .unwrap();
                out.insert(
                    format!("{topic}/{q}/probe{probe}"),
                    format!(
                        "{:?} {} {} {}",
                        r.status, r.next_begin_offset, r.min_offset, r.max_offset
                    ),
                );
            }
        }
    }
    out
}

fn listing(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    if !dir.exists() {
        return out;
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(dir).unwrap().display().to_string(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

fn backend_dir(config: &rmq_common::StoreConfig, backend: CqBackend) -> std::path::PathBuf {
    match backend {
        CqBackend::Rocksdb => config.rocksdb_consume_queue_dir(),
        _ => config.consume_queue_dir(),
    }
}

fn switch(from: CqBackend, to: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = small_config(dir.path(), from);
    let before = {
        let store = open_store(&config).unwrap();
        for i in 0..MESSAGES {
            let mut m = message(
                TOPICS[i % 2],
                (i % QUEUES as usize) as i32,
                format!("body-{i}"),
            );
            m.properties
                .insert(property::TAGS, if i % 3 == 0 { "TagB" } else { "TagA" });
            store.put_message(&m).unwrap();
        }
        wait_dispatched(&store);
        let a = answers(&store);
        store.shutdown().unwrap();
        a
    };
    let old_files = listing(&backend_dir(&config, from));
    assert!(!old_files.is_empty());

    config.consume_queue_store = to;
    let store = open_store(&config).unwrap();
    assert_eq!(store.startup_report().backend, to);
    assert_eq!(
        store.startup_report().redispatched_records,
        MESSAGES as u64,
        "rebuilt from the CommitLog"
    );
    assert_eq!(
        answers(&store),
        before,
        "{from} -> {to}: clients see the same answers"
    );
    // A crash right after the rebuild: the next start resumes from what the
    // new backend made durable and still answers the same.
    store.halt_as_if_crashed();
    drop(store);
    let store = open_store(&config).unwrap();
    assert!(store.startup_report().abnormal);
    assert_eq!(answers(&store), before);
    store.shutdown().unwrap();
    assert_eq!(
        listing(&backend_dir(&config, from)),
        old_files,
        "old backend's files untouched"
    );

    // And back again: the old backend still has everything.
    config.consume_queue_store = from;
    let store = open_store(&config).unwrap();
    assert_eq!(store.startup_report().redispatched_records, 0);
    assert_eq!(answers(&store), before);
}

#[test]
fn file_to_rocksdb_and_back() {
    switch(CqBackend::File, CqBackend::Rocksdb);
}

#[test]
fn rocksdb_to_file_and_back() {
    switch(CqBackend::Rocksdb, CqBackend::File);
}
