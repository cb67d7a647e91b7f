//! How a controller replica reaches its peers: a [`Transport`] carries
//! openraft's three RPCs to a node; [`Network`] adapts any transport to
//! openraft's network traits. Storage never sees the transport, so the TCP
//! transport (on the controller's port) is one more implementation of
//! [`Transport`], next to the in-process [`crate::raft::Router`] of tests.

use std::future::Future;
use std::sync::Arc;

use openraft::error::{InstallSnapshotError, RPCError, RaftError};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;

use crate::raft::types::{NodeId, TypeConfig};

/// What an RPC fails with: the peer unreachable, or its own Raft error.
pub type RpcError<E = openraft::error::Infallible> =
    RPCError<NodeId, BasicNode, RaftError<NodeId, E>>;

/// Carries Raft RPCs from this node to `target` (whose address is
/// `node.addr`). A transport that cannot reach the peer answers
/// [`RPCError::Unreachable`]; openraft then backs off and retries.
pub trait Transport: Send + Sync + 'static {
    /// Log replication and heartbeats.
    fn append_entries(
        &self,
        target: NodeId,
        node: &BasicNode,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> impl Future<Output = Result<AppendEntriesResponse<NodeId>, RpcError>> + Send;

    /// A candidate asking for a vote.
    fn vote(
        &self,
        target: NodeId,
        node: &BasicNode,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> impl Future<Output = Result<VoteResponse<NodeId>, RpcError>> + Send;

    /// One chunk of a snapshot sent to a follower that is too far behind.
    fn install_snapshot(
        &self,
        target: NodeId,
        node: &BasicNode,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> impl Future<Output = Result<InstallSnapshotResponse<NodeId>, RpcError<InstallSnapshotError>>>
           + Send;
}

/// openraft's network factory over a [`Transport`].
#[derive(Debug)]
pub struct Network<T> {
    transport: Arc<T>,
}

impl<T> Network<T> {
    /// Wraps `transport`.
    pub fn new(transport: T) -> Self {
        Self {
            transport: Arc::new(transport),
        }
    }
}

/// A connection to one peer (openraft makes one per replication stream).
#[derive(Debug)]
pub struct Connection<T> {
    transport: Arc<T>,
    target: NodeId,
    node: BasicNode,
}

impl<T: Transport> RaftNetworkFactory<TypeConfig> for Network<T> {
    type Network = Connection<T>;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Self::Network {
        Connection {
            transport: self.transport.clone(),
            target,
            node: node.clone(),
        }
    }
}

impl<T: Transport> RaftNetwork<TypeConfig> for Connection<T> {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RpcError> {
        self.transport
            .append_entries(self.target, &self.node, rpc, option)
            .await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<InstallSnapshotResponse<NodeId>, RpcError<InstallSnapshotError>> {
        self.transport
            .install_snapshot(self.target, &self.node, rpc, option)
            .await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RpcError> {
        self.transport
            .vote(self.target, &self.node, rpc, option)
            .await
    }
}
