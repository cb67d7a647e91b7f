//! The `grpc_request` fuzz target's input layout and its in-process half
//! (`common/fuzz/fuzz_targets/grpc_request/`; the corpus replay test
//! `common/tests/fuzz_corpus.rs` calls [`grpc_request`] too).
//!
//! An input is [`HEAD_BYTES`] of choices, then the request body:
//! - byte 0: the method, an index into [`METHODS`] (modulo 16);
//! - byte 1: the body's shape: even = the rest is the raw message bytes
//!   (garbage for prost), odd = the rest seeds a structurally valid request
//!   with hostile field values (built by the fuzz target with `arbitrary`);
//! - bytes 2..8: the call's metadata, one selector each (see
//!   [`Input::meta`]): what the fuzz target sends as `x-mq-client-id`,
//!   `grpc-timeout`, `authorization`, and an `x-mq-*` header's name and
//!   value, and a spare.
//!
//! The in-process half needs no broker: it decodes the body as every
//! request type and checks that prost round-trips what it accepted
//! (decode, encode, decode again: equal).

use prost::Message;

use crate::pb;

/// Bytes before the body: method, shape, six metadata selectors.
pub const HEAD_BYTES: usize = 8;

/// How a method's messages flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One request, one response.
    Unary,
    /// One request, a stream of responses (ReceiveMessage, PullMessage).
    ServerStreaming,
    /// Streams both ways (Telemetry).
    Bidi,
}

/// One rpc of `MessagingService`.
#[derive(Debug)]
pub struct Method {
    /// The rpc's name, as in the path `/apache.rocketmq.v2.MessagingService/<name>`.
    pub name: &'static str,
    pub kind: Kind,
    /// Decodes bytes as this rpc's request type and checks the round trip.
    pub round_trip: fn(&[u8]),
    /// Whether bytes decode as this rpc's response type (each message of a
    /// response stream).
    pub response_decodes: fn(&[u8]) -> bool,
}

impl Method {
    /// The HTTP/2 path of a call.
    pub fn path(&self) -> String {
        format!("/{}/{}", crate::SERVICE_NAME, self.name)
    }
}

macro_rules! method {
    ($name:literal, $kind:ident, $req:ty, $resp:ty) => {
        Method {
            name: $name,
            kind: Kind::$kind,
            round_trip: |b| round_trip::<$req>(b, |_| {}),
            response_decodes: |b| <$resp>::decode(b).is_ok(),
        }
    };
}

/// The 16 rpcs, in `service.proto`'s order.
pub const METHODS: [Method; 16] = [
    method!(
        "QueryRoute",
        Unary,
        pb::QueryRouteRequest,
        pb::QueryRouteResponse
    ),
    method!(
        "Heartbeat",
        Unary,
        pb::HeartbeatRequest,
        pb::HeartbeatResponse
    ),
    method!(
        "SendMessage",
        Unary,
        pb::SendMessageRequest,
        pb::SendMessageResponse
    ),
    method!(
        "QueryAssignment",
        Unary,
        pb::QueryAssignmentRequest,
        pb::QueryAssignmentResponse
    ),
    method!(
        "ReceiveMessage",
        ServerStreaming,
        pb::ReceiveMessageRequest,
        pb::ReceiveMessageResponse
    ),
    method!(
        "AckMessage",
        Unary,
        pb::AckMessageRequest,
        pb::AckMessageResponse
    ),
    method!(
        "ForwardMessageToDeadLetterQueue",
        Unary,
        pb::ForwardMessageToDeadLetterQueueRequest,
        pb::ForwardMessageToDeadLetterQueueResponse
    ),
    method!(
        "PullMessage",
        ServerStreaming,
        pb::PullMessageRequest,
        pb::PullMessageResponse
    ),
    method!(
        "UpdateOffset",
        Unary,
        pb::UpdateOffsetRequest,
        pb::UpdateOffsetResponse
    ),
    method!(
        "GetOffset",
        Unary,
        pb::GetOffsetRequest,
        pb::GetOffsetResponse
    ),
    method!(
        "QueryOffset",
        Unary,
        pb::QueryOffsetRequest,
        pb::QueryOffsetResponse
    ),
    method!(
        "EndTransaction",
        Unary,
        pb::EndTransactionRequest,
        pb::EndTransactionResponse
    ),
    Method {
        name: "Telemetry",
        kind: Kind::Bidi,
        round_trip: |b| round_trip::<pb::TelemetryCommand>(b, telemetry_without_nan),
        response_decodes: |b| pb::TelemetryCommand::decode(b).is_ok(),
    },
    method!(
        "NotifyClientTermination",
        Unary,
        pb::NotifyClientTerminationRequest,
        pb::NotifyClientTerminationResponse
    ),
    method!(
        "ChangeInvisibleDuration",
        Unary,
        pb::ChangeInvisibleDurationRequest,
        pb::ChangeInvisibleDurationResponse
    ),
    method!(
        "RecallMessage",
        Unary,
        pb::RecallMessageRequest,
        pb::RecallMessageResponse
    ),
];

/// Index of a method in [`METHODS`] by name.
pub fn method_index(name: &str) -> Option<u8> {
    METHODS
        .iter()
        .position(|m| m.name == name)
        .and_then(|i| u8::try_from(i).ok())
}

/// What the body bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Sent as they are.
    Raw,
    /// A seed for a request built from them.
    Built,
}

/// One input, split.
#[derive(Debug)]
pub struct Input<'a> {
    pub method: &'static Method,
    pub shape: Shape,
    /// Selectors: client id, timeout, authorization, `x-mq-*` name,
    /// `x-mq-*` value, spare.
    pub meta: [u8; HEAD_BYTES - 2],
    pub body: &'a [u8],
}

impl<'a> Input<'a> {
    /// Splits `data`; `None` if it is shorter than [`HEAD_BYTES`].
    pub fn split(data: &'a [u8]) -> Option<Self> {
        let (head, body) = data.split_at_checked(HEAD_BYTES)?;
        let mut meta = [0u8; HEAD_BYTES - 2];
        meta.copy_from_slice(&head[2..]);
        Some(Self {
            method: &METHODS[usize::from(head[0]) % METHODS.len()],
            shape: if head[1] % 2 == 0 {
                Shape::Raw
            } else {
                Shape::Built
            },
            meta,
            body,
        })
    }
}

/// An input for `method` with a raw `body` and metadata selectors `meta`
/// (what the seed corpus is made of).
pub fn raw_input(method: u8, meta: [u8; HEAD_BYTES - 2], body: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(HEAD_BYTES + body.len());
    v.push(method);
    v.push(0);
    v.extend_from_slice(&meta);
    v.extend_from_slice(body);
    v
}

/// The in-process half: the body (whatever its shape) decoded as every
/// request type, each accepted decoding round-tripped.
pub fn grpc_request(data: &[u8]) {
    let Some(input) = Input::split(data) else {
        return;
    };
    for m in &METHODS {
        (m.round_trip)(input.body);
    }
}

/// Decode, encode, decode: the two decodings must be equal, and the second
/// encoding as long as the first. `normalize` runs on both decodings
/// before they are compared.
pub fn round_trip<M: Message + Default + PartialEq + std::fmt::Debug>(
    bytes: &[u8],
    normalize: fn(&mut M),
) {
    let Ok(mut first) = M::decode(bytes) else {
        return;
    };
    let encoded = first.encode_to_vec();
    let mut second = match M::decode(encoded.as_slice()) {
        Ok(m) => m,
        Err(e) => panic!("prost cannot decode its own encoding of {first:?}: {e}"),
    };
    let again = second.encode_to_vec();
    assert_eq!(encoded.len(), again.len(), "re-encoding changed the length");
    normalize(&mut first);
    normalize(&mut second);
    assert_eq!(first, second, "decode/encode/decode changed the message");
}

/// A NaN backoff multiplier (the one float of the API) survives the round
/// trip but is never equal to itself: it becomes 0 on both sides.
fn telemetry_without_nan(cmd: &mut pb::TelemetryCommand) {
    let Some(pb::telemetry_command::Command::Settings(s)) = &mut cmd.command else {
        return;
    };
    let Some(policy) = &mut s.backoff_policy else {
        return;
    };
    if let Some(pb::retry_policy::Strategy::ExponentialBackoff(e)) = &mut policy.strategy {
        if e.multiplier.is_nan() {
            e.multiplier = 0.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixteen_methods_in_service_order() {
        assert_eq!(METHODS.len(), 16);
        assert_eq!(
            METHODS[0].path(),
            "/apache.rocketmq.v2.MessagingService/QueryRoute"
        );
        assert_eq!(method_index("Telemetry"), Some(12));
        assert_eq!(METHODS[12].kind, Kind::Bidi);
        assert_eq!(METHODS[4].kind, Kind::ServerStreaming);
    }

    #[test]
    fn inputs_split_into_method_shape_metadata_body() {
        assert!(Input::split(&[1, 2, 3]).is_none());
        let data = raw_input(18, [1, 2, 3, 4, 5, 6], b"body");
        let i = Input::split(&data).unwrap();
        assert_eq!(i.method.name, "SendMessage");
        assert_eq!(i.shape, Shape::Raw);
        assert_eq!(i.meta, [1, 2, 3, 4, 5, 6]);
        assert_eq!(i.body, b"body");
    }

    #[test]
    fn a_nan_multiplier_round_trips() {
        let cmd = pb::TelemetryCommand {
            status: None,
            command: Some(pb::telemetry_command::Command::Settings(pb::Settings {
                backoff_policy: Some(pb::RetryPolicy {
                    max_attempts: 3,
                    strategy: Some(pb::retry_policy::Strategy::ExponentialBackoff(
                        pb::ExponentialBackoff {
                            initial: None,
                            max: None,
                            multiplier: f32::NAN,
                        },
                    )),
                }),
                ..Default::default()
            })),
        };
        let bytes = cmd.encode_to_vec();
        round_trip::<pb::TelemetryCommand>(&bytes, telemetry_without_nan);
        grpc_request(&raw_input(12, [0; 6], &bytes));
    }
}
