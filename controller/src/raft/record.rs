//! The record framing of every file in the store folder, and the atomic
//! replacement of small files.
//!
//! A record is a 12-byte header, then the payload (JSON):
//! `len: u32 LE | payload CRC32: u32 LE | header CRC32 (of the first 8
//! bytes): u32 LE`. The header's own CRC lets a scan trust a length before
//! it reads that far.
//!
//! A scan stops at the first record that fails a check. If no whole valid
//! record starts anywhere after it, the damage is a torn tail (a crash in
//! the middle of an append that was never acknowledged, since the flush
//! callback runs after fsync) and the caller cuts the file there. If a valid
//! record follows, the damage is in the middle of the log, which a crash
//! cannot cause: that is [`StoreError::Corrupt`], never a silent cut.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::raft::error::StoreError;

/// Header bytes before each payload.
pub const HEADER_LEN: usize = 12;

/// The largest payload accepted (a snapshot of every broker set included).
pub const MAX_PAYLOAD: usize = 256 << 20;

/// One whole, checked record found by [`scan`].
#[derive(Debug)]
pub struct Found<'a> {
    /// Where its header starts.
    pub offset: u64,
    /// Its payload.
    pub payload: &'a [u8],
}

/// The records of a file's bytes.
#[derive(Debug)]
pub struct Scan<'a> {
    /// Every whole record, in order.
    pub records: Vec<Found<'a>>,
    /// Bytes that hold whole records; past it, a torn tail (if shorter
    /// than the file).
    pub valid_len: u64,
}

/// Frames `value` as one record.
pub fn encode<T: Serialize>(value: &T, path: &Path) -> Result<Vec<u8>, StoreError> {
    let payload = serde_json::to_vec(value).map_err(|source| StoreError::Encode {
        path: path.to_owned(),
        source,
    })?;
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|_| payload.len() <= MAX_PAYLOAD)
        .ok_or_else(|| StoreError::Corrupt {
            path: path.to_owned(),
            offset: 0,
            why: "record too large to write",
        })?;
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    let header_crc = crc32fast::hash(&out[..8]);
    out.extend_from_slice(&header_crc.to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
    Some(u32::from_le_bytes(b))
}

/// The record at `at`, if a whole valid one starts there; else why not.
fn record_at(bytes: &[u8], at: usize) -> Result<&[u8], &'static str> {
    let (Some(len), Some(crc), Some(header_crc)) = (
        u32_at(bytes, at),
        u32_at(bytes, at + 4),
        u32_at(bytes, at + 8),
    ) else {
        return Err("header cut short");
    };
    if crc32fast::hash(&bytes[at..at + 8]) != header_crc {
        return Err("header CRC mismatch");
    }
    let len = len as usize;
    if len > MAX_PAYLOAD {
        return Err("length out of range");
    }
    let start = at + HEADER_LEN;
    let Some(payload) = bytes.get(start..start + len) else {
        return Err("payload cut short");
    };
    if crc32fast::hash(payload) != crc {
        return Err("payload CRC mismatch");
    }
    Ok(payload)
}

/// Reads the records of `bytes` (the content of `path`), telling a torn
/// tail from damage in the middle (see the module doc).
pub fn scan<'a>(bytes: &'a [u8], path: &Path) -> Result<Scan<'a>, StoreError> {
    let mut records = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        match record_at(bytes, at) {
            Ok(payload) => {
                records.push(Found {
                    offset: at as u64,
                    payload,
                });
                at += HEADER_LEN + payload.len();
            }
            Err(why) => {
                // Only on damage: look for any valid record further on.
                if (at + 1..bytes.len()).any(|next| record_at(bytes, next).is_ok()) {
                    return Err(StoreError::Corrupt {
                        path: path.to_owned(),
                        offset: at as u64,
                        why,
                    });
                }
                break;
            }
        }
    }
    Ok(Scan {
        records,
        valid_len: at as u64,
    })
}

/// Decodes a found record's payload.
pub fn decode<T: DeserializeOwned>(found: &Found<'_>, path: &Path) -> Result<T, StoreError> {
    serde_json::from_slice(found.payload).map_err(|source| StoreError::Decode {
        path: path.to_owned(),
        offset: found.offset,
        source,
    })
}

/// An I/O error of `op` on `path`.
pub fn io_err(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> StoreError {
    let path = path.to_owned();
    move |source| StoreError::Io { op, path, source }
}

/// Fsyncs a folder, so that a rename or a new file in it is durable.
pub fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err("fsync folder", dir))
}

/// Replaces `path` by one record holding `value`: a temporary file written
/// and fsynced, renamed over `path`, then the folder fsynced. A reader sees
/// the old file or the new one, never a mix.
pub fn write_atomic<T: Serialize>(path: &Path, value: &T) -> Result<(), StoreError> {
    let bytes = encode(value, path)?;
    let tmp = tmp_path(path);
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(io_err("create", &tmp))?;
    f.write_all(&bytes).map_err(io_err("write", &tmp))?;
    f.sync_all().map_err(io_err("fsync", &tmp))?;
    drop(f);
    fs::rename(&tmp, path).map_err(io_err("rename into", path))?;
    sync_dir(parent(path))
}

/// The one record of a file written by [`write_atomic`]; `None` if there is
/// no such file. Anything but one whole record is [`StoreError::Corrupt`]:
/// a rename is atomic, so no tail can be torn.
pub fn read_single<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, StoreError> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err("read", path)(e)),
    };
    let scan = scan(&bytes, path)?;
    match scan.records.as_slice() {
        [one] if scan.valid_len == bytes.len() as u64 => decode(one, path).map(Some),
        _ => Err(StoreError::Corrupt {
            path: path.to_owned(),
            offset: scan.valid_len,
            why: "not exactly one whole record",
        }),
    }
}

/// `path` with `.tmp` appended.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

/// The folder of `path` (`.` for a bare name).
pub fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> PathBuf {
        PathBuf::from("t")
    }

    fn two() -> Vec<u8> {
        let mut b = encode(&"first", &p()).unwrap();
        b.extend(encode(&"second", &p()).unwrap());
        b
    }

    #[test]
    fn whole_records_read_back() {
        let b = two();
        let s = scan(&b, &p()).unwrap();
        assert_eq!(s.records.len(), 2);
        assert_eq!(s.valid_len, b.len() as u64);
        assert_eq!(decode::<String>(&s.records[1], &p()).unwrap(), "second");
    }

    #[test]
    fn every_cut_of_the_last_record_is_a_torn_tail() {
        let b = two();
        let first_len = encode(&"first", &p()).unwrap().len();
        for cut in first_len..b.len() {
            let s = scan(&b[..cut], &p()).unwrap();
            assert_eq!(s.records.len(), 1, "cut at {cut}");
            assert_eq!(s.valid_len, first_len as u64);
        }
    }

    #[test]
    fn a_flipped_byte_in_the_first_record_is_corrupt_at_offset_0() {
        for at in 0..encode(&"first", &p()).unwrap().len() {
            let mut b = two();
            b[at] ^= 0x40;
            let err = scan(&b, &p()).unwrap_err();
            assert!(
                matches!(err, StoreError::Corrupt { offset: 0, .. }),
                "byte {at}: {err}"
            );
        }
    }

    #[test]
    fn a_damaged_last_record_is_a_torn_tail() {
        let mut b = two();
        let last = b.len() - 1;
        b[last] ^= 0x40;
        let s = scan(&b, &p()).unwrap();
        assert_eq!(s.records.len(), 1);
    }
}
