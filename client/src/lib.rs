//! The client side of RocketMQ's remoting protocol, as this project's tools
//! and tests (and the broker, towards its NameServers) use it: a framed
//! connection that matches answers to requests, one-shot calls (send, pull,
//! offsets), POP calls (pop, ack, batch ack), a route-aware producer and a
//! transactional producer.
#![forbid(unsafe_code)]

pub mod calls;
pub mod codec;
pub mod connector;
pub mod pop;
pub mod producer;
pub mod remoting;
pub mod tls;
pub mod transaction;

pub use calls::{
    call, commit_offset, connect, pull, queue_offset, request, send, send_back, OutMessage,
    PullRequest, PullResult, SdkError, SendCode, SendResult, DEFAULT_TIMEOUT,
};
pub use codec::{CodecError, RemotingCodec};
pub use connector::Connector;
pub use producer::{Producer, ProducerError, ProducerOptions, Sent};
pub use remoting::{ClientError, RemotingClient};
pub use tls::{TlsClient, TlsClientOptions, TlsError};
pub use transaction::{CheckedHalf, LocalTxState, TransactionProducer};
