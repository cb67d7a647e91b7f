//! Keys and values of the RocksDB timer store. A key sorts by due time:
//! `slot_ms` (u64 BE) + CommitLog offset (u64 BE) + kind (u8), 17 bytes,
//! so one slot is one contiguous range and filing an entry twice writes
//! the same key. The value: write time (i64 BE), record size (i32 BE),
//! real-topic hash (i32 BE), 16 bytes.

use crate::entry::{EntryKind, TimerEntry};

/// Bytes of a key.
pub const KEY_SIZE: usize = 17;
/// Bytes of a value.
pub const VALUE_SIZE: usize = 16;

/// The first key of slot `slot_ms` (a negative time sorts as 0).
pub fn slot_start(slot_ms: i64) -> [u8; KEY_SIZE] {
    let mut k = [0u8; KEY_SIZE];
    k[0..8].copy_from_slice(&(slot_ms.max(0) as u64).to_be_bytes());
    k
}

/// The key of `e`.
pub fn key(e: &TimerEntry) -> [u8; KEY_SIZE] {
    let mut k = slot_start(e.slot_ms);
    k[8..16].copy_from_slice(&(e.commit_log_offset.max(0) as u64).to_be_bytes());
    k[16] = e.kind.code();
    k
}

/// The value of `e`.
pub fn value(e: &TimerEntry) -> [u8; VALUE_SIZE] {
    let mut v = [0u8; VALUE_SIZE];
    v[0..8].copy_from_slice(&e.write_ms.to_be_bytes());
    v[8..12].copy_from_slice(&e.size.to_be_bytes());
    v[12..16].copy_from_slice(&e.topic_hash.to_be_bytes());
    v
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let mut x = [0u8; 8];
    x.copy_from_slice(b.get(at..at + 8)?);
    Some(u64::from_be_bytes(x))
}

fn i32_at(b: &[u8], at: usize) -> Option<i32> {
    let mut x = [0u8; 4];
    x.copy_from_slice(b.get(at..at + 4)?);
    Some(i32::from_be_bytes(x))
}

/// The slot time a key belongs to.
pub fn slot_of(k: &[u8]) -> Option<i64> {
    u64_at(k, 0).and_then(|t| i64::try_from(t).ok())
}

/// The kind a key names.
pub fn kind_of(k: &[u8]) -> Option<EntryKind> {
    if k.len() != KEY_SIZE {
        return None;
    }
    EntryKind::from_code(k[16])
}

/// The entry a key and value hold; `None` when either is malformed.
pub fn decode(k: &[u8], v: &[u8]) -> Option<TimerEntry> {
    if k.len() != KEY_SIZE || v.len() != VALUE_SIZE {
        return None;
    }
    Some(TimerEntry {
        slot_ms: slot_of(k)?,
        commit_log_offset: i64::try_from(u64_at(k, 8)?).ok()?,
        kind: kind_of(k)?,
        write_ms: i64::try_from(u64_at(v, 0)?).ok()?,
        size: i32_at(v, 8)?,
        topic_hash: i32_at(v, 12)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_by_time_then_offset_and_round_trip() {
        let e = TimerEntry {
            slot_ms: 2_000,
            write_ms: 1_000,
            commit_log_offset: 99,
            size: 10,
            topic_hash: -5,
            kind: EntryKind::Roll,
        };
        let later = TimerEntry {
            slot_ms: 3_000,
            commit_log_offset: 1,
            ..e
        };
        assert!(key(&e) < key(&later));
        assert!(slot_start(2_000) <= key(&e) && key(&e) < slot_start(3_000));
        assert_eq!(decode(&key(&e), &value(&e)), Some(e));
        assert_eq!(decode(&key(&e)[..16], &value(&e)), None);
    }
}
