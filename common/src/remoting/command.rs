//! `RemotingCommand`: one request or response of RocketMQ's remoting protocol.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI32, Ordering};

use bytes::Bytes;

use super::ext_fields::ExtFields;
use super::language::LanguageCode;
use super::version::CURRENT_VERSION;

/// Flag bit 0: the command is a response (Java `RPC_TYPE`).
pub const FLAG_RESPONSE: i32 = 1;
/// Flag bit 1: the sender expects no response (Java `RPC_ONEWAY`).
pub const FLAG_ONEWAY: i32 = 1 << 1;

/// How the header of a frame is serialized: the high byte of the
/// header-length word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum SerializeType {
    /// `JSON` (0): the header is a JSON object; Java's default.
    #[default]
    Json = 0,
    /// `ROCKETMQ` (1): RocketMQ's compact binary header.
    RocketMq = 1,
}

impl SerializeType {
    /// The byte value on the wire.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The type for a byte value, if known.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Self::Json),
            1 => Some(Self::RocketMq),
            _ => None,
        }
    }

    /// The Java enum name (`"JSON"` or `"ROCKETMQ"`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Json => "JSON",
            Self::RocketMq => "ROCKETMQ",
        }
    }
}

/// Opaques handed out by [`RemotingCommand::request`], like Java's static
/// `requestId` counter; a client with its own numbering overwrites them.
static NEXT_OPAQUE: AtomicI32 = AtomicI32::new(0);

/// One command of the remoting protocol: a request or a response, its header
/// fields and an optional body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemotingCommand {
    /// Request code, or response code for a response. Kept as `i32` so unknown
    /// codes survive decoding; see [`super::RequestCode`] and [`super::ResponseCode`].
    pub code: i32,
    /// Language of the sender.
    pub language: LanguageCode,
    /// Protocol version of the sender (see [`super::version`]).
    pub version: i32,
    /// Request id; a response carries its request's value.
    pub opaque: i32,
    /// Bit 0 response, bit 1 oneway ([`FLAG_RESPONSE`], [`FLAG_ONEWAY`]).
    pub flag: i32,
    /// Free text, usually the reason for an error response.
    pub remark: Option<String>,
    /// The custom header fields; values are always strings on the wire.
    pub ext_fields: BTreeMap<String, String>,
    /// The body; an empty body decodes as `None`.
    pub body: Option<Bytes>,
    /// More body bytes, sent after `body` as they are: a pull answer's
    /// records, each still backed by the CommitLog mapping, so the server
    /// writes them to the socket without copying them into a buffer first.
    /// Decoding never fills it (a received body is all in `body`).
    pub body_parts: Vec<Bytes>,
    /// How the header is serialized; responses use their request's type.
    pub serialize_type: SerializeType,
}

impl RemotingCommand {
    /// A bare command with `code`; language `JAVA` (the value older Java
    /// clients understand), the current version and flag 0.
    fn new(code: i32, opaque: i32) -> Self {
        Self {
            code,
            language: LanguageCode::Java,
            version: CURRENT_VERSION,
            opaque,
            flag: 0,
            remark: None,
            ext_fields: BTreeMap::new(),
            body: None,
            body_parts: Vec::new(),
            serialize_type: SerializeType::Json,
        }
    }

    /// A request with `code` and a fresh opaque from a process-wide counter.
    pub fn request(code: impl Into<i32>) -> Self {
        Self::new(code.into(), NEXT_OPAQUE.fetch_add(1, Ordering::Relaxed))
    }

    /// A response with `code` and `remark`; the caller sets the opaque (prefer
    /// [`RemotingCommand::response_to`]).
    pub fn response(code: impl Into<i32>, remark: Option<String>) -> Self {
        let mut cmd = Self::new(code.into(), 0);
        cmd.flag = FLAG_RESPONSE;
        cmd.remark = remark;
        cmd
    }

    /// The response to `request`: its opaque and serialize type, the response
    /// flag set.
    pub fn response_to(
        request: &RemotingCommand,
        code: impl Into<i32>,
        remark: Option<String>,
    ) -> Self {
        let mut cmd = Self::response(code, remark);
        cmd.opaque = request.opaque;
        cmd.serialize_type = request.serialize_type;
        cmd
    }

    /// Whether the response bit is set.
    pub fn is_response(&self) -> bool {
        self.flag & FLAG_RESPONSE != 0
    }

    /// Whether the oneway bit is set. Some clients send oneway requests with
    /// flag 0, so a server must not rely on this alone to skip a response.
    pub fn is_oneway(&self) -> bool {
        self.flag & FLAG_ONEWAY != 0
    }

    /// Sets the oneway bit.
    pub fn mark_oneway(&mut self) {
        self.flag |= FLAG_ONEWAY;
    }

    /// Sets the response bit.
    pub fn mark_response(&mut self) {
        self.flag |= FLAG_RESPONSE;
    }

    /// Builder: sets the body.
    pub fn with_body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = Some(body.into());
        self
    }

    /// Bytes of the whole body: `body` and `body_parts`.
    pub fn body_len(&self) -> usize {
        self.body.as_ref().map_or(0, Bytes::len)
            + self.body_parts.iter().map(Bytes::len).sum::<usize>()
    }

    /// Builder: sets the serialize type.
    pub fn with_serialize_type(mut self, serialize_type: SerializeType) -> Self {
        self.serialize_type = serialize_type;
        self
    }

    /// Builder: sets the custom header fields.
    pub fn with_ext_fields(mut self, ext_fields: BTreeMap<String, String>) -> Self {
        self.ext_fields = ext_fields;
        self
    }

    /// Adds or replaces one custom header field.
    pub fn put_ext(&mut self, key: impl Into<String>, value: impl ToString) {
        self.ext_fields.insert(key.into(), value.to_string());
    }

    /// A lenient, typed view of the custom header fields.
    pub fn ext(&self) -> ExtFields<'_> {
        ExtFields::new(&self.ext_fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remoting::{RequestCode, ResponseCode};

    #[test]
    fn response_to_copies_opaque_and_serialize_type() {
        let mut req = RemotingCommand::request(RequestCode::PullMessage)
            .with_serialize_type(SerializeType::RocketMq);
        req.opaque = 77;
        assert!(!req.is_response());
        let resp =
            RemotingCommand::response_to(&req, ResponseCode::PullNotFound, Some("no msg".into()));
        assert!(resp.is_response());
        assert!(!resp.is_oneway());
        assert_eq!(resp.opaque, 77);
        assert_eq!(resp.code, 19);
        assert_eq!(resp.serialize_type, SerializeType::RocketMq);
        assert_eq!(resp.remark.as_deref(), Some("no msg"));
    }

    #[test]
    fn oneway_bit() {
        let mut req = RemotingCommand::request(RequestCode::HeartBeat);
        assert!(!req.is_oneway());
        req.mark_oneway();
        assert!(req.is_oneway());
        assert!(!req.is_response());
        assert_eq!(req.flag, 2);
    }

    #[test]
    fn requests_get_distinct_opaques() {
        let a = RemotingCommand::request(10);
        let b = RemotingCommand::request(10);
        assert_ne!(a.opaque, b.opaque);
    }

    #[test]
    fn serialize_type_codes() {
        assert_eq!(SerializeType::Json.code(), 0);
        assert_eq!(SerializeType::RocketMq.code(), 1);
        assert_eq!(SerializeType::from_code(1), Some(SerializeType::RocketMq));
        assert_eq!(SerializeType::from_code(2), None);
    }
}
