//! Which protocol a load's clients speak: the remoting protocol (the
//! broker's own client) or the 5.x gRPC API. Topics, warm-up and offsets
//! are set up over remoting either way; only the measured sends and
//! receives change.

use std::net::SocketAddr;

use super::grpc_client::GrpcTarget;

/// `--protocol`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// SEND_MESSAGE_V2 and PULL_MESSAGE over remoting.
    #[default]
    Remoting,
    /// SendMessage, and ReceiveMessage + AckMessage (simple consumers of
    /// one group), on the broker's gRPC port.
    Grpc,
}

/// Where a load's clients connect.
#[derive(Debug, Clone)]
pub enum Wire {
    /// To the remoting address the load is given.
    Remoting,
    /// To a gRPC port.
    Grpc(GrpcTarget),
}

impl Wire {
    /// The wire for `protocol`; gRPC needs its address.
    pub fn new(protocol: Protocol, grpc: Option<SocketAddr>) -> Result<Self, String> {
        match (protocol, grpc) {
            (Protocol::Remoting, _) => Ok(Self::Remoting),
            (Protocol::Grpc, Some(addr)) => Ok(Self::Grpc(GrpcTarget::new(addr))),
            (Protocol::Grpc, None) => {
                Err("--protocol grpc needs --grpc ADDR (the broker's grpcServerPort)".into())
            }
        }
    }

    /// Its protocol.
    pub fn protocol(&self) -> Protocol {
        match self {
            Self::Remoting => Protocol::Remoting,
            Self::Grpc(_) => Protocol::Grpc,
        }
    }
}
