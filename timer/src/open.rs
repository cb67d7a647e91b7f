//! Opening the timer store `timerStoreType` names.

use std::sync::Arc;

use rmq_common::{StoreConfig, TimerStoreType};

use crate::error::TimerError;
use crate::rocks::RocksTimerStore;
use crate::store::TimerStore;
use crate::wheel::WheelTimerStore;

/// Opens (recovering) the timer store the config names, under the store
/// root.
pub fn open_timer_store(config: &StoreConfig) -> Result<Arc<dyn TimerStore>, TimerError> {
    let root = &config.store_path_root_dir;
    Ok(match config.timer_store_type {
        TimerStoreType::Wheel => Arc::new(WheelTimerStore::open(
            root,
            config.timer_precision(),
            i64::try_from(config.mapped_file_size_timer_log_bytes).unwrap_or(i64::MAX),
        )?),
        TimerStoreType::Rocksdb => Arc::new(RocksTimerStore::open(root)?),
    })
}
