//! Calls with raw bytes: a tonic codec whose messages are `Bytes` as they
//! are (so the broker's prost decoder sees whatever the input holds), and
//! one call of any of the three kinds, read to its end.

use bytes::{Buf, BufMut, Bytes};
use rmq_grpc::fuzz_harness::{Kind, Method};
use rmq_grpc::tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use rmq_grpc::tonic::codegen::http::uri::PathAndQuery;
use rmq_grpc::tonic::codegen::tokio_stream;
use rmq_grpc::tonic::metadata::MetadataMap;
use rmq_grpc::tonic::transport::Channel;
use rmq_grpc::tonic::{client::Grpc, Code, Request, Status, Streaming, TimeoutExpired};

/// Responses of one stream read at most; a stream longer than this is
/// cut (a receive answers a status, at most 32 messages and a timestamp).
const MAX_STREAM_ITEMS: usize = 1024;
/// Largest response message taken.
const MAX_RESPONSE_BYTES: usize = 256 << 20;

/// Messages are bytes, untouched both ways.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawCodec;

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

/// How a call ended, when it ended in time.
#[derive(Debug)]
pub enum Answer {
    /// The response messages (one for a unary call).
    Messages(Vec<Bytes>),
    /// A gRPC status from the broker (maybe after messages of a stream).
    Status,
}

/// Why a call failed the target: the broker did not answer with a status
/// or a response.
#[derive(Debug)]
pub struct NoAnswer(pub String);

/// Whether an error (or one of its causes) is the client giving up at the
/// call's own `grpc-timeout`: tonic's channel enforces it too.
fn deadline_passed(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut at = Some(e);
    while let Some(e) = at {
        if e.is::<TimeoutExpired>() {
            return true;
        }
        at = e.source();
    }
    false
}

/// A status the broker sent has no source; one made on this side (the
/// connection broke, a stream was reset) has the transport error as its.
/// The client's own deadline passing counts as an answer: the input set
/// it (a hang past [`super::ANSWER_TIMEOUT`] shows with other inputs).
fn judge(status: Status) -> Result<Answer, NoAnswer> {
    if deadline_passed(&status) {
        return Ok(Answer::Status);
    }
    if std::error::Error::source(&status).is_some() || status.code() == Code::Unavailable {
        return Err(NoAnswer(format!(
            "the call failed on the connection, not with a broker's status: {status:?}"
        )));
    }
    Ok(Answer::Status)
}

async fn drain(mut s: Streaming<Bytes>) -> Result<Answer, NoAnswer> {
    let mut got = Vec::new();
    while got.len() < MAX_STREAM_ITEMS {
        match s.message().await {
            Ok(Some(m)) => got.push(m),
            Ok(None) => break,
            Err(status) => return judge(status),
        }
    }
    Ok(Answer::Messages(got))
}

fn with_meta<T>(body: T, metadata: MetadataMap) -> Request<T> {
    let mut req = Request::new(body);
    *req.metadata_mut() = metadata;
    req
}

/// One call of `method` with `metadata` and `messages` (a unary or
/// server-streaming call sends the first, or an empty message), read to
/// its end.
pub async fn call(
    channel: &Channel,
    method: &Method,
    metadata: MetadataMap,
    messages: Vec<Bytes>,
) -> Result<Answer, NoAnswer> {
    let mut grpc = Grpc::new(channel.clone()).max_decoding_message_size(MAX_RESPONSE_BYTES);
    grpc.ready()
        .await
        .map_err(|e| NoAnswer(format!("the connection is not ready: {e}")))?;
    let path = PathAndQuery::try_from(method.path())
        .map_err(|e| NoAnswer(format!("bad path {}: {e}", method.path())))?;
    let first = || messages.first().cloned().unwrap_or_default();
    match method.kind {
        Kind::Unary => match grpc
            .unary(with_meta(first(), metadata), path, RawCodec)
            .await
        {
            Ok(resp) => Ok(Answer::Messages(vec![resp.into_inner()])),
            Err(status) => judge(status),
        },
        Kind::ServerStreaming => {
            match grpc
                .server_streaming(with_meta(first(), metadata), path, RawCodec)
                .await
            {
                Ok(resp) => drain(resp.into_inner()).await,
                Err(status) => judge(status),
            }
        }
        Kind::Bidi => {
            let out = tokio_stream::iter(messages.clone());
            match grpc
                .streaming(with_meta(out, metadata), path, RawCodec)
                .await
            {
                Ok(resp) => drain(resp.into_inner()).await,
                Err(status) => judge(status),
            }
        }
    }
}
