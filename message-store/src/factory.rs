//! The single place that turns a backend name into a consume-queue store,
//! and knows which folders each one keeps.

use std::path::{Path, PathBuf};

use rmq_common::config::CqBackend;
use rmq_common::cq::{ConsumeQueueStore, MemoryConsumeQueueStore};
use rmq_common::StoreConfig;
use rmq_store_file::cq::FileConsumeQueueStore;
use rmq_store_file::StoreError;

/// Opens the backend the config names (`consumeQueueStore`).
pub fn open_consume_queue_store(
    config: &StoreConfig,
) -> Result<Box<dyn ConsumeQueueStore>, StoreError> {
    open_backend(config, config.consume_queue_store)
}

/// Opens `backend` with the settings of `config`.
pub fn open_backend(
    config: &StoreConfig,
    backend: CqBackend,
) -> Result<Box<dyn ConsumeQueueStore>, StoreError> {
    let store: Box<dyn ConsumeQueueStore> = match backend {
        CqBackend::File => Box::new(FileConsumeQueueStore::open(config)?),
        CqBackend::Rocksdb => Box::new(rmq_store_rocks::RocksConsumeQueueStore::open(config)?),
        CqBackend::Memory => Box::new(MemoryConsumeQueueStore::new()),
    };
    Ok(store)
}

/// The folder `backend` keeps everything in under the store root (none for
/// the in-memory model). The two real backends never share one, so both can
/// live in one store.
pub fn backend_dir(config: &StoreConfig, backend: CqBackend) -> Option<PathBuf> {
    match backend {
        CqBackend::File => Some(config.consume_queue_dir()),
        CqBackend::Rocksdb => Some(config.rocksdb_consume_queue_dir()),
        CqBackend::Memory => None,
    }
}

/// Removes `backend`'s folder (a dropped shadow, or stale files a new
/// shadow must not resume from). The backend must be closed.
pub fn remove_backend_files(config: &StoreConfig, backend: CqBackend) -> Result<(), StoreError> {
    let Some(dir) = backend_dir(config, backend) else {
        return Ok(());
    };
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::io(format!("remove {}", dir.display()), e)),
    }
}

/// (files, bytes allocated on disk) under `dir`: sparse and preallocated
/// files count what they occupy, not their length.
pub fn disk_use(dir: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let (mut files, mut bytes) = (0, 0);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(md) = e.metadata() else { continue };
            if md.is_dir() {
                stack.push(e.path());
            } else {
                files += 1;
                bytes += md.blocks() * 512;
            }
        }
    }
    (files, bytes)
}
