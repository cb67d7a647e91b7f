//! One conformance suite for both forms of POP state
//! (`rmq_common::pop::PopStateStore`): RocketMQ 5.x's revive topic and
//! RocksDB (RIP-73). Each case runs on both; a "crash" drops the state
//! without a clean stop (the store halts as a killed process leaves it, and
//! the consumer offsets on disk are whatever was last persisted).

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use rmq_broker::meta::ConsumerOffsetManager;
use rmq_broker::pop::revive_log::RevivePopState;
use rmq_common::config::CqBackend;
use rmq_common::pop::{Acked, PopCheckPoint, PopStateStore, Popped};
use rmq_store::MessageStore;
use rmq_store_rocks::RocksPopState;
use rmq_tests::{open_store, small_config};

const REVIVE_TOPIC: &str = "rmq_sys_REVIVE_LOG_Conformance";
const REVIVE_QUEUES: i32 = 4;

#[derive(Debug, Clone, Copy)]
enum Form {
    ReviveTopic,
    Rocks,
}

/// One form opened over a store root, reopened after "crashes".
struct Harness {
    form: Form,
    root: std::path::PathBuf,
    store: Option<Arc<MessageStore>>,
    offsets: Option<Arc<ConsumerOffsetManager>>,
    state: Option<Arc<dyn PopStateStore>>,
}

impl Harness {
    fn open(form: Form, root: &Path) -> Self {
        let mut h = Self {
            form,
            root: root.to_owned(),
            store: None,
            offsets: None,
            state: None,
        };
        h.reopen();
        h
    }

    fn reopen(&mut self) {
        let store = Arc::new(open_store(&small_config(&self.root, CqBackend::File)).unwrap());
        let offsets = Arc::new(ConsumerOffsetManager::open(&self.root).unwrap());
        let state: Arc<dyn PopStateStore> = match self.form {
            Form::ReviveTopic => Arc::new(
                RevivePopState::open(
                    Arc::clone(&store),
                    Arc::clone(&offsets),
                    REVIVE_TOPIC.into(),
                    REVIVE_QUEUES,
                    "b".into(),
                    "127.0.0.1:10911".parse().unwrap(),
                )
                .unwrap(),
            ),
            Form::Rocks => Arc::new(RocksPopState::open(&self.root, "b", false).unwrap()),
        };
        self.store = Some(store);
        self.offsets = Some(offsets);
        self.state = Some(state);
    }

    fn state(&self) -> &dyn PopStateStore {
        self.state.as_deref().unwrap()
    }

    /// Drops everything as a killed process would leave it.
    fn crash(&mut self) {
        self.state = None;
        self.offsets = None;
        if let Some(store) = self.store.take() {
            store.halt_as_if_crashed();
        }
        self.reopen();
    }

    /// Writes the consumer offsets (and so the revive progress) to disk.
    fn persist_offsets(&self) {
        self.offsets.as_ref().unwrap().persist().unwrap();
    }
}

fn ck(queue_id: i32, start: i64, diffs: &[i32], pop_time: i64, invisible: i64) -> PopCheckPoint {
    PopCheckPoint {
        start_offset: start,
        pop_time,
        invisible_time: invisible,
        bit_map: 0,
        num: diffs.len() as u8,
        queue_id,
        topic: "T".into(),
        cid: "G".into(),
        revive_offset: 0,
        queue_offset_diff: diffs.to_vec(),
        broker_name: "b".into(),
        re_put_times: None,
        revive_time_field: 0,
    }
}

fn ack_of(c: &PopCheckPoint, revive_qid: i32, offsets: &[i64]) -> Acked {
    Acked {
        topic: c.topic.clone(),
        group: c.cid.clone(),
        queue_id: c.queue_id,
        start_offset: c.start_offset,
        pop_time: c.pop_time,
        invisible_time: c.invisible_time,
        revive_qid,
        broker_name: c.broker_name.clone(),
        offsets: offsets.to_vec(),
    }
}

/// (queue, offset) of everything due at `now`.
fn due_set(s: &dyn PopStateStore, now: i64) -> BTreeSet<(i32, i64)> {
    s.due(now, 100_000)
        .unwrap()
        .into_iter()
        .flat_map(|d| d.offsets.into_iter().map(move |o| (d.ck.queue_id, o)))
        .collect()
}

fn forms(case: impl Fn(Form, &Path)) {
    for form in [Form::ReviveTopic, Form::Rocks] {
        let dir = tempfile::tempdir().unwrap();
        case(form, dir.path());
    }
}

#[test]
fn due_after_the_invisible_time_only_what_is_unacked() {
    forms(|form, root| {
        let h = Harness::open(form, root);
        let c = ck(0, 10, &[0, 1, 3], 1000, 5000);
        h.state()
            .popped(&Popped {
                ck: c.clone(),
                revive_qid: 1,
            })
            .unwrap();
        assert!(
            due_set(h.state(), 5999).is_empty(),
            "{form:?}: due too early"
        );
        assert_eq!(
            due_set(h.state(), 6000),
            [(0, 10), (0, 11), (0, 13)].into(),
            "{form:?}"
        );
        h.state().acked(&ack_of(&c, 1, &[11])).unwrap();
        assert_eq!(
            due_set(h.state(), 6000),
            [(0, 10), (0, 13)].into(),
            "{form:?}"
        );
        let due = h.state().due(6000, 100).unwrap();
        h.state().revived(&due).unwrap();
        assert!(
            due_set(h.state(), 100_000).is_empty(),
            "{form:?}: revived listed again"
        );
    });
}

#[test]
fn acks_and_revives_survive_a_crash() {
    forms(|form, root| {
        let mut h = Harness::open(form, root);
        let a = ck(0, 10, &[0, 1, 3], 1000, 5000);
        let b = ck(1, 0, &[0, 1], 1000, 5000);
        h.state()
            .popped(&Popped {
                ck: a.clone(),
                revive_qid: 0,
            })
            .unwrap();
        h.state()
            .popped(&Popped {
                ck: b.clone(),
                revive_qid: 1,
            })
            .unwrap();
        h.state().acked(&ack_of(&a, 0, &[10])).unwrap();
        let due_b: Vec<_> = h
            .state()
            .due(6000, 100)
            .unwrap()
            .into_iter()
            .filter(|d| d.ck.queue_id == 1)
            .collect();
        h.state().revived(&due_b).unwrap();
        h.crash();
        assert_eq!(
            due_set(h.state(), 6000),
            [(0, 11), (0, 13)].into(),
            "{form:?}"
        );
        // Pops continue after everything popped, whatever the offsets on disk say.
        let next: BTreeSet<_> = h
            .state()
            .pop_offsets()
            .into_iter()
            .map(|p| (p.queue_id, p.next_offset))
            .collect();
        assert!(next.contains(&(0, 14)), "{form:?}: {next:?}");
        assert!(next.contains(&(1, 2)), "{form:?}: {next:?}");
    });
}

#[test]
fn a_changed_invisible_time_replaces_the_old_one() {
    forms(|form, root| {
        let mut h = Harness::open(form, root);
        let old = ck(0, 10, &[0, 1], 1000, 60_000);
        h.state()
            .popped(&Popped {
                ck: old.clone(),
                revive_qid: 2,
            })
            .unwrap();
        // CHANGE_MESSAGE_INVISIBLETIME of offset 11: a new pop of it, then an ack of the old.
        let new = ck(0, 11, &[0], 2000, 1000);
        h.state()
            .popped(&Popped {
                ck: new,
                revive_qid: 2,
            })
            .unwrap();
        h.state().acked(&ack_of(&old, 2, &[11])).unwrap();
        assert_eq!(due_set(h.state(), 3000), [(0, 11)].into(), "{form:?}");
        h.crash();
        assert_eq!(
            due_set(h.state(), 3000),
            [(0, 11)].into(),
            "{form:?} after a crash"
        );
        assert_eq!(
            due_set(h.state(), 61_000),
            [(0, 10), (0, 11)].into(),
            "{form:?}"
        );
    });
}

/// Random pops and acks with crashes in between (and the offsets on disk
/// persisted at random): no acked offset is ever due, every unacked one is.
#[test]
fn random_work_with_crashes_keeps_every_ack_and_every_unacked_pop() {
    forms(|form, root| {
        let mut h = Harness::open(form, root);
        let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut open: Vec<(PopCheckPoint, i32, BTreeSet<i64>)> = Vec::new();
        let mut acked: BTreeSet<(i32, i64)> = BTreeSet::new();
        let mut cursor = [0i64; 4];
        for step in 0..200 {
            match next() % 10 {
                0..=3 => {
                    let q = (next() % 4) as i32;
                    let n = 1 + (next() % 5) as usize;
                    let diffs: Vec<i32> = (0..n as i32).collect();
                    let c = ck(q, cursor[q as usize], &diffs, 1000 + step, 5000);
                    cursor[q as usize] += n as i64;
                    let rq = (next() % REVIVE_QUEUES as u64) as i32;
                    h.state()
                        .popped(&Popped {
                            ck: c.clone(),
                            revive_qid: rq,
                        })
                        .unwrap();
                    open.push((c.clone(), rq, c.offsets().into_iter().collect()));
                }
                4..=7 if !open.is_empty() => {
                    let i = (next() % open.len() as u64) as usize;
                    let (c, rq, left) = &mut open[i];
                    let o = *left.iter().next().unwrap();
                    h.state().acked(&ack_of(c, *rq, &[o])).unwrap();
                    left.remove(&o);
                    acked.insert((c.queue_id, o));
                    if left.is_empty() {
                        open.remove(i);
                    }
                }
                8 => h.persist_offsets(),
                _ => h.crash(),
            }
        }
        h.crash();
        let due = due_set(h.state(), i64::MAX);
        let unacked: BTreeSet<(i32, i64)> = open
            .iter()
            .flat_map(|(c, _, left)| left.iter().map(move |o| (c.queue_id, *o)))
            .collect();
        let wrongly: Vec<_> = due.intersection(&acked).collect();
        assert!(
            wrongly.is_empty(),
            "{form:?}: acked offsets due again: {wrongly:?}"
        );
        assert_eq!(due, unacked, "{form:?}: every unacked pop is due");
        let nexts = h.state().pop_offsets();
        for (q, end) in cursor.iter().enumerate() {
            if *end > 0 {
                assert!(
                    nexts
                        .iter()
                        .any(|p| p.queue_id == q as i32 && p.next_offset >= *end),
                    "{form:?}: queue {q} pops continue before {end}: {nexts:?}"
                );
            }
        }
    });
}
