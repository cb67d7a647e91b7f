//! One model-based test for every consume-queue backend: random sequences
//! of put batches (fresh units and replayed ones), reads, CommitLog
//! truncations, min corrections, time lookups, topic deletions, flushes and
//! reopens (clean or not), applied to a backend and to the in-memory model
//! side by side. Every answer must agree, and after every step the whole
//! state must too.
//!
//! The imagined CommitLog is realistic: per queue, units continue at the
//! queue's next offset; record offsets grow; truncations and min
//! corrections land on record starts (or the tail), as recovery and
//! retention name them; store times never go back but repeat. Files hold 5
//! units and at most 2 may be mapped, so the file backend crosses file
//! boundaries and evicts mappings all the time; RocksDB runs with small
//! memtables.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use proptest::prelude::*;
use rmq_common::config::CqBackend;
use rmq_common::cq::{
    Boundary, ConsumeQueueStore, CqError, CqPut, CqUnit, MemoryConsumeQueueStore, StoreTimeSource,
};
use rmq_common::StoreConfig;
use rmq_store_file::cq::FileConsumeQueueStore;
use rmq_store_rocks::RocksConsumeQueueStore;

const QUEUES: [(&str, i32); 4] = [("ta", 0), ("ta", 1), ("tb", 0), ("tb", 7)];
const TOPICS: [&str; 2] = ["ta", "tb"];
/// Mappings the file backend may hold.
const BUDGET: u32 = 2;

#[derive(Debug, Clone)]
enum Op {
    /// (queue, record size, replay that queue's newest unit instead).
    Put(Vec<(usize, u8, bool)>),
    /// The batch this many batches back, again (reput replaying).
    Replay(usize),
    Get {
        queue: usize,
        from_delta: i8,
        count: u8,
    },
    /// Cut the log at one of the record starts (or the tail).
    Truncate(u16),
    /// Raise the CommitLog min to one of the record starts (or the tail).
    CorrectMin(u16),
    ByTime {
        queue: usize,
        ts_per_mille: u16,
        upper: bool,
    },
    DeleteTopic(usize),
    Flush,
    Reopen {
        clean: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => prop::collection::vec((0..QUEUES.len(), 1u8..60, prop::bool::weighted(0.15)), 1..12)
            .prop_map(Op::Put),
        1 => (0usize..4).prop_map(Op::Replay),
        4 => (0..QUEUES.len(), -3i8..14, 0u8..12)
            .prop_map(|(queue, from_delta, count)| Op::Get { queue, from_delta, count }),
        1 => any::<u16>().prop_map(Op::Truncate),
        1 => any::<u16>().prop_map(Op::CorrectMin),
        2 => (0..QUEUES.len(), 0u16..=1100, any::<bool>())
            .prop_map(|(queue, ts_per_mille, upper)| Op::ByTime { queue, ts_per_mille, upper }),
        1 => (0..TOPICS.len()).prop_map(Op::DeleteTopic),
        1 => Just(Op::Flush),
        1 => any::<bool>().prop_map(|clean| Op::Reopen { clean }),
    ]
}

/// Store times by record offset: the CommitLog lookup the file backend
/// needs for time searches.
#[derive(Default)]
struct Times(Mutex<HashMap<i64, i64>>);

impl StoreTimeSource for Times {
    fn store_time(&self, phy_offset: i64, _size: i32) -> Option<i64> {
        self.0.lock().get(&phy_offset).copied()
    }
}

/// The CommitLog as the test imagines it.
#[derive(Default)]
struct Log {
    /// End of the last record.
    tail: i64,
    /// Lowest offset still in the log.
    min: i64,
    /// Store time of the next record; never decreases.
    clock: i64,
    /// Record starts, ascending.
    starts: Vec<i64>,
    /// Recent batches with their dispatch end, for replays.
    batches: Vec<(Vec<CqPut>, i64)>,
    /// Units per queue, for single-unit replays.
    units: Vec<Vec<CqPut>>,
}

impl Log {
    /// A record start at or above the min, or the tail.
    fn cut_point(&self, sel: u16) -> i64 {
        let mut candidates: Vec<i64> = self
            .starts
            .iter()
            .copied()
            .filter(|s| *s >= self.min)
            .collect();
        candidates.push(self.tail);
        candidates[usize::from(sel) % candidates.len()]
    }

    /// Forgets what a cut at `phy` removed.
    fn cut(&mut self, phy: i64) {
        self.tail = phy;
        self.starts.retain(|s| *s < phy);
        for units in &mut self.units {
            units.retain(|u| u.phy_offset < phy);
        }
        self.batches.clear();
    }

    /// Forgets what lies below a new min.
    fn trim(&mut self, min: i64) {
        self.min = min;
        for units in &mut self.units {
            units.retain(|u| u.phy_offset >= min);
        }
        self.batches.clear();
    }
}

fn config(root: &Path) -> StoreConfig {
    StoreConfig {
        mapped_file_size_consume_queue_bytes: 5 * 20,
        max_mapped_consume_queue_files: BUDGET,
        rocksdb_write_buffer_size_bytes: 1024 * 1024,
        rocksdb_block_cache_size_bytes: 4 * 1024 * 1024,
        rocksdb_max_background_jobs: 2,
        ..StoreConfig::with_root(root)
    }
}

fn open(kind: CqBackend, root: &Path) -> Arc<dyn ConsumeQueueStore> {
    match kind {
        CqBackend::File => Arc::new(FileConsumeQueueStore::open(&config(root)).unwrap()),
        CqBackend::Rocksdb => Arc::new(RocksConsumeQueueStore::open(&config(root)).unwrap()),
        CqBackend::Memory => Arc::new(MemoryConsumeQueueStore::new()),
    }
}

fn get(
    s: &dyn ConsumeQueueStore,
    topic: &str,
    q: i32,
    from: i64,
    count: usize,
) -> Result<Vec<CqUnit>, CqError> {
    let mut out = Vec::new();
    s.get(topic, q, from, count, &mut out).map(|()| out)
}

fn same(
    real: Result<Vec<CqUnit>, CqError>,
    model: Result<Vec<CqUnit>, CqError>,
    what: &str,
) -> Result<(), TestCaseError> {
    match (real, model) {
        (Ok(a), Ok(b)) => prop_assert_eq!(a, b, "{}", what),
        (
            Err(CqError::Compacted { min_offset: a, .. }),
            Err(CqError::Compacted { min_offset: b, .. }),
        ) => prop_assert_eq!(a, b, "{}: compacted min", what),
        (a, b) => prop_assert!(false, "{}: backend {:?} vs model {:?}", what, a, b),
    }
    Ok(())
}

/// The whole observable state must agree.
fn check(
    kind: CqBackend,
    real: &dyn ConsumeQueueStore,
    model: &MemoryConsumeQueueStore,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        real.dispatched_phy_offset().unwrap(),
        model.dispatched_phy_offset().unwrap(),
        "dispatched offset"
    );
    prop_assert_eq!(real.queues().unwrap(), model.queues().unwrap(), "queues");
    for (t, q) in QUEUES {
        let min = model.min_offset(t, q).unwrap();
        prop_assert_eq!(real.min_offset(t, q).unwrap(), min, "min {}/{}", t, q);
        prop_assert_eq!(
            real.max_offset(t, q).unwrap(),
            model.max_offset(t, q).unwrap(),
            "max {}/{}",
            t,
            q
        );
        let what = format!("units of {t}/{q}");
        same(
            get(real, t, q, min, usize::MAX),
            get(model, t, q, min, usize::MAX),
            &what,
        )?;
        if min > 0 {
            let what = format!("below the min of {t}/{q}");
            same(
                get(real, t, q, min - 1, 1),
                get(model, t, q, min - 1, 1),
                &what,
            )?;
        }
    }
    if kind == CqBackend::File {
        prop_assert!(
            real.stats().mapped_files <= u64::from(BUDGET),
            "mapping budget"
        );
    }
    Ok(())
}

fn run(kind: CqBackend, ops: &[Op]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let mut real = Some(open(kind, dir.path()));
    let model = MemoryConsumeQueueStore::new();
    let times = Times::default();
    let mut log = Log {
        units: vec![Vec::new(); QUEUES.len()],
        ..Log::default()
    };
    for op in ops {
        let rs = real.as_deref().unwrap();
        match op {
            Op::Put(items) => {
                let mut batch: Vec<CqPut> = Vec::new();
                for &(qi, size, replay) in items {
                    let (topic, q) = QUEUES[qi];
                    if replay {
                        if let Some(old) = log.units[qi].last() {
                            batch.push(old.clone());
                            continue;
                        }
                    }
                    // Dense queue offsets, as the CommitLog assigns them.
                    let mut offset = model.max_offset(topic, q).unwrap();
                    if let Some(prev) = batch
                        .iter()
                        .rev()
                        .find(|p| p.topic == topic && p.queue_id == q)
                    {
                        offset = offset.max(prev.queue_offset + 1);
                    }
                    log.clock += i64::from(size % 3);
                    let unit = CqPut {
                        topic: topic.into(),
                        queue_id: q,
                        queue_offset: offset,
                        phy_offset: log.tail,
                        size: i32::from(size),
                        tags_code: log.tail ^ 0x5a,
                        store_timestamp: log.clock,
                    };
                    times.0.lock().insert(log.tail, log.clock);
                    log.starts.push(log.tail);
                    log.tail += i64::from(size);
                    log.units[qi].push(unit.clone());
                    batch.push(unit);
                }
                rs.put(&batch, log.tail).unwrap();
                model.put(&batch, log.tail).unwrap();
                log.batches.push((batch, log.tail));
            }
            Op::Replay(back) => {
                if let Some((batch, end)) = log.batches.iter().rev().nth(*back).cloned() {
                    rs.put(&batch, end).unwrap();
                    model.put(&batch, end).unwrap();
                }
            }
            Op::Get {
                queue,
                from_delta,
                count,
            } => {
                let (t, q) = QUEUES[*queue];
                let from = (model.min_offset(t, q).unwrap() + i64::from(*from_delta)).max(0);
                let n = usize::from(*count);
                let what = format!("get {t}/{q} from {from} count {n}");
                same(get(rs, t, q, from, n), get(&model, t, q, from, n), &what)?;
            }
            Op::Truncate(sel) => {
                let at = log.cut_point(*sel);
                rs.truncate_from_phy(at).unwrap();
                model.truncate_from_phy(at).unwrap();
                log.cut(at);
            }
            Op::CorrectMin(sel) => {
                let at = log.cut_point(*sel);
                rs.correct_min_offset(at).unwrap();
                model.correct_min_offset(at).unwrap();
                log.trim(at);
            }
            Op::ByTime {
                queue,
                ts_per_mille,
                upper,
            } => {
                let (t, q) = QUEUES[*queue];
                let ts = log.clock * i64::from(*ts_per_mille) / 1000 - 1;
                let b = if *upper {
                    Boundary::Upper
                } else {
                    Boundary::Lower
                };
                prop_assert_eq!(
                    rs.offset_by_time(t, q, ts, b, &times).unwrap(),
                    model.offset_by_time(t, q, ts, b, &times).unwrap(),
                    "offset_by_time {}/{} at {} {:?}",
                    t,
                    q,
                    ts,
                    b
                );
            }
            Op::DeleteTopic(i) => {
                rs.delete_topic(TOPICS[*i]).unwrap();
                model.delete_topic(TOPICS[*i]).unwrap();
                for (qi, (t, _)) in QUEUES.iter().enumerate() {
                    if *t == TOPICS[*i] {
                        log.units[qi].clear();
                    }
                }
                log.batches.clear();
            }
            Op::Flush => rs.flush().unwrap(),
            Op::Reopen { clean } => {
                rs.flush().unwrap();
                if *clean {
                    rs.close().unwrap();
                }
                drop(real.take());
                real = Some(open(kind, dir.path()));
            }
        }
        check(kind, real.as_deref().unwrap(), &model)?;
    }
    real.as_deref().unwrap().close().unwrap();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn file_backend_matches_the_model(ops in prop::collection::vec(op(), 1..60)) {
        run(CqBackend::File, &ops)?;
    }

    #[test]
    fn rocksdb_backend_matches_the_model(ops in prop::collection::vec(op(), 1..60)) {
        run(CqBackend::Rocksdb, &ops)?;
    }
}
