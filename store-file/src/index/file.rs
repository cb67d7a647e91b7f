//! One IndexFile: a mapped, fixed-size hash table from key hashes to
//! CommitLog offsets.
//!
//! Concurrency: the mapping and the in-memory copy of the header sit behind
//! one `RwLock`. The single writer (reput) holds the write lock for the few
//! in-place writes of one record; queries hold the read lock while they walk
//! a chain, so they never see a half-written entry, slot or header.
//! `fdatasync` goes through a second descriptor outside the lock, so a flush
//! blocks neither side.

use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::RwLock;

use super::layout::{time_diff_s, Entry, Geometry, Header, ENTRY_SIZE, HEADER_SIZE, NO_ENTRY};
use super::IndexError;
use crate::mapped_file::MappedFile;

/// A mapped IndexFile.
#[derive(Debug)]
pub(crate) struct IndexFile {
    path: PathBuf,
    geometry: Geometry,
    state: RwLock<State>,
    /// A second descriptor of the file for `fdatasync`, which on Linux also
    /// writes back the pages dirtied through the mapping.
    sync_handle: File,
    /// Set (under the write lock) after each write, cleared by `sync`.
    dirty: AtomicBool,
}

#[derive(Debug)]
struct State {
    /// The whole file; its write position is the file size, so `slice` covers
    /// every byte (unwritten slots and entries read as zero = empty).
    map: MappedFile,
    /// What the first 40 bytes hold.
    header: Header,
}

impl IndexFile {
    /// Creates an empty (sparse) file at `path` and writes its header.
    pub fn create(path: &Path, geometry: Geometry) -> Result<Self, IndexError> {
        let size = geometry.file_size();
        let mut map =
            MappedFile::create(path, 0, size).map_err(|e| IndexError::io(path, "create", e))?;
        map.set_wrote_position(size);
        // A first write would otherwise read ahead pages of a sparse file
        // that is written at random positions.
        map.advise_random()
            .map_err(|e| IndexError::io(path, "advise", e))?;
        let header = Header::EMPTY;
        map.write_at(0, &header.encode())
            .map_err(|e| IndexError::io(path, "write", e))?;
        Self::with_state(path, geometry, State { map, header }, true)
    }

    /// Maps an existing file and checks its size and header.
    pub fn open(path: &Path, geometry: Geometry) -> Result<Self, IndexError> {
        let size = geometry.file_size();
        let len = std::fs::metadata(path)
            .map_err(|e| IndexError::io(path, "stat", e))?
            .len();
        if len != size as u64 {
            return Err(IndexError::BadSize {
                path: path.to_owned(),
                len,
                expected: size as u64,
            });
        }
        let map = MappedFile::open(path, 0, size).map_err(|e| IndexError::io(path, "open", e))?;
        map.advise_random()
            .map_err(|e| IndexError::io(path, "advise", e))?;
        let mut raw = [0u8; HEADER_SIZE];
        raw.copy_from_slice(map.slice(0, HEADER_SIZE).unwrap_or(&[0; HEADER_SIZE]));
        let header = Header::decode(&raw, geometry).map_err(|reason| IndexError::BadHeader {
            path: path.to_owned(),
            reason,
        })?;
        Self::with_state(path, geometry, State { map, header }, false)
    }

    fn with_state(
        path: &Path,
        geometry: Geometry,
        state: State,
        dirty: bool,
    ) -> Result<Self, IndexError> {
        let sync_handle = File::open(path).map_err(|e| IndexError::io(path, "open", e))?;
        Ok(Self {
            path: path.to_owned(),
            geometry,
            state: RwLock::new(state),
            sync_handle,
            dirty: AtomicBool::new(dirty),
        })
    }

    /// Path of the file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A copy of the header.
    pub fn header(&self) -> Header {
        self.state.read().header
    }

    /// Whether every entry is used (`indexCount` reached `maxIndexNum`).
    pub fn is_full(&self) -> bool {
        self.header().index_count >= self.geometry.entries
    }

    /// Adds one entry per hash of `key_hashes` for the record at `phy_offset`
    /// stored at `store_ms`, until the file is full. Returns how many were
    /// added; the caller puts the rest in a new file.
    pub fn put(
        &self,
        key_hashes: &[i32],
        phy_offset: i64,
        store_ms: i64,
    ) -> Result<usize, IndexError> {
        let mut guard = self.state.write();
        let st = &mut *guard;
        let g = self.geometry;
        let mut added = 0;
        for &hash in key_hashes {
            let idx = st.header.index_count;
            if idx >= g.entries {
                break;
            }
            let slot_pos = g.slot_pos(g.slot_of(hash));
            let head = read_i32(&st.map, slot_pos);
            // Only entries already written (1..idx) are valid chain links; this
            // also keeps every chain strictly descending, so walks end.
            let prev = if head > NO_ENTRY && head < idx {
                head
            } else {
                NO_ENTRY
            };
            if st.header.is_empty() {
                st.header.begin_timestamp = store_ms;
                st.header.begin_phy_offset = phy_offset;
            }
            let entry = Entry {
                key_hash: hash,
                phy_offset,
                time_diff_s: time_diff_s(st.header.begin_timestamp, store_ms),
                prev_index: prev,
            };
            self.write(&mut st.map, g.entry_pos(idx), &entry.encode())?;
            self.write(&mut st.map, slot_pos, &idx.to_be_bytes())?;
            if prev == NO_ENTRY {
                st.header.hash_slot_count += 1;
            }
            st.header.index_count = idx + 1;
            st.header.end_phy_offset = phy_offset;
            st.header.end_timestamp = store_ms;
            added += 1;
        }
        if added > 0 {
            let header = st.header.encode();
            self.write(&mut st.map, 0, &header)?;
            self.dirty.store(true, Ordering::Release);
        }
        Ok(added)
    }

    fn write(&self, map: &mut MappedFile, pos: usize, data: &[u8]) -> Result<(), IndexError> {
        map.write_at(pos, data)
            .map_err(|e| IndexError::io(&self.path, "write", e))
    }

    /// Offers to `out`, newest first, the offsets of entries with `key_hash`
    /// whose time (beginTimestamp + whole seconds) lies in `begin_ms..=end_ms`.
    pub fn select(&self, key_hash: i32, begin_ms: i64, end_ms: i64, out: &mut Collector) {
        let st = self.state.read();
        let h = st.header;
        if h.is_empty() || h.begin_timestamp > end_ms || h.end_timestamp < begin_ms {
            return;
        }
        let g = self.geometry;
        let mut idx = read_i32(&st.map, g.slot_pos(g.slot_of(key_hash)));
        // Links are only followed downwards, so this visits each entry once.
        while idx > NO_ENTRY && idx < h.index_count && !out.is_full() {
            let e = read_entry(&st.map, g.entry_pos(idx));
            if e.time_diff_s < 0 {
                break;
            }
            let time = h
                .begin_timestamp
                .saturating_add(i64::from(e.time_diff_s) * 1000);
            if e.key_hash == key_hash && (begin_ms..=end_ms).contains(&time) {
                out.offer(e.phy_offset);
            }
            // Chains run from newest to oldest: nothing older is in range.
            if time < begin_ms || e.prev_index >= idx {
                break;
            }
            idx = e.prev_index;
        }
    }

    /// Makes everything written so far durable. Returns the header as it was
    /// when the sync started: all of it is on disk afterwards.
    pub fn sync(&self) -> Result<Header, IndexError> {
        let was_dirty = self.dirty.swap(false, Ordering::AcqRel);
        let header = self.header();
        if was_dirty {
            if let Err(e) = self.sync_handle.sync_data() {
                self.dirty.store(true, Ordering::Release);
                return Err(IndexError::io(&self.path, "sync", e));
            }
        }
        Ok(header)
    }
}

/// Offsets found by a query: unique, in the order found, at most `max`.
#[derive(Debug)]
pub(crate) struct Collector {
    max: usize,
    seen: HashSet<i64>,
    offsets: Vec<i64>,
}

impl Collector {
    /// Collects up to `max` offsets.
    pub fn new(max: usize) -> Self {
        let cap = max.min(1024);
        Self {
            max,
            seen: HashSet::with_capacity(cap),
            offsets: Vec::with_capacity(cap),
        }
    }

    /// Whether `max` offsets were found.
    pub fn is_full(&self) -> bool {
        self.offsets.len() >= self.max
    }

    fn offer(&mut self, phy_offset: i64) {
        if !self.is_full() && self.seen.insert(phy_offset) {
            self.offsets.push(phy_offset);
        }
    }

    /// The offsets found.
    pub fn into_offsets(self) -> Vec<i64> {
        self.offsets
    }
}

/// The i32 at `pos`; 0 ("none") if `pos` is outside the file, which the
/// geometry rules out.
fn read_i32(map: &MappedFile, pos: usize) -> i32 {
    let mut b = [0u8; 4];
    if let Some(s) = map.slice(pos, 4) {
        b.copy_from_slice(s);
    }
    i32::from_be_bytes(b)
}

/// The entry at `pos`; an all-zero (invalid) entry if `pos` is outside the file.
fn read_entry(map: &MappedFile, pos: usize) -> Entry {
    let mut b = [0u8; ENTRY_SIZE];
    if let Some(s) = map.slice(pos, ENTRY_SIZE) {
        b.copy_from_slice(s);
    }
    Entry::decode(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::layout::key_hash;

    fn select_all(f: &IndexFile, key: &str, max: usize, begin: i64, end: i64) -> Vec<i64> {
        let mut out = Collector::new(max);
        f.select(key_hash(key), begin, end, &mut out);
        out.into_offsets()
    }

    /// Exact bytes after two records with the same key into an empty file of
    /// 4 slots and 4 entries (136 bytes), written out from the layout.
    #[test]
    fn golden_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("20240102030405678");
        let g = Geometry {
            slots: 4,
            entries: 4,
        };
        let f = IndexFile::create(&path, g).unwrap();
        // "T#A": Java hashCode 81874 = 0x00013FD2; 81874 % 4 = slot 2.
        assert_eq!(
            f.put(&[key_hash("T#A")], 1234, 1_700_000_000_123).unwrap(),
            1
        );
        f.sync().unwrap();
        #[rustfmt::skip]
        let mut expected: Vec<u8> = vec![
            // header: beginTimestamp 1_700_000_000_123, endTimestamp (same)
            0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x7b,
            0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x7b,
            // beginPhyOffset 1234, endPhyOffset 1234
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0xd2,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0xd2,
            // hashSlotCount 1, indexCount 2
            0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02,
            // slots 0..4: slot 2 -> entry 1
            0, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 1,  0, 0, 0, 0,
            // entry 0: reserved
            0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 0,
            // entry 1: keyHash, phyOffset 1234, timeDiff 0 s, prevIndex 0
            0x00, 0x01, 0x3f, 0xd2,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0xd2,
            0, 0, 0, 0,  0, 0, 0, 0,
        ];
        expected.resize(136, 0);
        assert_eq!(std::fs::read(&path).unwrap(), expected);

        // Same key 2.5 s later at 2000: entry 2 = (hash, 2000, 2 s, prev 1),
        // slot 2 -> 2, no new slot used, indexCount 3, end fields move.
        assert_eq!(
            f.put(&[key_hash("T#A")], 2000, 1_700_000_002_623).unwrap(),
            1
        );
        f.sync().unwrap();
        expected[8..16].copy_from_slice(&[0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x72, 0x3f]);
        expected[24..32].copy_from_slice(&[0, 0, 0, 0, 0, 0, 0x07, 0xd0]);
        expected[36..40].copy_from_slice(&[0, 0, 0, 3]);
        expected[48..52].copy_from_slice(&[0, 0, 0, 2]);
        #[rustfmt::skip]
        expected[96..116].copy_from_slice(&[
            0x00, 0x01, 0x3f, 0xd2,
            0, 0, 0, 0, 0, 0, 0x07, 0xd0,
            0, 0, 0, 2,
            0, 0, 0, 1,
        ]);
        assert_eq!(std::fs::read(&path).unwrap(), expected);
        assert_eq!(select_all(&f, "T#A", 10, 0, i64::MAX), [2000, 1234]);
    }

    #[test]
    fn collisions_chain_and_only_equal_hashes_match() {
        let dir = tempfile::tempdir().unwrap();
        let g = Geometry {
            slots: 16,
            entries: 64,
        };
        let f = IndexFile::create(&dir.path().join("f"), g).unwrap();
        let keys: Vec<String> = (0..63).map(|i| format!("T#key-{i}")).collect();
        for (i, k) in keys.iter().enumerate() {
            let added = f
                .put(&[key_hash(k)], i as i64 * 100, 1_000_000 + i as i64)
                .unwrap();
            assert_eq!(added, 1);
        }
        assert!(f.is_full());
        assert_eq!(f.put(&[1], 99_999, 2_000_000).unwrap(), 0, "full");
        let h = f.header();
        assert_eq!(h.index_count, 64);
        assert!(h.hash_slot_count <= 16 && h.hash_slot_count > 0);
        for k in &keys {
            let expected: Vec<i64> = (0..keys.len())
                .rev()
                .filter(|j| key_hash(&keys[*j]) == key_hash(k))
                .map(|j| j as i64 * 100)
                .collect();
            assert_eq!(select_all(&f, k, 100, 0, i64::MAX), expected, "{k}");
        }
        assert!(select_all(&f, "T#absent", 100, 0, i64::MAX)
            .iter()
            .all(|o| key_hash(&keys[(*o / 100) as usize]) == key_hash("T#absent")));
    }

    #[test]
    fn select_filters_time_in_whole_seconds_and_honours_max() {
        let dir = tempfile::tempdir().unwrap();
        let f = IndexFile::create(
            &dir.path().join("f"),
            Geometry {
                slots: 16,
                entries: 64,
            },
        )
        .unwrap();
        let hash = key_hash("T#k");
        // Stored at begin + 0 s, 1.5 s, 3.9 s: they read as +0, +1, +3 s.
        for (phy, ts) in [(0, 10_000), (100, 11_500), (200, 13_900)] {
            f.put(&[hash], phy, ts).unwrap();
        }
        assert_eq!(select_all(&f, "T#k", 10, 0, i64::MAX), [200, 100, 0]);
        assert_eq!(select_all(&f, "T#k", 2, 0, i64::MAX), [200, 100]);
        assert_eq!(select_all(&f, "T#k", 10, 11_000, 11_000), [100]);
        assert_eq!(select_all(&f, "T#k", 10, 11_001, 12_999), Vec::<i64>::new());
        // 13_900 reads as 13_000, as in RocketMQ.
        assert_eq!(select_all(&f, "T#k", 10, 13_000, 13_000), [200]);
        assert_eq!(select_all(&f, "T#k", 10, 20_000, 30_000), Vec::<i64>::new());
    }

    /// The in-place write the index relies on: bounds-checked, and it marks
    /// the bytes dirty for `MappedFile::flush`.
    #[test]
    fn mapped_file_write_at_for_index_updates() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = MappedFile::create(&dir.path().join("m"), 0, 64).unwrap();
        m.set_wrote_position(64);
        assert_eq!(m.flushed_position(), 64);
        m.write_at(8, &[1, 2, 3, 4]).unwrap();
        m.write_at(60, &[9; 4]).unwrap();
        assert_eq!(m.slice(8, 4), Some(&[1, 2, 3, 4][..]));
        assert_eq!(m.flushed_position(), 8);
        let err = m.write_at(61, &[0; 4]).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
        assert!(m.write_at(usize::MAX, &[0]).is_err());
        assert_eq!(
            m.flush(0, crate::mapped_file::FlushMethod::Fdatasync)
                .unwrap(),
            64
        );
        assert_eq!(m.flushed_position(), 64);
    }

    #[test]
    fn open_checks_size_and_header() {
        let dir = tempfile::tempdir().unwrap();
        let g = Geometry {
            slots: 4,
            entries: 4,
        };
        let path = dir.path().join("f");
        let f = IndexFile::create(&path, g).unwrap();
        f.put(&[5, 6], 7, 8_000).unwrap();
        drop(f);
        let f = IndexFile::open(&path, g).unwrap();
        assert_eq!(f.header().index_count, 3);
        assert_eq!(f.header().hash_slot_count, 2);
        drop(f);

        let err = IndexFile::open(
            &path,
            Geometry {
                slots: 8,
                entries: 4,
            },
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                IndexError::BadSize {
                    len: 136,
                    expected: 152,
                    ..
                }
            ),
            "{err}"
        );

        // indexCount beyond maxIndexNum.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[36..40].copy_from_slice(&9i32.to_be_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let err = IndexFile::open(&path, g).unwrap_err();
        assert!(
            matches!(&err, IndexError::BadHeader { path: p, .. } if *p == path),
            "{err}"
        );
        assert!(err.to_string().contains("indexCount 9"), "{err}");
    }
}
