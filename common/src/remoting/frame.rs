//! The frame: big-endian `i32 length` (of everything after it),
//! `i32 (serializeType << 24) | headerLength`, the header, the body.

use bytes::{Buf, BufMut, BytesMut};

use super::binary_header;
use super::command::{RemotingCommand, SerializeType};
use super::error::RemotingError;
use super::json_header;

/// Default frame limit: 16 MiB including the 4-byte length prefix, as Java's
/// `NettyDecoder` (`com.rocketmq.remoting.frameMaxLength`).
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// Header lengths live in the low 24 bits of the second word.
const MAX_HEADER_BYTES: usize = 0x00FF_FFFF;

/// Bytes of the length prefix.
const LENGTH_PREFIX: usize = 4;

impl RemotingCommand {
    /// Appends this command as one frame to `dst`, the header serialized as
    /// [`RemotingCommand::serialize_type`] says, the body parts copied after
    /// the body. On error `dst` is unchanged.
    pub fn encode(&self, dst: &mut BytesMut) -> Result<(), RemotingError> {
        self.encode_head(dst)?;
        dst.reserve(self.body_len());
        if let Some(body) = &self.body {
            dst.put_slice(body);
        }
        for part in &self.body_parts {
            dst.put_slice(part);
        }
        Ok(())
    }

    /// Appends the frame's length prefix, header word and header to `dst`:
    /// everything but the body, whose [`RemotingCommand::body_len`] bytes
    /// must follow. On error `dst` is unchanged.
    pub fn encode_head(&self, dst: &mut BytesMut) -> Result<(), RemotingError> {
        let mut header = Vec::with_capacity(128);
        match self.serialize_type {
            SerializeType::Json => json_header::encode(self, &mut header)?,
            SerializeType::RocketMq => binary_header::encode(self, &mut header)?,
        }
        if header.len() > MAX_HEADER_BYTES {
            return Err(RemotingError::ValueOutOfRange {
                field: "header length",
                value: i64::try_from(header.len()).unwrap_or(i64::MAX),
                max: MAX_HEADER_BYTES as i64,
            });
        }
        let body_len = self.body_len();
        let length = 4usize.saturating_add(header.len()).saturating_add(body_len);
        let length = i32::try_from(length).map_err(|_| RemotingError::ValueOutOfRange {
            field: "frame length",
            value: i64::try_from(length).unwrap_or(i64::MAX),
            max: i64::from(i32::MAX),
        })?;
        // Fits: checked against the 24-bit mask above.
        let header_word = (i32::from(self.serialize_type.code()) << 24) | header.len() as i32;

        dst.reserve(LENGTH_PREFIX + 4 + header.len());
        dst.put_i32(length);
        dst.put_i32(header_word);
        dst.put_slice(&header);
        Ok(())
    }

    /// Decodes a header (without the frame around it) in either encoding.
    pub fn decode_header(
        serialize_type: SerializeType,
        header: &[u8],
    ) -> Result<RemotingCommand, RemotingError> {
        match serialize_type {
            SerializeType::Json => json_header::decode(header),
            SerializeType::RocketMq => binary_header::decode(header),
        }
    }

    /// Decodes one frame from the front of `src`.
    ///
    /// Returns `Ok(None)` and consumes nothing until a whole frame is
    /// buffered. A frame whose announced size (prefix included) exceeds
    /// `max_frame` is refused as soon as its 4-byte prefix is seen. Once a
    /// whole frame is buffered it is consumed even if its header is bad; a bad
    /// frame leaves the stream unusable, so the caller should close it.
    pub fn decode(
        src: &mut BytesMut,
        max_frame: usize,
    ) -> Result<Option<RemotingCommand>, RemotingError> {
        let Some(prefix) = src.get(..LENGTH_PREFIX) else {
            return Ok(None);
        };
        let length = i32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
        let frame_len = match usize::try_from(length) {
            Ok(len) if len >= 4 => len,
            _ => return Err(RemotingError::InvalidFrameLength(length)),
        };
        let total = LENGTH_PREFIX + frame_len;
        if total > max_frame {
            return Err(RemotingError::FrameTooLarge {
                frame_bytes: total as u64,
                max_frame,
            });
        }
        if src.len() < total {
            return Ok(None);
        }
        src.advance(LENGTH_PREFIX);
        let mut frame = src.split_to(frame_len).freeze();
        let header_word = frame.get_i32();
        let header_len = (header_word as u32 as usize) & MAX_HEADER_BYTES;
        let serialize_code = (header_word as u32 >> 24) as u8;
        let serialize_type = SerializeType::from_code(serialize_code)
            .ok_or(RemotingError::UnknownSerializeType(serialize_code))?;
        if header_len > frame.len() {
            return Err(RemotingError::HeaderTooLong {
                header_len,
                frame_len,
            });
        }
        let header = frame.split_to(header_len);
        let mut cmd = Self::decode_header(serialize_type, &header)?;
        cmd.serialize_type = serialize_type;
        cmd.body = if frame.is_empty() { None } else { Some(frame) };
        Ok(Some(cmd))
    }
}
