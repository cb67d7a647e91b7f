//! The entries of the controller's replicated log: each is a change that a
//! request (or the controller's own election) was allowed to make, decided
//! on the leader against the state it had, then applied by every replica
//! in log order ([`crate::ReplicaState::apply`]).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::state::BrokerId;

/// One change of the replicated state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Event {
    /// A broker took `broker_id` in its set (made on first use).
    ApplyBrokerId {
        /// Its cluster.
        cluster: String,
        /// Its set.
        broker_name: String,
        /// The id it took.
        broker_id: BrokerId,
        /// Its client address.
        addr: String,
        /// What it applied with.
        check_code: String,
    },
    /// A member registered from a new address.
    UpdateBrokerAddress {
        /// Its set.
        broker_name: String,
        /// Its id.
        broker_id: BrokerId,
        /// The new address.
        addr: String,
    },
    /// An election: the master epoch rises; with a new master, the
    /// SyncStateSet becomes just it (its epoch rises too); with none, the
    /// set has no master.
    ElectMaster {
        /// The set.
        broker_name: String,
        /// Who won, if anyone.
        new_master: Option<BrokerId>,
    },
    /// The master reported a new SyncStateSet; its epoch rises.
    AlterSyncStateSet {
        /// The set.
        broker_name: String,
        /// The new SyncStateSet.
        sync_state_set: BTreeSet<BrokerId>,
    },
    /// An operator removed members (`ids`), or the whole set (`None`).
    CleanBrokerData {
        /// The set.
        broker_name: String,
        /// The members to remove; `None`: the set.
        ids: Option<BTreeSet<BrokerId>>,
    },
}
