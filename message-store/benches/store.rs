#![allow(clippy::expect_used)]
//! Store benchmarks: put + dispatch into the consume queue, per backend, so
//! the backends sit side by side in one group.
//!
//! Run: `cargo bench -p rmq-store --bench store`

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rmq_common::config::CqBackend;
use rmq_common::cq::{ConsumeQueueStore, MemoryConsumeQueueStore};
use rmq_common::message::MessageToStore;
use rmq_common::time::SystemClock;
use rmq_common::StoreConfig;
use rmq_store::MessageStore;

fn open(dir: &std::path::Path, backend: CqBackend) -> MessageStore {
    let config = StoreConfig {
        mapped_file_size_commit_log_bytes: 256 * 1024 * 1024,
        message_index_enable: false,
        consume_queue_store: if backend == CqBackend::Memory {
            CqBackend::File
        } else {
            backend
        },
        ..StoreConfig::with_root(dir)
    };
    let cq: Option<Box<dyn ConsumeQueueStore>> =
        (backend == CqBackend::Memory).then(|| Box::new(MemoryConsumeQueueStore::new()) as _);
    MessageStore::open_with(config, Arc::new(SystemClock), cq).expect("open store")
}

/// Puts `iters` 1 KiB messages over `queues` queues and waits until reput
/// has dispatched them all.
fn put_and_dispatch(store: &MessageStore, queues: i32, iters: u64) -> Duration {
    let msgs: Vec<MessageToStore> = (0..queues)
        .map(|q| {
            let mut m = MessageToStore::new("BenchTopic", q, vec![1u8; 1024]);
            m.properties.insert("TAGS", "TagA");
            m
        })
        .collect();
    let start = Instant::now();
    for i in 0..iters {
        store
            .put_message(&msgs[(i % queues as u64) as usize])
            .expect("put");
    }
    assert!(store.wait_dispatched_to(store.max_phy_offset(), Duration::from_secs(120)));
    start.elapsed()
}

fn put_dispatch(c: &mut Criterion) {
    let mut g = c.benchmark_group("store_put_dispatch_1k");
    g.sample_size(10);
    g.throughput(Throughput::Elements(1));
    for backend in [CqBackend::Memory, CqBackend::File] {
        for queues in [1, 1000] {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = open(dir.path(), backend);
            g.bench_with_input(
                BenchmarkId::new(backend.as_str(), queues),
                &queues,
                |b, &q| b.iter_custom(|iters| put_and_dispatch(&store, q, iters)),
            );
        }
    }
    g.finish();
}

criterion_group!(benches, put_dispatch);
criterion_main!(benches);
