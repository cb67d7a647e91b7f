//! Byte layout of a RocketMQ 4.x IndexFile (big-endian), the key hash and the
//! file names. Pure code: no I/O.
//!
//! ```text
//! header   40 bytes  i64 beginTimestamp, i64 endTimestamp,
//!                    i64 beginPhyOffset, i64 endPhyOffset,
//!                    i32 hashSlotCount, i32 indexCount
//! slots    maxHashSlotNum x i32: newest entry number of the slot, 0 = none
//! entries  maxIndexNum x 20 bytes: i32 keyHash, i64 phyOffset,
//!                    i32 seconds since beginTimestamp, i32 prevIndex
//! ```
//! Entry 0 is never written: entry number 0 means "none" in slots and chains.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmq_common::message::java_string_hash;
use rmq_common::{ConfigError, DispatchRequest, StoreConfig};

/// Bytes of the header.
pub(crate) const HEADER_SIZE: usize = 40;
/// Bytes of one hash slot.
pub(crate) const SLOT_SIZE: usize = 4;
/// Bytes of one entry.
pub(crate) const ENTRY_SIZE: usize = 20;
/// Entry number meaning "none"; `indexCount` starts after it.
pub(crate) const NO_ENTRY: i32 = 0;
/// Digits of a file name (`yyyyMMddHHmmssSSS`).
pub(crate) const FILE_NAME_LEN: usize = 17;
/// Last millisecond humantime can format (9999-12-31T23:59:59.999Z).
const MAX_NAME_MS: i64 = 253_402_300_799_999;

/// The 40-byte header, as kept in memory and written at offset 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    /// Store timestamp (ms) of the first entry; 0 while empty.
    pub begin_timestamp: i64,
    /// Store timestamp (ms) of the newest entry.
    pub end_timestamp: i64,
    /// CommitLog offset of the first entry.
    pub begin_phy_offset: i64,
    /// CommitLog offset of the newest entry.
    pub end_phy_offset: i64,
    /// Slots that were empty when an entry went into them.
    pub hash_slot_count: i32,
    /// Next entry number; starts at 1 (entry 0 is "none").
    pub index_count: i32,
}

impl Header {
    /// The header of a file without entries.
    pub const EMPTY: Self = Self {
        begin_timestamp: 0,
        end_timestamp: 0,
        begin_phy_offset: 0,
        end_phy_offset: 0,
        hash_slot_count: 0,
        index_count: 1,
    };

    /// Whether no entry was written yet.
    pub fn is_empty(&self) -> bool {
        self.index_count <= 1
    }

    /// The header bytes.
    pub fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut b = [0u8; HEADER_SIZE];
        b[0..8].copy_from_slice(&self.begin_timestamp.to_be_bytes());
        b[8..16].copy_from_slice(&self.end_timestamp.to_be_bytes());
        b[16..24].copy_from_slice(&self.begin_phy_offset.to_be_bytes());
        b[24..32].copy_from_slice(&self.end_phy_offset.to_be_bytes());
        b[32..36].copy_from_slice(&self.hash_slot_count.to_be_bytes());
        b[36..40].copy_from_slice(&self.index_count.to_be_bytes());
        b
    }

    /// Decodes and checks a header read from a file of `geometry`. A zero
    /// `indexCount` (a file created but never written, which RocketMQ leaves
    /// behind) reads as empty. The error says what is wrong.
    pub fn decode(b: &[u8; HEADER_SIZE], geometry: Geometry) -> Result<Self, String> {
        let h = Self {
            begin_timestamp: be_i64(b, 0),
            end_timestamp: be_i64(b, 8),
            begin_phy_offset: be_i64(b, 16),
            end_phy_offset: be_i64(b, 24),
            hash_slot_count: be_i32(b, 32),
            index_count: be_i32(b, 36).max(1),
        };
        if h.index_count > geometry.entries {
            return Err(format!(
                "indexCount {} exceeds maxIndexNum {}",
                h.index_count, geometry.entries
            ));
        }
        if h.hash_slot_count < 0 || h.hash_slot_count > h.index_count - 1 {
            return Err(format!(
                "hashSlotCount {} is outside 0..={} (entries written)",
                h.hash_slot_count,
                h.index_count - 1
            ));
        }
        if h.hash_slot_count > geometry.slots {
            return Err(format!(
                "hashSlotCount {} exceeds maxHashSlotNum {}",
                h.hash_slot_count, geometry.slots
            ));
        }
        if h.begin_timestamp < 0 || h.end_timestamp < 0 {
            return Err(format!(
                "negative timestamps {}..{}",
                h.begin_timestamp, h.end_timestamp
            ));
        }
        // Entries are appended in CommitLog order, so the offsets only grow.
        if h.begin_phy_offset < 0 || (!h.is_empty() && h.end_phy_offset < h.begin_phy_offset) {
            return Err(format!(
                "phy offsets {}..{} are not an ascending range",
                h.begin_phy_offset, h.end_phy_offset
            ));
        }
        Ok(h)
    }
}

/// One decoded entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    /// [`key_hash`] of the key.
    pub key_hash: i32,
    /// CommitLog offset of the record.
    pub phy_offset: i64,
    /// Whole seconds from the file's beginTimestamp to the store timestamp.
    pub time_diff_s: i32,
    /// Previous entry of the same slot, or [`NO_ENTRY`].
    pub prev_index: i32,
}

impl Entry {
    /// The entry bytes.
    pub fn encode(&self) -> [u8; ENTRY_SIZE] {
        let mut b = [0u8; ENTRY_SIZE];
        b[0..4].copy_from_slice(&self.key_hash.to_be_bytes());
        b[4..12].copy_from_slice(&self.phy_offset.to_be_bytes());
        b[12..16].copy_from_slice(&self.time_diff_s.to_be_bytes());
        b[16..20].copy_from_slice(&self.prev_index.to_be_bytes());
        b
    }

    /// Decodes 20 entry bytes.
    pub fn decode(b: &[u8; ENTRY_SIZE]) -> Self {
        Self {
            key_hash: be_i32(b, 0),
            phy_offset: be_i64(b, 4),
            time_diff_s: be_i32(b, 12),
            prev_index: be_i32(b, 16),
        }
    }
}

/// Slot and entry counts of every file of a store; they fix the file size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Geometry {
    /// `maxHashSlotNum`, positive.
    pub slots: i32,
    /// `maxIndexNum`, at least 2 (entry 0 is reserved).
    pub entries: i32,
}

impl Geometry {
    /// The geometry configured in `config`; the error names the bad key.
    pub fn from_config(config: &StoreConfig) -> Result<Self, ConfigError> {
        let slots = i32::try_from(config.max_hash_slot_num)
            .ok()
            .filter(|s| *s > 0)
            .ok_or_else(|| ConfigError::new("maxHashSlotNum", "must be within 1..=2^31-1"))?;
        let entries = i32::try_from(config.max_index_num)
            .ok()
            .filter(|e| *e >= 2)
            .ok_or_else(|| ConfigError::new("maxIndexNum", "must be within 2..=2^31-1"))?;
        let g = Self { slots, entries };
        usize::try_from(g.file_size_u64()).map_err(|_| {
            ConfigError::new("maxIndexNum", "the IndexFile would not fit in memory")
        })?;
        Ok(g)
    }

    fn file_size_u64(&self) -> u64 {
        HEADER_SIZE as u64
            + self.slots as u64 * SLOT_SIZE as u64
            + self.entries as u64 * ENTRY_SIZE as u64
    }

    /// Bytes of a file (checked to fit in `usize` by `from_config`).
    pub fn file_size(&self) -> usize {
        self.file_size_u64() as usize
    }

    /// Slot of a (non-negative) key hash.
    pub fn slot_of(&self, key_hash: i32) -> usize {
        (key_hash.unsigned_abs() % self.slots.unsigned_abs()) as usize
    }

    /// File position of slot `slot` (< `slots`).
    pub fn slot_pos(&self, slot: usize) -> usize {
        HEADER_SIZE + slot * SLOT_SIZE
    }

    /// File position of entry `n` (`0..entries`).
    pub fn entry_pos(&self, n: i32) -> usize {
        HEADER_SIZE
            + self.slots.unsigned_abs() as usize * SLOT_SIZE
            + n.unsigned_abs() as usize * ENTRY_SIZE
    }
}

/// RocketMQ's `indexKeyHashMethod`: `abs(key.hashCode())`, and 0 for the one
/// hash whose absolute value overflows.
pub(crate) fn key_hash(key: &str) -> i32 {
    java_string_hash(key).checked_abs().unwrap_or(0)
}

/// The index keys of a record: `topic#key` for each non-empty KEYS entry, then
/// `topic#uniqKey`.
pub(crate) fn index_keys(req: &DispatchRequest) -> Vec<String> {
    let topic = &req.topic;
    req.keys
        .split(' ')
        .chain(req.uniq_key.as_deref())
        .filter(|k| !k.is_empty())
        .map(|k| format!("{topic}#{k}"))
        .collect()
}

/// Whole seconds from `begin_ms` to `store_ms`, clamped to `0..=i32::MAX`
/// (0 while the file has no begin timestamp), as RocketMQ stores them.
pub(crate) fn time_diff_s(begin_ms: i64, store_ms: i64) -> i32 {
    if begin_ms <= 0 {
        return 0;
    }
    let s = store_ms.saturating_sub(begin_ms) / 1000;
    i32::try_from(s.clamp(0, i64::from(i32::MAX))).unwrap_or(i32::MAX)
}

/// File name for a file created at `ms` (UTC `yyyyMMddHHmmssSSS`).
pub(crate) fn file_name(ms: i64) -> String {
    let ms = ms.clamp(0, MAX_NAME_MS).unsigned_abs();
    let t = UNIX_EPOCH + Duration::from_millis(ms);
    // "2018-02-14T00:28:07.123Z" -> "20180214002807123"
    humantime::format_rfc3339_millis(t)
        .to_string()
        .chars()
        .filter(char::is_ascii_digit)
        .collect()
}

/// Creation time (ms) encoded in a file name, if it is one of ours.
pub(crate) fn parse_file_name(name: &str) -> Option<i64> {
    if name.len() != FILE_NAME_LEN || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let d = |r: std::ops::Range<usize>| name.get(r).unwrap_or_default();
    let text = format!(
        "{}-{}-{}T{}:{}:{}.{}Z",
        d(0..4),
        d(4..6),
        d(6..8),
        d(8..10),
        d(10..12),
        d(12..14),
        d(14..17)
    );
    let t: SystemTime = humantime::parse_rfc3339(&text).ok()?;
    let ms = t.duration_since(UNIX_EPOCH).ok()?.as_millis();
    i64::try_from(ms).ok()
}

fn be_i32(b: &[u8], at: usize) -> i32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    i32::from_be_bytes(a)
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry(slots: i32, entries: i32) -> Geometry {
        Geometry { slots, entries }
    }

    #[test]
    fn key_hash_is_abs_java_hash() {
        assert_eq!(key_hash("TopicTest#KEY1"), 1_656_969_516);
        assert_eq!(key_hash("T#A"), 81_874);
        // "polygenelubricants" is the classic Java string hashing to MIN_VALUE.
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(key_hash("polygenelubricants"), 0);
    }

    #[test]
    fn index_keys_skip_empty_keys_and_add_uniq_key() {
        let mut req = DispatchRequest {
            topic: "T".into(),
            queue_id: 0,
            commit_log_offset: 0,
            msg_size: 0,
            tags_code: 0,
            store_timestamp: 0,
            consume_queue_offset: 0,
            keys: " a  b ".into(),
            uniq_key: Some("U".into()),
            sys_flag: 0,
            prepared_transaction_offset: 0,
            lmq: Vec::new(),
        };
        assert_eq!(index_keys(&req), ["T#a", "T#b", "T#U"]);
        req.keys.clear();
        req.uniq_key = None;
        assert!(index_keys(&req).is_empty());
    }

    #[test]
    fn header_round_trip_and_checks() {
        let g = geometry(4, 8);
        let h = Header {
            begin_timestamp: 1_000,
            end_timestamp: 2_000,
            begin_phy_offset: 10,
            end_phy_offset: 20,
            hash_slot_count: 2,
            index_count: 4,
        };
        assert_eq!(Header::decode(&h.encode(), g), Ok(h));
        assert_eq!(Header::decode(&[0; HEADER_SIZE], g), Ok(Header::EMPTY));
        let bad = [
            Header {
                index_count: 9,
                ..h
            },
            Header {
                hash_slot_count: 4,
                ..h
            },
            Header {
                hash_slot_count: -1,
                ..h
            },
            Header {
                end_phy_offset: 5,
                ..h
            },
            Header {
                begin_timestamp: -1,
                ..h
            },
        ];
        for b in bad {
            assert!(Header::decode(&b.encode(), g).is_err(), "{b:?}");
        }
    }

    #[test]
    fn entry_round_trip_and_positions() {
        let e = Entry {
            key_hash: 7,
            phy_offset: 1 << 40,
            time_diff_s: 3,
            prev_index: 2,
        };
        assert_eq!(Entry::decode(&e.encode()), e);
        let g = geometry(4, 4);
        assert_eq!(g.file_size(), 40 + 16 + 80);
        assert_eq!(g.slot_pos(3), 52);
        assert_eq!(g.entry_pos(1), 76);
        assert_eq!(g.slot_of(81_874), 2);
    }

    #[test]
    fn geometry_rejects_bad_config() {
        let mut c = StoreConfig::default();
        assert_eq!(
            Geometry::from_config(&c).unwrap(),
            geometry(5_000_000, 20_000_000)
        );
        assert_eq!(Geometry::from_config(&c).unwrap().file_size(), 420_000_040);
        c.max_hash_slot_num = 0;
        assert_eq!(Geometry::from_config(&c).unwrap_err().key, "maxHashSlotNum");
        c.max_hash_slot_num = 4;
        c.max_index_num = 1;
        assert_eq!(Geometry::from_config(&c).unwrap_err().key, "maxIndexNum");
    }

    #[test]
    fn time_diff_in_whole_seconds() {
        assert_eq!(time_diff_s(0, 5_000), 0, "no begin yet");
        assert_eq!(time_diff_s(1_000, 3_999), 2);
        assert_eq!(time_diff_s(5_000, 1_000), 0, "clock went back");
        assert_eq!(time_diff_s(1, i64::MAX), i32::MAX);
    }

    #[test]
    fn file_names_round_trip_and_sort() {
        // 2024-01-02T03:04:05.678Z
        let ms = 1_704_164_645_678;
        assert_eq!(file_name(ms), "20240102030405678");
        assert_eq!(parse_file_name("20240102030405678"), Some(ms));
        assert_eq!(file_name(0), "19700101000000000");
        assert!(file_name(ms) < file_name(ms + 1));
        assert_eq!(parse_file_name("2024010203040567"), None);
        assert_eq!(parse_file_name("2024010203040567x"), None);
        assert_eq!(parse_file_name("20241302030405678"), None, "month 13");
    }
}
