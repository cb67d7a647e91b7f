//! Typed custom headers read from and written to a command's `extFields`,
//! with the field names Java uses, one file per request family. Each
//! request header implements [`crate::remoting::DecodeHeader`], which the
//! request table ([`crate::remoting::requests`]) decodes requests with.
//!
//! Parsing is lenient (see [`super::ExtFields`]): only the fields a broker
//! cannot work without are required; the rest default to what Java clients
//! send when they leave them out.

pub mod acl;
pub mod admin;
pub mod client;
pub mod consumer;
pub mod cq_admin;
pub mod group;
pub mod inspect;
pub mod offset;
pub mod pop;
pub mod pull;
pub mod pull_sys_flag;
pub mod query;
pub mod recall;
pub mod send;
pub mod send_back;
pub mod stats;
pub mod topic;
pub mod transaction;

pub use acl::{DeleteAclRequestHeader, GlobalWhiteAddrsRequestHeader, UpdateAclRequestHeader};
pub use admin::ResumeCheckHalfRequestHeader;
pub use client::{GetConsumerListByGroupRequestHeader, UnregisterClientRequestHeader};
pub use consumer::{
    ConsumeMessageDirectlyRequestHeader, ConsumerRunningInfoRequestHeader,
    ConsumerStatusRequestHeader,
};
pub use cq_admin::{CqBackendRequestHeader, CqVerifyRequestHeader};
pub use group::{
    CloneGroupOffsetRequestHeader, ConsumerConnectionRequestHeader, CorrectionOffsetRequestHeader,
    DeleteGroupRequestHeader, GetGroupConfigRequestHeader, ProducerConnectionRequestHeader,
    ResetOffsetRequestHeader,
};
pub use inspect::{
    BrokerConsumeStatsRequestHeader, ConsumeTimeSpanRequestHeader, QueryConsumeQueueRequestHeader,
    ViewBrokerStatsRequestHeader,
};
pub use offset::{
    QueryConsumerOffsetRequestHeader, QueueRequestHeader, SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
};
pub use pop::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
    NotificationRequestHeader, NotificationResponseHeader, PeekMessageRequestHeader,
    PollingInfoRequestHeader, PollingInfoResponseHeader, PopMessageRequestHeader,
    PopMessageResponseHeader,
};
pub use query::{QueryMessageRequestHeader, ViewMessageByIdRequestHeader};
pub use recall::RecallMessageRequestHeader;
pub use stats::{
    ConsumeStatsRequestHeader, TopicConsumeByWhoRequestHeader, TopicStatsRequestHeader,
};
pub use topic::{CreateTopicRequestHeader, DeleteTopicRequestHeader, GetTopicConfigRequestHeader};

pub use pull::{PullMessageRequestHeader, PullMessageResponseHeader};
pub use send::{SendMessageRequestHeader, SendMessageResponseHeader};
pub use send_back::ConsumerSendMsgBackRequestHeader;
pub use transaction::{end_state, CheckTransactionStateRequestHeader, EndTransactionRequestHeader};

use std::collections::BTreeMap;

/// Inserts `value` under `key` when present.
fn put_opt<T: ToString>(map: &mut BTreeMap<String, String>, key: &str, value: Option<T>) {
    if let Some(value) = value {
        map.insert(key.to_owned(), value.to_string());
    }
}

/// Inserts `value` under `key`.
fn put<T: ToString>(map: &mut BTreeMap<String, String>, key: &str, value: T) {
    map.insert(key.to_owned(), value.to_string());
}

/// How a field of a header declared with [`ext_header!`] is read.
pub(crate) mod read {
    use crate::remoting::ext_fields::{ExtFields, HeaderError};

    /// Required, trimmed; blank counts as missing.
    pub fn string(ext: &ExtFields<'_>, f: &'static str) -> Result<String, HeaderError> {
        ext.req_str(f).map(str::to_owned)
    }

    /// Trimmed, `None` when absent or blank: a field the handler requires
    /// only after checks of its own (it answers [`HeaderError::Missing`]
    /// then).
    pub fn opt_string(ext: &ExtFields<'_>, f: &'static str) -> Result<Option<String>, HeaderError> {
        Ok(ext.req_str(f).ok().map(str::to_owned))
    }

    /// As sent, untrimmed, blank included.
    pub fn raw(ext: &ExtFields<'_>, f: &'static str) -> Result<Option<String>, HeaderError> {
        Ok(ext.get_str(f).map(str::to_owned))
    }

    /// As sent, untrimmed; `None` when absent or empty.
    pub fn non_empty(ext: &ExtFields<'_>, f: &'static str) -> Result<Option<String>, HeaderError> {
        Ok(ext.get_str(f).filter(|s| !s.is_empty()).map(str::to_owned))
    }

    /// A required `i32`.
    pub fn i32(ext: &ExtFields<'_>, f: &'static str) -> Result<i32, HeaderError> {
        ext.req_i32(f)
    }

    /// A required `i64`.
    pub fn i64(ext: &ExtFields<'_>, f: &'static str) -> Result<i64, HeaderError> {
        ext.req_i64(f)
    }

    /// An optional `i32`.
    pub fn opt_i32(ext: &ExtFields<'_>, f: &'static str) -> Result<Option<i32>, HeaderError> {
        ext.get_i32(f)
    }

    /// An optional `i64`.
    pub fn opt_i64(ext: &ExtFields<'_>, f: &'static str) -> Result<Option<i64>, HeaderError> {
        ext.get_i64(f)
    }

    /// An optional boolean.
    pub fn opt_bool(ext: &ExtFields<'_>, f: &'static str) -> Result<Option<bool>, HeaderError> {
        ext.get_bool(f)
    }
}

/// Declares a request header read from `extFields`: each field with the
/// [`read`] function that reads it and its wire name, read in the order
/// written (so the first missing field is the one named), with
/// [`crate::remoting::DecodeHeader`].
macro_rules! ext_header {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident : $ty:ty = $how:ident($wire:literal), )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $crate::remoting::requests::DecodeHeader for $name {
            #[allow(unused_variables)]
            fn decode(
                ext: &$crate::remoting::ext_fields::ExtFields<'_>,
            ) -> Result<Self, $crate::remoting::ext_fields::HeaderError> {
                Ok(Self {
                    $( $field: $crate::remoting::header::read::$how(ext, $wire)?, )*
                })
            }
        }
    };
}
pub(crate) use ext_header;
