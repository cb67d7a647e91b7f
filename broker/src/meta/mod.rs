//! Broker metadata persisted as the JSON files RocketMQ operators know:
//! `config/topics.json`, `config/subscriptionGroup.json` and
//! `config/consumerOffset.json`. Requests change the tables in memory; the
//! [`MetaPersister`] writes them behind (see [`persist`]). Topic and group
//! changes are journaled one by one (see [`journal`]), so a change costs
//! the same with 100,000 entries as with 100.

pub mod groups;
pub mod journal;
pub mod offsets;
pub mod persist;
pub mod persister;
pub mod topics;

pub use groups::SubscriptionGroupManager;
pub use offsets::ConsumerOffsetManager;
pub use persist::{Generation, PersistTable, PERSIST_WAIT_TIMEOUT};
pub use persister::{MetaPersister, TABLE_WRITE_INTERVAL};
pub use topics::{TopicConfigManager, Unregistered};

use std::path::Path;

use crate::error::MetaError;

/// Reads a JSON file, or `None` if it does not exist.
pub(crate) fn read_json<T: serde::de::DeserializeOwned>(
    path: &Path,
) -> Result<Option<T>, MetaError> {
    match std::fs::read(path) {
        // Strict JSON first: the files this broker and Java's write are
        // plain JSON, and the strict decoder reads 100,000 topics several
        // times faster than the lenient one, which takes anything else.
        Ok(bytes) => serde_json::from_slice(&bytes)
            .or_else(|_| rmq_common::json::from_slice(&bytes))
            .map(Some)
            .map_err(|source| MetaError::Invalid {
                path: path.to_owned(),
                source,
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(MetaError::Io {
            action: "read",
            path: path.to_owned(),
            source,
        }),
    }
}

/// Writes a JSON file atomically (temp file, fsync, rename).
pub(crate) fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), MetaError> {
    write_bytes(path, &encode_json(path, value)?)
}

/// `value` as the JSON `path` holds (pretty, as RocketMQ writes it).
pub(crate) fn encode_json<T: serde::Serialize>(
    path: &Path,
    value: &T,
) -> Result<Vec<u8>, MetaError> {
    serde_json::to_vec_pretty(value).map_err(|source| MetaError::Encode {
        path: path.to_owned(),
        source,
    })
}

/// Writes `bytes` to `path` atomically (temp file, fsync, rename, folder
/// fsync), creating its folder first.
pub(crate) fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), MetaError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| MetaError::Io {
            action: "create the folder of",
            path: path.to_owned(),
            source,
        })?;
    }
    rmq_store_file::root::write_atomically(path, bytes).map_err(|source| MetaError::Write {
        path: path.to_owned(),
        source,
    })
}
