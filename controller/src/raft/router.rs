//! An in-process [`Transport`] for tests: every node's RPCs are calls on
//! the target's [`Raft`] handle, and a node can be cut off (as if dead or
//! partitioned: nothing reaches it and nothing it sends arrives) and
//! healed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use openraft::error::{InstallSnapshotError, RPCError, RaftError, RemoteError, Unreachable};
use openraft::network::RPCOption;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;
use parking_lot::Mutex;

use crate::raft::network::{RpcError, Transport};
use crate::raft::types::{NodeId, Raft, TypeConfig};

/// Why the router did not deliver an RPC.
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    /// The sender or the target is cut off.
    #[error("node {0} is cut off")]
    Cut(NodeId),
    /// No node of that id is registered.
    #[error("node {0} is not registered")]
    Unknown(NodeId),
}

#[derive(Default)]
struct Routes {
    nodes: BTreeMap<NodeId, Raft>,
    cut: BTreeSet<NodeId>,
}

impl std::fmt::Debug for Routes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Routes")
            .field("nodes", &self.nodes.keys())
            .field("cut", &self.cut)
            .finish()
    }
}

/// The nodes of an in-process group. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Router {
    routes: Arc<Mutex<Routes>>,
}

impl Router {
    /// No nodes.
    pub fn new() -> Self {
        Self::default()
    }

    /// The transport node `from` sends with.
    pub fn transport(&self, from: NodeId) -> RouterTransport {
        RouterTransport {
            from,
            router: self.clone(),
        }
    }

    /// Registers (or replaces) the node `id`.
    pub fn add(&self, id: NodeId, raft: Raft) {
        self.routes.lock().nodes.insert(id, raft);
    }

    /// Unregisters the node `id` (it stopped).
    pub fn remove(&self, id: NodeId) {
        self.routes.lock().nodes.remove(&id);
    }

    /// Cuts `id` off: RPCs to or from it are unreachable.
    pub fn cut(&self, id: NodeId) {
        self.routes.lock().cut.insert(id);
    }

    /// Undoes [`Router::cut`].
    pub fn heal(&self, id: NodeId) {
        self.routes.lock().cut.remove(&id);
    }

    // The error type is openraft's RPCError, which its network trait
    // returns unboxed.
    #[allow(clippy::result_large_err)]
    fn route<E: std::error::Error>(&self, from: NodeId, to: NodeId) -> Result<Raft, RpcError<E>> {
        let routes = self.routes.lock();
        let err = if routes.cut.contains(&from) {
            RouteError::Cut(from)
        } else if routes.cut.contains(&to) {
            RouteError::Cut(to)
        } else if let Some(raft) = routes.nodes.get(&to) {
            return Ok(raft.clone());
        } else {
            RouteError::Unknown(to)
        };
        Err(RPCError::Unreachable(Unreachable::new(&err)))
    }
}

// As `route`: openraft's RPCError, unboxed by its trait.
#[allow(clippy::result_large_err)]
fn remote<T, E: std::error::Error>(
    to: NodeId,
    res: Result<T, RaftError<NodeId, E>>,
) -> Result<T, RpcError<E>> {
    res.map_err(|e| RPCError::RemoteError(RemoteError::new(to, e)))
}

/// One node's sending side of a [`Router`].
#[derive(Debug, Clone)]
pub struct RouterTransport {
    from: NodeId,
    router: Router,
}

impl Transport for RouterTransport {
    async fn append_entries(
        &self,
        target: NodeId,
        _node: &BasicNode,
        rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RpcError> {
        let raft = self.router.route(self.from, target)?;
        remote(target, raft.append_entries(rpc).await)
    }

    async fn vote(
        &self,
        target: NodeId,
        _node: &BasicNode,
        rpc: VoteRequest<NodeId>,
        _option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RpcError> {
        let raft = self.router.route(self.from, target)?;
        remote(target, raft.vote(rpc).await)
    }

    async fn install_snapshot(
        &self,
        target: NodeId,
        _node: &BasicNode,
        rpc: InstallSnapshotRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<InstallSnapshotResponse<NodeId>, RpcError<InstallSnapshotError>> {
        let raft = self.router.route(self.from, target)?;
        remote(target, raft.install_snapshot(rpc).await)
    }
}
