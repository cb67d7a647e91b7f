//! Keys and values of the RocketMQ 5.x RocksDB consume queue. Integers are
//! big-endian and fields are separated by [`SEP`], so that the byte order of
//! the keys of one queue is the order of their queue offsets and every key of
//! a topic shares one prefix (which makes topic deletion one range delete).
//!
//! - entry key (`default` CF): `i32 topicLen, 0x01, topic, 0x01, i32 queueId,
//!   0x01, i64 queueOffset`; value: `i64 phyOffset, i32 size, i64 tagsCode,
//!   i64 storeTimestamp` (28 bytes).
//! - min/max key (`offset` CF): `i32 topicLen, 0x01, topic, 0x01, "min"|"max",
//!   0x01, i32 queueId`; value: `i64 phyOffset, i64 queueOffset` of the first
//!   readable (min) or the last written (max) entry.
//! - the dispatch checkpoint is the max key of
//!   [`rmq_common::constants::CHECKPOINT_TOPIC`], queue 0, with an 8-byte value;
//!   its min key (our addition) holds the CommitLog min, also 8 bytes.

use crate::error::CodecError;

/// Separator between key fields.
pub(crate) const SEP: u8 = 0x01;
/// The byte after [`SEP`]: replacing a prefix's trailing separator with it
/// gives the exclusive end of every key under that prefix.
const SEP_END: u8 = 0x02;
/// Bytes of an entry value.
pub(crate) const ENTRY_VALUE_LEN: usize = 28;
/// Bytes of a min/max value.
pub(crate) const OFFSET_VALUE_LEN: usize = 16;
/// Bytes of a checkpoint value.
pub(crate) const CHECKPOINT_VALUE_LEN: usize = 8;

/// Which end of a queue an `offset` CF key describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OffsetKind {
    /// The first readable entry.
    Min,
    /// The last written entry (not one past it).
    Max,
}

impl OffsetKind {
    fn tag(self) -> &'static [u8; 3] {
        match self {
            Self::Min => b"min",
            Self::Max => b"max",
        }
    }
}

/// `i32 topicLen, 0x01, topic, 0x01`: the prefix every key of a topic starts with.
fn push_topic(out: &mut Vec<u8>, topic: &str) {
    // Topic names are at most 127 bytes (names are validated before they
    // reach the store), so the length always fits; saturate rather than wrap.
    let len = i32::try_from(topic.len()).unwrap_or(i32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.push(SEP);
    out.extend_from_slice(topic.as_bytes());
    out.push(SEP);
}

/// `topic prefix, i32 queueId, 0x01`: the prefix of a queue's entry keys.
fn push_queue(out: &mut Vec<u8>, topic: &str, queue_id: i32) {
    push_topic(out, topic);
    out.extend_from_slice(&queue_id.to_be_bytes());
    out.push(SEP);
}

/// Entry key of unit `queue_offset` of a queue.
pub(crate) fn entry_key(topic: &str, queue_id: i32, queue_offset: i64) -> Vec<u8> {
    let mut k = Vec::with_capacity(topic.len() + 19);
    push_entry_key(&mut k, topic, queue_id, queue_offset);
    k
}

/// Appends the entry key of unit `queue_offset` of a queue to `out`.
pub(crate) fn push_entry_key(out: &mut Vec<u8>, topic: &str, queue_id: i32, queue_offset: i64) {
    push_queue(out, topic, queue_id);
    out.extend_from_slice(&queue_offset.to_be_bytes());
}

/// Exclusive upper bound of every entry key of a queue.
pub(crate) fn queue_entries_end(topic: &str, queue_id: i32) -> Vec<u8> {
    let mut k = Vec::with_capacity(topic.len() + 11);
    push_queue(&mut k, topic, queue_id);
    set_last(&mut k, SEP_END);
    k
}

/// Inclusive lower bound of every key (entry or min/max) of a topic.
pub(crate) fn topic_start(topic: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(topic.len() + 6);
    push_topic(&mut k, topic);
    k
}

/// Exclusive upper bound of every key of a topic.
pub(crate) fn topic_end(topic: &str) -> Vec<u8> {
    let mut k = topic_start(topic);
    set_last(&mut k, SEP_END);
    k
}

fn set_last(k: &mut [u8], byte: u8) {
    if let Some(last) = k.last_mut() {
        *last = byte;
    }
}

/// Min or max key of a queue.
pub(crate) fn offset_key(topic: &str, kind: OffsetKind, queue_id: i32) -> Vec<u8> {
    let mut k = Vec::with_capacity(topic.len() + 14);
    push_topic(&mut k, topic);
    k.extend_from_slice(kind.tag());
    k.push(SEP);
    k.extend_from_slice(&queue_id.to_be_bytes());
    k
}

/// Splits an `offset` CF key into topic, kind and queue id.
pub(crate) fn decode_offset_key(key: &[u8]) -> Result<(String, OffsetKind, i32), CodecError> {
    let bad = |reason| CodecError::OffsetKey {
        key: key.to_vec(),
        reason,
    };
    let (len, rest) = split_i32(key).ok_or_else(|| bad("too short for the topic length"))?;
    let len = usize::try_from(len).map_err(|_| bad("negative topic length"))?;
    let rest = rest
        .strip_prefix(&[SEP])
        .ok_or_else(|| bad("no separator after the topic length"))?;
    // topic, SEP, 3-byte kind, SEP, i32 queue id
    if rest.len() != len + 9 {
        return Err(bad("length does not match the topic length"));
    }
    let (topic, rest) = rest.split_at(len);
    let topic = std::str::from_utf8(topic).map_err(|_| bad("topic is not UTF-8"))?;
    let rest = rest
        .strip_prefix(&[SEP])
        .ok_or_else(|| bad("no separator after the topic"))?;
    let (tag, rest) = rest.split_at(3);
    let kind = match tag {
        b"min" => OffsetKind::Min,
        b"max" => OffsetKind::Max,
        _ => return Err(bad("kind is neither min nor max")),
    };
    let rest = rest
        .strip_prefix(&[SEP])
        .ok_or_else(|| bad("no separator after the kind"))?;
    let (queue_id, _) = split_i32(rest).ok_or_else(|| bad("no queue id"))?;
    Ok((topic.to_owned(), kind, queue_id))
}

/// The queue offset at the end of an entry key.
pub(crate) fn entry_key_offset(key: &[u8]) -> Option<i64> {
    let tail: [u8; 8] = key.get(key.len().checked_sub(8)?..)?.try_into().ok()?;
    Some(i64::from_be_bytes(tail))
}

fn split_i32(b: &[u8]) -> Option<(i32, &[u8])> {
    let (head, rest) = b.split_first_chunk::<4>()?;
    Some((i32::from_be_bytes(*head), rest))
}

fn read_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}

fn check_len(kind: &'static str, b: &[u8], expected: usize) -> Result<(), CodecError> {
    if b.len() == expected {
        Ok(())
    } else {
        Err(CodecError::ValueLength {
            kind,
            actual: b.len(),
            expected,
        })
    }
}

/// The value of an entry key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EntryValue {
    /// CommitLog offset of the record.
    pub phy_offset: i64,
    /// Record size in bytes.
    pub size: i32,
    /// Filter code.
    pub tags_code: i64,
    /// Store timestamp, ms.
    pub store_timestamp: i64,
}

impl EntryValue {
    /// CommitLog offset just past the record.
    pub fn phy_end(&self) -> i64 {
        self.phy_offset + i64::from(self.size)
    }

    pub fn encode(&self) -> [u8; ENTRY_VALUE_LEN] {
        let mut v = [0u8; ENTRY_VALUE_LEN];
        v[0..8].copy_from_slice(&self.phy_offset.to_be_bytes());
        v[8..12].copy_from_slice(&self.size.to_be_bytes());
        v[12..20].copy_from_slice(&self.tags_code.to_be_bytes());
        v[20..28].copy_from_slice(&self.store_timestamp.to_be_bytes());
        v
    }

    pub fn decode(b: &[u8]) -> Result<Self, CodecError> {
        check_len("entry", b, ENTRY_VALUE_LEN)?;
        let mut size = [0u8; 4];
        size.copy_from_slice(&b[8..12]);
        Ok(Self {
            phy_offset: read_i64(b, 0),
            size: i32::from_be_bytes(size),
            tags_code: read_i64(b, 12),
            store_timestamp: read_i64(b, 20),
        })
    }

    /// Only the CommitLog offset; what the compaction filter needs, without
    /// failing on a value it does not understand.
    pub fn decode_phy(b: &[u8]) -> Option<i64> {
        (b.len() == ENTRY_VALUE_LEN).then(|| read_i64(b, 0))
    }
}

/// The value of a min or max key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OffsetValue {
    /// CommitLog offset of the entry.
    pub phy_offset: i64,
    /// Queue offset of the entry.
    pub queue_offset: i64,
}

impl OffsetValue {
    pub fn encode(&self) -> [u8; OFFSET_VALUE_LEN] {
        let mut v = [0u8; OFFSET_VALUE_LEN];
        v[0..8].copy_from_slice(&self.phy_offset.to_be_bytes());
        v[8..16].copy_from_slice(&self.queue_offset.to_be_bytes());
        v
    }

    pub fn decode(b: &[u8]) -> Result<Self, CodecError> {
        check_len("offset", b, OFFSET_VALUE_LEN)?;
        Ok(Self {
            phy_offset: read_i64(b, 0),
            queue_offset: read_i64(b, 8),
        })
    }
}

/// The 8-byte value of the checkpoint keys.
pub(crate) fn encode_checkpoint(offset: i64) -> [u8; CHECKPOINT_VALUE_LEN] {
    offset.to_be_bytes()
}

/// Reads a checkpoint value.
pub(crate) fn decode_checkpoint(b: &[u8]) -> Result<i64, CodecError> {
    check_len("checkpoint", b, CHECKPOINT_VALUE_LEN)?;
    Ok(read_i64(b, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_key_golden_bytes() {
        assert_eq!(
            entry_key("ab", 1, 2),
            [0, 0, 0, 2, 1, b'a', b'b', 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 2]
        );
        assert_eq!(
            entry_key_offset(&entry_key("ab", 1, 0x0102_0304_0506)),
            Some(0x0102_0304_0506)
        );
    }

    #[test]
    fn offset_key_golden_bytes() {
        assert_eq!(
            offset_key("ab", OffsetKind::Max, 3),
            [0, 0, 0, 2, 1, b'a', b'b', 1, b'm', b'a', b'x', 1, 0, 0, 0, 3]
        );
        assert_eq!(
            offset_key("ab", OffsetKind::Min, -1),
            [0, 0, 0, 2, 1, b'a', b'b', 1, b'm', b'i', b'n', 1, 0xff, 0xff, 0xff, 0xff]
        );
    }

    #[test]
    fn range_bounds_golden_bytes() {
        assert_eq!(topic_start("ab"), [0, 0, 0, 2, 1, b'a', b'b', 1]);
        assert_eq!(topic_end("ab"), [0, 0, 0, 2, 1, b'a', b'b', 2]);
        assert_eq!(
            queue_entries_end("ab", 1),
            [0, 0, 0, 2, 1, b'a', b'b', 1, 0, 0, 0, 1, 2]
        );
    }

    #[test]
    fn value_golden_bytes() {
        let v = EntryValue {
            phy_offset: 0x0102,
            size: 0x0304,
            tags_code: -1,
            store_timestamp: 0x05,
        };
        let mut want = vec![0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4];
        want.extend([0xff; 8]);
        want.extend([0, 0, 0, 0, 0, 0, 0, 5]);
        assert_eq!(v.encode().to_vec(), want);
        assert_eq!(EntryValue::decode(&want), Ok(v));
        assert_eq!(EntryValue::decode_phy(&want), Some(0x0102));
        assert_eq!(v.phy_end(), 0x0102 + 0x0304);

        let o = OffsetValue {
            phy_offset: 7,
            queue_offset: 9,
        };
        assert_eq!(o.encode(), [0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 9]);
        assert_eq!(OffsetValue::decode(&o.encode()), Ok(o));
        assert_eq!(encode_checkpoint(258), [0, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!(decode_checkpoint(&[0, 0, 0, 0, 0, 0, 1, 2]), Ok(258));
    }

    #[test]
    fn wrong_lengths_are_corrupt_not_panics() {
        assert!(matches!(
            EntryValue::decode(&[0; 27]),
            Err(CodecError::ValueLength {
                actual: 27,
                expected: 28,
                ..
            })
        ));
        assert_eq!(EntryValue::decode_phy(&[0; 29]), None);
        assert!(OffsetValue::decode(&[0; 8]).is_err());
        assert!(decode_checkpoint(&[0; 16]).is_err());
        assert_eq!(entry_key_offset(&[1, 2]), None);
    }

    #[test]
    fn offset_keys_round_trip_and_reject_garbage() {
        for (topic, kind, q) in [
            ("t", OffsetKind::Min, 0),
            ("%RETRY%g", OffsetKind::Max, 7),
            ("", OffsetKind::Max, -3),
        ] {
            assert_eq!(
                decode_offset_key(&offset_key(topic, kind, q)),
                Ok((topic.to_owned(), kind, q))
            );
        }
        let good = offset_key("ab", OffsetKind::Max, 3);
        let mut bad_kind = good.clone();
        bad_kind[8] = b'x';
        let mut bad_sep = good.clone();
        bad_sep[4] = 0;
        for bad in [
            &good[..good.len() - 1],
            &bad_kind[..],
            &bad_sep[..],
            &[0, 0],
            &[0xff, 0xff, 0xff, 0xff, 1],
        ] {
            assert!(decode_offset_key(bad).is_err(), "{bad:?}");
        }
        // An entry key is not an offset key.
        assert!(decode_offset_key(&entry_key("ab", 1, 2)).is_err());
    }

    #[test]
    fn entry_keys_sort_by_queue_offset_within_a_queue() {
        let offsets = [0_i64, 1, 255, 256, 65_535, 1 << 32, i64::MAX];
        let keys: Vec<Vec<u8>> = offsets.iter().map(|o| entry_key("topic", 4, *o)).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        let (lo, hi) = (entry_key("topic", 4, 0), queue_entries_end("topic", 4));
        assert!(keys.iter().all(|k| lo <= *k && *k < hi));
        // Neighbouring queues and topics fall outside the queue's range.
        for other in [
            entry_key("topic", 5, 0),
            entry_key("topic", 3, i64::MAX),
            entry_key("topix", 4, 0),
            entry_key("topi", 4, 0),
        ] {
            assert!(other < lo || other >= hi);
        }
    }

    #[test]
    fn topic_range_covers_its_keys_and_no_other_topic() {
        let (lo, hi) = (topic_start("ab"), topic_end("ab"));
        let inside = [
            entry_key("ab", 0, 0),
            entry_key("ab", -1, i64::MAX),
            offset_key("ab", OffsetKind::Min, 9),
            offset_key("ab", OffsetKind::Max, i32::MIN),
        ];
        assert!(inside.iter().all(|k| lo <= *k && *k < hi));
        // "ab" is a prefix of "abc" as text, but not as a key prefix.
        let outside = [
            entry_key("abc", 0, 0),
            entry_key("a", 0, 0),
            entry_key("ac", 0, 0),
            offset_key("b", OffsetKind::Max, 0),
        ];
        assert!(outside.iter().all(|k| *k < lo || *k >= hi));
    }
}
