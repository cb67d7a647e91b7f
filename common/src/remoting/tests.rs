//! Frame-level tests: golden bytes written out by hand, round trips over
//! random commands, incremental decoding, and malformed input.

use std::collections::BTreeMap;

use bytes::{BufMut, Bytes, BytesMut};
use proptest::prelude::*;

use super::*;

fn decode_all(bytes: &[u8]) -> Result<Option<RemotingCommand>, RemotingError> {
    let mut buf = BytesMut::from(bytes);
    RemotingCommand::decode(&mut buf, MAX_FRAME_BYTES)
}

fn encode(cmd: &RemotingCommand) -> Vec<u8> {
    let mut buf = BytesMut::new();
    cmd.encode(&mut buf).unwrap();
    buf.to_vec()
}

fn ext(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// QUERY_CONSUMER_OFFSET with a JSON header, as Java's fastjson writes it
/// (keys in alphabetical order, no remark, no body).
const JSON_REQUEST_HEADER: &[u8] = br#"{"code":14,"extFields":{"consumerGroup":"CG","queueId":"0","topic":"T"},"flag":0,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":401}"#;

fn json_request_frame() -> Vec<u8> {
    let mut f = vec![
        0x00, 0x00, 0x00, 0xA1, // length: 4 + 157
        0x00, 0x00, 0x00, 0x9D, // JSON (0) << 24 | header length 157
    ];
    f.extend_from_slice(JSON_REQUEST_HEADER);
    f
}

fn json_request() -> RemotingCommand {
    RemotingCommand {
        code: 14,
        language: LanguageCode::Java,
        version: version::V4_9_4,
        opaque: 1,
        flag: 0,
        remark: None,
        ext_fields: ext(&[("consumerGroup", "CG"), ("queueId", "0"), ("topic", "T")]),
        body: None,
        body_parts: Vec::new(),
        serialize_type: SerializeType::Json,
    }
}

#[test]
fn golden_json_request() {
    assert_eq!(JSON_REQUEST_HEADER.len(), 157);
    assert_eq!(encode(&json_request()), json_request_frame());
    assert_eq!(
        decode_all(&json_request_frame()).unwrap(),
        Some(json_request())
    );
}

/// SEND_MESSAGE_V2 with a binary header: code 310, JAVA, version 401,
/// opaque 7, flag 0, no remark, extFields {a: PG}, body "xy".
const BINARY_REQUEST_FRAME: &[u8] = &[
    0x00, 0x00, 0x00, 0x24, // length 36 = 4 + 30 + 2
    0x01, 0x00, 0x00, 0x1E, // ROCKETMQ (1) << 24 | header length 30
    0x01, 0x36, // code 310
    0x00, // language JAVA
    0x01, 0x91, // version 401
    0x00, 0x00, 0x00, 0x07, // opaque 7
    0x00, 0x00, 0x00, 0x00, // flag 0
    0x00, 0x00, 0x00, 0x00, // remark length 0
    0x00, 0x00, 0x00, 0x09, // ext length 9
    0x00, 0x01, b'a', // key "a"
    0x00, 0x00, 0x00, 0x02, b'P', b'G', // value "PG"
    b'x', b'y', // body
];

/// The SUCCESS response to it: version 409, flag 1, remark "ok",
/// extFields {queueId: 3}, no body.
const BINARY_RESPONSE_FRAME: &[u8] = &[
    0x00, 0x00, 0x00, 0x29, // length 41 = 4 + 37
    0x01, 0x00, 0x00, 0x25, // ROCKETMQ (1) << 24 | header length 37
    0x00, 0x00, // code 0
    0x00, // language JAVA
    0x01, 0x99, // version 409
    0x00, 0x00, 0x00, 0x07, // opaque 7
    0x00, 0x00, 0x00, 0x01, // flag 1 = response
    0x00, 0x00, 0x00, 0x02, b'o', b'k', // remark "ok"
    0x00, 0x00, 0x00, 0x0E, // ext length 14
    0x00, 0x07, b'q', b'u', b'e', b'u', b'e', b'I', b'd', // key "queueId"
    0x00, 0x00, 0x00, 0x01, b'3', // value "3"
];

fn binary_request() -> RemotingCommand {
    RemotingCommand {
        code: RequestCode::SendMessageV2.code(),
        language: LanguageCode::Java,
        version: version::V4_9_4,
        opaque: 7,
        flag: 0,
        remark: None,
        ext_fields: ext(&[("a", "PG")]),
        body: Some(Bytes::from_static(b"xy")),
        body_parts: Vec::new(),
        serialize_type: SerializeType::RocketMq,
    }
}

#[test]
fn golden_binary_request_and_response() {
    let req = binary_request();
    assert_eq!(encode(&req), BINARY_REQUEST_FRAME);
    assert_eq!(decode_all(BINARY_REQUEST_FRAME).unwrap(), Some(req.clone()));

    let mut resp = RemotingCommand::response_to(&req, ResponseCode::Success, Some("ok".into()));
    resp.put_ext("queueId", 3);
    assert_eq!(resp.version, version::V4_9_8);
    assert_eq!(encode(&resp), BINARY_RESPONSE_FRAME);
    let decoded = decode_all(BINARY_RESPONSE_FRAME).unwrap().unwrap();
    assert_eq!(decoded, resp);
    assert!(decoded.is_response());
    assert_eq!(decoded.ext().req_i32("queueId"), Ok(3));
}

#[test]
fn response_to_json_request_is_json() {
    let req = decode_all(&json_request_frame()).unwrap().unwrap();
    let resp = RemotingCommand::response_to(&req, ResponseCode::QueryNotFound, None);
    let bytes = encode(&resp);
    assert_eq!(bytes[4], 0, "serialize type byte");
    let header = std::str::from_utf8(&bytes[8..]).unwrap();
    assert_eq!(
        header,
        r#"{"code":22,"flag":1,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":409}"#
    );
}

#[test]
fn incremental_decode_byte_by_byte() {
    let mut stream = json_request_frame();
    stream.extend_from_slice(BINARY_REQUEST_FRAME);
    stream.extend_from_slice(BINARY_RESPONSE_FRAME);
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    for &b in &stream {
        buf.put_u8(b);
        if let Some(cmd) = RemotingCommand::decode(&mut buf, MAX_FRAME_BYTES).unwrap() {
            got.push(cmd);
        }
    }
    assert!(buf.is_empty());
    assert_eq!(got.len(), 3);
    assert_eq!(got[0], json_request());
    assert_eq!(got[1], binary_request());
    assert_eq!(got[2].remark.as_deref(), Some("ok"));
}

#[test]
fn oversized_frame_is_refused_from_its_prefix() {
    let mut buf = BytesMut::from(&(16 * 1024 * 1024i32).to_be_bytes()[..]);
    let err = RemotingCommand::decode(&mut buf, MAX_FRAME_BYTES).unwrap_err();
    assert!(
        matches!(
            err,
            RemotingError::FrameTooLarge {
                frame_bytes: 16_777_220,
                max_frame: MAX_FRAME_BYTES
            }
        ),
        "{err}"
    );
    // Exactly at the limit (prefix included) is still waited for.
    let mut buf = BytesMut::from(&(16 * 1024 * 1024i32 - 4).to_be_bytes()[..]);
    assert!(RemotingCommand::decode(&mut buf, MAX_FRAME_BYTES)
        .unwrap()
        .is_none());
    // A smaller configured limit applies.
    let err = RemotingCommand::decode(&mut BytesMut::from(BINARY_REQUEST_FRAME), 39).unwrap_err();
    assert!(
        matches!(
            err,
            RemotingError::FrameTooLarge {
                frame_bytes: 40,
                max_frame: 39
            }
        ),
        "{err}"
    );
}

#[test]
fn garbage_and_bad_lengths_are_named() {
    // An HTTP request on the remoting port: "GET " is a 1.1 GB length.
    let err = decode_all(b"GET / HTTP/1.1\r\n\r\n").unwrap_err();
    assert!(matches!(err, RemotingError::FrameTooLarge { .. }), "{err}");

    let err = decode_all(&[0xFF, 0xFF, 0xFF, 0xFF]).unwrap_err();
    assert!(
        matches!(err, RemotingError::InvalidFrameLength(-1)),
        "{err}"
    );
    let err = decode_all(&[0, 0, 0, 3, 0, 0, 0]).unwrap_err();
    assert!(matches!(err, RemotingError::InvalidFrameLength(3)), "{err}");

    let err = decode_all(&[0, 0, 0, 4, 2, 0, 0, 0]).unwrap_err();
    assert!(
        matches!(err, RemotingError::UnknownSerializeType(2)),
        "{err}"
    );

    let err = decode_all(&[0, 0, 0, 6, 1, 0, 0, 9, 0, 0]).unwrap_err();
    assert!(
        matches!(
            err,
            RemotingError::HeaderTooLong {
                header_len: 9,
                frame_len: 6
            }
        ),
        "{err}"
    );
}

#[test]
fn truncated_binary_header_is_named() {
    // A header length that stops inside the opaque field.
    let mut frame = vec![0, 0, 0, 12, 1, 0, 0, 8];
    frame.extend_from_slice(&BINARY_REQUEST_FRAME[8..16]);
    let err = decode_all(&frame).unwrap_err();
    assert!(
        matches!(
            err,
            RemotingError::Truncated {
                field: "opaque",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn bad_json_header_is_named() {
    let header = br#"{"code":10,"extFields":{"#;
    let mut frame = BytesMut::new();
    frame.put_i32(4 + header.len() as i32);
    frame.put_i32(header.len() as i32);
    frame.put_slice(header);
    let err = decode_all(&frame).unwrap_err();
    assert!(matches!(err, RemotingError::Json { .. }), "{err}");
    assert!(
        err.to_string().starts_with("malformed JSON header"),
        "{err}"
    );
}

#[test]
fn json_ext_fields_numbers_and_booleans_frame() {
    let header = br#"{"code":310,"language":"GO","opaque":9,"flag":0,"extFields":{"a":"PG","b":"T","e":1,"m":true,"k":false,"g":1700000000123}}"#;
    let mut frame = BytesMut::new();
    frame.put_i32(4 + header.len() as i32);
    frame.put_i32(header.len() as i32);
    frame.put_slice(header);
    let cmd = decode_all(&frame).unwrap().unwrap();
    let h = SendMessageRequestHeader::from_ext(&cmd.ext()).unwrap();
    assert_eq!(h.queue_id, 1);
    assert!(h.batch);
    assert!(!h.unit_mode);
    assert_eq!(h.born_timestamp, 1_700_000_000_123);
    assert_eq!(cmd.language, LanguageCode::Go);
}

#[test]
fn empty_remark_and_body_decode_as_none() {
    let mut cmd = binary_request();
    cmd.remark = Some(String::new());
    cmd.body = Some(Bytes::new());
    let decoded = decode_all(&encode(&cmd)).unwrap().unwrap();
    assert_eq!(decoded.remark, None);
    assert_eq!(decoded.body, None);
}

fn arb_language() -> impl Strategy<Value = LanguageCode> {
    proptest::sample::select(LanguageCode::ALL.to_vec())
}

fn arb_command(serialize_type: SerializeType) -> impl Strategy<Value = RemotingCommand> {
    let code = if serialize_type == SerializeType::RocketMq {
        (i32::from(i16::MIN)..=i32::from(i16::MAX)).boxed()
    } else {
        any::<i32>().boxed()
    };
    let version = if serialize_type == SerializeType::RocketMq {
        (i32::from(i16::MIN)..=i32::from(i16::MAX)).boxed()
    } else {
        any::<i32>().boxed()
    };
    (
        code,
        arb_language(),
        version,
        any::<i32>(),
        any::<i32>(),
        proptest::option::of("\\PC{1,40}"),
        proptest::collection::btree_map("[a-zA-Z%|_-]{1,20}", "\\PC{0,40}", 0..8),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 1..300)),
    )
        .prop_map(
            move |(code, language, version, opaque, flag, remark, ext_fields, body)| {
                RemotingCommand {
                    code,
                    language,
                    version,
                    opaque,
                    flag,
                    remark,
                    ext_fields,
                    body: body.map(Bytes::from),
                    body_parts: Vec::new(),
                    serialize_type,
                }
            },
        )
}

proptest! {
    #[test]
    fn json_round_trip(cmd in arb_command(SerializeType::Json)) {
        let decoded = decode_all(&encode(&cmd)).unwrap();
        prop_assert_eq!(decoded, Some(cmd));
    }

    #[test]
    fn binary_round_trip(cmd in arb_command(SerializeType::RocketMq)) {
        let decoded = decode_all(&encode(&cmd)).unwrap();
        prop_assert_eq!(decoded, Some(cmd));
    }

    #[test]
    fn split_points_do_not_matter(
        a in arb_command(SerializeType::Json),
        b in arb_command(SerializeType::RocketMq),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut stream = encode(&a);
        stream.extend_from_slice(&encode(&b));
        let cut = cut.index(stream.len() + 1);
        let mut buf = BytesMut::from(&stream[..cut]);
        let mut got = Vec::new();
        while let Some(cmd) = RemotingCommand::decode(&mut buf, MAX_FRAME_BYTES).unwrap() {
            got.push(cmd);
        }
        buf.extend_from_slice(&stream[cut..]);
        while let Some(cmd) = RemotingCommand::decode(&mut buf, MAX_FRAME_BYTES).unwrap() {
            got.push(cmd);
        }
        prop_assert_eq!(got, vec![a, b]);
    }

    /// Random bytes after a plausible prefix: any result but a panic.
    #[test]
    fn never_panics_on_garbage(
        serialize in 0u8..3,
        header_len in 0u32..64,
        rest in proptest::collection::vec(any::<u8>(), 0..96),
    ) {
        let mut buf = BytesMut::new();
        buf.put_i32(4 + rest.len() as i32);
        buf.put_u32((u32::from(serialize) << 24) | header_len);
        buf.put_slice(&rest);
        let _ = RemotingCommand::decode(&mut buf, MAX_FRAME_BYTES);
    }

    #[test]
    fn never_panics_on_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
        let mut buf = BytesMut::from(&bytes[..]);
        while let Ok(Some(_)) = RemotingCommand::decode(&mut buf, 1024) {}
    }
}
