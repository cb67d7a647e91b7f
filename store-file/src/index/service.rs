//! The IndexFiles of a store: appends from the reput thread, queries from any
//! thread, flush, and deletion of files the CommitLog no longer covers.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use rmq_common::{DispatchRequest, StoreConfig};

use super::file::{Collector, IndexFile};
use super::layout::{file_name, index_keys, key_hash, parse_file_name, Geometry};
use super::IndexError;

/// The files of `<store>/index/`, oldest first, and the state of the writer.
///
/// Locking: `files` is held only to copy or change the list, never across
/// I/O on a file's contents; each file has its own lock (see `file.rs`).
/// `writer` serialises everything that changes the list or appends, so
/// `build_index` is correct even if more than one thread calls it.
#[derive(Debug)]
pub struct IndexService {
    dir: PathBuf,
    geometry: Geometry,
    enabled: bool,
    files: RwLock<Vec<Arc<IndexFile>>>,
    writer: Mutex<Writer>,
    /// Serialises flushes, so a flush that finds a file clean knows an
    /// earlier sync of it has completed.
    flush_lock: Mutex<()>,
    last_flush_timestamp: AtomicI64,
    poisoned: Mutex<Option<PathBuf>>,
    closed: AtomicBool,
}

#[derive(Debug)]
struct Writer {
    /// CommitLog offset of the newest indexed record, if any.
    last_indexed: Option<i64>,
    /// Creation time encoded in the newest file's name.
    last_name_ms: i64,
}

impl IndexService {
    /// Opens (creating the folder if needed) the IndexFiles of
    /// `config.index_dir()`, in name order. Files not named
    /// `yyyyMMddHHmmssSSS` are ignored with a warning; a file of the wrong
    /// size or with an inconsistent header is an error naming it.
    pub fn open(config: &StoreConfig) -> Result<Self, IndexError> {
        let geometry = Geometry::from_config(config)?;
        let dir = config.index_dir();
        rmq_common::meta_file::create_dir_all_durable(&dir)
            .map_err(|e| IndexError::io(&dir, "create folder", e))?;
        let mut names = Vec::new();
        let listing = std::fs::read_dir(&dir).map_err(|e| IndexError::io(&dir, "list", e))?;
        for item in listing {
            let item = item.map_err(|e| IndexError::io(&dir, "list", e))?;
            let name = item.file_name().to_string_lossy().into_owned();
            match parse_file_name(&name) {
                Some(ms) => names.push((name, ms)),
                None => {
                    tracing::warn!(path = %item.path().display(), "not an IndexFile name, ignored")
                }
            }
        }
        names.sort();
        let mut files = Vec::with_capacity(names.len());
        for (name, _) in &names {
            files.push(Arc::new(IndexFile::open(&dir.join(name), geometry)?));
        }
        let headers: Vec<_> = files.iter().map(|f| f.header()).collect();
        let last_indexed = headers
            .iter()
            .rev()
            .find(|h| !h.is_empty())
            .map(|h| h.end_phy_offset);
        let last_end_ts = headers.last().map_or(0, |h| h.end_timestamp);
        tracing::info!(dir = %dir.display(), files = files.len(), ?last_indexed, "index loaded");
        Ok(Self {
            dir,
            geometry,
            enabled: config.message_index_enable,
            files: RwLock::new(files),
            writer: Mutex::new(Writer {
                last_indexed,
                last_name_ms: names.last().map_or(i64::MIN, |(_, ms)| *ms),
            }),
            flush_lock: Mutex::new(()),
            last_flush_timestamp: AtomicI64::new(last_end_ts),
            poisoned: Mutex::new(None),
            closed: AtomicBool::new(false),
        })
    }

    /// Indexes the keys and UNIQ_KEY of one record, as `topic#key`. Does
    /// nothing when `messageIndexEnable` is off, for records that are not
    /// indexed (transaction rollbacks), and for records at or below the
    /// newest indexed offset: reput replays records after an abnormal
    /// restart, and those are already in the files.
    pub fn build_index(&self, req: &DispatchRequest) -> Result<(), IndexError> {
        if !self.enabled || !req.goes_to_index() {
            return Ok(());
        }
        let mut w = self.writer.lock();
        self.check_writable()?;
        if w.last_indexed
            .is_some_and(|last| req.commit_log_offset <= last)
        {
            return Ok(());
        }
        let hashes: Vec<i32> = index_keys(req).iter().map(|k| key_hash(k)).collect();
        let mut rest = &hashes[..];
        while !rest.is_empty() {
            let file = self.writable_file(&mut w)?;
            let added = file.put(rest, req.commit_log_offset, req.store_timestamp)?;
            rest = rest.get(added..).unwrap_or_default();
        }
        if !hashes.is_empty() {
            w.last_indexed = Some(req.commit_log_offset);
        }
        Ok(())
    }

    /// The CommitLog was cut at `offset`: records appended there later are
    /// new and must be indexed (entries of the cut ones stay; a query
    /// re-reads each hit and drops one whose record no longer matches).
    pub fn rewind(&self, offset: i64) {
        let mut w = self.writer.lock();
        if w.last_indexed.is_some_and(|last| last >= offset) {
            w.last_indexed = Some(offset - 1);
        }
    }

    /// The newest file if it has room, else a new one.
    fn writable_file(&self, w: &mut Writer) -> Result<Arc<IndexFile>, IndexError> {
        if let Some(f) = self.files.read().last() {
            if !f.is_full() {
                return Ok(Arc::clone(f));
            }
        }
        // Names must sort in creation order even if the clock went back or
        // two files are created in the same millisecond.
        let ms = rmq_common::time::now_ms().max(w.last_name_ms.saturating_add(1));
        let path = self.dir.join(file_name(ms));
        let file = Arc::new(IndexFile::create(&path, self.geometry)?);
        w.last_name_ms = ms;
        tracing::info!(path = %path.display(), "new index file");
        self.files.write().push(Arc::clone(&file));
        Ok(file)
    }

    fn check_writable(&self) -> Result<(), IndexError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(IndexError::Closed);
        }
        match &*self.poisoned.lock() {
            Some(path) => Err(IndexError::Poisoned { path: path.clone() }),
            None => Ok(()),
        }
    }

    /// CommitLog offsets of records that may carry `key` in `topic` (as a
    /// KEYS entry or the UNIQ_KEY), newest first, unique, at most `max_num`,
    /// stored within `begin_ms..=end_ms`. Entries keep whole seconds from
    /// their file's first entry, so, as in RocketMQ, a record counts as
    /// stored at `beginTimestamp + seconds*1000`. The caller must check
    /// each record's topic and keys: different keys can share a hash.
    pub fn query(
        &self,
        topic: &str,
        key: &str,
        max_num: usize,
        begin_ms: i64,
        end_ms: i64,
    ) -> Result<Vec<i64>, IndexError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(IndexError::Closed);
        }
        let hash = key_hash(&format!("{topic}#{key}"));
        let files: Vec<_> = self.files.read().iter().rev().cloned().collect();
        let mut out = Collector::new(max_num);
        for f in files {
            if out.is_full() {
                break;
            }
            f.select(hash, begin_ms, end_ms, &mut out);
        }
        Ok(out.into_offsets())
    }

    /// Makes every file written since the last flush durable
    /// (`fdatasync`). On failure the service stops accepting writes
    /// ([`IndexError::Poisoned`]).
    pub fn flush(&self) -> Result<(), IndexError> {
        let _serial = self.flush_lock.lock();
        let files: Vec<_> = self.files.read().clone();
        let mut newest_end = None;
        for f in &files {
            match f.sync() {
                Ok(h) => newest_end = Some(h.end_timestamp),
                Err(e) => {
                    tracing::error!(path = %f.path().display(), error = %e, "index flush failed");
                    *self.poisoned.lock() = Some(f.path().to_owned());
                    return Err(e);
                }
            }
        }
        if let Some(ts) = newest_end {
            self.last_flush_timestamp.fetch_max(ts, Ordering::AcqRel);
        }
        Ok(())
    }

    /// Store timestamp (ms) of the newest entry known durable: the value for
    /// the index field of the store checkpoint. Every entry up to it survives
    /// a crash of the machine.
    pub fn last_flush_timestamp(&self) -> i64 {
        self.last_flush_timestamp.load(Ordering::Acquire)
    }

    /// Deletes, oldest first, files whose newest entry lies below
    /// `commit_log_min` (the CommitLog no longer holds any of their records);
    /// never the newest file. Returns how many were deleted. Queries already
    /// walking a deleted file finish on its mapping.
    pub fn delete_files_below(&self, commit_log_min: i64) -> Result<usize, IndexError> {
        // The writer lock keeps the list from changing under us.
        let _w = self.writer.lock();
        let mut deleted = 0;
        loop {
            let oldest = {
                let files = self.files.read();
                match files.first() {
                    Some(f) if files.len() > 1 && f.header().end_phy_offset < commit_log_min => {
                        Arc::clone(f)
                    }
                    _ => return Ok(deleted),
                }
            };
            std::fs::remove_file(oldest.path())
                .map_err(|e| IndexError::io(oldest.path(), "delete", e))?;
            self.files.write().remove(0);
            tracing::info!(path = %oldest.path().display(), commit_log_min, "index file deleted");
            deleted += 1;
        }
    }

    /// Flushes, then refuses further writes and queries and unmaps the files
    /// (once running queries finish).
    pub fn close(&self) -> Result<(), IndexError> {
        let _w = self.writer.lock();
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let flushed = self.flush();
        self.files.write().clear();
        flushed
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// 16 slots and 64 entries (63 usable): collisions and roll-over are
    /// quick to reach.
    fn config(root: &Path) -> StoreConfig {
        StoreConfig {
            max_hash_slot_num: 16,
            max_index_num: 64,
            ..StoreConfig::with_root(root)
        }
    }

    fn req(keys: &str, uniq: Option<&str>, phy: i64, ts: i64) -> DispatchRequest {
        DispatchRequest {
            topic: "T".into(),
            queue_id: 0,
            commit_log_offset: phy,
            msg_size: 100,
            tags_code: 0,
            store_timestamp: ts,
            consume_queue_offset: 0,
            keys: keys.into(),
            uniq_key: uniq.map(str::to_owned),
            sys_flag: 0,
            prepared_transaction_offset: 0,
            lmq: Vec::new(),
        }
    }

    fn all(s: &IndexService, key: &str) -> Vec<i64> {
        s.query("T", key, 10_000, 0, i64::MAX).unwrap()
    }

    fn index_counts(s: &IndexService) -> Vec<i32> {
        s.files
            .read()
            .iter()
            .map(|f| f.header().index_count)
            .collect()
    }

    /// 100 records at offsets 0, 100, ..., each with KEYS "same" and UNIQ_KEY
    /// "u<i>", one second apart: 200 entries, so 4 files of 63.
    fn fill(s: &IndexService, from: i64, to: i64) {
        for i in from..to {
            let u = format!("u{i}");
            s.build_index(&req("same", Some(&u), i * 100, 1_000_000 + i * 1000))
                .unwrap();
        }
    }

    #[test]
    fn put_and_query_by_key_and_uniq_key() {
        let dir = tempfile::tempdir().unwrap();
        let s = IndexService::open(&config(dir.path())).unwrap();
        s.build_index(&req("k1 k2", Some("U1"), 0, 5_000)).unwrap();
        s.build_index(&req(" k1 ", None, 100, 6_000)).unwrap();
        assert_eq!(all(&s, "k1"), [100, 0]);
        assert_eq!(all(&s, "k2"), [0]);
        assert_eq!(all(&s, "U1"), [0]);
        assert!(all(&s, "k3").is_empty());
        assert!(s.query("Other", "k1", 10, 0, i64::MAX).unwrap().is_empty());
        assert_eq!(
            s.query("T", "k1", 1, 0, i64::MAX).unwrap(),
            [100],
            "max_num"
        );
        assert_eq!(s.query("T", "k1", 10, 0, 5_999).unwrap(), [0], "time range");
        assert!(s.query("T", "k1", 0, 0, i64::MAX).unwrap().is_empty());

        // "Aa" and "BB" share a Java hash: both are candidates for either.
        s.build_index(&req("Aa", None, 200, 7_000)).unwrap();
        s.build_index(&req("BB", None, 300, 7_000)).unwrap();
        assert_eq!(all(&s, "Aa"), [300, 200]);
        // A key listed twice yields its offset once.
        s.build_index(&req("d d", Some("d"), 400, 8_000)).unwrap();
        assert_eq!(all(&s, "d"), [400]);
        // Rollback records are not indexed.
        let mut rollback = req("rb", None, 500, 9_000);
        rollback.sys_flag = 0xC;
        s.build_index(&rollback).unwrap();
        assert!(all(&s, "rb").is_empty());
    }

    #[test]
    fn disabled_index_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = StoreConfig {
            message_index_enable: false,
            ..config(dir.path())
        };
        let s = IndexService::open(&cfg).unwrap();
        s.build_index(&req("k", None, 0, 1_000)).unwrap();
        assert!(all(&s, "k").is_empty());
        assert!(index_counts(&s).is_empty());
    }

    #[test]
    fn roll_over_query_across_files_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path());
        let s = IndexService::open(&cfg).unwrap();
        fill(&s, 0, 100);
        assert_eq!(index_counts(&s), [64, 64, 64, 12]);
        let newest_first: Vec<i64> = (0..100).rev().map(|i| i * 100).collect();
        let check = |s: &IndexService| {
            assert_eq!(all(s, "same"), newest_first);
            for i in 0..100 {
                assert_eq!(all(s, &format!("u{i}")), [i * 100], "u{i}");
            }
            assert_eq!(
                s.query("T", "same", 5, 0, i64::MAX).unwrap(),
                newest_first[..5]
            );
            // Seconds 10..=20 after the first record: records 10..=20.
            let mid = s.query("T", "same", 100, 1_010_000, 1_020_000).unwrap();
            assert_eq!(mid, (10..=20).rev().map(|i| i * 100).collect::<Vec<_>>());
        };
        check(&s);
        s.close().unwrap();
        assert!(matches!(
            s.build_index(&req("k", None, 1 << 20, 0)),
            Err(IndexError::Closed)
        ));
        assert!(matches!(
            s.query("T", "same", 1, 0, 1),
            Err(IndexError::Closed)
        ));
        drop(s);

        let mut names: Vec<String> = std::fs::read_dir(cfg.index_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 4);
        assert!(
            names.iter().all(|n| parse_file_name(n).is_some()),
            "{names:?}"
        );

        let s = IndexService::open(&cfg).unwrap();
        check(&s);
        // Appending continues in the newest file, then rolls.
        fill(&s, 100, 160);
        assert_eq!(index_counts(&s), [64, 64, 64, 64, 64, 6]);
        assert_eq!(all(&s, "u159"), [15_900]);
        assert_eq!(all(&s, "same").len(), 160);
    }

    #[test]
    fn rebuilding_indexed_records_adds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path());
        let s = IndexService::open(&cfg).unwrap();
        fill(&s, 0, 40);
        let counts = index_counts(&s);
        assert_eq!(counts, [64, 18]);
        fill(&s, 0, 40);
        assert_eq!(index_counts(&s), counts);
        drop(s);
        // After a restart, reput replays from an older position.
        let s = IndexService::open(&cfg).unwrap();
        fill(&s, 20, 40);
        assert_eq!(index_counts(&s), counts);
        assert_eq!(all(&s, "u39"), [3_900]);
        fill(&s, 40, 41);
        assert_eq!(index_counts(&s), [64, 20]);
    }

    #[test]
    fn delete_files_below_keeps_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let s = IndexService::open(&config(dir.path())).unwrap();
        fill(&s, 0, 100);
        let paths: Vec<PathBuf> = s.files.read().iter().map(|f| f.path().to_owned()).collect();
        // File 0 ends at record 31 (63 entries, 2 per record, the 32nd split).
        let end0 = s.files.read()[0].header().end_phy_offset;
        assert_eq!(s.delete_files_below(end0).unwrap(), 0, "not strictly below");
        assert_eq!(s.delete_files_below(end0 + 1).unwrap(), 1);
        assert!(!paths[0].exists() && paths[1].exists());
        assert_eq!(all(&s, "u0"), Vec::<i64>::new());
        assert_eq!(s.delete_files_below(i64::MAX).unwrap(), 2);
        assert_eq!(index_counts(&s), [12]);
        assert!(paths[3].exists());
        assert_eq!(all(&s, "u99"), [9_900]);
    }

    #[test]
    fn truncated_file_is_a_named_error() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path());
        let s = IndexService::open(&cfg).unwrap();
        fill(&s, 0, 3);
        let path = s.files.read()[0].path().to_owned();
        s.close().unwrap();
        drop(s);
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(100).unwrap();
        let err = IndexService::open(&cfg).unwrap_err();
        assert!(matches!(&err, IndexError::BadSize { path: p, len: 100, .. } if *p == path));
        assert!(err.to_string().contains(&*path.to_string_lossy()), "{err}");
    }

    #[test]
    fn flush_reports_the_newest_durable_timestamp() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path());
        let s = IndexService::open(&cfg).unwrap();
        assert_eq!(s.last_flush_timestamp(), 0);
        s.flush().unwrap();
        assert_eq!(s.last_flush_timestamp(), 0, "no files");
        fill(&s, 0, 40);
        assert_eq!(s.last_flush_timestamp(), 0);
        s.flush().unwrap();
        assert_eq!(s.last_flush_timestamp(), 1_039_000);
        drop(s);
        let s = IndexService::open(&cfg).unwrap();
        assert_eq!(s.last_flush_timestamp(), 1_039_000);
    }

    #[test]
    fn queries_run_while_the_writer_appends() {
        let dir = tempfile::tempdir().unwrap();
        let s = IndexService::open(&config(dir.path())).unwrap();
        let published = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for i in 0..300 {
                    let k = format!("k{i}");
                    s.build_index(&req(&k, None, i as i64 * 100, 1_000 + i as i64))
                        .unwrap();
                    published.store(i + 1, Ordering::Release);
                }
            });
            for _ in 0..3 {
                scope.spawn(|| loop {
                    let n = published.load(Ordering::Acquire);
                    for i in (0..n).step_by(7) {
                        let got = all(&s, &format!("k{i}"));
                        assert!(got.contains(&(i as i64 * 100)), "k{i}: {got:?}");
                    }
                    if n == 300 {
                        break;
                    }
                });
            }
        });
        assert_eq!(s.files.read().len(), 5);
    }
}
