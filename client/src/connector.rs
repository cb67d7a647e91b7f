//! How connections are opened: the credentials every request is signed
//! with (a broker or NameServer with `aclEnable` checks them), so a caller
//! that connects to many servers (the broker towards its NameServers and
//! its master, the tools) says it once.

use std::net::SocketAddr;

use rmq_common::acl::Credentials;
use rmq_common::remoting::RemotingCommand;
use tokio::sync::mpsc;

use crate::remoting::{ClientError, RemotingClient};

/// Opens [`RemotingClient`]s that all sign with the same credentials.
#[derive(Debug, Clone, Default)]
pub struct Connector {
    credentials: Option<Credentials>,
}

impl Connector {
    /// Plain connections, unsigned requests.
    pub fn new() -> Self {
        Self::default()
    }

    /// Signs every request with `credentials` (none: unsigned).
    pub fn with_credentials(mut self, credentials: Option<Credentials>) -> Self {
        self.credentials = credentials;
        self
    }

    /// The credentials requests are signed with.
    pub fn credentials(&self) -> Option<&Credentials> {
        self.credentials.as_ref()
    }

    /// Connects to `addr`.
    pub async fn connect(&self, addr: SocketAddr) -> Result<RemotingClient, ClientError> {
        Ok(self.dress(RemotingClient::connect(addr).await?))
    }

    /// Connects to `addr`; requests from the server go to `handler` (see
    /// [`RemotingClient::connect_with_handler`]).
    pub async fn connect_with_handler(
        &self,
        addr: SocketAddr,
        handler: mpsc::Sender<RemotingCommand>,
    ) -> Result<RemotingClient, ClientError> {
        Ok(self.dress(RemotingClient::connect_with_handler(addr, handler).await?))
    }

    fn dress(&self, client: RemotingClient) -> RemotingClient {
        match &self.credentials {
            Some(c) => client.with_credentials(c.clone()),
            None => client,
        }
    }
}
