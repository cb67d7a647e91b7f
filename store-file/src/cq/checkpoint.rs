//! The store's own small files in the consume-queue root: the dispatched
//! CommitLog offset and a snapshot of raised min offsets. Both are written
//! atomically (temp file, fsync, rename, fsync of the folder) and carry a
//! CRC32, so a torn write is never read back as a value. Their names start
//! with a dot, which no topic name can.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use rmq_common::cq::{CqError, QueueKey};
use serde::{Deserialize, Serialize};

use super::{corrupt, io_err};

/// Holds the dispatched CommitLog offset: `i64` big endian, then the CRC32
/// of those 8 bytes.
pub(crate) const DISPATCHED_FILE: &str = ".dispatched";
/// Holds the min offsets raised above a queue's first record: CRC32 of the
/// payload, then the payload (bincode of `Vec<MinEntry>`).
pub(crate) const MIN_OFFSETS_FILE: &str = ".min_offsets";
const TMP_SUFFIX: &str = ".tmp";

/// A queue's raised min offset, with the record before it that proves the
/// entry belongs to the files on disk (CommitLog offsets never repeat, so a
/// recreated queue cannot match).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MinEntry {
    /// Topic.
    pub(crate) topic: String,
    /// Queue id.
    pub(crate) queue_id: i32,
    /// The min offset.
    pub(crate) min: i64,
    /// Queue offset of the last record below it.
    pub(crate) pred_offset: i64,
    /// CommitLog offset of that record.
    pub(crate) pred_phy: i64,
}

/// The persisted dispatched offset, if the file exists.
pub(crate) fn read_dispatched(root: &Path) -> Result<Option<i64>, CqError> {
    let path = root.join(DISPATCHED_FILE);
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err("read", &path)(e)),
    };
    let parsed = bytes
        .split_first_chunk::<8>()
        .and_then(|(v, rest)| Some((v, rest.first_chunk::<4>()?, rest.len())));
    match parsed {
        Some((value, crc, 4)) if crc32fast::hash(value) == u32::from_be_bytes(*crc) => {
            Ok(Some(i64::from_be_bytes(*value)))
        }
        _ => Err(corrupt(
            &path,
            "bad length or checksum; delete it to fall back to the queues' max CommitLog offset",
        )),
    }
}

/// Persists the dispatched offset.
pub(crate) fn write_dispatched(root: &Path, value: i64) -> Result<(), CqError> {
    let v = value.to_be_bytes();
    let mut bytes = v.to_vec();
    bytes.extend_from_slice(&crc32fast::hash(&v).to_be_bytes());
    write_atomically(root, DISPATCHED_FILE, &bytes)
}

/// The min-offset snapshot; empty (with a warning) if absent or unreadable,
/// since a lost entry only lowers a min offset that the next
/// `correct_min_offset` raises again.
pub(crate) fn read_min_offsets(root: &Path) -> HashMap<QueueKey, MinEntry> {
    let path = root.join(MIN_OFFSETS_FILE);
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(path = %path.display(), error = %e, "cannot read min-offset snapshot");
            }
            return HashMap::new();
        }
    };
    let entries: Option<Vec<MinEntry>> = bytes
        .split_first_chunk::<4>()
        .filter(|(crc, payload)| crc32fast::hash(payload) == u32::from_be_bytes(**crc))
        .and_then(|(_, payload)| bincode::deserialize(payload).ok());
    let Some(entries) = entries else {
        tracing::warn!(path = %path.display(), "min-offset snapshot is corrupt; ignoring it");
        return HashMap::new();
    };
    entries
        .into_iter()
        .map(|e| (QueueKey::new(e.topic.clone(), e.queue_id), e))
        .collect()
}

/// Persists the min-offset snapshot.
pub(crate) fn write_min_offsets(root: &Path, entries: &[MinEntry]) -> Result<(), CqError> {
    let payload = bincode::serialize(entries).map_err(|e| CqError::Engine {
        context: "encode the min-offset snapshot".to_owned(),
        source: e,
    })?;
    let mut bytes = crc32fast::hash(&payload).to_be_bytes().to_vec();
    bytes.extend_from_slice(&payload);
    write_atomically(root, MIN_OFFSETS_FILE, &bytes)
}

/// Removes temp files a crash left behind.
pub(crate) fn remove_temp_files(root: &Path) -> Result<(), CqError> {
    for name in [DISPATCHED_FILE, MIN_OFFSETS_FILE] {
        let tmp = root.join(format!("{name}{TMP_SUFFIX}"));
        match fs::remove_file(&tmp) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(io_err("delete", &tmp)(e))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Makes a folder's entries (created, renamed, removed files) durable. A
/// folder that no longer exists has nothing to keep.
pub(crate) fn sync_dir(path: &Path) -> Result<(), CqError> {
    match File::open(path).and_then(|d| d.sync_all()) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_err("fsync folder", path)(e)),
        _ => Ok(()),
    }
}

fn write_atomically(root: &Path, name: &str, bytes: &[u8]) -> Result<(), CqError> {
    let tmp = root.join(format!("{name}{TMP_SUFFIX}"));
    let path = root.join(name);
    let mut f = File::create(&tmp).map_err(io_err("create", &tmp))?;
    f.write_all(bytes).map_err(io_err("write", &tmp))?;
    f.sync_all().map_err(io_err("fsync", &tmp))?;
    drop(f);
    fs::rename(&tmp, &path).map_err(io_err("rename to", &path))?;
    sync_dir(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatched_round_trip_and_corruption() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_dispatched(dir.path()).unwrap(), None);
        write_dispatched(dir.path(), 123_456_789).unwrap();
        assert_eq!(read_dispatched(dir.path()).unwrap(), Some(123_456_789));
        let path = dir.path().join(DISPATCHED_FILE);
        let mut bytes = fs::read(&path).unwrap();
        bytes[3] ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            read_dispatched(dir.path()),
            Err(CqError::Corrupt { .. })
        ));
        fs::write(&path, [0u8; 5]).unwrap();
        assert!(matches!(
            read_dispatched(dir.path()),
            Err(CqError::Corrupt { .. })
        ));
    }

    #[test]
    fn min_offsets_round_trip_and_corruption() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_min_offsets(dir.path()).is_empty());
        let e = MinEntry {
            topic: "t".into(),
            queue_id: 3,
            min: 10,
            pred_offset: 9,
            pred_phy: 900,
        };
        write_min_offsets(dir.path(), std::slice::from_ref(&e)).unwrap();
        let read = read_min_offsets(dir.path());
        assert_eq!(read.get(&QueueKey::new("t", 3)), Some(&e));
        let path = dir.path().join(MIN_OFFSETS_FILE);
        let mut bytes = fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert!(read_min_offsets(dir.path()).is_empty());
    }
}
