//! Typed custom headers read from and written to a command's `extFields`,
//! with the field names Java uses.
//!
//! Parsing is lenient (see [`super::ExtFields`]): only the fields a broker
//! cannot work without are required; the rest default to what Java clients
//! send when they leave them out.

pub mod pull;
pub mod pull_sys_flag;
pub mod send;
pub mod send_back;
pub mod transaction;

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
