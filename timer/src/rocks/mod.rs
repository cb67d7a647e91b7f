//! [`RocksTimerStore`]: pending timer entries in one RocksDB database
//! (`timer_rocksdb/` under the store root), keyed by due time (see
//! [`key`]), as RocketMQ 5.4's RocksDB timer keys its column family.
//!
//! Column family `timer` holds the entries, `default` the progress (key
//! `progress`: read time, enqueue offset, 16 bytes BE). Writes go through
//! the write-ahead log without a sync; a checkpoint writes the progress
//! and a range delete of every slot before the read time in one batch,
//! then syncs the WAL, so the progress is durable only with every entry
//! put before it. No horizon: any future time has its key.

pub mod key;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};

use parking_lot::Mutex;
use rmq_common::TimerStoreType;
use rocksdb::{
    ColumnFamily, ColumnFamilyDescriptor, Direction, IteratorMode, Options, WriteBatch,
    WriteOptions, DB,
};

use crate::entry::TimerEntry;
use crate::error::TimerError;
use crate::store::{Progress, TimerStore};

/// The database folder under the store root.
pub const DB_DIR: &str = "timer_rocksdb";
/// The entries' column family.
const CF_TIMER: &str = "timer";
/// The progress key in the default column family.
const PROGRESS_KEY: &[u8] = b"progress";
/// Marks "no read time yet".
const UNSET: i64 = i64::MIN;

/// The RocksDB timer store.
#[derive(Debug)]
pub struct RocksTimerStore {
    path: PathBuf,
    db: DB,
    recovered: Option<Progress>,
    backlog: AtomicI64,
    advanced_to: AtomicI64,
    /// Set when a write failed: no more writes until reopened.
    poisoned: Mutex<Option<String>>,
}

impl RocksTimerStore {
    /// Opens (or creates) the database under `root`.
    pub fn open(root: &Path) -> Result<Self, TimerError> {
        let path = root.join(DB_DIR);
        rmq_common::meta_file::create_dir_all_durable(&path)
            .map_err(TimerError::io("create", &path))?;
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.set_max_background_jobs(2);
        opts.set_keep_log_file_num(4);
        let mut cf_opts = Options::default();
        cf_opts.set_write_buffer_size(64 * 1024 * 1024);
        cf_opts.set_compression_type(rocksdb::DBCompressionType::Lz4);
        let cfs = vec![
            ColumnFamilyDescriptor::new(rocksdb::DEFAULT_COLUMN_FAMILY_NAME, Options::default()),
            ColumnFamilyDescriptor::new(CF_TIMER, cf_opts),
        ];
        let db =
            DB::open_cf_descriptors(&opts, &path, cfs).map_err(|source| TimerError::Rocks {
                op: "open",
                path: path.clone(),
                source,
            })?;
        let mut store = Self {
            path,
            db,
            recovered: None,
            backlog: AtomicI64::new(0),
            advanced_to: AtomicI64::new(UNSET),
            poisoned: Mutex::new(None),
        };
        store.recovered = store.load_progress()?;
        let read_ms = store.recovered.map_or(0, |p| p.read_ms);
        let backlog = store.count(read_ms, i64::MAX)?;
        store.backlog.store(backlog, Ordering::Relaxed);
        if let Some(p) = store.recovered {
            store.advanced_to.store(p.read_ms, Ordering::Relaxed);
        }
        tracing::info!(path = %store.path.display(), backlog, recovered = ?store.recovered, "RocksDB timer store opened");
        Ok(store)
    }

    fn rocks(&self, op: &'static str) -> impl FnOnce(rocksdb::Error) -> TimerError + '_ {
        move |source| TimerError::Rocks {
            op,
            path: self.path.clone(),
            source,
        }
    }

    fn cf(&self) -> Result<&ColumnFamily, TimerError> {
        self.db
            .cf_handle(CF_TIMER)
            .ok_or_else(|| TimerError::Corrupt {
                path: self.path.clone(),
                what: format!("column family {CF_TIMER} missing"),
            })
    }

    fn load_progress(&self) -> Result<Option<Progress>, TimerError> {
        let Some(v) = self
            .db
            .get(PROGRESS_KEY)
            .map_err(self.rocks("read progress"))?
        else {
            return Ok(None);
        };
        if v.len() != 16 {
            return Err(TimerError::Corrupt {
                path: self.path.clone(),
                what: format!("progress value of {} bytes, not 16", v.len()),
            });
        }
        let at = |i: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&v[i..i + 8]);
            i64::from_be_bytes(x)
        };
        Ok(Some(Progress {
            read_ms: at(0),
            enqueue_offset: at(8),
        }))
    }

    /// Net entries (delete markers -1) of slots in `[from_ms, to_ms)`.
    fn count(&self, from_ms: i64, to_ms: i64) -> Result<i64, TimerError> {
        let cf = self.cf()?;
        let start = key::slot_start(from_ms);
        let mut n = 0i64;
        for item in self
            .db
            .iterator_cf(cf, IteratorMode::From(&start, Direction::Forward))
        {
            let (k, _) = item.map_err(self.rocks("scan"))?;
            if key::slot_of(&k).is_none_or(|t| t >= to_ms) {
                break;
            }
            n += match key::kind_of(&k) {
                Some(crate::entry::EntryKind::Delete) => -1,
                Some(_) => 1,
                None => 0,
            };
        }
        Ok(n)
    }

    fn writable(&self) -> Result<(), TimerError> {
        match &*self.poisoned.lock() {
            Some(why) => Err(TimerError::Poisoned(why.clone())),
            None => Ok(()),
        }
    }

    fn write(&self, batch: WriteBatch, sync_wal: bool) -> Result<(), TimerError> {
        self.writable()?;
        let mut wo = WriteOptions::default();
        wo.set_sync(false);
        let r = self
            .db
            .write_opt(batch, &wo)
            .map_err(self.rocks("write"))
            .and_then(|()| {
                if sync_wal {
                    self.db.flush_wal(true).map_err(self.rocks("sync WAL"))
                } else {
                    Ok(())
                }
            });
        if let Err(e) = &r {
            *self.poisoned.lock() = Some(e.to_string());
        }
        r
    }
}

impl TimerStore for RocksTimerStore {
    fn backend(&self) -> TimerStoreType {
        TimerStoreType::Rocksdb
    }

    fn recovered(&self) -> Option<Progress> {
        self.recovered
    }

    fn put(&self, entries: &[TimerEntry]) -> Result<(), TimerError> {
        let cf = self.cf()?;
        let mut batch = WriteBatch::default();
        let mut net = 0;
        for e in entries {
            if e.slot_ms < 0 || e.commit_log_offset < 0 {
                return Err(TimerError::BadEntry(format!(
                    "slot {} ms or CommitLog offset {} is negative",
                    e.slot_ms, e.commit_log_offset
                )));
            }
            batch.put_cf(cf, key::key(e), key::value(e));
            net += e.counts();
        }
        self.write(batch, false)?;
        self.backlog.fetch_add(net, Ordering::Relaxed);
        Ok(())
    }

    fn read_slot(&self, slot_ms: i64, out: &mut Vec<TimerEntry>) -> Result<(), TimerError> {
        let cf = self.cf()?;
        let start = key::slot_start(slot_ms);
        for item in self
            .db
            .iterator_cf(cf, IteratorMode::From(&start, Direction::Forward))
        {
            let (k, v) = item.map_err(self.rocks("read slot"))?;
            if key::slot_of(&k) != Some(slot_ms) {
                break;
            }
            match key::decode(&k, &v) {
                Some(e) => out.push(e),
                None => tracing::warn!(slot_ms, "malformed timer entry skipped"),
            }
        }
        Ok(())
    }

    fn advance(&self, read_ms: i64) {
        let before = self.advanced_to.swap(read_ms, Ordering::AcqRel);
        let (from, recount) = if before == UNSET || read_ms < before {
            (read_ms, true)
        } else {
            (before, false)
        };
        let r = if recount {
            self.count(from, i64::MAX)
                .map(|n| self.backlog.store(n, Ordering::Relaxed))
        } else {
            self.count(from, read_ms).map(|n| {
                self.backlog.fetch_sub(n, Ordering::Relaxed);
            })
        };
        if let Err(e) = r {
            tracing::warn!(error = %e, "timer backlog count failed");
        }
    }

    fn checkpoint(&self, progress: Progress) -> Result<(), TimerError> {
        let cf = self.cf()?;
        let mut batch = WriteBatch::default();
        let mut v = [0u8; 16];
        v[0..8].copy_from_slice(&progress.read_ms.to_be_bytes());
        v[8..16].copy_from_slice(&progress.enqueue_offset.to_be_bytes());
        batch.put(PROGRESS_KEY, v);
        if progress.read_ms > 0 {
            batch.delete_range_cf(cf, key::slot_start(0), key::slot_start(progress.read_ms));
        }
        self.write(batch, true)
    }

    fn backlog(&self) -> i64 {
        self.backlog.load(Ordering::Relaxed)
    }

    fn pending_in(&self, from_ms: i64, to_ms: i64) -> Result<i64, TimerError> {
        self.count(from_ms, to_ms)
    }

    fn horizon_ms(&self) -> Option<i64> {
        None
    }

    fn release(&self, _commit_log_min: i64) -> Result<usize, TimerError> {
        // Passed slots go with each checkpoint's range delete; compaction
        // reclaims the space.
        Ok(0)
    }

    fn disk_bytes(&self) -> u64 {
        dir_bytes(&self.path)
    }
}

/// Bytes of the files directly in `dir`.
pub(crate) fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}
