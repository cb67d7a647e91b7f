#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use rmq_common::remoting::ResponseCode as C;

use crate::alive::{Heartbeat, Liveness, DEFAULT_ELECTION_PRIORITY};
use crate::ops::{self, AlterRequest, Now, Trigger};
use crate::{Event, ReplicaState};

const SET: &str = "broker-a";

fn addr(id: i64) -> String {
    format!("127.0.0.1:{}", 30911 + 10 * id)
}

fn hb(id: i64, epoch: i32, max_offset: i64) -> Heartbeat {
    Heartbeat {
        broker_name: SET.into(),
        broker_id: id,
        addr: addr(id),
        epoch,
        max_offset,
        confirm_offset: max_offset,
        timeout_ms: 10_000,
        election_priority: DEFAULT_ELECTION_PRIORITY,
    }
}

/// Decides against `state`, applies the decision's event (what the log
/// would do) and returns its answer.
fn commit<T>(
    state: &mut ReplicaState,
    decide: impl FnOnce(&ReplicaState) -> ops::Decision<T>,
) -> Result<T, ops::Refusal> {
    let d = decide(state);
    apply(state, d)
}

/// Applies a decision made before.
fn apply<T>(state: &mut ReplicaState, d: ops::Decision<T>) -> Result<T, ops::Refusal> {
    if let Some(e) = &d.event {
        state.apply(e);
    }
    d.answer
}

/// Three brokers join as RocketMQ's do: next id, apply, register.
fn three_members(state: &mut ReplicaState, live: &mut Liveness) {
    for id in 1..=3 {
        assert_eq!(ops::next_broker_id(state, SET), id);
        let code = format!("{};{}", addr(id), 1000 + id);
        commit(state, |s| ops::apply_broker_id(s, "c", SET, id, &code)).unwrap();
        live.heartbeat(hb(id, -1, 0), 0);
        let now = Now { live, now_ms: 0 };
        commit(state, |s| ops::register_broker(s, now, SET, id, &addr(id))).unwrap();
    }
}

/// [`three_members`], then broker 1, the first to ask, elected (epoch 1).
fn master_one() -> (ReplicaState, Liveness) {
    let (mut state, mut live) = (ReplicaState::new(), Liveness::new());
    three_members(&mut state, &mut live);
    let now = Now {
        live: &live,
        now_ms: 0,
    };
    commit(&mut state, |s| {
        ops::elect_master(s, now, false, SET, Trigger::Broker(1))
    })
    .unwrap();
    (state, live)
}

#[test]
fn ids_are_given_in_turn_and_a_retry_with_the_same_code_keeps_its_id() {
    let mut state = ReplicaState::new();
    // A new set takes only the first id.
    let d = ops::apply_broker_id(&state, "c", SET, 2, "x;1");
    assert_eq!(d.answer.unwrap_err().code, C::ControllerBrokerIdInvalid);
    commit(&mut state, |s| {
        ops::apply_broker_id(s, "c", SET, 1, "127.0.0.1:1;5")
    })
    .unwrap();
    assert_eq!(state.set(SET).unwrap().members[&1].addr, "127.0.0.1:1");
    // Another broker cannot take id 1; the same one (same code) can again.
    let d = ops::apply_broker_id(&state, "c", SET, 1, "127.0.0.1:2;6");
    assert_eq!(d.answer.unwrap_err().code, C::ControllerBrokerIdInvalid);
    commit(&mut state, |s| {
        ops::apply_broker_id(s, "c", SET, 1, "127.0.0.1:1;5")
    })
    .unwrap();
    // An id applied out of turn is never offered afterwards.
    commit(&mut state, |s| {
        ops::apply_broker_id(s, "c", SET, 7, "127.0.0.1:7;8")
    })
    .unwrap();
    assert_eq!(ops::next_broker_id(&state, SET), 8);
    // Registering needs an applied id.
    let live = Liveness::new();
    let now = Now {
        live: &live,
        now_ms: 0,
    };
    let d = ops::register_broker(&state, now, SET, 3, "127.0.0.1:3");
    assert_eq!(
        d.answer.unwrap_err().code,
        C::ControllerBrokerNeedToBeRegistered
    );
    let d = ops::register_broker(&state, now, "other", 1, "127.0.0.1:3");
    assert_eq!(
        d.answer.unwrap_err().code,
        C::ControllerBrokerNeedToBeRegistered
    );
    // A new address is recorded.
    let d = ops::register_broker(&state, now, SET, 1, "127.0.0.1:9");
    assert!(matches!(d.event, Some(Event::UpdateBrokerAddress { .. })));
    apply(&mut state, d).unwrap();
    assert_eq!(state.set(SET).unwrap().members[&1].addr, "127.0.0.1:9");
}

#[test]
fn the_first_asker_wins_then_a_dead_master_gives_way_to_the_most_advanced_in_sync_replica() {
    let (mut state, mut live) = (ReplicaState::new(), Liveness::new());
    three_members(&mut state, &mut live);
    let now = Now {
        live: &live,
        now_ms: 0,
    };
    // Never elected: broker 2 asks first and wins, with epoch 1.
    let e = commit(&mut state, |s| {
        ops::elect_master(s, now, false, SET, Trigger::Broker(2))
    })
    .unwrap();
    assert_eq!(e.code, C::Success);
    assert_eq!(e.view.master, Some(2));
    assert_eq!(e.view.master_addr.as_deref(), Some(addr(2).as_str()));
    assert_eq!((e.view.master_epoch, e.view.sync_state_set_epoch), (1, 1));
    assert_eq!(e.members.unwrap().len(), 3);
    // Broker 1 asks too: the master still exists.
    let e = commit(&mut state, |s| {
        ops::elect_master(s, now, false, SET, Trigger::Broker(1))
    })
    .unwrap();
    assert_eq!(e.code, C::ControllerMasterStillExist);
    assert_eq!(e.view.master, Some(2));
    // The master takes 1 and 3 into its SyncStateSet.
    let alter = AlterRequest {
        broker_name: SET.into(),
        master: 2,
        master_epoch: 1,
        sync_state_set: BTreeSet::from([1, 2, 3]),
        sync_state_set_epoch: 1,
    };
    assert_eq!(
        commit(&mut state, |s| ops::alter_sync_state_set(s, now, &alter)).unwrap(),
        2
    );
    // Replicas report their logs; the master's heartbeats stop.
    live.heartbeat(hb(1, 1, 5_000), 9_000);
    live.heartbeat(hb(3, 1, 7_000), 9_000);
    assert_eq!(live.expire(10_001), vec![(SET.to_owned(), 2)]);
    let now = Now {
        live: &live,
        now_ms: 10_001,
    };
    let e = commit(&mut state, |s| {
        ops::elect_master(s, now, false, SET, Trigger::Controller)
    })
    .unwrap();
    assert_eq!(e.view.master, Some(3), "the longest log wins");
    assert_eq!((e.view.master_epoch, e.view.sync_state_set_epoch), (2, 3));
    assert_eq!(e.view.sync_state_set, BTreeSet::from([3]));
    let set = state.set(SET).unwrap();
    assert_eq!((set.master, set.master_epoch), (Some(3), 2));
    // A register answer names the master while it is alive, not after.
    let d = ops::register_broker(&state, now, SET, 1, &addr(1));
    assert_eq!(d.answer.unwrap().master, Some(3));
    let later = Now {
        live: &live,
        now_ms: 30_000,
    };
    let d = ops::register_broker(&state, later, SET, 1, &addr(1));
    assert_eq!(d.answer.unwrap().master, None);
}

#[test]
fn without_unclean_election_a_set_with_no_live_in_sync_replica_has_no_master() {
    let (mut state, mut live) = master_one();
    // Only broker 1 is in sync, and it dies; 2 and 3 live on.
    live.remove(SET, 1);
    let now = Now {
        live: &live,
        now_ms: 1,
    };
    let d = ops::elect_master(&state, now, false, SET, Trigger::Broker(2));
    assert_eq!(
        d.answer.as_ref().unwrap_err().code,
        C::ControllerElectMasterFailed
    );
    assert!(d.event.is_none());
    let d = ops::elect_master(&state, now, false, SET, Trigger::Controller);
    assert_eq!(
        d.answer.as_ref().unwrap_err().code,
        C::ControllerMasterNotAvailable
    );
    assert!(apply(&mut state, d).is_err());
    let set = state.set(SET).unwrap();
    assert_eq!(
        (set.master, set.master_epoch),
        (None, 2),
        "the dead master is no longer named"
    );
    // With enableElectUncleanMaster a live member outside it wins.
    let e = commit(&mut state, |s| {
        ops::elect_master(s, now, true, SET, Trigger::Controller)
    })
    .unwrap();
    assert!(matches!(e.view.master, Some(2 | 3)));
    assert_eq!(e.view.master_epoch, 3);
}

#[test]
fn a_designated_winner_must_be_alive_and_in_sync() {
    let (mut state, live) = master_one();
    let now = Now {
        live: &live,
        now_ms: 0,
    };
    let d = ops::elect_master(&state, now, false, SET, Trigger::Designate(2));
    assert_eq!(
        d.answer.unwrap_err().code,
        C::ControllerElectMasterFailed,
        "2 is not in sync"
    );
    let alter = AlterRequest {
        broker_name: SET.into(),
        master: 1,
        master_epoch: 1,
        sync_state_set: BTreeSet::from([1, 2]),
        sync_state_set_epoch: 1,
    };
    commit(&mut state, |s| ops::alter_sync_state_set(s, now, &alter)).unwrap();
    let e = commit(&mut state, |s| {
        ops::elect_master(s, now, false, SET, Trigger::Designate(2))
    })
    .unwrap();
    assert_eq!((e.code, e.view.master), (C::Success, Some(2)));
}

#[test]
fn alter_sync_state_set_is_checked_in_javas_order() {
    let (mut state, live) = master_one();
    let ok = AlterRequest {
        broker_name: SET.into(),
        master: 1,
        master_epoch: 1,
        sync_state_set: BTreeSet::from([1, 2]),
        sync_state_set_epoch: 1,
    };
    let code = |req: &AlterRequest, live: &Liveness| {
        let now = Now { live, now_ms: 0 };
        ops::alter_sync_state_set(&state, now, req)
            .answer
            .unwrap_err()
            .code
    };
    let same = AlterRequest {
        sync_state_set: BTreeSet::from([1]),
        ..ok.clone()
    };
    assert_eq!(code(&same, &live), C::ControllerAlterSyncStateSetFailed);
    assert_eq!(
        code(
            &AlterRequest {
                master: 2,
                ..ok.clone()
            },
            &live
        ),
        C::ControllerInvalidMaster
    );
    assert_eq!(
        code(
            &AlterRequest {
                master_epoch: 0,
                ..ok.clone()
            },
            &live
        ),
        C::ControllerFencedMasterEpoch
    );
    assert_eq!(
        code(
            &AlterRequest {
                sync_state_set_epoch: 5,
                ..ok.clone()
            },
            &live
        ),
        C::ControllerFencedSyncStateSetEpoch
    );
    let stranger = AlterRequest {
        sync_state_set: BTreeSet::from([1, 9]),
        ..ok.clone()
    };
    assert_eq!(code(&stranger, &live), C::ControllerInvalidReplicas);
    let without_master = AlterRequest {
        sync_state_set: BTreeSet::from([2, 3]),
        ..ok.clone()
    };
    assert_eq!(
        code(&without_master, &live),
        C::ControllerAlterSyncStateSetFailed
    );
    let mut dead_two = Liveness::new();
    dead_two.heartbeat(hb(1, 1, 0), 0);
    assert_eq!(code(&ok, &dead_two), C::ControllerBrokerNotAlive);
    let now = Now {
        live: &live,
        now_ms: 0,
    };
    assert_eq!(
        commit(&mut state, |s| ops::alter_sync_state_set(s, now, &ok)).unwrap(),
        2
    );
    // The same request again: its set is the stored one now.
    let again = ops::alter_sync_state_set(&state, now, &ok)
        .answer
        .unwrap_err()
        .code;
    assert_eq!(again, C::ControllerAlterSyncStateSetFailed);
    // A new proposal with the old SyncStateSet epoch is fenced.
    let stale = AlterRequest {
        sync_state_set: BTreeSet::from([1, 2, 3]),
        ..ok
    };
    let fenced = ops::alter_sync_state_set(&state, now, &stale)
        .answer
        .unwrap_err()
        .code;
    assert_eq!(fenced, C::ControllerFencedSyncStateSetEpoch);
}

#[test]
fn heartbeats_move_epoch_and_offsets_forward_only() {
    let mut live = Liveness::new();
    live.heartbeat(hb(1, 2, 100), 0);
    live.heartbeat(hb(1, 1, 500), 5);
    let info = live.get(SET, 1).unwrap();
    assert_eq!(
        (info.last.epoch, info.last.max_offset, info.seen_ms),
        (2, 100, 5)
    );
    live.heartbeat(hb(1, 2, 300), 6);
    assert_eq!(live.get(SET, 1).unwrap().last.max_offset, 300);
    assert!(live.alive(SET, 1, 10_006));
    assert!(!live.alive(SET, 1, 10_007));
    assert!(live.expire(10_006).is_empty());
    assert_eq!(live.expire(10_007).len(), 1);
}

#[test]
fn cleaning_refuses_living_brokers_and_removes_what_it_names() {
    let (mut state, mut live) = master_one();
    let now = Now {
        live: &live,
        now_ms: 0,
    };
    let refused = |ids: Option<&str>, now: Now<'_>| {
        ops::clean_broker_data(&state, now, SET, ids, false)
            .answer
            .unwrap_err()
            .code
    };
    assert_eq!(refused(None, now), C::ControllerInvalidCleanBrokerMetadata);
    assert_eq!(
        refused(Some("3"), now),
        C::ControllerInvalidCleanBrokerMetadata
    );
    assert_eq!(
        refused(Some("x"), now),
        C::ControllerInvalidCleanBrokerMetadata
    );
    live.remove(SET, 3);
    let now = Now {
        live: &live,
        now_ms: 0,
    };
    commit(&mut state, |s| {
        ops::clean_broker_data(s, now, SET, Some("3"), false)
    })
    .unwrap();
    assert!(!state.set(SET).unwrap().members.contains_key(&3));
    commit(&mut state, |s| {
        ops::clean_broker_data(s, now, SET, None, true)
    })
    .unwrap();
    assert!(state.set(SET).is_none());
    assert_eq!(ops::next_broker_id(&state, SET), 1);
}

#[test]
fn replicas_that_apply_the_same_log_agree_and_events_survive_serialization() {
    let (mut leader, mut live) = (ReplicaState::new(), Liveness::new());
    let mut log = Vec::new();
    for id in 1..=2 {
        let d = ops::apply_broker_id(&leader, "c", SET, id, &format!("{};1", addr(id)));
        log.push(d.event.clone().unwrap());
        apply(&mut leader, d).unwrap();
        live.heartbeat(hb(id, 0, 0), 0);
    }
    let now = Now {
        live: &live,
        now_ms: 0,
    };
    let d = ops::elect_master(&leader, now, false, SET, Trigger::Broker(2));
    log.push(d.event.clone().unwrap());
    apply(&mut leader, d).unwrap();
    let mut follower = ReplicaState::new();
    for e in &log {
        let text = serde_json::to_string(e).unwrap();
        follower.apply(&serde_json::from_str(&text).unwrap());
    }
    assert_eq!(follower, leader);
    assert_eq!(ops::replica_info(&follower, SET).unwrap().master, Some(2));
    assert_eq!(
        ops::replica_info(&follower, "none").unwrap_err().code,
        C::ControllerBrokerMetadataNotExist
    );
}
