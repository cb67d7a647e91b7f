//! Random put/get/truncate/correct-min/time/flush/reopen sequences, checked
//! against [`MemoryConsumeQueueStore`], with 5-unit files and a budget of 2
//! mappings so that boundaries and evictions happen all the time.

use std::path::Path;

use proptest::prelude::*;
use rmq_common::cq::{
    Boundary, ConsumeQueueStore, CqError, CqPut, MemoryConsumeQueueStore, StoreTimeSource,
};
use rmq_common::StoreConfig;

use super::FileConsumeQueueStore;

const QUEUES: [(&str, i32); 4] = [("a", 0), ("a", 1), ("b", 0), ("b", 7)];
const BUDGET: u32 = 2;

fn config(root: &Path) -> StoreConfig {
    let mut c = StoreConfig::with_root(root);
    c.mapped_file_size_consume_queue_bytes = 5 * 20;
    c.max_mapped_consume_queue_files = BUDGET;
    c
}

struct PhyTimes;
impl StoreTimeSource for PhyTimes {
    fn store_time(&self, phy: i64, _: i32) -> Option<i64> {
        Some(phy)
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// (queue, record size, replay an earlier unit of that queue instead)
    Put(Vec<(usize, u8, bool)>),
    Get(usize, i8, u8),
    Truncate(u16),
    CorrectMin(u16),
    Time(usize, u16, bool),
    Flush,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => prop::collection::vec((0..QUEUES.len(), 1u8..60, prop::bool::weighted(0.15)), 1..12).prop_map(Op::Put),
        4 => (0..QUEUES.len(), -3i8..40, 0u8..12).prop_map(|(q, d, n)| Op::Get(q, d, n)),
        1 => any::<u16>().prop_map(Op::Truncate),
        1 => any::<u16>().prop_map(Op::CorrectMin),
        2 => (0..QUEUES.len(), any::<u16>(), any::<bool>()).prop_map(|(q, t, u)| Op::Time(q, t, u)),
        1 => Just(Op::Flush),
        1 => Just(Op::Reopen),
    ]
}

struct Harness {
    model: MemoryConsumeQueueStore,
    file: FileConsumeQueueStore,
    next_phy: i64,
    /// Record starts still in the (simulated) CommitLog, ascending.
    starts: Vec<i64>,
    commit_log_min: i64,
    /// Units put per queue, for replays.
    history: Vec<Vec<CqPut>>,
}

impl Harness {
    /// CommitLog offsets a recovery or a cleanup could name: record starts
    /// at or above the CommitLog min, and the end of the log.
    fn cut_point(&self, sel: u16) -> i64 {
        let mut candidates: Vec<i64> = self
            .starts
            .iter()
            .copied()
            .filter(|s| *s >= self.commit_log_min)
            .collect();
        candidates.push(self.next_phy);
        candidates[usize::from(sel) % candidates.len()]
    }

    fn apply(&mut self, op: &Op, root: &Path) -> Result<(), TestCaseError> {
        match op {
            Op::Put(units) => {
                let mut batch = Vec::new();
                for &(qi, size, replay) in units {
                    let (topic, q) = QUEUES[qi];
                    if replay {
                        if let Some(old) = self.history[qi].last() {
                            batch.push(old.clone());
                            continue;
                        }
                    }
                    // Dense queue offsets: what the CommitLog would assign.
                    let mut offset = self.model.max_offset(topic, q).unwrap();
                    if let Some(prev) = batch
                        .iter()
                        .rev()
                        .find(|p: &&CqPut| p.topic == topic && p.queue_id == q)
                    {
                        offset = offset.max(prev.queue_offset + 1);
                    }
                    let p = CqPut {
                        topic: topic.into(),
                        queue_id: q,
                        queue_offset: offset,
                        phy_offset: self.next_phy,
                        size: i32::from(size),
                        tags_code: self.next_phy % 97,
                        store_timestamp: self.next_phy,
                    };
                    self.starts.push(self.next_phy);
                    self.next_phy += i64::from(size);
                    self.history[qi].push(p.clone());
                    batch.push(p);
                }
                self.model.put(&batch, self.next_phy).unwrap();
                self.file.put(&batch, self.next_phy).unwrap();
            }
            Op::Get(qi, delta, n) => {
                let (topic, q) = QUEUES[*qi];
                let from = self.model.min_offset(topic, q).unwrap() + i64::from(*delta);
                let (mut a, mut b) = (Vec::new(), Vec::new());
                let ra = self.model.get(topic, q, from, usize::from(*n), &mut a);
                let rb = self.file.get(topic, q, from, usize::from(*n), &mut b);
                match (ra, rb) {
                    (Ok(()), Ok(())) => prop_assert_eq!(a, b, "get {}/{} from {}", topic, q, from),
                    (
                        Err(CqError::Compacted { min_offset: x, .. }),
                        Err(CqError::Compacted { min_offset: y, .. }),
                    ) => {
                        prop_assert_eq!(x, y)
                    }
                    (ra, rb) => prop_assert!(
                        false,
                        "get {}/{} from {}: {:?} vs {:?}",
                        topic,
                        q,
                        from,
                        ra,
                        rb
                    ),
                }
            }
            Op::Truncate(sel) => {
                let x = self.cut_point(*sel);
                self.model.truncate_from_phy(x).unwrap();
                self.file.truncate_from_phy(x).unwrap();
                // Reput re-dispatches from the new tail.
                self.next_phy = x;
                self.starts.retain(|s| *s < x);
                for h in &mut self.history {
                    h.retain(|p| p.phy_offset < x);
                }
            }
            Op::CorrectMin(sel) => {
                let c = self.cut_point(*sel);
                self.commit_log_min = c;
                self.model.correct_min_offset(c).unwrap();
                self.file.correct_min_offset(c).unwrap();
            }
            Op::Time(qi, ts, upper) => {
                let (topic, q) = QUEUES[*qi];
                let ts = i64::from(*ts) % (self.next_phy + 20) - 5;
                let b = if *upper {
                    Boundary::Upper
                } else {
                    Boundary::Lower
                };
                let x = self
                    .model
                    .offset_by_time(topic, q, ts, b, &PhyTimes)
                    .unwrap();
                let y = self
                    .file
                    .offset_by_time(topic, q, ts, b, &PhyTimes)
                    .unwrap();
                prop_assert_eq!(x, y, "time {} {:?} on {}/{}", ts, b, topic, q);
            }
            Op::Flush => self.file.flush().unwrap(),
            Op::Reopen => {
                self.file.close().unwrap();
                self.file = FileConsumeQueueStore::open(&config(root)).unwrap();
            }
        }
        Ok(())
    }

    fn check(&self) -> Result<(), TestCaseError> {
        for (topic, q) in QUEUES {
            prop_assert_eq!(
                self.model.min_offset(topic, q).unwrap(),
                self.file.min_offset(topic, q).unwrap(),
                "min {}/{}",
                topic,
                q
            );
            prop_assert_eq!(
                self.model.max_offset(topic, q).unwrap(),
                self.file.max_offset(topic, q).unwrap(),
                "max {}/{}",
                topic,
                q
            );
        }
        prop_assert_eq!(
            self.model.dispatched_phy_offset().unwrap(),
            self.file.dispatched_phy_offset().unwrap()
        );
        prop_assert_eq!(self.model.queues().unwrap(), self.file.queues().unwrap());
        prop_assert!(self.file.stats().mapped_files <= u64::from(BUDGET));
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn file_store_matches_model(ops in prop::collection::vec(op(), 1..60)) {
        let dir = tempfile::tempdir().unwrap();
        let mut h = Harness {
            model: MemoryConsumeQueueStore::new(),
            file: FileConsumeQueueStore::open(&config(dir.path())).unwrap(),
            next_phy: 0,
            starts: Vec::new(),
            commit_log_min: 0,
            history: vec![Vec::new(); QUEUES.len()],
        };
        for op in &ops {
            h.apply(op, dir.path())?;
            h.check()?;
        }
        h.file.close().unwrap();
    }
}
