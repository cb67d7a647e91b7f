//! [`TcpTransport`]: Raft's RPCs to the peers over remoting connections to
//! their controller ports (see [`super::raft_rpc`]), one connection per
//! peer, opened on first use and again after it failed.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::RPCOption;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;
use rmq_client::{ClientError, Connector, RemotingClient};
use rmq_common::remoting::{RemotingCommand, ResponseCode};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::raft::network::{RpcError, Transport};
use crate::raft::types::{NodeId, TypeConfig};
use crate::server::raft_rpc::{APPEND_ENTRIES, INSTALL_SNAPSHOT, VOTE};

/// Why an RPC did not reach the peer's Raft node.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The peer's address does not resolve.
    #[error("resolving {addr}: {source}")]
    Resolve {
        /// The address.
        addr: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The peer's address resolves to nothing.
    #[error("{0} resolves to no address")]
    NoAddress(String),
    /// Connecting took longer than allowed.
    #[error("connecting to {addr} took over {timeout:?}")]
    ConnectTimeout {
        /// The address.
        addr: SocketAddr,
        /// The time allowed.
        timeout: Duration,
    },
    /// The connection or the call failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The request could not be encoded.
    #[error("encoding the raft request: {0}")]
    Encode(#[source] serde_json::Error),
    /// The answer could not be decoded.
    #[error("decoding the raft answer: {0}")]
    Decode(#[source] serde_json::Error),
    /// The peer answered with an error code.
    #[error("peer answered code {code}: {remark}")]
    Refused {
        /// The response code.
        code: i32,
        /// Its remark.
        remark: String,
    },
}

type Slot = Arc<tokio::sync::Mutex<Option<Arc<RemotingClient>>>>;

/// Sends Raft RPCs over one remoting connection per peer.
pub struct TcpTransport {
    connector: Connector,
    connect_timeout: Duration,
    peers: parking_lot::Mutex<HashMap<NodeId, Slot>>,
}

impl std::fmt::Debug for TcpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpTransport")
            .field("connect_timeout", &self.connect_timeout)
            .finish_non_exhaustive()
    }
}

struct PeerClient<'a> {
    target: NodeId,
    addr: &'a str,
}

impl TcpTransport {
    /// Connects with `connector`, waiting at most `connect_timeout` for a
    /// connection.
    pub fn new(connector: Connector, connect_timeout: Duration) -> Self {
        Self {
            connector,
            connect_timeout,
            peers: parking_lot::Mutex::new(HashMap::new()),
        }
    }

    fn slot(&self, target: NodeId) -> Slot {
        Arc::clone(self.peers.lock().entry(target).or_default())
    }

    /// The open connection to `peer`, opened now if there is none or the
    /// last one closed.
    async fn client(&self, peer: &PeerClient<'_>) -> Result<Arc<RemotingClient>, TransportError> {
        let slot = self.slot(peer.target);
        let mut held = slot.lock().await;
        if let Some(c) = held.as_ref().filter(|c| !c.is_closed()) {
            return Ok(Arc::clone(c));
        }
        *held = None;
        let addr = tokio::net::lookup_host(peer.addr)
            .await
            .map_err(|source| TransportError::Resolve {
                addr: peer.addr.to_owned(),
                source,
            })?
            .next()
            .ok_or_else(|| TransportError::NoAddress(peer.addr.to_owned()))?;
        let client = tokio::time::timeout(self.connect_timeout, self.connector.connect(addr))
            .await
            .map_err(|_| TransportError::ConnectTimeout {
                addr,
                timeout: self.connect_timeout,
            })??;
        let client = Arc::new(client);
        *held = Some(Arc::clone(&client));
        Ok(client)
    }

    /// Forgets `client` as the connection to `target` (it failed).
    async fn drop_client(&self, target: NodeId, client: &Arc<RemotingClient>) {
        let slot = self.slot(target);
        let mut held = slot.lock().await;
        if held.as_ref().is_some_and(|c| Arc::ptr_eq(c, client)) {
            *held = None;
        }
    }

    // openraft's RPCError is large and returned unboxed by its trait.
    #[allow(clippy::result_large_err)]
    async fn call<Q, R, E>(
        &self,
        target: NodeId,
        node: &BasicNode,
        code: i32,
        rpc: &Q,
        option: &RPCOption,
    ) -> Result<R, RpcError<E>>
    where
        Q: Serialize,
        R: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let peer = PeerClient {
            target,
            addr: &node.addr,
        };
        let client = self
            .client(&peer)
            .await
            .map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))?;
        let body = serde_json::to_vec(rpc)
            .map_err(|e| RPCError::Network(NetworkError::new(&TransportError::Encode(e))))?;
        let req = RemotingCommand::request(code).with_body(body);
        let resp = match client.invoke(req, option.hard_ttl()).await {
            Ok(resp) => resp,
            Err(e) => {
                if !matches!(e, ClientError::Timeout { .. }) {
                    self.drop_client(target, &client).await;
                }
                return Err(RPCError::Network(NetworkError::new(
                    &TransportError::Client(e),
                )));
            }
        };
        if resp.code != ResponseCode::Success.code() {
            let e = TransportError::Refused {
                code: resp.code,
                remark: resp.remark.unwrap_or_default(),
            };
            return Err(RPCError::Network(NetworkError::new(&e)));
        }
        let answer: Result<R, RaftError<NodeId, E>> =
            serde_json::from_slice(resp.body.as_deref().unwrap_or_default())
                .map_err(|e| RPCError::Network(NetworkError::new(&TransportError::Decode(e))))?;
        answer.map_err(|e| RPCError::RemoteError(RemoteError::new(target, e)))
    }
}

impl Transport for TcpTransport {
    async fn append_entries(
        &self,
        target: NodeId,
        node: &BasicNode,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RpcError> {
        self.call(target, node, APPEND_ENTRIES, &rpc, &option).await
    }

    async fn vote(
        &self,
        target: NodeId,
        node: &BasicNode,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RpcError> {
        self.call(target, node, VOTE, &rpc, &option).await
    }

    async fn install_snapshot(
        &self,
        target: NodeId,
        node: &BasicNode,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<InstallSnapshotResponse<NodeId>, RpcError<InstallSnapshotError>> {
        self.call(target, node, INSTALL_SNAPSHOT, &rpc, &option)
            .await
    }
}
