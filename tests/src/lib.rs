//! Shared helpers for the black-box, conformance and crash tests.
#![forbid(unsafe_code)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rmq_common::config::CqBackend;
use rmq_common::cq::{ConsumeQueueStore, MemoryConsumeQueueStore};
use rmq_common::message::record::RecordView;
use rmq_common::message::MessageToStore;
use rmq_common::time::{Clock, SystemClock};
use rmq_common::StoreConfig;
use rmq_store::MessageStore;
use rmq_store::{GetRequest, GetStatus, TagFilter};

pub mod apache;
pub mod child;
pub mod controller_fixture;
pub mod fixtures;
pub mod grpc_proxy;
pub mod java;
pub mod proxy;
pub mod sdk5;

pub use fixtures::{broker_settings, metered_settings, start_broker};

/// Longest a test waits for reput to dispatch what was appended.
pub const DISPATCH_TIMEOUT: Duration = Duration::from_secs(60);

/// Backends a store-level test runs against.
pub const BACKENDS: [CqBackend; 3] = [CqBackend::File, CqBackend::Rocksdb, CqBackend::Memory];

/// A small-file config for tests: 64 KiB CommitLog segments, 1,000-unit CQ
/// files, tiny index files.
pub fn small_config(root: &Path, backend: CqBackend) -> StoreConfig {
    StoreConfig {
        mapped_file_size_commit_log_bytes: 64 * 1024,
        mapped_file_size_consume_queue_bytes: 20 * 1000,
        max_message_size_bytes: 16 * 1024,
        max_hash_slot_num: 1024,
        max_index_num: 4096,
        consume_queue_store: backend,
        ..StoreConfig::with_root(root)
    }
}

/// Opens a store; the memory backend is handed in (it is not a config choice).
pub fn open_store(config: &StoreConfig) -> Result<MessageStore, rmq_store_file::StoreError> {
    open_store_with_clock(config, Arc::new(SystemClock))
}

/// [`open_store`] with an injected clock (store times, schedule due times).
pub fn open_store_with_clock(
    config: &StoreConfig,
    clock: Arc<dyn Clock>,
) -> Result<MessageStore, rmq_store_file::StoreError> {
    let cq: Option<Box<dyn ConsumeQueueStore>> = match config.consume_queue_store {
        CqBackend::Memory => Some(Box::new(MemoryConsumeQueueStore::new())),
        _ => None,
    };
    let mut config = config.clone();
    if config.consume_queue_store == CqBackend::Memory {
        // `validate` refuses the memory model in a config file; the store
        // gets it handed in instead, so name the file backend here.
        config.consume_queue_store = CqBackend::File;
    }
    MessageStore::open_with(config, clock, cq)
}

/// A message with a body, a tag and a key.
pub fn message(topic: &str, queue_id: i32, body: impl Into<Vec<u8>>) -> MessageToStore {
    MessageToStore::new(topic, queue_id, body)
}

/// Waits (bounded) until reput has dispatched everything appended so far.
pub fn wait_dispatched(store: &MessageStore) {
    let target = store.max_phy_offset();
    assert!(
        store.wait_dispatched_to(target, DISPATCH_TIMEOUT),
        "dispatch did not reach {target} within {DISPATCH_TIMEOUT:?} (at {})",
        store.reput_from_offset()
    );
}

/// One message read back through the consume queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadBack {
    /// Its queue offset.
    pub queue_offset: i64,
    /// CommitLog offset.
    pub phy_offset: i64,
    /// Body.
    pub body: Vec<u8>,
    /// QUEUEOFFSET field of the record.
    pub stored_queue_offset: i64,
}

/// Reads a whole queue from its min offset through `get_message`, checking
/// every record's CRC.
pub fn read_queue(store: &MessageStore, topic: &str, queue_id: i32) -> Vec<ReadBack> {
    let mut out = Vec::new();
    let mut offset = store.min_offset_in_queue(topic, queue_id).unwrap();
    for _ in 0..1_000_000 {
        let r = store
            .get_message(&GetRequest::new(
                topic,
                queue_id,
                offset,
                64,
                &TagFilter::all(),
            ))
            .unwrap();
        if r.status != GetStatus::Found {
            break;
        }
        for (sel, qo) in r.messages.iter().zip(&r.queue_offsets) {
            let v = RecordView::parse(sel.bytes(), true).expect("record with valid CRC");
            out.push(ReadBack {
                queue_offset: *qo,
                phy_offset: v.physical_offset(),
                body: v.body().to_vec(),
                stored_queue_offset: v.queue_offset(),
            });
        }
        offset = r.next_begin_offset;
    }
    out
}

/// Copies a store folder (for cut-and-recover loops).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The body the crash writer sends for `token`: the token repeated to `len` bytes.
pub fn crash_body(token: &str, len: usize) -> Vec<u8> {
    token.bytes().cycle().take(len).collect()
}

/// A disk whose used fraction a test sets (per mille), for the store's
/// retention and disk-full checks.
#[derive(Debug)]
pub struct FakeDisk(std::sync::atomic::AtomicU64);

impl FakeDisk {
    /// A disk `ratio` (0.0..=1.0) used.
    pub fn new(ratio: f64) -> Arc<Self> {
        let d = Arc::new(Self(std::sync::atomic::AtomicU64::new(0)));
        d.set(ratio);
        d
    }

    /// Sets the used fraction.
    pub fn set(&self, ratio: f64) {
        self.0.store(
            (ratio * 1000.0) as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
    }
}

impl rmq_store::clean::DiskUsage for FakeDisk {
    fn used_ratio(&self) -> Option<f64> {
        Some(self.0.load(std::sync::atomic::Ordering::Relaxed) as f64 / 1000.0)
    }
}
