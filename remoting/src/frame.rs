//! The server's frame decoder: before a frame is buffered it announces the
//! frame's size ([`Event::Head`]), so the connection can take its own
//! budget for it first; while the frame arrives, the bytes received are
//! charged to the server's budget for unfinished frames (a frame that
//! cannot get more fails the connection); a header larger than the limit
//! is refused from its first 8 bytes, never buffered whole.

use std::sync::Arc;

use bytes::BytesMut;
use rmq_common::remoting::{RemotingCommand, RemotingError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
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
    /// The server's budget for unfinished frames is spent.
    #[error(
        "no maxUnfinishedFrameBytes budget left for a frame of {frame_len} bytes \
         ({received} received)"
    )]
    NoBudget {
        /// Bytes after the length prefix.
        frame_len: usize,
        /// Bytes of it received so far.
        received: usize,
    },
    /// The header is larger than `maxHeaderBytes`.
    #[error("request header of {header_len} bytes exceeds maxHeaderBytes ({max_header} bytes)")]
    HeaderTooLarge {
        /// Announced header bytes.
        header_len: usize,
        /// The limit.
        max_header: usize,
    },
}

/// The server's budget for bytes of frames still arriving.
#[derive(Debug, Clone)]
pub(crate) struct UnfinishedBudget {
    permits: Arc<Semaphore>,
    total: usize,
}

impl UnfinishedBudget {
    /// `bytes` in all.
    pub fn new(bytes: usize) -> Self {
        let total = bytes.clamp(1, Semaphore::MAX_PERMITS);
        Self {
            permits: Arc::new(Semaphore::new(total)),
            total,
        }
    }

    /// Bytes not taken.
    #[cfg(test)]
    pub fn available(&self) -> usize {
        self.permits.available_permits()
    }
}

/// Decodes frames, announcing each with a [`Event::Head`] first.
#[derive(Debug)]
pub(crate) struct GuardedCodec {
    max_frame: usize,
    max_header: usize,
    /// The head of the frame at the front of the buffer was announced.
    announced: bool,
    budget: UnfinishedBudget,
    /// What the frame at the front holds of `budget`.
    held: Option<OwnedSemaphorePermit>,
}

impl GuardedCodec {
    /// Refuses frames above `max_frame` bytes (prefix included) and headers
    /// above `max_header` bytes; charges frames to `budget` as they arrive.
    pub fn new(max_frame: usize, max_header: usize, budget: UnfinishedBudget) -> Self {
        Self {
            max_frame,
            max_header,
            announced: false,
            budget,
            held: None,
        }
    }

    /// Takes budget for what the frame's `received` bytes hold: the bytes,
    /// plus the header's expansion once the header is in.
    fn charge(&mut self, head: FrameHead, received: usize) -> Result<(), FrameError> {
        let wanted = if received >= PREFIX + head.header_len {
            head.charge()
                .min(frame_charge(received.saturating_sub(4), head.header_len))
        } else {
            received
        }
        .clamp(1, self.budget.total);
        let held = self.held.as_ref().map_or(0, |p| p.num_permits());
        if wanted <= held {
            return Ok(());
        }
        let more = u32::try_from(wanted - held).unwrap_or(u32::MAX);
        let Ok(permit) = Arc::clone(&self.budget.permits).try_acquire_many_owned(more) else {
            return Err(FrameError::NoBudget {
                frame_len: head.frame_len,
                received,
            });
        };
        match &mut self.held {
            Some(p) => p.merge(permit),
            None => self.held = Some(permit),
        }
        Ok(())
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
        let head = FrameHead {
            frame_len,
            header_len,
        };
        if !self.announced {
            self.announced = true;
            return Ok(Some(Event::Head(head)));
        }
        if src.len() < total {
            self.charge(head, src.len())?;
            // Room for exactly this frame (pages are only touched as bytes
            // arrive), instead of the reader's doubling.
            src.reserve(total - src.len());
            return Ok(None);
        }
        self.announced = false;
        let cmd = RemotingCommand::decode(src, self.max_frame);
        // Decoded (or failed): no longer an unfinished frame.
        self.held = None;
        Ok(cmd?.map(Event::Frame))
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
        let mut frames = FramedRead::new(
            &bytes[..],
            GuardedCodec::new(1 << 20, 1 << 10, UnfinishedBudget::new(1 << 20)),
        );
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
        let mut frames = FramedRead::new(
            &bytes[..],
            GuardedCodec::new(16 << 20, 4096, UnfinishedBudget::new(1 << 20)),
        );
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
            let mut frames = FramedRead::new(
                &bytes[..],
                GuardedCodec::new(1024, 1024, UnfinishedBudget::new(1 << 20)),
            );
            let err = frames.next().await.unwrap().unwrap_err();
            assert!(matches!(err, FrameError::Frame(_)), "{err}");
        }
    }

    #[tokio::test]
    async fn arriving_bytes_are_charged_and_given_back_once_decoded() {
        let mut cmd = RemotingCommand::request(RequestCode::SendMessage);
        cmd.body = Some(vec![1u8; 10_000].into());
        let bytes = wire(std::slice::from_ref(&cmd));
        let budget = UnfinishedBudget::new(1 << 20);
        let mut codec = GuardedCodec::new(1 << 20, 1 << 10, budget.clone());
        let mut src = BytesMut::from(&bytes[..5_000]);
        let Some(Event::Head(head)) = codec.decode(&mut src).unwrap() else {
            panic!("a head first")
        };
        assert!(codec.decode(&mut src).unwrap().is_none());
        let held = (1 << 20) - budget.available();
        assert_eq!(held, frame_charge(5_000 - 4, head.header_len));
        src.extend_from_slice(&bytes[5_000..]);
        let Some(Event::Frame(got)) = codec.decode(&mut src).unwrap() else {
            panic!("the frame")
        };
        assert_eq!(got, cmd);
        assert_eq!(budget.available(), 1 << 20);
    }

    #[tokio::test]
    async fn a_frame_that_cannot_get_budget_fails() {
        let mut cmd = RemotingCommand::request(RequestCode::SendMessage);
        cmd.body = Some(vec![1u8; 10_000].into());
        let bytes = wire(&[cmd]);
        // Two connections' frames half in; the budget holds one of them.
        let budget = UnfinishedBudget::new(8_000);
        let mut errors = 0;
        let mut codecs = Vec::new();
        for _ in 0..2 {
            let mut codec = GuardedCodec::new(1 << 20, 1 << 10, budget.clone());
            let mut src = BytesMut::from(&bytes[..6_000]);
            assert!(matches!(codec.decode(&mut src), Ok(Some(Event::Head(_)))));
            match codec.decode(&mut src) {
                Ok(None) => {}
                Err(FrameError::NoBudget { received, .. }) => {
                    assert_eq!(received, 6_000);
                    errors += 1;
                }
                other => panic!("{other:?}"),
            }
            codecs.push(codec);
        }
        assert_eq!(errors, 1);
    }
}
