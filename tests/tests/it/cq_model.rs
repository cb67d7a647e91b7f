//! Model-based test: random sequences of put batches, reads, truncations,
//! min corrections, flushes and reopens, run against a real backend and the
//! in-memory model side by side; every observable answer must agree.

use std::collections::BTreeMap;

use proptest::prelude::*;
use rmq_common::config::CqBackend;
use rmq_common::cq::{ConsumeQueueStore, CqError, CqPut, MemoryConsumeQueueStore};

use super::cq_conformance::{Harness, PhyTimes};

#[derive(Debug, Clone)]
enum Op {
    /// Append this many records, spread over queues by the given picks.
    Put(Vec<u8>),
    /// Put the last batch again (reput replay).
    Replay,
    /// Cut the log at this fraction (per mille) of its length.
    Truncate(u16),
    /// Raise the CommitLog min to this fraction (per mille) of its length.
    CorrectMin(u16),
    Flush,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => proptest::collection::vec(0u8..4, 1..40).prop_map(Op::Put),
        1 => Just(Op::Replay),
        1 => (0u16..1000).prop_map(Op::Truncate),
        1 => (0u16..1000).prop_map(Op::CorrectMin),
        1 => Just(Op::Flush),
        1 => Just(Op::Reopen),
    ]
}

/// The log the units come from: a phy cursor and each queue's next offset.
#[derive(Default)]
struct Log {
    phy: i64,
    min_phy: i64,
    next: BTreeMap<i32, i64>,
    last_batch: Vec<CqPut>,
}

const TOPIC: &str = "Model";

fn compare(real: &dyn ConsumeQueueStore, model: &MemoryConsumeQueueStore, ctx: &str) {
    let queues = model.queues().unwrap();
    assert_eq!(real.queues().unwrap(), queues, "{ctx}: queues");
    for q in queues {
        let (t, id) = (q.topic.as_str(), q.queue_id);
        let min = model.min_offset(t, id).unwrap();
        assert_eq!(real.min_offset(t, id).unwrap(), min, "{ctx}: min of {id}");
        assert_eq!(
            real.max_offset(t, id).unwrap(),
            model.max_offset(t, id).unwrap(),
            "{ctx}: max of {id}"
        );
        let (mut a, mut b) = (Vec::new(), Vec::new());
        real.get(t, id, min, 10_000, &mut a).unwrap();
        model.get(t, id, min, 10_000, &mut b).unwrap();
        assert_eq!(a, b, "{ctx}: units of {id}");
        if min > 0 {
            let r = real.get(t, id, min - 1, 1, &mut a);
            assert!(
                matches!(r, Err(CqError::Compacted { min_offset, .. }) if min_offset == min),
                "{ctx}: below min"
            );
        }
        for ts in [0, 1000 + 50 * 100, i64::MAX / 2] {
            for boundary in [
                rmq_common::cq::Boundary::Lower,
                rmq_common::cq::Boundary::Upper,
            ] {
                assert_eq!(
                    real.offset_by_time(t, id, ts, boundary, &PhyTimes).unwrap(),
                    model
                        .offset_by_time(t, id, ts, boundary, &PhyTimes)
                        .unwrap(),
                    "{ctx}: time {ts} {boundary:?} of {id}"
                );
            }
        }
    }
}

fn run(kind: CqBackend, ops: Vec<Op>) {
    let mut h = Harness::new(kind);
    let model = MemoryConsumeQueueStore::new();
    let mut log = Log::default();
    for (i, op) in ops.iter().enumerate() {
        let ctx = format!("{kind} step {i} {op:?}");
        match op {
            Op::Put(picks) => {
                let batch: Vec<CqPut> = picks
                    .iter()
                    .map(|p| {
                        let q = i32::from(*p);
                        let next = log.next.entry(q).or_insert(0);
                        let u = super::cq_conformance::unit(TOPIC, q, *next, log.phy);
                        *next += 1;
                        log.phy += 100;
                        u
                    })
                    .collect();
                h.store().put(&batch, log.phy).unwrap();
                model.put(&batch, log.phy).unwrap();
                log.last_batch = batch;
            }
            Op::Replay => {
                h.store().put(&log.last_batch, log.phy).unwrap();
                model.put(&log.last_batch, log.phy).unwrap();
            }
            Op::Truncate(f) => {
                let at = (log.phy - log.min_phy) * i64::from(*f) / 1000 / 100 * 100 + log.min_phy;
                h.store().truncate_from_phy(at).unwrap();
                model.truncate_from_phy(at).unwrap();
                log.phy = at;
                for (q, next) in log.next.iter_mut() {
                    *next = model.max_offset(TOPIC, *q).unwrap();
                }
                log.last_batch.clear();
            }
            Op::CorrectMin(f) => {
                let at = (log.phy - log.min_phy) * i64::from(*f) / 1000 / 100 * 100 + log.min_phy;
                log.min_phy = log.min_phy.max(at);
                h.store().correct_min_offset(log.min_phy).unwrap();
                model.correct_min_offset(log.min_phy).unwrap();
                log.last_batch.clear();
            }
            Op::Flush => h.store().flush().unwrap(),
            Op::Reopen => {
                h.store().flush().unwrap();
                h.reopen();
            }
        }
        compare(h.store(), &model, &ctx);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn file_backend_matches_model(ops in proptest::collection::vec(op(), 1..40)) {
        run(CqBackend::File, ops);
    }

    #[test]
    fn rocksdb_backend_matches_model(ops in proptest::collection::vec(op(), 1..40)) {
        run(CqBackend::Rocksdb, ops);
    }
}
