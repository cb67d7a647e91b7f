//! RocketMQ 4.9's HA wire format (raw TCP beside the remoting port, all
//! integers big-endian, no handshake):
//! - slave to master: the slave's CommitLog end, an `i64`, again and again
//!   (the master reads the last complete one);
//! - master to slave: frames of `i64` CommitLog offset, `i32` body size and
//!   that many raw CommitLog bytes (at most `haTransferBatchSize`, never
//!   across a segment, not aligned to records); a body of 0 bytes is the
//!   heartbeat and carries the next offset the master will send.

/// Bytes of a slave report.
pub const REPORT_LEN: usize = 8;
/// Bytes of a frame header.
pub const HEADER_LEN: usize = 12;

/// A frame header: where its body starts on the master and how long it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// CommitLog offset of the body's first byte (of the next byte to come,
    /// for a heartbeat).
    pub offset: i64,
    /// Body length.
    pub size: i32,
}

impl FrameHeader {
    /// The header's bytes.
    pub fn encode(self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[..8].copy_from_slice(&self.offset.to_be_bytes());
        out[8..].copy_from_slice(&self.size.to_be_bytes());
        out
    }

    /// Reads a header.
    pub fn decode(bytes: &[u8; HEADER_LEN]) -> Self {
        let mut offset = [0u8; 8];
        offset.copy_from_slice(&bytes[..8]);
        let mut size = [0u8; 4];
        size.copy_from_slice(&bytes[8..]);
        Self {
            offset: i64::from_be_bytes(offset),
            size: i32::from_be_bytes(size),
        }
    }
}

/// A slave report's bytes.
pub fn encode_report(offset: i64) -> [u8; REPORT_LEN] {
    offset.to_be_bytes()
}

/// The last complete report in `buf` (a slave's reports as the master read
/// them), and how many bytes that consumed; `None` if there is none.
pub fn last_report(buf: &[u8]) -> Option<(i64, usize)> {
    let whole = buf.len() - buf.len() % REPORT_LEN;
    let last = buf.get(whole.checked_sub(REPORT_LEN)?..whole)?;
    let mut v = [0u8; REPORT_LEN];
    v.copy_from_slice(last);
    Some((i64::from_be_bytes(v), whole))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_and_reports_are_java_bytes() {
        let h = FrameHeader {
            offset: 0x0102_0304_0506_0708,
            size: 32_768,
        };
        assert_eq!(h.encode(), [1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0x80, 0]);
        assert_eq!(FrameHeader::decode(&h.encode()), h);
        assert_eq!(encode_report(1 << 30), [0, 0, 0, 0, 0x40, 0, 0, 0]);
        let mut buf = Vec::new();
        buf.extend_from_slice(&encode_report(5));
        buf.extend_from_slice(&encode_report(9));
        buf.extend_from_slice(&[0, 0, 0]); // part of a third
        assert_eq!(last_report(&buf), Some((9, 16)));
        assert_eq!(last_report(&buf[..7]), None);
    }
}
