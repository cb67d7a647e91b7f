//! The 20-byte unit and the names of segment files.

/// Bytes in a unit.
pub(crate) const UNIT: usize = 20;
/// [`UNIT`] for offset arithmetic.
pub(crate) const UNIT_I64: i64 = 20;

/// One unit as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawUnit {
    /// CommitLog offset of the record.
    pub(crate) phy: i64,
    /// Record size.
    pub(crate) size: i32,
    /// Filter code.
    pub(crate) tags: i64,
}

impl RawUnit {
    /// The filler RocketMQ's `fillPreBlank` writes before a queue's first
    /// unit and that this store also writes into holes: it is non-zero, so a
    /// scan for the end does not stop at it, and never a real record.
    pub(crate) const BLANK: RawUnit = RawUnit {
        phy: 0,
        size: i32::MAX,
        tags: 0,
    };

    /// The stored bytes.
    pub(crate) fn encode(&self) -> [u8; UNIT] {
        let mut b = [0u8; UNIT];
        b[0..8].copy_from_slice(&self.phy.to_be_bytes());
        b[8..12].copy_from_slice(&self.size.to_be_bytes());
        b[12..20].copy_from_slice(&self.tags.to_be_bytes());
        b
    }

    /// Decodes the first [`UNIT`] bytes of `c`; `None` if it is shorter.
    pub(crate) fn decode(c: &[u8]) -> Option<RawUnit> {
        let (phy, rest) = c.split_first_chunk::<8>()?;
        let (size, rest) = rest.split_first_chunk::<4>()?;
        let (tags, _) = rest.split_first_chunk::<8>()?;
        Some(RawUnit {
            phy: i64::from_be_bytes(*phy),
            size: i32::from_be_bytes(*size),
            tags: i64::from_be_bytes(*tags),
        })
    }

    /// A filler, not a record.
    pub(crate) fn is_blank(&self) -> bool {
        *self == Self::BLANK
    }

    /// Could be a record or a filler (what a scan for the end accepts).
    pub(crate) fn is_valid(&self) -> bool {
        self.phy >= 0 && self.size > 0
    }

    /// End of the record in the CommitLog.
    pub(crate) fn phy_end(&self) -> i64 {
        self.phy.saturating_add(i64::from(self.size))
    }
}

/// Whether a stored unit was never written (or was truncated).
pub(crate) fn is_zero(c: &[u8]) -> bool {
    c.iter().all(|b| *b == 0)
}

/// The name of the segment starting at byte `start`.
pub(crate) fn file_name(start: i64) -> String {
    format!("{start:020}")
}

/// The start byte offset a segment name stands for, if it is 20 digits.
pub(crate) fn parse_file_name(name: &str) -> Option<i64> {
    if name.len() != 20 || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    name.parse().ok()
}

/// `count` blank units, encoded.
pub(crate) fn blanks(count: usize) -> Vec<u8> {
    RawUnit::BLANK.encode().repeat(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_round_trip_is_big_endian() {
        let u = RawUnit {
            phy: 0x0102_0304_0506_0708,
            size: 0x0A0B_0C0D,
            tags: -2,
        };
        let b = u.encode();
        assert_eq!(&b[..8], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&b[8..12], &[0x0A, 0x0B, 0x0C, 0x0D]);
        assert_eq!(&b[12..], &[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE]);
        assert_eq!(RawUnit::decode(&b), Some(u));
        assert_eq!(RawUnit::decode(&b[..19]), None);
    }

    #[test]
    fn blank_is_valid_but_not_zero() {
        let b = RawUnit::BLANK.encode();
        assert!(!is_zero(&b));
        let u = RawUnit::decode(&b).unwrap();
        assert!(u.is_blank() && u.is_valid());
        assert!(is_zero(&[0u8; UNIT]));
        assert!(!RawUnit::decode(&[0u8; UNIT]).unwrap().is_valid());
        assert_eq!(blanks(3).len(), 60);
    }

    #[test]
    fn file_names() {
        assert_eq!(file_name(6_000_000), "00000000000006000000");
        assert_eq!(parse_file_name("00000000000006000000"), Some(6_000_000));
        assert_eq!(parse_file_name("6000000"), None);
        assert_eq!(parse_file_name("0000000000000600000x"), None);
        assert_eq!(parse_file_name("+0000000000006000000"), None);
        assert_eq!(parse_file_name("99999999999999999999"), None, "beyond i64");
    }
}
