//! The typed error of the frame and header codec.

/// Why a remoting frame could not be decoded or encoded.
///
/// Every variant names what was wrong so a connection can log it before it
/// closes; none of them is ever produced by a panic path.
#[derive(Debug, thiserror::Error)]
pub enum RemotingError {
    /// The frame announces more bytes than the configured limit; raised from
    /// the 4-byte length prefix alone, before the frame is buffered.
    #[error("frame of {frame_bytes} bytes exceeds the limit of {max_frame} bytes")]
    FrameTooLarge {
        /// Whole frame size: the length prefix plus what it announces.
        frame_bytes: u64,
        /// The configured limit.
        max_frame: usize,
    },
    /// The length prefix is negative or too small to hold the header-length word.
    #[error("invalid frame length {0}: must be at least 4")]
    InvalidFrameLength(i32),
    /// The header length does not fit inside the frame.
    #[error("header length {header_len} does not fit in a frame of {frame_len} bytes")]
    HeaderTooLong {
        /// Header length taken from the low 24 bits of the second word.
        header_len: usize,
        /// Bytes after the length prefix.
        frame_len: usize,
    },
    /// The high byte of the header-length word is neither 0 (JSON) nor 1 (ROCKETMQ).
    #[error("unknown serialize type {0} (expected 0 JSON or 1 ROCKETMQ)")]
    UnknownSerializeType(u8),
    /// The JSON header is not valid JSON.
    #[error("malformed JSON header: {source}")]
    Json {
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A JSON header field has the wrong type or an out-of-range value.
    #[error("JSON header field `{field}`: {reason}")]
    InvalidJsonField {
        /// The JSON key.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A field every header must carry is absent.
    #[error("header has no `{0}` field")]
    MissingField(&'static str),
    /// The binary header ends before a field is complete.
    #[error("binary header truncated in `{field}`: needs {needed} bytes, {available} left")]
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left in the header.
        available: usize,
    },
    /// A length inside the binary header is negative.
    #[error("binary header field `{field}` has negative length {len}")]
    NegativeLength {
        /// The length field.
        field: &'static str,
        /// The value read.
        len: i64,
    },
    /// A value is too large for its slot on the wire (i16 code, 24-bit header
    /// length, ...); encoding it would silently truncate.
    #[error("cannot encode `{field}` = {value}: the wire allows at most {max}")]
    ValueOutOfRange {
        /// The field.
        field: &'static str,
        /// The value that does not fit.
        value: i64,
        /// The largest value the slot holds.
        max: i64,
    },
    /// serde_json failed to write the JSON header (not expected for string maps).
    #[error("cannot encode JSON header: {source}")]
    JsonEncode {
        /// The serializer's error.
        #[source]
        source: serde_json::Error,
    },
}
