//! The replicated state: per broker set (brokerName), its members with the
//! ids the controller gave them, its master, the master epoch and the
//! SyncStateSet with its own epoch. It changes only by applying an
//! [`Event`], in log order, on every controller replica alike; nothing
//! here reads a clock.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::event::Event;

/// A broker's id within its set, as the controller gives it: 1, 2, ...
/// (RocketMQ's `FIRST_BROKER_CONTROLLER_ID` is 1; a set's master is told
/// apart by [`BrokerSet::master`], not by id 0).
pub type BrokerId = i64;

/// The first id a set gives.
pub const FIRST_BROKER_ID: BrokerId = 1;

/// One member of a set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// Where it serves clients (`brokerIP1:listenPort`).
    pub addr: String,
    /// What it applied for its id with (`<addr>;<ms>`): a broker that
    /// applies again with the same code (it crashed before it saved the
    /// id) gets the same id.
    pub check_code: String,
}

/// One broker set: the replicas of one brokerName.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerSet {
    /// Its cluster.
    pub cluster: String,
    /// Its brokerName.
    pub name: String,
    /// The id GET_NEXT_BROKER_ID answers.
    pub next_id: BrokerId,
    /// Its members by id.
    pub members: BTreeMap<BrokerId, Member>,
    /// The master, if one is elected.
    pub master: Option<BrokerId>,
    /// Raised by every election, won or not (the first master has epoch 1).
    pub master_epoch: i32,
    /// The replicas in sync with the master (the master included).
    pub sync_state_set: BTreeSet<BrokerId>,
    /// Raised by every change of the SyncStateSet (an election included).
    pub sync_state_set_epoch: i32,
}

impl BrokerSet {
    fn new(cluster: &str, name: &str) -> Self {
        Self {
            cluster: cluster.to_owned(),
            name: name.to_owned(),
            next_id: FIRST_BROKER_ID,
            members: BTreeMap::new(),
            master: None,
            master_epoch: 0,
            sync_state_set: BTreeSet::new(),
            sync_state_set_epoch: 0,
        }
    }

    /// The master's address, if there is a master.
    pub fn master_addr(&self) -> Option<&str> {
        let id = self.master?;
        self.members.get(&id).map(|m| m.addr.as_str())
    }
}

/// Every broker set, by brokerName.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaState {
    sets: BTreeMap<String, BrokerSet>,
}

impl ReplicaState {
    /// No sets.
    pub fn new() -> Self {
        Self::default()
    }

    /// The set named `name`.
    pub fn set(&self, name: &str) -> Option<&BrokerSet> {
        self.sets.get(name)
    }

    /// Every set, by name.
    pub fn sets(&self) -> impl Iterator<Item = &BrokerSet> {
        self.sets.values()
    }

    /// Applies one event of the log. Events were checked against the state
    /// they were made from; one that no longer fits (its set was cleaned
    /// meanwhile) changes nothing.
    pub fn apply(&mut self, event: &Event) {
        match event {
            Event::ApplyBrokerId {
                cluster,
                broker_name,
                broker_id,
                addr,
                check_code,
            } => {
                let set = self
                    .sets
                    .entry(broker_name.clone())
                    .or_insert_with(|| BrokerSet::new(cluster, broker_name));
                set.members.insert(
                    *broker_id,
                    Member {
                        addr: addr.clone(),
                        check_code: check_code.clone(),
                    },
                );
                // As Java, every accepted application moves the next id
                // on; unlike Java it also moves past an id applied out of
                // turn, so the next one offered is never taken.
                set.next_id = (set.next_id + 1).max(broker_id + 1);
            }
            Event::UpdateBrokerAddress {
                broker_name,
                broker_id,
                addr,
            } => {
                if let Some(m) = self
                    .sets
                    .get_mut(broker_name)
                    .and_then(|s| s.members.get_mut(broker_id))
                {
                    m.addr = addr.clone();
                }
            }
            Event::ElectMaster {
                broker_name,
                new_master,
            } => {
                if let Some(set) = self.sets.get_mut(broker_name) {
                    set.master_epoch += 1;
                    set.master = *new_master;
                    if let Some(id) = new_master {
                        set.sync_state_set = BTreeSet::from([*id]);
                        set.sync_state_set_epoch += 1;
                    }
                }
            }
            Event::AlterSyncStateSet {
                broker_name,
                sync_state_set,
            } => {
                if let Some(set) = self.sets.get_mut(broker_name) {
                    set.sync_state_set = sync_state_set.clone();
                    set.sync_state_set_epoch += 1;
                }
            }
            Event::CleanBrokerData { broker_name, ids } => {
                let Some(set) = self.sets.get_mut(broker_name) else {
                    return;
                };
                match ids {
                    None => {
                        self.sets.remove(broker_name);
                    }
                    Some(ids) => {
                        for id in ids {
                            set.members.remove(id);
                            set.sync_state_set.remove(id);
                        }
                        if set.master.is_some_and(|m| ids.contains(&m)) {
                            set.master = None;
                        }
                        if set.members.is_empty() || set.sync_state_set.is_empty() {
                            self.sets.remove(broker_name);
                        }
                    }
                }
            }
        }
    }
}
