//! A `tokio_util` codec over [`RemotingCommand::encode`] / [`RemotingCommand::decode`].

use bytes::BytesMut;
use rmq_common::remoting::{RemotingCommand, RemotingError, MAX_FRAME_BYTES};
use tokio_util::codec::{Decoder, Encoder};

/// Why reading or writing frames on a connection failed.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// The socket failed.
    #[error("connection I/O failed: {0}")]
    Io(#[from] std::io::Error),
    /// The peer sent a frame that cannot be decoded, or a command cannot be
    /// encoded. A bad inbound frame leaves the stream unusable: close it.
    #[error("bad frame: {0}")]
    Frame(#[from] RemotingError),
}

/// Frames [`RemotingCommand`]s on a byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemotingCodec {
    /// Largest accepted frame, length prefix included; larger frames fail as
    /// soon as their prefix arrives.
    pub max_frame: usize,
}

impl RemotingCodec {
    /// A codec refusing frames above `max_frame` bytes.
    pub fn new(max_frame: usize) -> Self {
        Self { max_frame }
    }
}

impl Default for RemotingCodec {
    /// The 16 MiB limit of Java's `NettyDecoder`.
    fn default() -> Self {
        Self::new(MAX_FRAME_BYTES)
    }
}

impl Decoder for RemotingCodec {
    type Item = RemotingCommand;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<RemotingCommand>, CodecError> {
        Ok(RemotingCommand::decode(src, self.max_frame)?)
    }
}

impl Encoder<RemotingCommand> for RemotingCodec {
    type Error = CodecError;

    fn encode(&mut self, item: RemotingCommand, dst: &mut BytesMut) -> Result<(), CodecError> {
        item.encode(dst)?;
        Ok(())
    }
}

impl Encoder<&RemotingCommand> for RemotingCodec {
    type Error = CodecError;

    fn encode(&mut self, item: &RemotingCommand, dst: &mut BytesMut) -> Result<(), CodecError> {
        item.encode(dst)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use rmq_common::remoting::{RequestCode, SerializeType};
    use tokio_util::codec::FramedRead;

    #[tokio::test]
    async fn frames_a_byte_stream() {
        let mut codec = RemotingCodec::default();
        let mut bytes = BytesMut::new();
        let a = RemotingCommand::request(RequestCode::HeartBeat).with_body(&b"{}"[..]);
        let b = RemotingCommand::request(RequestCode::PullMessage)
            .with_serialize_type(SerializeType::RocketMq);
        codec.encode(&a, &mut bytes).unwrap();
        codec.encode(b.clone(), &mut bytes).unwrap();
        let wire = bytes.freeze();
        let mut frames = FramedRead::new(&wire[..], RemotingCodec::default());
        assert_eq!(frames.next().await.unwrap().unwrap(), a);
        assert_eq!(frames.next().await.unwrap().unwrap(), b);
        assert!(frames.next().await.is_none());
    }

    #[tokio::test]
    async fn oversized_frame_is_an_error() {
        let wire = [0x7F, 0, 0, 0, 0, 0, 0, 0];
        let mut frames = FramedRead::new(&wire[..], RemotingCodec::new(1024));
        let err = frames.next().await.unwrap().unwrap_err();
        assert!(
            matches!(err, CodecError::Frame(RemotingError::FrameTooLarge { .. })),
            "{err}"
        );
    }

    #[tokio::test]
    async fn truncated_stream_is_an_io_error() {
        let mut bytes = BytesMut::new();
        RemotingCommand::request(RequestCode::HeartBeat)
            .encode(&mut bytes)
            .unwrap();
        let wire = &bytes[..bytes.len() - 1];
        let mut frames = FramedRead::new(wire, RemotingCodec::default());
        let err = frames.next().await.unwrap().unwrap_err();
        assert!(matches!(err, CodecError::Io(_)), "{err}");
    }
}
