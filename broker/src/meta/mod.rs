//! Broker metadata persisted as the JSON files RocketMQ operators know:
//! `config/topics.json` and `config/consumerOffset.json`.

pub mod groups;
pub mod offsets;
pub mod topics;

pub use groups::SubscriptionGroupManager;
pub use offsets::ConsumerOffsetManager;
pub use topics::TopicConfigManager;

use std::path::Path;

use rmq_store_file::StoreError;

/// Reads a JSON file, or `None` if it does not exist.
pub(crate) fn read_json<T: serde::de::DeserializeOwned>(
    path: &Path,
) -> Result<Option<T>, StoreError> {
    match std::fs::read(path) {
        Ok(bytes) => {
            rmq_common::json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| StoreError::Corrupt {
                    path: path.to_owned(),
                    offset: 0,
                    detail: format!("not valid JSON: {e}"),
                })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StoreError::io(format!("read {}", path.display()), e)),
    }
}

/// Writes a JSON file atomically (temp file, fsync, rename).
pub(crate) fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), StoreError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| StoreError::io(format!("create {}", dir.display()), e))?;
    }
    let bytes = serde_json::to_vec_pretty(value).map_err(|e| {
        StoreError::io(
            format!("encode {}", path.display()),
            std::io::Error::other(e),
        )
    })?;
    rmq_store_file::root::write_atomically(path, &bytes)
}
