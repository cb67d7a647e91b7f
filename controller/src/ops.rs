//! What each controller request may do, decided on the leader against the
//! state it has (RocketMQ 5.3.3's `ReplicasInfoManager` rules): an answer,
//! and the event to append to the log before the answer is sent, if the
//! request changes anything. Nothing here changes the state itself.

use std::collections::{BTreeMap, BTreeSet};

use rmq_common::remoting::ResponseCode;

use crate::alive::Liveness;
use crate::elect::{elect, Ballot};
use crate::event::Event;
use crate::state::{BrokerId, BrokerSet, ReplicaState, FIRST_BROKER_ID};

/// A request refused, with the code and remark Java answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The response code.
    pub code: ResponseCode,
    /// Why.
    pub remark: String,
}

impl Refusal {
    fn new(code: ResponseCode, remark: impl Into<String>) -> Self {
        Self {
            code,
            remark: remark.into(),
        }
    }
}

/// An answer, and the event that must be in the log before it is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision<T> {
    /// What to answer.
    pub answer: Result<T, Refusal>,
    /// What to append first, if anything.
    pub event: Option<Event>,
}

impl<T> Decision<T> {
    fn refuse(code: ResponseCode, remark: impl Into<String>) -> Self {
        Self {
            answer: Err(Refusal::new(code, remark)),
            event: None,
        }
    }
}

/// A set's master and epochs, as the answers carry them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MasterView {
    /// The master, if any.
    pub master: Option<BrokerId>,
    /// Its address.
    pub master_addr: Option<String>,
    /// The master epoch.
    pub master_epoch: i32,
    /// The SyncStateSet.
    pub sync_state_set: BTreeSet<BrokerId>,
    /// Its epoch.
    pub sync_state_set_epoch: i32,
}

impl MasterView {
    fn of(set: &BrokerSet) -> Self {
        Self {
            master: set.master,
            master_addr: set.master_addr().map(str::to_owned),
            master_epoch: set.master_epoch,
            sync_state_set: set.sync_state_set.clone(),
            sync_state_set_epoch: set.sync_state_set_epoch,
        }
    }
}

/// The time and liveness a decision reads.
#[derive(Debug, Clone, Copy)]
pub struct Now<'a> {
    /// Liveness as this replica knows it.
    pub live: &'a Liveness,
    /// Now, ms.
    pub now_ms: i64,
}

/// CONTROLLER_GET_NEXT_BROKER_ID: the id a new member of `broker_name`
/// should apply for.
pub fn next_broker_id(state: &ReplicaState, broker_name: &str) -> BrokerId {
    state
        .set(broker_name)
        .map_or(FIRST_BROKER_ID, |s| s.next_id)
}

/// CONTROLLER_APPLY_BROKER_ID: a broker takes `broker_id`; `check_code` is
/// `<addr>;<ms>`. A new set takes only the first id; a known one an unused
/// id, or the id applied for before with the same code (the broker crashed
/// before it saved it).
pub fn apply_broker_id(
    state: &ReplicaState,
    cluster: &str,
    broker_name: &str,
    broker_id: BrokerId,
    check_code: &str,
) -> Decision<()> {
    let addr = check_code.split(';').next().unwrap_or_default().to_owned();
    let fits = match state.set(broker_name) {
        None => broker_id == FIRST_BROKER_ID,
        Some(set) => set
            .members
            .get(&broker_id)
            .is_none_or(|m| m.check_code == check_code),
    };
    if !fits {
        return Decision::refuse(
            ResponseCode::ControllerBrokerIdInvalid,
            format!(
                "Fail to apply brokerId: {broker_id} in broker-set: {broker_name}: the id is taken \
                 or not the set's next"
            ),
        );
    }
    Decision {
        answer: Ok(()),
        event: Some(Event::ApplyBrokerId {
            cluster: cluster.to_owned(),
            broker_name: broker_name.to_owned(),
            broker_id,
            addr,
            check_code: check_code.to_owned(),
        }),
    }
}

/// CONTROLLER_REGISTER_BROKER: a member with its id says where it is now.
/// The answer names the master only if it is alive.
pub fn register_broker(
    state: &ReplicaState,
    now: Now<'_>,
    broker_name: &str,
    broker_id: BrokerId,
    addr: &str,
) -> Decision<MasterView> {
    let Some(set) = state.set(broker_name) else {
        return Decision::refuse(
            ResponseCode::ControllerBrokerNeedToBeRegistered,
            format!("Broker-set: {broker_name} hasn't been registered in controller"),
        );
    };
    let Some(member) = set.members.get(&broker_id) else {
        return Decision::refuse(
            ResponseCode::ControllerBrokerNeedToBeRegistered,
            format!("BrokerId: {broker_id} hasn't been registered in broker-set: {broker_name}"),
        );
    };
    let mut view = MasterView::of(set);
    if !view
        .master
        .is_some_and(|m| now.live.alive(broker_name, m, now.now_ms))
    {
        view.master = None;
        view.master_addr = None;
    }
    let event = (member.addr != addr).then(|| Event::UpdateBrokerAddress {
        broker_name: broker_name.to_owned(),
        broker_id,
        addr: addr.to_owned(),
    });
    Decision {
        answer: Ok(view),
        event,
    }
}

/// An election's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Elected {
    /// SUCCESS (a new master) or CONTROLLER_MASTER_STILL_EXIST.
    pub code: ResponseCode,
    /// The master after it, with the epochs.
    pub view: MasterView,
    /// Every member's address (a new master only: Java's
    /// `brokerMemberGroup`).
    pub members: Option<BTreeMap<BrokerId, String>>,
}

/// Who asks for an election.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The controller itself, for a set whose master died.
    Controller,
    /// A broker of the set, for itself (it found no master).
    Broker(BrokerId),
    /// An operator designating the winner (mqadmin `electMaster`).
    Designate(BrokerId),
}

/// CONTROLLER_ELECT_MASTER, or the controller's own election.
pub fn elect_master(
    state: &ReplicaState,
    now: Now<'_>,
    unclean: bool,
    broker_name: &str,
    trigger: Trigger,
) -> Decision<Elected> {
    let Some(set) = state.set(broker_name) else {
        return Decision::refuse(
            ResponseCode::ControllerBrokerNeedToBeRegistered,
            format!("Broker-set: {broker_name} hasn't been registered in controller"),
        );
    };
    let asker = match trigger {
        Trigger::Controller => None,
        Trigger::Broker(id) | Trigger::Designate(id) => Some(id),
    };
    let winner = match asker {
        // Never elected: the first broker to ask wins, as in Java; unlike
        // Java only a member of the set.
        Some(id) if set.master_epoch == 0 => set.members.contains_key(&id).then_some(id),
        _ => elect(&Ballot {
            set,
            live: now.live,
            now_ms: now.now_ms,
            unclean,
            preferred: match trigger {
                Trigger::Designate(id) => Some(id),
                _ => None,
            },
        }),
    };
    match winner {
        Some(id) if set.master == Some(id) => Decision {
            answer: Ok(Elected {
                code: ResponseCode::ControllerMasterStillExist,
                view: MasterView::of(set),
                members: None,
            }),
            event: None,
        },
        Some(id) => {
            let view = MasterView {
                master: Some(id),
                master_addr: set.members.get(&id).map(|m| m.addr.clone()),
                master_epoch: set.master_epoch + 1,
                sync_state_set: BTreeSet::from([id]),
                sync_state_set_epoch: set.sync_state_set_epoch + 1,
            };
            let members = set
                .members
                .iter()
                .map(|(id, m)| (*id, m.addr.clone()))
                .collect();
            Decision {
                answer: Ok(Elected {
                    code: ResponseCode::Success,
                    view,
                    members: Some(members),
                }),
                event: Some(Event::ElectMaster {
                    broker_name: broker_name.to_owned(),
                    new_master: Some(id),
                }),
            }
        }
        // The controller found nobody for a set whose master died: the set
        // has no master from now on (its epoch rises), until one is back.
        None if trigger == Trigger::Controller => Decision {
            answer: Err(Refusal::new(
                ResponseCode::ControllerMasterNotAvailable,
                format!("Failed to elect a new master for broker-set: {broker_name}"),
            )),
            event: set.master.is_some().then(|| Event::ElectMaster {
                broker_name: broker_name.to_owned(),
                new_master: None,
            }),
        },
        None => Decision::refuse(
            ResponseCode::ControllerElectMasterFailed,
            format!("Failed to elect a new master for broker-set: {broker_name}"),
        ),
    }
}

/// A master's CONTROLLER_ALTER_SYNC_STATE_SET.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterRequest {
    /// The set.
    pub broker_name: String,
    /// Who asks (must be the master).
    pub master: BrokerId,
    /// The master epoch it knows.
    pub master_epoch: i32,
    /// The SyncStateSet it proposes.
    pub sync_state_set: BTreeSet<BrokerId>,
    /// The SyncStateSet epoch it knows.
    pub sync_state_set_epoch: i32,
}

/// CONTROLLER_ALTER_SYNC_STATE_SET: the checks in Java's order; the answer
/// is the new SyncStateSet epoch.
pub fn alter_sync_state_set(
    state: &ReplicaState,
    now: Now<'_>,
    req: &AlterRequest,
) -> Decision<i32> {
    use ResponseCode as C;
    let name = req.broker_name.as_str();
    let Some(set) = state.set(name) else {
        return Decision::refuse(
            C::ControllerAlterSyncStateSetFailed,
            "Broker metadata is not existed",
        );
    };
    if req.sync_state_set == set.sync_state_set {
        return Decision::refuse(
            C::ControllerAlterSyncStateSetFailed,
            "The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet",
        );
    }
    if set.master != Some(req.master) {
        return Decision::refuse(
            C::ControllerInvalidMaster,
            format!(
                "Rejecting alter syncStateSet request because the current leader is:{:?}, not {}",
                set.master, req.master
            ),
        );
    }
    if req.master_epoch != set.master_epoch {
        return Decision::refuse(
            C::ControllerFencedMasterEpoch,
            format!(
                "Rejecting alter syncStateSet request because the current master epoch is:{}, not {}",
                set.master_epoch, req.master_epoch
            ),
        );
    }
    if req.sync_state_set_epoch != set.sync_state_set_epoch {
        return Decision::refuse(
            C::ControllerFencedSyncStateSetEpoch,
            format!(
                "Rejecting alter syncStateSet request because the current syncStateSet epoch is:{}, not {}",
                set.sync_state_set_epoch, req.sync_state_set_epoch
            ),
        );
    }
    for id in &req.sync_state_set {
        if !set.members.contains_key(id) {
            return Decision::refuse(
                C::ControllerInvalidReplicas,
                format!(
                    "Rejecting alter syncStateSet request because the replicas {id} don't exist"
                ),
            );
        }
        if !now.live.alive(name, *id, now.now_ms) {
            return Decision::refuse(
                C::ControllerBrokerNotAlive,
                format!(
                    "Rejecting alter syncStateSet request because the replicas {id} don't alive"
                ),
            );
        }
    }
    if !req.sync_state_set.contains(&req.master) {
        return Decision::refuse(
            C::ControllerAlterSyncStateSetFailed,
            format!(
                "Rejecting alter syncStateSet request because the newSyncStateSet don't contains origin leader {}",
                req.master
            ),
        );
    }
    Decision {
        answer: Ok(set.sync_state_set_epoch + 1),
        event: Some(Event::AlterSyncStateSet {
            broker_name: name.to_owned(),
            sync_state_set: req.sync_state_set.clone(),
        }),
    }
}

/// CONTROLLER_GET_REPLICA_INFO: the master (alive or not) and the
/// SyncStateSet.
pub fn replica_info(state: &ReplicaState, broker_name: &str) -> Result<MasterView, Refusal> {
    state.set(broker_name).map(MasterView::of).ok_or_else(|| {
        Refusal::new(
            ResponseCode::ControllerBrokerMetadataNotExist,
            format!("Broker metadata is not existed: {broker_name}"),
        )
    })
}

/// CLEAN_BROKER_DATA: `ids` as mqadmin sends them (`1;2`), none for the
/// whole set. Without `clean_living`, living members and a set with a
/// master are kept.
pub fn clean_broker_data(
    state: &ReplicaState,
    now: Now<'_>,
    broker_name: &str,
    ids: Option<&str>,
    clean_living: bool,
) -> Decision<()> {
    use ResponseCode as C;
    let Some(set) = state.set(broker_name) else {
        return Decision::refuse(
            C::ControllerInvalidCleanBrokerMetadata,
            format!("Broker-set: {broker_name} is not existed in controller"),
        );
    };
    let ids = match ids.map(str::trim).filter(|s| !s.is_empty()) {
        None => None,
        Some(text) => {
            let mut parsed = BTreeSet::new();
            for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
                match part.parse::<BrokerId>() {
                    Ok(id) => {
                        parsed.insert(id);
                    }
                    Err(_) => {
                        return Decision::refuse(
                            C::ControllerInvalidCleanBrokerMetadata,
                            format!("Please set the option <brokerControllerIdsToClean> according to the format: {part} is not a broker id"),
                        )
                    }
                }
            }
            Some(parsed)
        }
    };
    if !clean_living {
        match &ids {
            None if set.master.is_some() => {
                return Decision::refuse(
                    C::ControllerInvalidCleanBrokerMetadata,
                    format!("Broker-set: {broker_name} still has a master; name the ids to clean"),
                )
            }
            Some(ids) => {
                if let Some(id) = ids
                    .iter()
                    .find(|id| now.live.alive(broker_name, **id, now.now_ms))
                {
                    return Decision::refuse(
                        C::ControllerInvalidCleanBrokerMetadata,
                        format!("Broker {id} of broker-set {broker_name} is still alive"),
                    );
                }
            }
            None => {}
        }
    }
    Decision {
        answer: Ok(()),
        event: Some(Event::CleanBrokerData {
            broker_name: broker_name.to_owned(),
            ids,
        }),
    }
}
