//! What a timer store keeps per message: [`TimerEntry`], and its form as a
//! 52-byte timer-log unit (RocketMQ 5.x's `TimerLog` layout, big-endian).

/// Bytes in a timer-log unit.
pub const UNIT_SIZE: usize = 52;
/// Magic bit set on every unit.
pub const MAGIC_DEFAULT: i32 = 1;
/// Magic bit: filed at a roll point, not at the message's own time.
pub const MAGIC_ROLL: i32 = 2;
/// Magic bit: a recall's delete marker.
pub const MAGIC_DELETE: i32 = 4;

/// What an entry asks of its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EntryKind {
    /// Deliver the message to its real topic.
    Deliver,
    /// The message's time lies beyond what the store holds: put it back
    /// into the timer topic to be filed again (RocketMQ's roll).
    Roll,
    /// A recall's marker: drop the message of the same slot it names.
    Delete,
}

impl EntryKind {
    /// The unit's magic for this kind.
    pub fn magic(self) -> i32 {
        match self {
            Self::Deliver => MAGIC_DEFAULT,
            Self::Roll => MAGIC_DEFAULT | MAGIC_ROLL,
            Self::Delete => MAGIC_DEFAULT | MAGIC_DELETE,
        }
    }

    /// The kind a unit's magic names; `None` for a magic no writer uses.
    /// A delete marker filed at a roll point is a roll (it is re-filed,
    /// as RocketMQ does).
    pub fn from_magic(magic: i32) -> Option<Self> {
        if magic | 0xF != 0xF || magic & MAGIC_DEFAULT == 0 {
            return None;
        }
        Some(if magic & MAGIC_ROLL != 0 {
            Self::Roll
        } else if magic & MAGIC_DELETE != 0 {
            Self::Delete
        } else {
            Self::Deliver
        })
    }

    /// One byte for keys and values.
    pub fn code(self) -> u8 {
        match self {
            Self::Deliver => 0,
            Self::Roll => 1,
            Self::Delete => 2,
        }
    }

    /// The kind of [`EntryKind::code`].
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Self::Deliver),
            1 => Some(Self::Roll),
            2 => Some(Self::Delete),
            _ => None,
        }
    }
}

/// One message waiting in a timer store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimerEntry {
    /// The slot it is filed under, epoch ms (a multiple of the precision).
    pub slot_ms: i64,
    /// When it was filed (the service's write time), epoch ms.
    pub write_ms: i64,
    /// CommitLog offset of the message in the timer topic.
    pub commit_log_offset: i64,
    /// Its record size.
    pub size: i32,
    /// Java `String.hashCode()` of its REAL_TOPIC (per-topic metrics).
    pub topic_hash: i32,
    /// What its slot does with it.
    pub kind: EntryKind,
}

impl TimerEntry {
    /// Whether a slot read counts it as a message still to deliver.
    pub fn counts(&self) -> i64 {
        match self.kind {
            EntryKind::Delete => -1,
            _ => 1,
        }
    }
}

/// An entry as a 52-byte unit whose previous unit in its slot is at
/// `prev_pos` (-1: none). The slot is `write_ms + delay`; a delay that does
/// not fit an i32 cannot be written (the caller rolls such entries).
pub fn encode_unit(e: &TimerEntry, prev_pos: i64) -> Option<[u8; UNIT_SIZE]> {
    let delay = i32::try_from(e.slot_ms - e.write_ms).ok()?;
    let mut u = [0u8; UNIT_SIZE];
    u[0..4].copy_from_slice(&(UNIT_SIZE as i32).to_be_bytes());
    u[4..12].copy_from_slice(&prev_pos.to_be_bytes());
    u[12..16].copy_from_slice(&e.kind.magic().to_be_bytes());
    u[16..24].copy_from_slice(&e.write_ms.to_be_bytes());
    u[24..28].copy_from_slice(&delay.to_be_bytes());
    u[28..36].copy_from_slice(&e.commit_log_offset.to_be_bytes());
    u[36..40].copy_from_slice(&e.size.to_be_bytes());
    u[40..44].copy_from_slice(&e.topic_hash.to_be_bytes());
    // 44..52: reserved, 0.
    Some(u)
}

/// A decoded unit: the entry and the position of the previous unit of its
/// slot. `None` when the bytes are not a unit (size or magic wrong).
pub fn decode_unit(u: &[u8]) -> Option<(TimerEntry, i64)> {
    let u: &[u8; UNIT_SIZE] = u.get(..UNIT_SIZE)?.try_into().ok()?;
    let i32_at = |at: usize| i32::from_be_bytes([u[at], u[at + 1], u[at + 2], u[at + 3]]);
    let i64_at = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&u[at..at + 8]);
        i64::from_be_bytes(b)
    };
    if i32_at(0) != UNIT_SIZE as i32 {
        return None;
    }
    let kind = EntryKind::from_magic(i32_at(12))?;
    let write_ms = i64_at(16);
    let entry = TimerEntry {
        slot_ms: write_ms + i64::from(i32_at(24)),
        write_ms,
        commit_log_offset: i64_at(28),
        size: i32_at(36),
        topic_hash: i32_at(40),
        kind,
    };
    Some((entry, i64_at(4)))
}

/// Java's `String.hashCode()` (over UTF-16 code units), as the timer log
/// stores for a message's real topic.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_round_trip_and_pin_the_layout() {
        let e = TimerEntry {
            slot_ms: 1_700_000_005_000,
            write_ms: 1_700_000_000_000,
            commit_log_offset: 0x0102_0304_0506,
            size: 321,
            topic_hash: java_string_hash("TopicA"),
            kind: EntryKind::Delete,
        };
        let u = encode_unit(&e, 104).unwrap();
        assert_eq!(&u[0..4], &52i32.to_be_bytes());
        assert_eq!(&u[4..12], &104i64.to_be_bytes());
        assert_eq!(&u[12..16], &5i32.to_be_bytes());
        assert_eq!(&u[24..28], &5_000i32.to_be_bytes());
        assert_eq!(&u[44..52], &[0u8; 8]);
        assert_eq!(decode_unit(&u), Some((e, 104)));
    }

    #[test]
    fn bad_units_do_not_decode() {
        let e = TimerEntry {
            slot_ms: 2_000,
            write_ms: 1_000,
            commit_log_offset: 1,
            size: 1,
            topic_hash: 0,
            kind: EntryKind::Deliver,
        };
        let mut u = encode_unit(&e, -1).unwrap();
        u[15] = 0x10;
        assert_eq!(decode_unit(&u), None);
        assert_eq!(decode_unit(&[0u8; UNIT_SIZE]), None);
        assert_eq!(decode_unit(&[0u8; 10]), None);
        let far = TimerEntry {
            slot_ms: i64::from(i32::MAX) + 2_000,
            ..e
        };
        assert_eq!(encode_unit(&far, -1), None);
    }

    #[test]
    fn java_hash_matches_known_values() {
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        // "TopicTest".hashCode() in Java.
        assert_eq!(java_string_hash("TopicTest"), -1_902_610_879);
    }
}
