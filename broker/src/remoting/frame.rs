//! The server's frame decoder: before a frame is buffered it announces the
//! frame's size ([`Event::Head`]), so the connection can take budget for it
//! first (and close a connection that cannot get any); a header larger than
//! the limit is refused from its first 8 bytes, never buffered whole.

use bytes::BytesMut;
use rmq_common::remoting::{RemotingCommand, RemotingError};
use tokio_util::codec::Decoder;

use super::limits::frame_charge;

/// Bytes before the header: length prefix and header word.
const PREFIX: usize = 8;
/// Header lengths live in the low 24 bits of the header word.
const HEADER_LEN_MASK: u32 = 0x00FF_FFFF;

/// What the decoder read.
#[derive(Debug)]
pub(crate) enum Event {
    /// A frame starts; its bytes are not buffered until the decoder is
    /// polled again.
    Head(FrameHead),
    /// The whole frame announced by the last head.
    Frame(RemotingCommand),
}

/// Sizes of a frame, from its first 8 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameHead {
    /// Bytes after the length prefix.
    pub frame_len: usize,
    /// Header bytes.
    pub header_len: usize,
}

impl FrameHead {
    /// Bytes this frame is charged against the byte budgets.
    pub fn charge(&self) -> usize {
        frame_charge(self.frame_len, self.header_len)
    }
}

/// Why the decoder gave up; the connection is closed after any of these.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrameError {
    /// The socket failed.
    #[error("connection I/O failed: {0}")]
    Io(#[from] std::io::Error),
    /// The frame is malformed or too large.
    #[error("bad frame: {0}")]
    Frame(#[from] RemotingError),
    /// The header is larger than `maxHeaderBytes`.
    #[error("request header of {header_len} bytes exceeds maxHeaderBytes ({max_header} bytes)")]
    HeaderTooLarge {
        /// Announced header bytes.
        header_len: usize,
        /// The limit.
        max_header: usize,
    },
}

/// Decodes frames, announcing each with a [`Event::Head`] first.
#[derive(Debug)]
pub(crate) struct GuardedCodec {
    max_frame: usize,
    max_header: usize,
    /// The head of the frame at the front of the buffer was announced.
    announced: bool,
}

impl GuardedCodec {
    /// Refuses frames above `max_frame` bytes (prefix included) and headers
    /// above `max_header` bytes.
    pub fn new(max_frame: usize, max_header: usize) -> Self {
        Self {
            max_frame,
            max_header,
            announced: false,
        }
    }
}

impl Decoder for GuardedCodec {
    type Item = Event;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Event>, FrameError> {
        let Some(prefix) = src.get(..4) else {
            return Ok(None);
        };
        let length = i32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
        let frame_len = match usize::try_from(length) {
            Ok(len) if len >= 4 => len,
            _ => return Err(RemotingError::InvalidFrameLength(length).into()),
        };
        let total = frame_len.saturating_add(4);
        if total > self.max_frame {
            return Err(RemotingError::FrameTooLarge {
                frame_bytes: total as u64,
                max_frame: self.max_frame,
            }
            .into());
        }
        let Some(word) = src.get(4..PREFIX) else {
            return Ok(None);
        };
        let header_len =
            (u32::from_be_bytes([word[0], word[1], word[2], word[3]]) & HEADER_LEN_MASK) as usize;
        if header_len > self.max_header {
            return Err(FrameError::HeaderTooLarge {
                header_len,
                max_header: self.max_header,
            });
        }
        if !self.announced {
            self.announced = true;
            return Ok(Some(Event::Head(FrameHead {
                frame_len,
                header_len,
            })));
        }
        if src.len() < total {
            // Room for exactly this frame (its budget is taken), instead of
            // the reader's doubling.
            src.reserve(total - src.len());
            return Ok(None);
        }
        self.announced = false;
        Ok(RemotingCommand::decode(src, self.max_frame)?.map(Event::Frame))
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use rmq_common::remoting::RequestCode;
    use tokio_util::codec::FramedRead;

    use super::*;

    fn wire(cmds: &[RemotingCommand]) -> Vec<u8> {
        let mut b = BytesMut::new();
        for c in cmds {
            c.encode(&mut b).unwrap();
        }
        b.to_vec()
    }

    #[tokio::test]
    async fn announces_each_frame_before_decoding_it() {
        let a = RemotingCommand::request(RequestCode::HeartBeat).with_body(&b"{}"[..]);
        let b = RemotingCommand::request(RequestCode::PullMessage);
        let bytes = wire(&[a.clone(), b.clone()]);
        let mut frames = FramedRead::new(&bytes[..], GuardedCodec::new(1 << 20, 1 << 10));
        for want in [a, b] {
            let Some(Ok(Event::Head(head))) = frames.next().await else {
                panic!("a head first")
            };
            let Some(Ok(Event::Frame(got))) = frames.next().await else {
                panic!("then the frame")
            };
            assert_eq!(got, want);
            assert_eq!(head.frame_len, want.body_len() + 4 + head.header_len);
        }
        assert!(frames.next().await.is_none());
    }

    #[tokio::test]
    async fn a_large_header_is_refused_from_its_first_bytes() {
        // Only the 8-byte prefix of a frame announcing a 1 MiB header.
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&((1 << 20) + 4i32).to_be_bytes());
        bytes.extend_from_slice(&(1i32 << 20).to_be_bytes());
        let mut frames = FramedRead::new(&bytes[..], GuardedCodec::new(16 << 20, 4096));
        let err = frames.next().await.unwrap().unwrap_err();
        assert!(
            matches!(
                err,
                FrameError::HeaderTooLarge {
                    header_len: 1_048_576,
                    max_header: 4096
                }
            ),
            "{err}"
        );
    }

    #[tokio::test]
    async fn oversized_and_negative_lengths_are_errors() {
        for prefix in [[0x7F, 0, 0, 0], [0xFF, 0xFF, 0xFF, 0xFF], [0, 0, 0, 3]] {
            let mut bytes = prefix.to_vec();
            bytes.extend_from_slice(&[0; 4]);
            let mut frames = FramedRead::new(&bytes[..], GuardedCodec::new(1024, 1024));
            let err = frames.next().await.unwrap().unwrap_err();
            assert!(matches!(err, FrameError::Frame(_)), "{err}");
        }
    }
}
