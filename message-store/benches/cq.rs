#![allow(clippy::expect_used, clippy::unwrap_used)]
//! Consume-queue benchmarks: each group holds the file and RocksDB backends
//! side by side, plus the in-memory model as a baseline, so their ratio comes
//! from one run on one machine.
//!
//! - `cq_put_batch`: one `put` of 1,000 units spread round-robin over 1 or
//!   10,000 queues (the shape of one reput dispatch batch).
//! - `cq_get_range_hit`: a 32-unit `get` at a random queue and offset that
//!   exists, after a warm-up fill and a flush (the steady-state pull path).
//!
//! Run: `cargo bench -p rmq-store --bench cq`. Under `cargo test` (no
//! `--bench` argument) criterion runs each benchmark once, and the warm-up
//! fills shrink so the smoke test takes seconds.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rmq_common::config::CqBackend;
use rmq_common::cq::{ConsumeQueueStore, CqPut, CqUnit, MemoryConsumeQueueStore};
use rmq_common::StoreConfig;
use rmq_store_file::FileConsumeQueueStore;
use rmq_store_rocks::RocksConsumeQueueStore;

/// The baseline first, then the two real backends.
const BACKENDS: [CqBackend; 3] = [CqBackend::Memory, CqBackend::File, CqBackend::Rocksdb];
/// Units per `put`, as one dispatch batch.
const PUT_BATCH: usize = 1_000;
/// Units per `get`: `maxTransferCountOnMessageInMemory`'s default.
const GET_COUNT: usize = 32;
/// Record size the fake CommitLog offsets advance by, bytes.
const MSG_SIZE: i32 = 1_024;
/// Queues per topic, RocketMQ's usual write/read queue count.
const QUEUES_PER_TOPIC: usize = 8;
/// A put fixture starts over with an empty store after this many units, so
/// long criterion runs do not grow the store (and the model's memory) without
/// bound; the reset is not timed.
const PUT_RESET_UNITS: u64 = 4_000_000;

/// `cargo bench` passes `--bench`; `cargo test --all-targets` does not.
fn bench_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
}

fn open(backend: CqBackend, dir: &Path) -> Box<dyn ConsumeQueueStore> {
    // Defaults throughout: 300,000-unit files, RocketMQ's RocksDB options.
    let config = StoreConfig {
        consume_queue_store: backend,
        ..StoreConfig::with_root(dir)
    };
    match backend {
        CqBackend::Memory => Box::new(MemoryConsumeQueueStore::new()),
        CqBackend::File => Box::new(FileConsumeQueueStore::open(&config).expect("open file cq")),
        CqBackend::Rocksdb => {
            Box::new(RocksConsumeQueueStore::open(&config).expect("open rocksdb cq"))
        }
    }
}

/// Produces units as the reput would: round-robin over the queues, CommitLog
/// offsets increasing, each queue's offsets dense from 0.
struct Dispatch {
    topics: Vec<String>,
    queues: usize,
    next: u64,
}

impl Dispatch {
    fn new(queues: usize) -> Self {
        Self {
            topics: (0..queues.div_ceil(QUEUES_PER_TOPIC))
                .map(|t| format!("BenchTopic{t}"))
                .collect(),
            queues,
            next: 0,
        }
    }

    fn key(&self, q: usize) -> (&str, i32) {
        (
            &self.topics[q / QUEUES_PER_TOPIC],
            (q % QUEUES_PER_TOPIC) as i32,
        )
    }

    /// The next `n` units and the CommitLog offset they end at.
    fn batch(&mut self, n: usize) -> (Vec<CqPut>, i64) {
        let batch = (self.next..self.next + n as u64)
            .map(|i| {
                let q = (i % self.queues as u64) as usize;
                let phy = i as i64 * i64::from(MSG_SIZE);
                CqPut {
                    topic: self.topics[q / QUEUES_PER_TOPIC].clone(),
                    queue_id: (q % QUEUES_PER_TOPIC) as i32,
                    queue_offset: (i / self.queues as u64) as i64,
                    phy_offset: phy,
                    size: MSG_SIZE,
                    tags_code: (i % 97) as i64,
                    store_timestamp: 1_700_000_000_000 + phy / 1_000_000,
                }
            })
            .collect();
        self.next += n as u64;
        (batch, self.next as i64 * i64::from(MSG_SIZE))
    }

    /// Units each queue holds: queue `q` has offsets `0..units(q)`.
    fn units(&self, q: usize) -> i64 {
        let full = self.next / self.queues as u64;
        let extra = u64::from((q as u64) < self.next % self.queues as u64);
        (full + extra) as i64
    }
}

/// A store, its folder, and where dispatch stands.
struct Fixture {
    store: Box<dyn ConsumeQueueStore>,
    gen: Dispatch,
    // Dropped after the store (field order), so the store closes first.
    _dir: tempfile::TempDir,
}

impl Fixture {
    fn new(backend: CqBackend, queues: usize) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        Self {
            store: open(backend, dir.path()),
            gen: Dispatch::new(queues),
            _dir: dir,
        }
    }

    fn fill(&mut self, units: u64) {
        let mut left = units;
        while left > 0 {
            let n = left.min(4_096) as usize;
            let (batch, to) = self.gen.batch(n);
            self.store.put(&batch, to).expect("put");
            left -= n as u64;
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.store.close().expect("close");
    }
}

/// Small xorshift: a fixed seed keeps the read pattern the same across runs
/// and backends without a `rand` dependency.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn put_batch(c: &mut Criterion) {
    let mut g = c.benchmark_group("cq_put_batch");
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(5));
    g.throughput(Throughput::Elements(PUT_BATCH as u64));
    for queues in [1usize, 10_000] {
        for backend in BACKENDS {
            // Created on first use, so a filtered-out benchmark costs nothing.
            let mut fixture: Option<Fixture> = None;
            g.bench_with_input(
                BenchmarkId::new(backend.as_str(), queues),
                &queues,
                |b, _| {
                    let fx = fixture.get_or_insert_with(|| Fixture::new(backend, queues));
                    b.iter_custom(|iters| {
                        let mut spent = Duration::ZERO;
                        for _ in 0..iters {
                            if fx.gen.next >= PUT_RESET_UNITS {
                                *fx = Fixture::new(backend, queues);
                            }
                            // Building the batch is the reput's work, not the store's.
                            let (batch, to) = fx.gen.batch(PUT_BATCH);
                            let start = Instant::now();
                            fx.store.put(&batch, to).expect("put");
                            spent += start.elapsed();
                        }
                        spent
                    });
                },
            );
        }
    }
    g.finish();
}

fn get_range_hit(c: &mut Criterion) {
    // (queues, units filled): one long queue spanning several 300,000-unit
    // files, and many short ones.
    let shapes: &[(usize, u64)] = if bench_mode() {
        &[(1, 1_000_000), (10_000, 1_000_000)]
    } else {
        &[(1, 10_000), (100, 10_000)]
    };
    let mut g = c.benchmark_group("cq_get_range_hit");
    g.sample_size(50);
    g.throughput(Throughput::Elements(GET_COUNT as u64));
    for &(queues, units) in shapes {
        for backend in BACKENDS {
            // Filled on first use, so a filtered-out benchmark costs nothing.
            let mut fixture: Option<Fixture> = None;
            let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
            let mut out: Vec<CqUnit> = Vec::with_capacity(GET_COUNT);
            g.bench_with_input(
                BenchmarkId::new(backend.as_str(), queues),
                &queues,
                |b, _| {
                    let fx = fixture.get_or_insert_with(|| {
                        let mut fx = Fixture::new(backend, queues);
                        fx.fill(units);
                        fx.store.flush().expect("flush");
                        fx
                    });
                    b.iter(|| {
                        let q = rng.below(queues as u64) as usize;
                        let last_start = (fx.gen.units(q) - GET_COUNT as i64).max(0);
                        let from = rng.below(last_start as u64 + 1) as i64;
                        let (topic, queue_id) = fx.gen.key(q);
                        out.clear();
                        fx.store
                            .get(topic, queue_id, from, GET_COUNT, &mut out)
                            .expect("get");
                        assert_eq!(out.len(), GET_COUNT, "a hit returns every unit");
                        black_box(&out);
                    });
                },
            );
        }
    }
    g.finish();
}

criterion_group!(benches, put_batch, get_range_hit);
criterion_main!(benches);
