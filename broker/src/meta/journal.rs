//! The change journal of a keyed meta table (`topics.json`,
//! `subscriptionGroup.json`): each change is one line appended to
//! `<file>.journal` and synced, so making a change durable costs the change,
//! not a rewrite of a table of 100,000 entries. The JSON file itself (the
//! form Apache RocketMQ's tools read) is rewritten only by a *compaction*:
//! when the journal has grown as large as the file, when it has held
//! changes for [`COMPACT_AFTER`], at a clean stop, and at start-up after a
//! crash.
//!
//! A line is `<crc32 as 8 hex digits> <JSON>\n`; its JSON is a
//! [`JournalRecord`]: the table's data version after the change, the
//! entries put (whole) and the names deleted. Replaying the same changes
//! twice gives the same table, which is what makes compaction safe:
//!
//! 1. under the table's lock, take the pending lines (every change up to
//!    that moment, none after); then copy the table a chunk at a time
//!    ([`copy_in_chunks`]: writers go on meanwhile, so each entry is as its
//!    chunk found it, at that moment or later);
//! 2. append and sync those lines;
//! 3. rename `<file>.journal` to `<file>.journal.compacting` and start an
//!    empty journal (folder synced);
//! 4. write the copy to the JSON file (temporary file, sync, rename);
//! 5. delete `<file>.journal.compacting`.
//!
//! Start-up loads the JSON file and replays `.compacting`, then `.journal`.
//! Together they always hold an unbroken run of changes that reaches back
//! at least to the moment the file's copy began, so a crash at any step
//! loses nothing that was synced: for every entry, the last change replayed
//! is its last synced change, and an entry no synced change touched since
//! is as the copy found it. A line cut short by a crash (no newline, or a checksum that
//! does not match, at the very end) was never acknowledged: it is dropped
//! with a warning. A bad line followed by good ones is damage, and stops
//! the broker with the file and line named.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rmq_common::remoting::body::DataVersion;
use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::error::MetaError;

use super::generation::Generation;

/// A journal that has held changes this long is compacted into its file,
/// so Apache RocketMQ's tools reading the JSON file see at most this old a
/// table while the broker runs.
pub const COMPACT_AFTER: Duration = Duration::from_secs(60);

/// A journal smaller than this is not compacted for its size.
const COMPACT_MIN_BYTES: u64 = 4 * 1024 * 1024;

/// One change of a keyed table, as one journal line holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JournalRecord<V> {
    /// The table's version after the change.
    pub data_version: DataVersion,
    /// Entries created or replaced, whole.
    #[serde(default = "Vec::new", skip_serializing_if = "Vec::is_empty")]
    pub put: Vec<V>,
    /// Names removed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delete: Vec<String>,
}

/// An entry of a keyed meta table: its name is its key.
pub trait Keyed: Clone + PartialEq + Serialize + DeserializeOwned {
    /// The entry's name.
    fn key(&self) -> &str;
}

/// A keyed table with its data version, as its JSON file holds them.
pub trait KeyedFile<V: Keyed>: Default {
    /// The entries by name, and the table's version.
    fn parts(&self) -> (&BTreeMap<String, V>, &DataVersion);
    /// The same, to change.
    fn parts_mut(&mut self) -> (&mut BTreeMap<String, V>, &mut DataVersion);

    /// Applies one recorded change.
    fn replay(&mut self, record: JournalRecord<V>) {
        let (entries, version) = self.parts_mut();
        for entry in record.put {
            entries.insert(entry.key().to_owned(), entry);
        }
        for name in &record.delete {
            entries.remove(name);
        }
        *version = record.data_version;
    }
}

/// Entries copied under one hold of a table's read lock.
const COPY_CHUNK: usize = 2048;

/// A copy of the table in `state`, taken [`COPY_CHUNK`] entries per hold
/// of its read lock, so a table of 100,000 entries never holds up a writer
/// (and the readers queued behind it) for the whole copy. The copy is
/// *fuzzy*: each entry is as it was when its chunk was read, and the
/// version is the latest. Replaying every change made since the copy began
/// over it gives the table exactly (each change puts or deletes whole
/// entries), which is all a compaction or a registration needs.
pub fn copy_in_chunks<V: Keyed, T: KeyedFile<V>>(state: &parking_lot::RwLock<T>) -> T {
    use std::ops::Bound::{Excluded, Unbounded};
    let mut copy = T::default();
    let mut after: Option<String> = None;
    loop {
        let s = state.read();
        let (entries, version) = s.parts();
        let chunk = match &after {
            None => entries.range::<str, _>((Unbounded, Unbounded)),
            Some(k) => entries.range::<str, _>((Excluded(k.as_str()), Unbounded)),
        };
        let (out, out_version) = copy.parts_mut();
        let mut n = 0;
        for (k, v) in chunk.take(COPY_CHUNK) {
            out.insert(k.clone(), v.clone());
            n += 1;
        }
        *out_version = version.clone();
        after = out.keys().next_back().cloned();
        if n < COPY_CHUNK {
            return copy;
        }
    }
}

/// What turns `old` into `new`: the entries to put and the names to delete
/// (a slave taking its master's table journals only the difference).
pub fn difference<V: Keyed>(
    old: &BTreeMap<String, V>,
    new: &BTreeMap<String, V>,
) -> (Vec<V>, Vec<String>) {
    let put = new
        .values()
        .filter(|v| old.get(v.key()) != Some(*v))
        .cloned()
        .collect();
    let delete = old
        .keys()
        .filter(|name| !new.contains_key(*name))
        .cloned()
        .collect();
    (put, delete)
}

/// Changes not yet appended: the lines and the generation of the last.
#[derive(Debug, Default)]
struct Pending {
    lines: Vec<u8>,
    last: Option<Generation>,
}

/// The journal of one table file.
#[derive(Debug)]
pub struct Journal {
    /// `<file>.journal`.
    path: PathBuf,
    /// `<file>.journal.compacting`.
    compacting: PathBuf,
    pending: Mutex<Pending>,
    /// The open journal, appended to by the one writer at a time
    /// (the table's write serialisation).
    file: Mutex<Option<File>>,
    /// Bytes in `<file>.journal`, and when it last went from empty to not.
    size: Mutex<(u64, Option<Instant>)>,
    /// Size of the JSON file at its last write: the journal is compacted
    /// once it is as large.
    snapshot_bytes: Mutex<u64>,
    /// Queued lines were lost to a failed append: only a compaction (the
    /// table in memory, whole) makes their changes durable.
    lost: std::sync::atomic::AtomicBool,
}

/// What [`Journal::load`] found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Replayed {
    /// Changes replayed.
    pub records: usize,
    /// A torn last line was dropped.
    pub torn_tail: bool,
}

impl Journal {
    /// The journal of `table_file`.
    pub fn new(table_file: &Path) -> Self {
        let name = table_file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let sibling = |suffix: &str| table_file.with_file_name(format!("{name}{suffix}"));
        Self {
            path: sibling(".journal"),
            compacting: sibling(".journal.compacting"),
            pending: Mutex::new(Pending::default()),
            file: Mutex::new(None),
            size: Mutex::new((0, None)),
            snapshot_bytes: Mutex::new(0),
            lost: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// `<file>.journal`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replays `.compacting` then `.journal` into `table`. The caller
    /// compacts afterwards when anything was replayed.
    pub fn load<V: Keyed>(&self, table: &mut impl KeyedFile<V>) -> Result<Replayed, MetaError> {
        let mut found = Replayed::default();
        for path in [&self.compacting, &self.path] {
            let bytes = match std::fs::read(path) {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(source) => {
                    return Err(MetaError::Io {
                        action: "read",
                        path: path.clone(),
                        source,
                    })
                }
            };
            let (records, torn) = parse(path, &bytes)?;
            if torn {
                tracing::warn!(
                    path = %path.display(),
                    "the journal's last line was cut short by a crash (never acknowledged); dropped"
                );
            }
            found.torn_tail |= torn;
            found.records += records.len();
            for record in records {
                table.replay(record);
            }
        }
        Ok(found)
    }

    /// Queues the line of a change; call it under the table's write lock,
    /// right after the change took `generation`, so lines queue in the
    /// order of their generations.
    pub fn push<V: Serialize>(
        &self,
        generation: Generation,
        record: &JournalRecord<V>,
    ) -> Result<(), serde_json::Error> {
        let json = serde_json::to_vec(record)?;
        let mut p = self.pending.lock();
        let crc = crc32fast::hash(&json);
        p.lines.extend_from_slice(format!("{crc:08x} ").as_bytes());
        p.lines.extend_from_slice(&json);
        p.lines.push(b'\n');
        p.last = Some(generation);
        Ok(())
    }

    /// Queues a change (see [`Journal::push`]); a change that cannot be
    /// encoded is left to the next compaction, which writes the table whole.
    pub fn record<V: Serialize>(
        &self,
        generation: Generation,
        data_version: &DataVersion,
        put: Vec<V>,
        delete: Vec<String>,
    ) {
        let record = JournalRecord {
            data_version: data_version.clone(),
            put,
            delete,
        };
        if let Err(e) = self.push(generation, &record) {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot encode a change for the journal; the next compaction writes it");
            self.lost();
        }
    }

    /// Takes every queued line (under the table's lock for a compaction's
    /// cut).
    pub(crate) fn take(&self) -> (Vec<u8>, Option<Generation>) {
        let mut p = self.pending.lock();
        let last = p.last.take();
        (std::mem::take(&mut p.lines), last)
    }

    /// Appends `lines` and syncs them (the one writer at a time).
    pub(crate) fn append(&self, lines: &[u8]) -> Result<(), MetaError> {
        if lines.is_empty() {
            return Ok(());
        }
        let io = |action, source| MetaError::Io {
            action,
            path: self.path.clone(),
            source,
        };
        let mut file = self.file.lock();
        if file.is_none() {
            if let Some(dir) = self.path.parent() {
                rmq_common::meta_file::create_dir_all_durable(dir)
                    .map_err(|e| io("create the folder of", e))?;
            }
            let created = !self.path.exists();
            let f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .map_err(|e| io("open", e))?;
            // A new journal's name must outlive a crash as its lines do.
            if created {
                self.sync_folder()?;
            }
            *file = Some(f);
        }
        let Some(f) = file.as_mut() else {
            return Ok(());
        };
        let result = f.write_all(lines).and_then(|()| f.sync_data());
        if let Err(e) = result {
            // Reopened next time: a failed write may have left the end
            // of the file anywhere.
            *file = None;
            return Err(io("append to", e));
        }
        let mut size = self.size.lock();
        if size.0 == 0 {
            size.1 = Some(Instant::now());
        }
        size.0 += lines.len() as u64;
        Ok(())
    }

    /// Whether the journal should be compacted now: it is as large as the
    /// file (and past [`COMPACT_MIN_BYTES`]), it has held changes for
    /// [`COMPACT_AFTER`], or lines were lost.
    pub(crate) fn needs_compaction(&self, now: Instant) -> bool {
        if self.lost.load(std::sync::atomic::Ordering::Acquire) {
            return true;
        }
        let (bytes, since) = *self.size.lock();
        let limit = (*self.snapshot_bytes.lock()).max(COMPACT_MIN_BYTES);
        bytes >= limit
            || (bytes > 0 && since.is_some_and(|t| now.duration_since(t) >= COMPACT_AFTER))
    }

    /// Whether the journal holds changes the file does not.
    pub(crate) fn holds_changes(&self) -> bool {
        self.size.lock().0 > 0
            || self.compacting.exists()
            || self.lost.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether queued lines were lost since the last compaction.
    pub(crate) fn is_lost(&self) -> bool {
        self.lost.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Queued lines were lost: the next pass compacts.
    pub(crate) fn lost(&self) {
        self.lost.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Step 3 of a compaction: the journal so far becomes `.compacting`
    /// (unless an earlier compaction's is still there: then the journal
    /// goes on, and both are kept until a snapshot covers them) and an
    /// empty journal starts.
    pub(crate) fn rotate(&self) -> Result<(), MetaError> {
        let mut file = self.file.lock();
        *file = None;
        if self.compacting.exists() || !self.path.exists() {
            return Ok(());
        }
        std::fs::rename(&self.path, &self.compacting).map_err(|source| MetaError::Io {
            action: "rename",
            path: self.path.clone(),
            source,
        })?;
        *self.size.lock() = (0, None);
        self.sync_folder()
    }

    /// Step 5: the snapshot of `bytes` bytes covers `.compacting`.
    pub(crate) fn compacted(&self, snapshot_bytes: usize) -> Result<(), MetaError> {
        *self.snapshot_bytes.lock() = snapshot_bytes as u64;
        self.lost.store(false, std::sync::atomic::Ordering::Release);
        match std::fs::remove_file(&self.compacting) {
            Ok(()) => self.sync_folder(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(MetaError::Io {
                action: "remove",
                path: self.compacting.clone(),
                source,
            }),
        }
    }

    /// After a start-up's snapshot covered everything replayed: both
    /// journal files go.
    pub(crate) fn clear(&self, snapshot_bytes: usize) -> Result<(), MetaError> {
        *self.file.lock() = None;
        for path in [&self.compacting, &self.path] {
            match std::fs::remove_file(path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(MetaError::Io {
                        action: "remove",
                        path: path.clone(),
                        source,
                    })
                }
            }
        }
        *self.size.lock() = (0, None);
        *self.snapshot_bytes.lock() = snapshot_bytes as u64;
        self.sync_folder()
    }

    fn sync_folder(&self) -> Result<(), MetaError> {
        let Some(dir) = self.path.parent() else {
            return Ok(());
        };
        rmq_common::meta_file::sync_dir(dir).map_err(|source| MetaError::Write {
            path: self.path.clone(),
            source,
        })
    }
}

/// The records of one journal file; `true` when a torn last line was
/// dropped.
fn parse<V: Keyed>(path: &Path, bytes: &[u8]) -> Result<(Vec<JournalRecord<V>>, bool), MetaError> {
    let mut records = Vec::new();
    let mut rest = bytes;
    let mut line_no = 0usize;
    while !rest.is_empty() {
        line_no += 1;
        let (line, after, complete) = match rest.iter().position(|b| *b == b'\n') {
            Some(i) => (&rest[..i], &rest[i + 1..], true),
            None => (rest, &[][..], false),
        };
        rest = after;
        let decoded = if complete {
            decode_line(line)
        } else {
            Err("no newline at its end".to_owned())
        };
        match decoded {
            Ok(record) => records.push(record),
            // A torn write can only be the last thing in the file.
            Err(_) if rest.is_empty() => return Ok((records, true)),
            Err(why) => {
                return Err(MetaError::Journal {
                    path: path.to_owned(),
                    line: line_no,
                    why,
                })
            }
        }
    }
    Ok((records, false))
}

fn decode_line<V: Keyed>(line: &[u8]) -> Result<JournalRecord<V>, String> {
    let (crc, json) = match (line.get(..8), line.get(8), line.get(9..)) {
        (Some(crc), Some(b' '), Some(json)) => (crc, json),
        _ => return Err("not `<crc32> <json>`".into()),
    };
    let crc = std::str::from_utf8(crc)
        .ok()
        .and_then(|s| u32::from_str_radix(s, 16).ok())
        .ok_or("the checksum is not 8 hex digits")?;
    if crc32fast::hash(json) != crc {
        return Err(format!("checksum {crc:08x} does not match its JSON"));
    }
    serde_json::from_slice(json).map_err(|e| format!("bad JSON: {e}"))
}

/// Start-up: replays `journal` into `table` (just loaded from `path`). When
/// the journal held anything (a crash, or a stop that could not compact),
/// writes the table to `path` and removes the journal files, so the run
/// starts with the whole table in its file and an empty journal.
pub fn recover<V, T>(path: &Path, journal: &Journal, table: &mut T) -> Result<(), MetaError>
where
    V: Keyed,
    T: KeyedFile<V> + Serialize,
{
    let found = journal.load(table)?;
    let leftovers = journal.path.exists() || journal.compacting.exists();
    if found.records == 0 && !leftovers {
        let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
        *journal.snapshot_bytes.lock() = bytes;
        return Ok(());
    }
    let bytes = super::encode_json(path, table)?;
    super::write_bytes(path, &bytes)?;
    journal.clear(bytes.len())?;
    if found.records > 0 {
        tracing::info!(
            path = %path.display(),
            records = found.records,
            torn_tail = found.torn_tail,
            "meta journal replayed into its file"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::collections::BTreeMap;

    #[derive(Debug, Default, Clone, Serialize, PartialEq)]
    struct Table(BTreeMap<String, Entry>, DataVersion);

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Entry(String, u32);

    impl Keyed for Entry {
        fn key(&self) -> &str {
            &self.0
        }
    }

    impl KeyedFile<Entry> for Table {
        fn parts(&self) -> (&BTreeMap<String, Entry>, &DataVersion) {
            (&self.0, &self.1)
        }
        fn parts_mut(&mut self) -> (&mut BTreeMap<String, Entry>, &mut DataVersion) {
            (&mut self.0, &mut self.1)
        }
    }

    #[test]
    fn a_copy_in_chunks_is_whole_for_a_still_table() {
        let mut t = Table::default();
        for i in 0..COPY_CHUNK * 2 + 7 {
            t.0.insert(format!("k{i:05}"), Entry(format!("k{i:05}"), i as u32));
        }
        t.1.counter = 9;
        let state = parking_lot::RwLock::new(t);
        let copy = copy_in_chunks(&state);
        assert_eq!(copy, *state.read());
        let empty = parking_lot::RwLock::new(Table::default());
        assert_eq!(copy_in_chunks(&empty), Table::default());
    }

    fn record(counter: i64, put: &[(&str, u32)], delete: &[&str]) -> JournalRecord<Entry> {
        JournalRecord {
            data_version: DataVersion {
                timestamp: 1,
                counter,
                state_version: 0,
            },
            put: put.iter().map(|(k, v)| Entry((*k).into(), *v)).collect(),
            delete: delete.iter().map(|k| (*k).to_owned()).collect(),
        }
    }

    fn write(journal: &Journal, records: &[JournalRecord<Entry>]) {
        for (i, r) in records.iter().enumerate() {
            journal.push(Generation::at(i as u64 + 1), r).unwrap();
        }
        let (lines, _) = journal.take();
        journal.append(&lines).unwrap();
    }

    #[test]
    fn replays_in_order_and_drops_a_torn_last_line_only() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.json");
        let journal = Journal::new(&file);
        write(
            &journal,
            &[
                record(1, &[("a", 1), ("b", 2)], &[]),
                record(2, &[("a", 3)], &["b"]),
            ],
        );
        // A crash in the middle of the third line.
        let mut f = OpenOptions::new()
            .append(true)
            .open(journal.path())
            .unwrap();
        f.write_all(b"0badc0de {\"dataVers").unwrap();
        let mut t = Table::default();
        let found = Journal::new(&file).load(&mut t).unwrap();
        assert_eq!(
            found,
            Replayed {
                records: 2,
                torn_tail: true
            }
        );
        assert_eq!(
            t.0,
            BTreeMap::from([("a".to_owned(), Entry("a".into(), 3))])
        );
        assert_eq!(t.1.counter, 2);

        // The same damage before a good line is refused, naming the line.
        f.write_all(b"\n").unwrap();
        let good = std::fs::read(journal.path()).unwrap();
        let first = good.split(|b| *b == b'\n').next().unwrap().to_vec();
        f.write_all(&first).unwrap();
        f.write_all(b"\n").unwrap();
        let err = Journal::new(&file).load(&mut Table::default()).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("t.json.journal") && text.contains("line 3"),
            "{text}"
        );
    }

    #[test]
    fn every_crash_point_of_a_compaction_recovers_the_same_table() {
        // Changes before the compaction's cut, and after it.
        let before = [
            record(1, &[("a", 1), ("b", 1)], &[]),
            record(2, &[("a", 2)], &["b"]),
        ];
        let after = [
            record(3, &[("b", 5), ("c", 1)], &["a"]),
            record(4, &[("a", 7), ("c", 2)], &[]),
        ];
        let mut expected = Table::default();
        for r in before.iter().chain(&after) {
            expected.replay(r.clone());
        }
        // The file's copy: exact at the cut, or fuzzy (the copy, taken in
        // chunks while writes went on, already holds the first change
        // after the cut).
        let mut exact = Table::default();
        for r in &before {
            exact.replay(r.clone());
        }
        let mut fuzzy = exact.clone();
        fuzzy.replay(after[0].clone());
        // Crash after step N of a compaction (3: rotated; 4: file written;
        // 5: .compacting removed), then the changes after the cut.
        for snapshot in [&exact, &fuzzy] {
            for step in 3..=5 {
                let dir = tempfile::tempdir().unwrap();
                let file = dir.path().join("t.json");
                let journal = Journal::new(&file);
                write(&journal, &before);
                journal.rotate().unwrap();
                if step >= 5 {
                    journal.compacted(1).unwrap();
                }
                write(&journal, &after);
                let mut t = if step >= 4 {
                    snapshot.clone()
                } else {
                    Table::default()
                };
                Journal::new(&file).load(&mut t).unwrap();
                assert_eq!(t, expected, "crash after step {step}, {snapshot:?}");
            }
        }
    }
}
