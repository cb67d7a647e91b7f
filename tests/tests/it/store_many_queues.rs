//! 20,000 queues with a few entries each, on both real backends. The file
//! backend must stay within its mapping budget (vm.max_map_count is 65,530 by
//! default) and not run out of file descriptors.

use rmq_common::config::CqBackend;
use rmq_store::{GetRequest, TagFilter};
use rmq_tests::{message, open_store, small_config, wait_dispatched};

const TOPICS: usize = 200;
const QUEUES_PER_TOPIC: i32 = 100;
const PER_QUEUE: usize = 3;
/// Mapping budget for the file backend in this test.
const MAPPED_BUDGET: u32 = 512;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

fn many_queues(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = small_config(dir.path(), backend);
    config.max_mapped_consume_queue_files = MAPPED_BUDGET;
    config.mapped_file_size_commit_log_bytes = 16 * 1024 * 1024;
    config.message_index_enable = false;
    let fds_before = open_fds();
    {
        let store = open_store(&config).unwrap();
        for round in 0..PER_QUEUE {
            let batch: Vec<_> = (0..TOPICS)
                .flat_map(|t| (0..QUEUES_PER_TOPIC).map(move |q| (t, q)))
                .map(|(t, q)| message(&format!("Many{t}"), q, format!("{t}/{q}/{round}")))
                .collect();
            for chunk in batch.chunks(500) {
                store.put_messages(chunk).unwrap();
            }
        }
        wait_dispatched(&store);
        let stats = store.consume_queue().stats();
        assert_eq!(stats.queues, (TOPICS * QUEUES_PER_TOPIC as usize) as u64);
        if backend == CqBackend::File {
            assert!(
                stats.mapped_files <= u64::from(MAPPED_BUDGET) + 8,
                "mapped {} files",
                stats.mapped_files
            );
        }
        assert!(
            open_fds() < fds_before + MAPPED_BUDGET as usize + 200,
            "fds grew to {}",
            open_fds()
        );
        store.shutdown().unwrap();
    }
    let store = open_store(&config).unwrap();
    for t in (0..TOPICS).step_by(37) {
        for q in (0..QUEUES_PER_TOPIC).step_by(13) {
            let topic = format!("Many{t}");
            assert_eq!(
                store.max_offset_in_queue(&topic, q).unwrap(),
                PER_QUEUE as i64
            );
            let r = store
                .get_message(&GetRequest::new(&topic, q, 0, 32, &TagFilter::all()))
                .unwrap();
            assert_eq!(r.messages.len(), PER_QUEUE);
        }
    }
    assert!(open_fds() < fds_before + MAPPED_BUDGET as usize + 200);
}

#[test]
fn twenty_thousand_queues_file() {
    many_queues(CqBackend::File);
}

#[test]
fn twenty_thousand_queues_rocksdb() {
    many_queues(CqBackend::Rocksdb);
}
