//! How connections are opened: plain or TLS, and the credentials every
//! request is signed with (a broker or NameServer with `aclEnable` checks
//! them), so a caller that connects to many servers (the broker towards its
//! NameServers and its master, the tools) says it once.

use std::net::SocketAddr;

use rmq_common::acl::Credentials;
use rmq_common::remoting::RemotingCommand;
use tokio::sync::mpsc;

use crate::remoting::{ClientError, RemotingClient};
use crate::tls::TlsClient;

/// Opens [`RemotingClient`]s that all sign with the same credentials.
#[derive(Debug, Clone, Default)]
pub struct Connector {
    credentials: Option<Credentials>,
    tls: Option<TlsClient>,
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

    /// Opens TLS connections with `tls` (none: plain).
    pub fn with_tls(mut self, tls: Option<TlsClient>) -> Self {
        self.tls = tls;
        self
    }

    /// The TLS side, when connections use TLS.
    pub fn tls(&self) -> Option<&TlsClient> {
        self.tls.as_ref()
    }

    /// The credentials requests are signed with.
    pub fn credentials(&self) -> Option<&Credentials> {
        self.credentials.as_ref()
    }

    /// Connects to `addr`.
    pub async fn connect(&self, addr: SocketAddr) -> Result<RemotingClient, ClientError> {
        let client = match &self.tls {
            Some(tls) => RemotingClient::connect_tls(addr, tls, None).await?,
            None => RemotingClient::connect(addr).await?,
        };
        Ok(self.dress(client))
    }

    /// Connects to `addr`; requests from the server go to `handler` (see
    /// [`RemotingClient::connect_with_handler`]).
    pub async fn connect_with_handler(
        &self,
        addr: SocketAddr,
        handler: mpsc::Sender<RemotingCommand>,
    ) -> Result<RemotingClient, ClientError> {
        let client = match &self.tls {
            Some(tls) => RemotingClient::connect_tls(addr, tls, Some(handler)).await?,
            None => RemotingClient::connect_with_handler(addr, handler).await?,
        };
        Ok(self.dress(client))
    }

    fn dress(&self, client: RemotingClient) -> RemotingClient {
        match &self.credentials {
            Some(c) => client.with_credentials(c.clone()),
            None => client,
        }
    }
}
