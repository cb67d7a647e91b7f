//! Model-based property test: random sequences of puts (fresh and
//! replayed), reads, truncations, min corrections, time lookups, topic
//! deletions and flush + reopen, checked step by step against
//! [`MemoryConsumeQueueStore`].
//!
//! Puts are realistic: per queue, units continue at the queue's next offset
//! (no holes) and CommitLog offsets grow; a truncation cuts the CommitLog so
//! later records reuse offsets from the cut; the CommitLog min never passes
//! the tail and truncation never goes below it.

use std::path::Path;

use proptest::prelude::*;
use rmq_common::cq::{
    Boundary, ConsumeQueueStore, CqError, CqPut, CqUnit, MemoryConsumeQueueStore,
};

use super::{open, NoTimes};
use crate::RocksConsumeQueueStore;

const TOPICS: [&str; 2] = ["ta", "tb"];
const QUEUES_PER_TOPIC: i32 = 2;

#[derive(Debug, Clone)]
enum Op {
    /// Units for queues chosen by the indexes (topic * 2 + queue).
    Put(Vec<(u8, i32)>),
    /// The batch `n` batches back, again.
    Replay(usize),
    Get {
        queue: u8,
        from_delta: i64,
        count: usize,
    },
    /// Cut at a fraction (per mille) of the way from the CommitLog min to the tail.
    Truncate(u16),
    /// Raise the CommitLog min to a fraction of the way to the tail.
    CorrectMin(u16),
    ByTime {
        queue: u8,
        ts_per_mille: u16,
        upper: bool,
    },
    DeleteTopic(u8),
    Reopen {
        clean_close: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => prop::collection::vec((0u8..4, 1i32..40), 1..6).prop_map(Op::Put),
        1 => (0usize..4).prop_map(Op::Replay),
        4 => (0u8..4, -3i64..6, 0usize..8).prop_map(|(queue, from_delta, count)| Op::Get { queue, from_delta, count }),
        1 => (0u16..=1000).prop_map(Op::Truncate),
        1 => (0u16..=1000).prop_map(Op::CorrectMin),
        2 => (0u8..4, 0u16..=1100, any::<bool>()).prop_map(|(queue, ts_per_mille, upper)| Op::ByTime { queue, ts_per_mille, upper }),
        1 => (0u8..2).prop_map(Op::DeleteTopic),
        1 => any::<bool>().prop_map(|clean_close| Op::Reopen { clean_close }),
    ]
}

fn queue_of(i: u8) -> (&'static str, i32) {
    (TOPICS[usize::from(i) / 2], i32::from(i) % QUEUES_PER_TOPIC)
}

/// The CommitLog as the test imagines it.
struct Log {
    /// End of the last record.
    tail: i64,
    /// Lowest offset still in the log.
    min: i64,
    /// Store time of the next record; never decreases.
    clock: i64,
    /// Recent batches, for replays; cleared when the log is cut or trimmed.
    history: Vec<(Vec<CqPut>, i64)>,
}

fn same(
    a: Result<Vec<CqUnit>, CqError>,
    b: Result<Vec<CqUnit>, CqError>,
) -> Result<(), TestCaseError> {
    match (a, b) {
        (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
        (
            Err(CqError::Compacted { min_offset: a, .. }),
            Err(CqError::Compacted { min_offset: b, .. }),
        ) => prop_assert_eq!(a, b),
        (a, b) => prop_assert!(false, "rocks {:?} vs model {:?}", a, b),
    }
    Ok(())
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

fn check_all(r: &RocksConsumeQueueStore, m: &MemoryConsumeQueueStore) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        r.dispatched_phy_offset().unwrap(),
        m.dispatched_phy_offset().unwrap()
    );
    prop_assert_eq!(r.queues().unwrap(), m.queues().unwrap());
    for i in 0..4 {
        let (t, q) = queue_of(i);
        prop_assert_eq!(
            r.max_offset(t, q).unwrap(),
            m.max_offset(t, q).unwrap(),
            "max {}/{}",
            t,
            q
        );
        let min = m.min_offset(t, q).unwrap();
        prop_assert_eq!(r.min_offset(t, q).unwrap(), min, "min {}/{}", t, q);
        same(get(r, t, q, min, usize::MAX), get(m, t, q, min, usize::MAX))?;
    }
    Ok(())
}

fn run(root: &Path, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut r = Some(open(root));
    let m = MemoryConsumeQueueStore::new();
    let mut log = Log {
        tail: 0,
        min: 0,
        clock: 0,
        history: Vec::new(),
    };
    for op in ops {
        let rs = r.as_ref().unwrap();
        match op {
            Op::Put(units) => {
                let mut next = std::collections::HashMap::new();
                let mut batch = Vec::new();
                for (i, size) in units {
                    let (t, q) = queue_of(i);
                    let off = next.entry(i).or_insert_with(|| m.max_offset(t, q).unwrap());
                    log.clock += i64::from(size % 3);
                    batch.push(CqPut {
                        topic: t.into(),
                        queue_id: q,
                        queue_offset: *off,
                        phy_offset: log.tail,
                        size,
                        tags_code: log.tail ^ 0x5a,
                        store_timestamp: log.clock,
                    });
                    *off += 1;
                    log.tail += i64::from(size);
                }
                // Records without a unit (other topics' housekeeping) move the tail too.
                log.tail += 7;
                rs.put(&batch, log.tail).unwrap();
                m.put(&batch, log.tail).unwrap();
                log.history.push((batch, log.tail));
            }
            Op::Replay(back) => {
                if let Some((batch, to)) = log.history.iter().rev().nth(back).cloned() {
                    rs.put(&batch, to).unwrap();
                    m.put(&batch, to).unwrap();
                }
            }
            Op::Get {
                queue,
                from_delta,
                count,
            } => {
                let (t, q) = queue_of(queue);
                let from = (m.min_offset(t, q).unwrap() + from_delta).max(0);
                same(get(rs, t, q, from, count), get(&m, t, q, from, count))?;
            }
            Op::Truncate(per_mille) => {
                let phy = log.min + (log.tail - log.min) * i64::from(per_mille) / 1000;
                rs.truncate_from_phy(phy).unwrap();
                m.truncate_from_phy(phy).unwrap();
                log.tail = phy;
                log.history.clear();
            }
            Op::CorrectMin(per_mille) => {
                log.min += (log.tail - log.min) * i64::from(per_mille) / 1000;
                rs.correct_min_offset(log.min).unwrap();
                m.correct_min_offset(log.min).unwrap();
                log.history.clear();
            }
            Op::ByTime {
                queue,
                ts_per_mille,
                upper,
            } => {
                let (t, q) = queue_of(queue);
                let ts = log.clock * i64::from(ts_per_mille) / 1000;
                let b = if upper {
                    Boundary::Upper
                } else {
                    Boundary::Lower
                };
                prop_assert_eq!(
                    rs.offset_by_time(t, q, ts, b, &NoTimes).unwrap(),
                    m.offset_by_time(t, q, ts, b, &NoTimes).unwrap(),
                    "offset_by_time {}/{} {} {:?}",
                    t,
                    q,
                    ts,
                    b
                );
            }
            Op::DeleteTopic(i) => {
                rs.delete_topic(TOPICS[usize::from(i)]).unwrap();
                m.delete_topic(TOPICS[usize::from(i)]).unwrap();
            }
            Op::Reopen { clean_close } => {
                rs.flush().unwrap();
                if clean_close {
                    rs.close().unwrap();
                }
                drop(r.take());
                r = Some(open(root));
            }
        }
        check_all(r.as_ref().unwrap(), &m)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn rocks_matches_the_memory_model(ops in prop::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        run(dir.path(), ops)?;
    }
}
