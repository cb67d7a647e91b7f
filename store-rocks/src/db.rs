//! The open database: its column families and its write options.

use std::path::Path;

use rmq_common::cq::CqError;
use rocksdb::{Cache, ColumnFamily, Options, WriteBatch, WriteOptions, DB};

use crate::error::engine;
use crate::options::{DbOptions, CF_ENTRIES, CF_OFFSETS};

/// An open RocksDB with the options it was opened with.
pub(crate) struct Db {
    pub db: DB,
    /// Keeps the statistics object the stall ticker is read from.
    pub options: Options,
    pub block_cache: Cache,
    pub write_opts: WriteOptions,
}

impl Db {
    /// Opens (creating if needed) the database at `path`.
    pub fn open(path: &Path, opts: DbOptions) -> Result<Self, CqError> {
        let db = DB::open_cf_descriptors(&opts.db, path, opts.cfs).map_err(|e| {
            engine(
                format!("open rocksdb consume queue at {}", path.display()),
                e,
            )
        })?;
        Ok(Self {
            db,
            options: opts.db,
            block_cache: opts.block_cache,
            write_opts: opts.write,
        })
    }

    /// The entry column family.
    pub fn entries(&self) -> Result<&ColumnFamily, CqError> {
        self.cf(CF_ENTRIES)
    }

    /// The min/max and checkpoint column family.
    pub fn offsets(&self) -> Result<&ColumnFamily, CqError> {
        self.cf(CF_OFFSETS)
    }

    fn cf(&self, name: &str) -> Result<&ColumnFamily, CqError> {
        // Both CFs are opened (and created if missing) at open, so this only
        // fails if RocksDB lost one.
        self.db.cf_handle(name).ok_or_else(|| CqError::Corrupt {
            detail: format!("column family {name:?} is missing"),
        })
    }

    /// Writes a batch with the store's write options (WAL as configured).
    pub fn write(&self, batch: WriteBatch, context: &str) -> Result<(), CqError> {
        self.db
            .write_opt(batch, &self.write_opts)
            .map_err(|e| engine(context.to_owned(), e))
    }
}
