//! RocketMQ's remoting protocol: the frame codec, the JSON and ROCKETMQ
//! (binary) headers, the request/response/language codes, and typed custom
//! headers read leniently from `extFields`.
//!
//! Pure byte work with no I/O: the broker wraps [`RemotingCommand::encode`]
//! and [`RemotingCommand::decode`] in a tokio codec. Decoding never panics;
//! every malformed input yields a [`RemotingError`] that names the problem.

mod binary_header;
pub mod body;
pub mod catalog;
pub mod codes;
pub mod command;
pub mod error;
pub mod ext_fields;
mod frame;
pub mod header;
pub(crate) mod json_header;
pub(crate) mod json_header_fast;
pub mod language;
pub mod requests;
pub mod version;

#[cfg(test)]
mod tests;

pub use codes::{RequestCode, ResponseCode};
pub use command::{RemotingCommand, SerializeType, FLAG_ONEWAY, FLAG_RESPONSE};
pub use error::RemotingError;
pub use ext_fields::{ExtFields, HeaderError};
pub use frame::MAX_FRAME_BYTES;
pub use header::pull_sys_flag;
pub use header::{
    end_state, CheckTransactionStateRequestHeader, ConsumerSendMsgBackRequestHeader,
    EndTransactionRequestHeader, PullMessageRequestHeader, PullMessageResponseHeader,
    SendMessageRequestHeader, SendMessageResponseHeader,
};
pub use header::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
    NotificationRequestHeader, NotificationResponseHeader, PeekMessageRequestHeader,
    PollingInfoRequestHeader, PollingInfoResponseHeader, PopMessageRequestHeader,
    PopMessageResponseHeader,
};
pub use language::LanguageCode;
pub use requests::{BrokerRequest, DecodeHeader, NoHeader, Rule};
