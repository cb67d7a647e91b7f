//! The single place that turns `consumeQueueStore` into a backend.

use rmq_common::config::CqBackend;
use rmq_common::cq::{ConsumeQueueStore, MemoryConsumeQueueStore};
use rmq_common::StoreConfig;
use rmq_store_file::cq::FileConsumeQueueStore;
use rmq_store_file::StoreError;

/// Opens the backend the config names.
pub fn open_consume_queue_store(
    config: &StoreConfig,
) -> Result<Box<dyn ConsumeQueueStore>, StoreError> {
    let store: Box<dyn ConsumeQueueStore> = match config.consume_queue_store {
        CqBackend::File => Box::new(FileConsumeQueueStore::open(config)?),
        CqBackend::Rocksdb => Box::new(rmq_store_rocks::RocksConsumeQueueStore::open(config)?),
        CqBackend::Memory => Box::new(MemoryConsumeQueueStore::new()),
    };
    Ok(store)
}
