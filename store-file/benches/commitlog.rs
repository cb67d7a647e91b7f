#![allow(clippy::expect_used)]
//! CommitLog benchmarks: async append of 1 KiB messages from one thread,
//! SYNC_FLUSH group commit with 1/16/64 concurrent writers, and the two flush
//! methods (fdatasync vs msync) side by side.
//!
//! Run: `cargo bench -p rmq-store-file --bench commitlog`

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rmq_common::message::MessageToStore;
use rmq_common::time::SystemClock;
use rmq_common::{FlushDiskType, StoreConfig};
use rmq_store_file::commitlog::{CommitLog, FlushService, FlushSettings, RecoverOptions};
use rmq_store_file::mapped_file::FlushMethod;

const BODY: usize = 1024;

fn open(dir: &std::path::Path, sync: bool, method: FlushMethod) -> (Arc<CommitLog>, StoreConfig) {
    let config = StoreConfig {
        flush_disk_type: if sync {
            FlushDiskType::SyncFlush
        } else {
            FlushDiskType::AsyncFlush
        },
        mapped_file_size_commit_log_bytes: 1024 * 1024 * 1024,
        warm_mapped_file_enable: true,
        ..StoreConfig::with_root(dir)
    };
    let (mut log, _) = CommitLog::open(
        &config,
        Arc::new(SystemClock),
        RecoverOptions {
            abnormal: false,
            check_crc: false,
            scan_from: 0,
        },
    )
    .expect("open commitlog");
    log.set_flush_method(method);
    (Arc::new(log), config)
}

fn message(q: i32) -> MessageToStore {
    let mut m = MessageToStore::new("BenchTopic", q, vec![7u8; BODY]);
    m.properties.insert("TAGS", "TagA");
    m
}

fn async_append(c: &mut Criterion) {
    let mut g = c.benchmark_group("commitlog_append_async_1k");
    g.throughput(Throughput::Elements(1));
    let msg = message(0);
    // Cold: each page of the sparse segment is faulted in by the append.
    let dir = tempfile::tempdir().expect("tempdir");
    let (log, _) = open(dir.path(), false, FlushMethod::Fdatasync);
    g.bench_function("one_writer_cold_pages", |b| {
        b.iter(|| log.append(&msg).expect("append"))
    });
    drop(log);
    // Warm: pages faulted in ahead (warmMappedFileEnable). The first segment
    // is warmed here; later ones come warm from the allocator thread.
    let dir = tempfile::tempdir().expect("tempdir");
    let (log, _) = open(dir.path(), false, FlushMethod::Fdatasync);
    log.append(&msg).expect("append");
    if let Some(seg) = log.segments().last() {
        seg.populate_write().expect("populate");
    }
    g.bench_function("one_writer_warm_pages", |b| {
        b.iter(|| log.append(&msg).expect("append"))
    });
    g.finish();
}

/// `writers` threads each append and wait for the group commit, `iters`
/// messages in all.
fn sync_run(log: &Arc<CommitLog>, writers: usize, iters: u64) -> Duration {
    let per = (iters as usize).div_ceil(writers).max(1);
    let start = Instant::now();
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let log = Arc::clone(log);
            std::thread::spawn(move || {
                let msg = message(w as i32);
                for _ in 0..per {
                    let r = log.append(&msg).expect("append");
                    log.wait_flushed(r.end_offset(), Duration::from_secs(30))
                        .expect("flushed");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("writer");
    }
    start.elapsed()
}

fn sync_group_commit(c: &mut Criterion) {
    let mut g = c.benchmark_group("commitlog_sync_group_commit_1k");
    g.sample_size(10);
    for method in [FlushMethod::Fdatasync, FlushMethod::Msync] {
        for writers in [1usize, 16, 64] {
            let dir = tempfile::tempdir().expect("tempdir");
            let (log, config) = open(dir.path(), true, method);
            let flusher =
                FlushService::spawn(Arc::clone(&log), FlushSettings::from_config(&config))
                    .expect("flush");
            g.throughput(Throughput::Elements(1));
            g.bench_with_input(
                BenchmarkId::new(format!("{method:?}"), writers),
                &writers,
                |b, &w| b.iter_custom(|iters| sync_run(&log, w, iters)),
            );
            flusher.stop();
        }
    }
    g.finish();
}

criterion_group!(benches, async_append, sync_group_commit);
criterion_main!(benches);
