//! One conformance suite for every consume-queue backend: each body runs
//! against the in-memory model, the file backend and the RocksDB backend.

use std::sync::Arc;

use rmq_common::config::CqBackend;
use rmq_common::cq::{
    Boundary, ConsumeQueueStore, CqError, CqPut, CqUnit, MemoryConsumeQueueStore, QueueKey,
    StoreTimeSource,
};
use rmq_common::StoreConfig;
use rmq_store_file::cq::FileConsumeQueueStore;
use rmq_store_rocks::RocksConsumeQueueStore;

/// A backend under test that can be closed and opened again on its folder.
pub struct Harness {
    kind: CqBackend,
    pub config: StoreConfig,
    _dir: tempfile::TempDir,
    store: Option<Arc<dyn ConsumeQueueStore>>,
}

impl Harness {
    pub fn new(kind: CqBackend) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = StoreConfig {
            // Small files so ranges cross file boundaries.
            mapped_file_size_consume_queue_bytes: 20 * 100,
            max_mapped_consume_queue_files: 64,
            rocksdb_write_buffer_size_bytes: 4 * 1024 * 1024,
            rocksdb_block_cache_size_bytes: 8 * 1024 * 1024,
            ..StoreConfig::with_root(dir.path())
        };
        let mut h = Self {
            kind,
            config,
            _dir: dir,
            store: None,
        };
        h.store = Some(h.open());
        h
    }

    fn open(&self) -> Arc<dyn ConsumeQueueStore> {
        match self.kind {
            CqBackend::Memory => Arc::new(MemoryConsumeQueueStore::new()),
            CqBackend::File => Arc::new(FileConsumeQueueStore::open(&self.config).unwrap()),
            CqBackend::Rocksdb => Arc::new(RocksConsumeQueueStore::open(&self.config).unwrap()),
        }
    }

    pub fn store(&self) -> &dyn ConsumeQueueStore {
        self.store.as_deref().unwrap()
    }

    /// Clean close and open again. The model keeps its instance (it has no
    /// disk), so reopen tests check it trivially.
    pub fn reopen(&mut self) {
        if self.kind == CqBackend::Memory {
            return;
        }
        let old = self.store.take().unwrap();
        old.close().unwrap();
        drop(old);
        self.store = Some(self.open());
    }
}

/// Store times are the phy offset + 1000, so time lookups have an oracle.
pub struct PhyTimes;
impl StoreTimeSource for PhyTimes {
    fn store_time(&self, phy_offset: i64, _size: i32) -> Option<i64> {
        Some(phy_offset + 1000)
    }
}

pub fn unit(topic: &str, queue_id: i32, queue_offset: i64, phy: i64) -> CqPut {
    CqPut {
        topic: topic.to_owned(),
        queue_id,
        queue_offset,
        phy_offset: phy,
        size: 100,
        tags_code: queue_offset % 3,
        store_timestamp: phy + 1000,
    }
}

/// `n` units for each of `queues` queues of `topic`, interleaved as a log
/// would have them; phy offsets advance by 100 from `phy_start`.
pub fn interleaved(topic: &str, queues: i32, n: i64, phy_start: i64) -> Vec<CqPut> {
    let mut out = Vec::new();
    let mut phy = phy_start;
    for off in 0..n {
        for q in 0..queues {
            out.push(unit(topic, q, off, phy));
            phy += 100;
        }
    }
    out
}

fn get(
    s: &dyn ConsumeQueueStore,
    topic: &str,
    q: i32,
    from: i64,
    n: usize,
) -> Result<Vec<CqUnit>, CqError> {
    let mut out = Vec::new();
    s.get(topic, q, from, n, &mut out)?;
    Ok(out)
}

fn put_get_ranges(h: &mut Harness) {
    let batch = interleaved("T", 3, 450, 0);
    for chunk in batch.chunks(97) {
        let end = chunk.last().map(|u| u.phy_offset + 100).unwrap();
        h.store().put(chunk, end).unwrap();
    }
    let s = h.store();
    for q in 0..3 {
        let all = get(s, "T", q, 0, 1000).unwrap();
        assert_eq!(all.len(), 450);
        for (i, u) in all.iter().enumerate() {
            assert_eq!(u.queue_offset, i as i64);
            assert_eq!(u.phy_offset, (i as i64 * 3 + q as i64) * 100);
            assert_eq!((u.size, u.tags_code), (100, i as i64 % 3));
        }
        // A range that crosses a file boundary (100 units per file).
        let mid = get(s, "T", q, 95, 10).unwrap();
        assert_eq!(
            mid.iter().map(|u| u.queue_offset).collect::<Vec<_>>(),
            (95..105).collect::<Vec<_>>()
        );
        assert_eq!(get(s, "T", q, 449, 10).unwrap().len(), 1);
        assert!(
            get(s, "T", q, 450, 10).unwrap().is_empty(),
            "at max: nothing"
        );
        assert!(get(s, "T", q, 10_000, 10).unwrap().is_empty());
    }
    assert!(get(s, "Other", 0, 0, 10).unwrap().is_empty());
    assert_eq!(s.dispatched_phy_offset().unwrap(), 450 * 3 * 100);
}

fn min_max(h: &mut Harness) {
    let s = h.store();
    assert_eq!(
        (s.min_offset("T", 0).unwrap(), s.max_offset("T", 0).unwrap()),
        (0, 0)
    );
    s.put(&interleaved("T", 2, 10, 0), 2000).unwrap();
    assert_eq!(
        (s.min_offset("T", 1).unwrap(), s.max_offset("T", 1).unwrap()),
        (0, 10)
    );
    // A queue whose first unit is at 250 (its older log was deleted).
    s.put(
        &[unit("Late", 0, 250, 5000), unit("Late", 0, 251, 5100)],
        5200,
    )
    .unwrap();
    assert_eq!(
        (
            s.min_offset("Late", 0).unwrap(),
            s.max_offset("Late", 0).unwrap()
        ),
        (250, 252)
    );
    assert!(matches!(
        get(s, "Late", 0, 10, 5),
        Err(CqError::Compacted {
            min_offset: 250,
            ..
        })
    ));
    assert_eq!(get(s, "Late", 0, 250, 5).unwrap().len(), 2);
    h.reopen();
    let s = h.store();
    assert_eq!(
        (
            s.min_offset("Late", 0).unwrap(),
            s.max_offset("Late", 0).unwrap()
        ),
        (250, 252)
    );
    assert_eq!(
        s.queues().unwrap(),
        vec![
            QueueKey::new("Late", 0),
            QueueKey::new("T", 0),
            QueueKey::new("T", 1)
        ]
    );
}

fn idempotent_reput(h: &mut Harness) {
    let batch = interleaved("T", 2, 50, 0);
    h.store().put(&batch, 10_000).unwrap();
    // The whole batch again, and an overlapping tail with new units.
    h.store().put(&batch, 10_000).unwrap();
    let mut more = batch[60..].to_vec();
    more.extend(interleaved("T", 2, 5, 10_000).into_iter().map(|mut u| {
        u.queue_offset += 50;
        u
    }));
    h.store().put(&more, 11_000).unwrap();
    for q in 0..2 {
        let all = get(h.store(), "T", q, 0, 1000).unwrap();
        assert_eq!(all.len(), 55, "queue {q}");
        assert!(all
            .windows(2)
            .all(|w| w[1].queue_offset == w[0].queue_offset + 1));
    }
    h.reopen();
    h.store().put(&batch, 10_000).unwrap();
    assert_eq!(h.store().max_offset("T", 0).unwrap(), 55);
}

fn truncate(h: &mut Harness) {
    h.store().put(&interleaved("T", 2, 300, 0), 60_000).unwrap();
    // Cut at phy 30_050: units at >= 30_000 + ... go; unit 150 of queue 0 is
    // at 30_000 and stays, unit 150 of queue 1 at 30_100 goes.
    h.store().truncate_from_phy(30_100).unwrap();
    let s = h.store();
    assert_eq!(s.max_offset("T", 0).unwrap(), 151);
    assert_eq!(s.max_offset("T", 1).unwrap(), 150);
    assert!(s.dispatched_phy_offset().unwrap() <= 30_100);
    assert!(get(s, "T", 0, 0, 1000)
        .unwrap()
        .iter()
        .all(|u| u.phy_offset < 30_100));
    h.store().flush().unwrap();
    h.reopen();
    let s = h.store();
    assert_eq!(
        (s.max_offset("T", 0).unwrap(), s.max_offset("T", 1).unwrap()),
        (151, 150)
    );
    // Re-dispatch after truncation writes the same offsets again.
    let again: Vec<CqPut> = interleaved("T", 2, 300, 0)
        .into_iter()
        .filter(|u| u.phy_offset >= 30_100)
        .collect();
    s.put(&again, 60_000).unwrap();
    assert_eq!(get(s, "T", 1, 0, 1000).unwrap().len(), 300);
    // Truncating everything leaves empty queues whose max equals their min.
    s.truncate_from_phy(0).unwrap();
    assert_eq!(s.max_offset("T", 0).unwrap(), s.min_offset("T", 0).unwrap());
    assert_eq!(s.dispatched_phy_offset().unwrap(), 0);
}

fn min_correction(h: &mut Harness) {
    h.store().put(&interleaved("T", 1, 500, 0), 50_000).unwrap();
    h.store()
        .put(&[unit("Old", 0, 0, 100_000)], 100_100)
        .unwrap();
    h.store().correct_min_offset(23_456).unwrap();
    let s = h.store();
    assert_eq!(
        s.min_offset("T", 0).unwrap(),
        235,
        "first unit at or above the new CommitLog min"
    );
    assert!(matches!(
        get(s, "T", 0, 10, 5),
        Err(CqError::Compacted {
            min_offset: 235,
            ..
        })
    ));
    assert_eq!(get(s, "T", 0, 235, 1).unwrap()[0].phy_offset, 23_500);
    assert_eq!(s.max_offset("T", 0).unwrap(), 500);
    assert_eq!(
        s.min_offset("Old", 0).unwrap(),
        0,
        "queue above the min is untouched"
    );
    h.store().flush().unwrap();
    h.reopen();
    assert_eq!(h.store().min_offset("T", 0).unwrap(), 235);
    // Everything below: the queue is logically empty at its max.
    h.store().correct_min_offset(1_000_000).unwrap();
    assert_eq!(h.store().min_offset("Old", 0).unwrap(), 1);
    assert_eq!(h.store().max_offset("Old", 0).unwrap(), 1);
}

fn time_lookup(h: &mut Harness) {
    let s = h.store();
    assert_eq!(
        s.offset_by_time("T", 0, 5, Boundary::Lower, &PhyTimes)
            .unwrap(),
        0,
        "unknown queue"
    );
    // Unit i is at phy 100*i and was stored at 100*i + 1000.
    s.put(&interleaved("T", 1, 100, 0), 10_000).unwrap();
    let lower = |ts| {
        s.offset_by_time("T", 0, ts, Boundary::Lower, &PhyTimes)
            .unwrap()
    };
    let upper = |ts| {
        s.offset_by_time("T", 0, ts, Boundary::Upper, &PhyTimes)
            .unwrap()
    };
    assert_eq!(lower(0), 0);
    assert_eq!(lower(1000), 0);
    assert_eq!(lower(1001), 1);
    assert_eq!(lower(1000 + 4200), 42);
    assert_eq!(lower(1000 + 4250), 43);
    assert_eq!(lower(1_000_000), 100, "after every unit: the max offset");
    assert_eq!(upper(1_000_000), 99);
    assert_eq!(upper(1000 + 4250), 42);
    assert_eq!(upper(1000 + 4200), 42);
    assert_eq!(upper(999), 0, "before every unit: the min offset");
    assert_eq!(lower(6001), 51);
    assert_eq!(upper(6001), 50);
}

fn delete_topic(h: &mut Harness) {
    h.store().put(&interleaved("Gone", 3, 20, 0), 6000).unwrap();
    h.store()
        .put(&interleaved("Kept", 2, 20, 6000), 10_000)
        .unwrap();
    h.store().delete_topic("Gone").unwrap();
    let s = h.store();
    assert_eq!(
        s.queues().unwrap(),
        vec![QueueKey::new("Kept", 0), QueueKey::new("Kept", 1)]
    );
    assert_eq!(s.max_offset("Gone", 0).unwrap(), 0);
    assert!(get(s, "Gone", 1, 0, 10).unwrap().is_empty());
    assert_eq!(get(s, "Kept", 1, 0, 100).unwrap().len(), 20);
    h.store().flush().unwrap();
    h.reopen();
    assert_eq!(h.store().queues().unwrap().len(), 2);
    assert_eq!(h.store().max_offset("Gone", 2).unwrap(), 0);
}

fn reopen_keeps_everything(h: &mut Harness) {
    h.store().put(&interleaved("T", 4, 120, 0), 48_000).unwrap();
    h.store().flush().unwrap();
    h.reopen();
    let s = h.store();
    assert_eq!(s.dispatched_phy_offset().unwrap(), 48_000);
    for q in 0..4 {
        assert_eq!(get(s, "T", q, 0, 1000).unwrap().len(), 120);
    }
    let stats = s.stats();
    assert_eq!(stats.queues, 4);
}

fn closed_store_refuses(h: &mut Harness) {
    h.store().put(&interleaved("T", 1, 3, 0), 300).unwrap();
    h.store().close().unwrap();
    assert!(matches!(
        h.store().put(&interleaved("T", 1, 1, 400), 500),
        Err(CqError::Closed)
    ));
    h.store = Some(h.open());
}

macro_rules! conformance {
    ($($body:ident),* $(,)?) => {
        mod memory { $( #[test] fn $body() { super::$body(&mut super::Harness::new(rmq_common::config::CqBackend::Memory)); } )* }
        mod file { $( #[test] fn $body() { super::$body(&mut super::Harness::new(rmq_common::config::CqBackend::File)); } )* }
        mod rocksdb { $( #[test] fn $body() { super::$body(&mut super::Harness::new(rmq_common::config::CqBackend::Rocksdb)); } )* }
    };
}

conformance!(
    put_get_ranges,
    min_max,
    idempotent_reput,
    truncate,
    min_correction,
    time_lookup,
    delete_topic,
    reopen_keeps_everything,
    closed_store_refuses,
);
