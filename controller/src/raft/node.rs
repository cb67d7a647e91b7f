//! [`ControllerRaft`]: one controller replica's Raft node, as the rest of
//! the controller uses it: start it on a store folder and a transport,
//! initialize the group once, propose events on the leader, read the
//! replicated state anywhere.

use std::collections::BTreeMap;
use std::path::Path;

use openraft::error::{ClientWriteError, InitializeError, RaftError};
use openraft::{BasicNode, ServerState};
use parking_lot::RwLockReadGuard;

use crate::event::Event;
use crate::raft::config::RaftSettings;
use crate::raft::error::{InitError, ProposeError, ShutdownError, StartError};
use crate::raft::log_store::FileLogStore;
use crate::raft::network::{Network, Transport};
use crate::raft::state_machine::{SharedState, StateMachineStore};
use crate::raft::types::{NodeId, Raft};
use crate::state::ReplicaState;

/// What [`ControllerRaft::initialize`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Initialized {
    /// The group was formed now.
    Now,
    /// This node already had a log or a vote (a restart, or another
    /// member initialized first): nothing was done.
    Already,
}

/// One controller replica's Raft node.
pub struct ControllerRaft {
    id: NodeId,
    members: BTreeMap<NodeId, BasicNode>,
    raft: Raft,
    state: SharedState,
    settings: RaftSettings,
}

impl std::fmt::Debug for ControllerRaft {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerRaft")
            .field("id", &self.id)
            .field("members", &self.members)
            .finish_non_exhaustive()
    }
}

impl ControllerRaft {
    /// Starts node `id` of the group `members` (every voter, this node
    /// included, with its address) on the store folder `dir`, reaching its
    /// peers through `transport`. Its log, vote and snapshot are read back
    /// from `dir`.
    pub async fn start<T: Transport>(
        id: NodeId,
        members: BTreeMap<NodeId, BasicNode>,
        dir: &Path,
        transport: T,
        settings: RaftSettings,
    ) -> Result<Self, StartError> {
        let config = settings.openraft_config()?;
        let log = FileLogStore::open(dir)?;
        let sm = StateMachineStore::open(dir)?;
        let state = sm.shared();
        let raft = Raft::new(id, config, Network::new(transport), log, sm).await?;
        Ok(Self {
            id,
            members,
            raft,
            state,
            settings,
        })
    }

    /// Forms the group of the members given at start, if this node has
    /// neither log nor vote yet. Call it on one member of a new group (on
    /// each is harmless: the others answer [`Initialized::Already`] once
    /// they heard from it, or form the same group).
    pub async fn initialize(&self) -> Result<Initialized, InitError> {
        match self.raft.initialize(self.members.clone()).await {
            Ok(()) => Ok(Initialized::Now),
            Err(RaftError::APIError(InitializeError::NotAllowed(_))) => Ok(Initialized::Already),
            Err(e) => Err(InitError(e)),
        }
    }

    /// Appends `event` to the log and waits until it is committed and
    /// applied here; answers its log index. On a follower:
    /// [`ProposeError::NotLeader`] with the leader it knows.
    pub async fn propose(&self, event: Event) -> Result<u64, ProposeError> {
        let timeout = self.settings.propose_timeout();
        let res = tokio::time::timeout(timeout, self.raft.client_write(event))
            .await
            .map_err(|_| ProposeError::Timeout(timeout))?;
        match res {
            Ok(r) => Ok(r.data.index),
            Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => {
                Err(ProposeError::NotLeader {
                    leader: f.leader_id,
                    addr: f.leader_node.map(|n| n.addr),
                })
            }
            Err(RaftError::APIError(e)) => Err(ProposeError::Refused(e)),
            Err(RaftError::Fatal(f)) => Err(ProposeError::Fatal(f)),
        }
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// Whether this node believes it leads the group now.
    pub fn is_leader(&self) -> bool {
        let m = self.raft.metrics();
        let m = m.borrow();
        m.state == ServerState::Leader && m.current_leader == Some(self.id)
    }

    /// The leader this node knows of, if any.
    pub fn leader(&self) -> Option<NodeId> {
        self.raft.metrics().borrow().current_leader
    }

    /// The replicated state as applied here (hold the guard briefly: the
    /// state machine waits for it).
    pub fn state(&self) -> RwLockReadGuard<'_, ReplicaState> {
        self.state.read()
    }

    /// The shared handle of the replicated state.
    pub fn shared_state(&self) -> SharedState {
        self.state.clone()
    }

    /// The openraft node: its metrics and `wait()`, and the entry points a
    /// transport's server side calls.
    pub fn raft(&self) -> &Raft {
        &self.raft
    }

    /// Stops the node: its Raft core and replication tasks end; what was
    /// acknowledged is on disk already.
    pub async fn shutdown(self) -> Result<(), ShutdownError> {
        self.raft.shutdown().await.map_err(ShutdownError)
    }
}
