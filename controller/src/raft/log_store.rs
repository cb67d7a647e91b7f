//! The durable Raft log of a controller replica: one append-only file of
//! records ([`crate::raft::record`]) in the store folder, each the JSON of
//! a log entry (or, first in the file, the id of the last purged entry),
//! plus the vote and the committed log id, each a small file replaced
//! atomically.
//!
//! Every entry is also kept in memory (a controller's log is small and is
//! purged after each snapshot), so readers never touch the file. Writes are
//! serialized by `&mut self` and done on a blocking thread; an append calls
//! openraft's flush callback only after `fsync` returned. A failed write
//! poisons the store: it takes no more writes, since what reached the disk
//! is unknown.
//!
//! Truncation cuts the file at the first removed entry (and fsyncs). A
//! purge, rare (after a snapshot), rewrites the file: a purge record and
//! the entries kept, to a temporary file renamed over the log.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{RaftLogId, RaftLogReader, StorageIOError};
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};

use crate::raft::error::StoreError;
use crate::raft::record::{self, io_err};
use crate::raft::types::{Entry, LogId, StorageError, TypeConfig, Vote};

/// The log file's name in the store folder.
pub const LOG_FILE: &str = "raft-log";
/// The vote file's name.
pub const VOTE_FILE: &str = "raft-vote";
/// The committed log id file's name.
pub const COMMITTED_FILE: &str = "raft-committed";

/// One record of the log file, as read.
#[derive(Deserialize)]
enum LogRecord {
    Entry(Entry),
    Purged(LogId),
}

/// One record of the log file, as written (same JSON as [`LogRecord`]).
#[derive(Serialize)]
enum LogRecordRef<'a> {
    Entry(&'a Entry),
    Purged(&'a LogId),
}

/// The entries present, shared with the readers.
#[derive(Debug, Default)]
struct Entries {
    /// By index.
    by_index: BTreeMap<u64, Entry>,
    /// The file offset of each entry's record.
    offsets: BTreeMap<u64, u64>,
    /// The last entry removed by a purge.
    last_purged: Option<LogId>,
}

impl Entries {
    fn last_log_id(&self) -> Option<LogId> {
        self.by_index
            .values()
            .next_back()
            .map(|e| *e.get_log_id())
            .or(self.last_purged)
    }

    /// The index the next appended entry must have, if it is bound: right
    /// after the last present entry. (After a purge of every entry, the
    /// next one is not checked against the purge point: openraft never
    /// appends below it, and its storage suite appends below it on
    /// purpose.)
    fn next_index(&self) -> Option<u64> {
        self.by_index.keys().next_back().map(|i| i + 1)
    }
}

/// Reads entries for openraft's replication tasks, from memory.
#[derive(Debug, Clone)]
pub struct FileLogReader {
    entries: Arc<RwLock<Entries>>,
}

impl RaftLogReader<TypeConfig> for FileLogReader {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        Ok(self
            .entries
            .read()
            .by_index
            .range(range)
            .map(|(_, e)| e.clone())
            .collect())
    }
}

/// The durable log (entries, vote, committed id) in a store folder.
#[derive(Debug)]
pub struct FileLogStore {
    dir: PathBuf,
    log_path: PathBuf,
    file: Arc<Mutex<File>>,
    /// The log file's length: where the next record goes.
    file_len: u64,
    entries: Arc<RwLock<Entries>>,
    vote: Option<Vote>,
    committed: Option<LogId>,
    poisoned: bool,
}

impl FileLogStore {
    /// Opens (or creates) the log in `dir`: reads every record, cuts a torn
    /// last record off the file, and fails with a typed error on damage
    /// anywhere else or on a hole in the indexes.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        fs::create_dir_all(dir).map_err(io_err("create folder", dir))?;
        let log_path = dir.join(LOG_FILE);
        let bytes = match fs::read(&log_path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io_err("read", &log_path)(e)),
        };
        let scan = record::scan(&bytes, &log_path)?;
        let mut entries = Entries::default();
        for found in &scan.records {
            match record::decode::<LogRecord>(found, &log_path)? {
                LogRecord::Purged(id) => {
                    entries.by_index.retain(|i, _| *i > id.index);
                    entries.offsets.retain(|i, _| *i > id.index);
                    entries.last_purged = Some(id);
                }
                LogRecord::Entry(e) => {
                    let index = e.get_log_id().index;
                    if let Some(expected) = entries.next_index().filter(|x| *x != index) {
                        return Err(StoreError::Gap {
                            path: log_path,
                            offset: found.offset,
                            expected,
                            found: index,
                        });
                    }
                    entries.offsets.insert(index, found.offset);
                    entries.by_index.insert(index, e);
                }
            }
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(io_err("open", &log_path))?;
        if scan.valid_len < bytes.len() as u64 {
            tracing::warn!(
                path = %log_path.display(),
                offset = scan.valid_len,
                dropped = bytes.len() as u64 - scan.valid_len,
                "cutting a torn last record off the raft log"
            );
            file.set_len(scan.valid_len)
                .and_then(|()| file.sync_all())
                .map_err(io_err("truncate", &log_path))?;
        }
        if bytes.is_empty() {
            record::sync_dir(dir)?;
        }
        Ok(Self {
            dir: dir.to_owned(),
            vote: record::read_single(&dir.join(VOTE_FILE))?,
            committed: record::read_single(&dir.join(COMMITTED_FILE))?,
            log_path,
            file: Arc::new(Mutex::new(file)),
            file_len: scan.valid_len,
            entries: Arc::new(RwLock::new(entries)),
            poisoned: false,
        })
    }

    /// The last entry's id (or the last purged one), as on disk.
    pub fn last_log_id(&self) -> Option<LogId> {
        self.entries.read().last_log_id()
    }

    /// The saved vote.
    pub fn vote(&self) -> Option<Vote> {
        self.vote
    }

    fn check_writable(&self) -> Result<(), StoreError> {
        if self.poisoned {
            return Err(StoreError::Poisoned {
                path: self.log_path.clone(),
            });
        }
        Ok(())
    }

    /// Runs `f` on a blocking thread; any error poisons the store.
    async fn blocking<T, F>(&mut self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T, StoreError> + Send + 'static,
    {
        self.check_writable()?;
        let res = match tokio::task::spawn_blocking(f).await {
            Ok(r) => r,
            Err(_) => Err(StoreError::TaskLost {
                path: self.log_path.clone(),
            }),
        };
        if res.is_err() {
            self.poisoned = true;
        }
        res
    }

    /// Appends `entries` to the file and fsyncs it; they are in memory
    /// already. Returns nothing until they are durable.
    async fn append_durably(&mut self, batch: Vec<Entry>) -> Result<(), StoreError> {
        self.check_writable()?;
        let mut bytes = Vec::new();
        let mut offsets = Vec::with_capacity(batch.len());
        let mut expected = self.entries.read().next_index();
        for e in &batch {
            let index = e.get_log_id().index;
            if let Some(want) = expected.filter(|w| *w != index) {
                return Err(StoreError::Gap {
                    path: self.log_path.clone(),
                    offset: self.file_len + bytes.len() as u64,
                    expected: want,
                    found: index,
                });
            }
            expected = Some(index + 1);
            offsets.push((index, self.file_len + bytes.len() as u64));
            bytes.extend(record::encode(&LogRecordRef::Entry(e), &self.log_path)?);
        }
        {
            // Readable as soon as append returns, durable at the callback.
            let mut mem = self.entries.write();
            for (e, (index, offset)) in batch.into_iter().zip(offsets) {
                mem.offsets.insert(index, offset);
                mem.by_index.insert(index, e);
            }
        }
        let file = self.file.clone();
        let path = self.log_path.clone();
        let n = bytes.len() as u64;
        self.blocking(move || {
            let mut f = file.lock();
            f.write_all(&bytes).map_err(io_err("append", &path))?;
            f.sync_data().map_err(io_err("fsync", &path))
        })
        .await?;
        self.file_len += n;
        Ok(())
    }

    /// Removes every entry from `index` on, from memory and the file.
    pub async fn truncate_from(&mut self, index: u64) -> Result<(), StoreError> {
        self.check_writable()?;
        let cut = {
            let mut mem = self.entries.write();
            let cut = mem.offsets.range(index..).next().map(|(_, o)| *o);
            mem.by_index.split_off(&index);
            mem.offsets.split_off(&index);
            cut
        };
        let Some(cut) = cut else { return Ok(()) };
        let file = self.file.clone();
        let path = self.log_path.clone();
        self.blocking(move || {
            let f = file.lock();
            f.set_len(cut)
                .and_then(|()| f.sync_all())
                .map_err(io_err("truncate", &path))
        })
        .await?;
        self.file_len = cut;
        Ok(())
    }

    /// Removes every entry up to `upto` (included): rewrites the file as a
    /// purge record and the entries kept.
    pub async fn purge_upto(&mut self, upto: LogId) -> Result<(), StoreError> {
        self.check_writable()?;
        let bytes = {
            let mut mem = self.entries.write();
            mem.by_index.retain(|i, _| *i > upto.index);
            mem.last_purged = Some(upto);
            let mut bytes = record::encode(&LogRecordRef::Purged(&upto), &self.log_path)?;
            let mut offsets = BTreeMap::new();
            for (i, e) in &mem.by_index {
                offsets.insert(*i, bytes.len() as u64);
                bytes.extend(record::encode(&LogRecordRef::Entry(e), &self.log_path)?);
            }
            mem.offsets = offsets;
            bytes
        };
        let file = self.file.clone();
        let path = self.log_path.clone();
        let dir = self.dir.clone();
        let n = bytes.len() as u64;
        self.blocking(move || {
            let tmp = record::tmp_path(&path);
            let mut t = File::create(&tmp).map_err(io_err("create", &tmp))?;
            t.write_all(&bytes).map_err(io_err("write", &tmp))?;
            t.sync_all().map_err(io_err("fsync", &tmp))?;
            drop(t);
            fs::rename(&tmp, &path).map_err(io_err("rename into", &path))?;
            record::sync_dir(&dir)?;
            let reopened = OpenOptions::new()
                .append(true)
                .open(&path)
                .map_err(io_err("open", &path))?;
            *file.lock() = reopened;
            Ok(())
        })
        .await?;
        self.file_len = n;
        Ok(())
    }

    /// Saves the vote durably (atomic replacement of its file).
    pub async fn save_vote_durably(&mut self, vote: Vote) -> Result<(), StoreError> {
        let path = self.dir.join(VOTE_FILE);
        self.blocking(move || record::write_atomic(&path, &vote))
            .await?;
        self.vote = Some(vote);
        Ok(())
    }

    async fn save_committed_durably(&mut self, c: Option<LogId>) -> Result<(), StoreError> {
        let path = self.dir.join(COMMITTED_FILE);
        self.blocking(move || record::write_atomic(&path, &c))
            .await?;
        self.committed = c;
        Ok(())
    }
}

fn write_err(e: StoreError) -> StorageError {
    StorageIOError::write_logs(&e).into()
}

impl RaftLogReader<TypeConfig> for FileLogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        self.get_log_reader().await.try_get_log_entries(range).await
    }
}

impl RaftLogStorage<TypeConfig> for FileLogStore {
    type LogReader = FileLogReader;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let mem = self.entries.read();
        Ok(LogState {
            last_purged_log_id: mem.last_purged,
            last_log_id: mem.last_log_id(),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        FileLogReader {
            entries: self.entries.clone(),
        }
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), StorageError> {
        self.save_vote_durably(*vote)
            .await
            .map_err(|e| StorageIOError::write_vote(&e).into())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        Ok(self.vote)
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        if committed == self.committed {
            return Ok(());
        }
        self.save_committed_durably(committed)
            .await
            .map_err(write_err)
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        Ok(self.committed)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        match self.append_durably(entries.into_iter().collect()).await {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                callback.log_io_completed(Err(std::io::Error::other(e.to_string())));
                Err(write_err(e))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.truncate_from(log_id.index).await.map_err(write_err)
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.purge_upto(log_id).await.map_err(write_err)
    }
}
