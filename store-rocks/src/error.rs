//! Errors of this crate and their mapping onto [`CqError`], the error every
//! consume-queue backend returns.

use rmq_common::cq::CqError;

/// A key or value read from the database does not have the 5.x layout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CodecError {
    /// The value has the wrong length for its kind.
    #[error("{kind} value has {actual} bytes, expected {expected}")]
    ValueLength {
        /// Entry, offset or checkpoint value.
        kind: &'static str,
        /// Bytes found.
        actual: usize,
        /// Bytes the layout requires.
        expected: usize,
    },
    /// The key is not `topicLen 0x01 topic 0x01 kind 0x01 queueId`.
    #[error("malformed offset key {key:02x?}: {reason}")]
    OffsetKey {
        /// The raw key.
        key: Vec<u8>,
        /// What does not match.
        reason: &'static str,
    },
}

impl From<CodecError> for CqError {
    fn from(e: CodecError) -> Self {
        CqError::Corrupt {
            detail: e.to_string(),
        }
    }
}

/// Wraps a RocksDB error with what was being done, keeping it as the source.
pub(crate) fn engine(context: impl Into<String>, source: rocksdb::Error) -> CqError {
    CqError::Engine {
        context: context.into(),
        source: Box::new(source),
    }
}

/// A closure for `map_err` that wraps a RocksDB error with `context`.
pub(crate) fn engine_ctx(context: &'static str) -> impl Fn(rocksdb::Error) -> CqError {
    move |e| engine(context, e)
}
