//! The write side of a connection: the frames of several responses go out in
//! one vectored write. Headers and small bodies are copied into one buffer;
//! larger body parts (a pull answer's records, each still backed by the
//! CommitLog mapping) are handed to the socket as they are, so a pulled
//! record is not copied in user space at all.

use std::io::IoSlice;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use rmq_common::remoting::{RemotingCommand, RemotingError};
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// Body parts shorter than this are copied next to their header: an iovec
/// per tiny part costs more than the copy.
const COPY_BELOW: usize = 512;
/// Slices per `writev` (Linux takes at most 1,024).
const MAX_SLICES: usize = 256;

/// A frame queued for a connection's writer, with the bytes it was counted
/// as against the connection's bound on unsent answers.
#[derive(Debug)]
pub(crate) struct Queued {
    /// Boxed: a channel allocates its slots 32 at a time up front, and
    /// every connection (a gRPC client's detached one too) holds a channel.
    pub cmd: Box<RemotingCommand>,
    pub bytes: usize,
}

/// Bytes of header a frame is counted with beyond its ext fields and
/// remark (the fixed fields and the encoding's punctuation, roughly).
const HEADER_OVERHEAD: usize = 64;

/// About the bytes `cmd`'s frame takes; cheap, without encoding it.
pub(crate) fn queued_size(cmd: &RemotingCommand) -> usize {
    let ext: usize = cmd
        .ext_fields
        .iter()
        .map(|(k, v)| k.len() + v.len() + 6)
        .sum();
    HEADER_OVERHEAD + ext + cmd.remark.as_ref().map_or(0, String::len) + cmd.body_len()
}

/// Frames waiting to be written, in order.
#[derive(Debug, Default)]
pub(crate) struct FrameBatch {
    /// Copied bytes not yet sealed into `chunks`.
    buf: BytesMut,
    chunks: Vec<Bytes>,
}

impl FrameBatch {
    /// Adds one command's frame. On error nothing of it was added.
    pub fn push(&mut self, cmd: &RemotingCommand) -> Result<(), RemotingError> {
        cmd.encode_head(&mut self.buf)?;
        for part in cmd.body.iter().chain(&cmd.body_parts) {
            if part.len() < COPY_BELOW {
                self.buf.put_slice(part);
            } else {
                self.seal();
                self.chunks.push(part.clone());
            }
        }
        Ok(())
    }

    fn seal(&mut self) {
        if !self.buf.is_empty() {
            self.chunks.push(self.buf.split().freeze());
        }
    }

    /// Writes every frame added so far, then flushes; the batch is empty
    /// afterwards (also on error).
    pub async fn write_to<W: AsyncWrite + Unpin>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.seal();
        let mut chunks = std::mem::take(&mut self.chunks);
        // `chunks[first]` is the first chunk not yet fully written; it is
        // advanced in place past what a short write took.
        let mut first = 0;
        while first < chunks.len() {
            let end = (first + MAX_SLICES).min(chunks.len());
            let slices: Vec<IoSlice<'_>> =
                chunks[first..end].iter().map(|c| IoSlice::new(c)).collect();
            let mut written = w.write_vectored(&slices).await?;
            drop(slices);
            if written == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            while written > 0 {
                let len = chunks[first].len();
                if written >= len {
                    written -= len;
                    first += 1;
                } else {
                    chunks[first].advance(written);
                    written = 0;
                }
            }
        }
        w.flush().await
    }
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use bytes::Bytes;
    use rmq_common::remoting::{RemotingCommand, RequestCode};
    use tokio::io::AsyncWrite;

    use super::FrameBatch;

    /// A sink that takes at most `step` bytes per write, to force short
    /// writes in the middle of slices.
    struct Trickle {
        out: Vec<u8>,
        step: usize,
    }

    impl AsyncWrite for Trickle {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            let n = buf.len().min(self.step);
            self.out.extend_from_slice(&buf[..n]);
            Poll::Ready(Ok(n))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    fn command(parts: &[usize]) -> RemotingCommand {
        let mut cmd = RemotingCommand::request(RequestCode::PullMessage);
        cmd.put_ext("queueId", 3);
        cmd.body = Some(Bytes::from(vec![7u8; 100]));
        cmd.body_parts = parts
            .iter()
            .enumerate()
            .map(|(i, &n)| Bytes::from(vec![i as u8; n]))
            .collect();
        cmd
    }

    #[tokio::test]
    async fn writes_the_bytes_the_codec_would_whatever_the_short_writes() {
        let cmds = [
            command(&[]),
            command(&[10, 5000, 20, 70_000, 600]),
            command(&[1024; 40]),
        ];
        let mut want = bytes::BytesMut::new();
        for c in &cmds {
            c.encode(&mut want).unwrap();
        }
        for step in [1, 7, 1000, 4096, usize::MAX] {
            let mut batch = FrameBatch::default();
            for c in &cmds {
                batch.push(c).unwrap();
            }
            let mut sink = Trickle {
                out: Vec::new(),
                step,
            };
            batch.write_to(&mut sink).await.unwrap();
            assert_eq!(sink.out, want.as_ref(), "writes of at most {step} bytes");
            assert!(batch.chunks.is_empty() && batch.buf.is_empty());
        }
    }
}
