//! The call's metadata from the input's six selector bytes
//! (`rmq_grpc::fuzz_harness::Input::meta`): the client id present, absent
//! or odd; `grpc-timeout` values good and bad; `authorization` garbled;
//! one `x-mq-*` header with a value from a small hostile list.

use rmq_grpc::tonic::metadata::{AsciiMetadataValue, MetadataMap};

/// Client ids: a few stable ones (so clients and their settings are
/// reused), then odd ones. Past the list: `fz-<selector>`.
const CLIENT_IDS: &[Option<&[u8]>] = &[
    Some(b"fz-producer"),
    Some(b"fz-consumer"),
    Some(b"fz-producer"),
    None,
    Some(b""),
    Some(b"   "),
    Some(b"\xff\xfe"),
    Some(b"id with spaces@1"),
    Some(b"%RETRY%g1"),
];

/// `grpc-timeout` values; `None` sends none.
const TIMEOUTS: &[Option<&str>] = &[
    None,
    None,
    Some("3S"),
    Some("30S"),
    Some("100m"),
    Some("0m"),
    Some("0n"),
    Some("1n"),
    Some("99999999H"),
    Some("123456789S"),
    Some("S"),
    Some(""),
    Some("-1S"),
    Some("1x"),
    Some("5999m"),
    Some("20S"),
];

/// `authorization` values; with [`DATE_TIME`] when the spare selector's
/// bit 0 is set.
const AUTHORIZATIONS: &[Option<&str>] = &[
    None,
    None,
    Some(""),
    Some("MQv2-HMAC-SHA1"),
    Some("MQv2-HMAC-SHA1 Credential=rocketmq2, SignedHeaders=x-mq-date-time, Signature=0A1bff"),
    Some("MQv2-HMAC-SHA1 Credential=rocketmq2, SignedHeaders=x-mq-date-time, Signature=zz"),
    Some("MQv2-HMAC-SHA1 Credential=a/b/c, Signature=0"),
    Some("X Credential=, Signature="),
    Some("X ,,,"),
    Some("X Credential"),
    Some("MQv2-HMAC-SHA1 Signature=00"),
];

const DATE_TIME: &str = "20261205T120000Z";

/// `x-mq-*` headers a 5.x SDK sends.
const XMQ_NAMES: &[&str] = &[
    "x-mq-client-version",
    "x-mq-language",
    "x-mq-namespace",
    "x-mq-date-time",
    "x-mq-request-id",
    "x-mq-protocol",
    "x-mq-channel-id",
];

const XMQ_VALUES: &[&[u8]] = &[
    b"5.0.7",
    b"5.0.2",
    b"5.0.3",
    b"",
    b"0",
    b"-1",
    b"99999999999999999999",
    b"JAVA",
    b"%RETRY%g1",
    b"v2",
    b"\xff",
    b"5.0.10-SNAPSHOT",
];

fn value(bytes: &[u8]) -> Option<AsciiMetadataValue> {
    AsciiMetadataValue::try_from(bytes).ok()
}

/// The metadata the selectors choose.
pub fn metadata(sel: [u8; 6]) -> MetadataMap {
    let mut m = MetadataMap::new();
    let pick = |i: u8, n: usize| usize::from(i) % n;
    let [id, timeout, auth, xmq_name, xmq_value, spare] = sel;
    let id_at = usize::from(id);
    let client_id: Option<Vec<u8>> = match CLIENT_IDS.get(id_at) {
        Some(v) => v.map(<[u8]>::to_vec),
        // A long one now and then, else one of a bounded set.
        None if id == 255 => Some(vec![b'c'; 8 * 1024]),
        None => Some(format!("fz-{}", id_at % 32).into_bytes()),
    };
    if let Some(v) = client_id.as_deref().and_then(value) {
        m.insert("x-mq-client-id", v);
    }
    if let Some(v) = TIMEOUTS[pick(timeout, TIMEOUTS.len())].and_then(|t| value(t.as_bytes())) {
        m.insert("grpc-timeout", v);
    }
    if let Some(v) =
        AUTHORIZATIONS[pick(auth, AUTHORIZATIONS.len())].and_then(|a| value(a.as_bytes()))
    {
        m.insert("authorization", v);
    }
    if spare & 1 == 1 {
        m.insert("x-mq-date-time", AsciiMetadataValue::from_static(DATE_TIME));
    }
    let name = XMQ_NAMES[pick(xmq_name, XMQ_NAMES.len())];
    if let Some(v) = value(XMQ_VALUES[pick(xmq_value, XMQ_VALUES.len())]) {
        // The SDKs always send their version: overwrite the default only
        // with the chosen one.
        m.insert(name, v);
    }
    if spare & 2 == 0 && !m.contains_key("x-mq-client-version") {
        m.insert(
            "x-mq-client-version",
            AsciiMetadataValue::from_static("5.0.7"),
        );
    }
    m
}

/// The metadata of a normal call by a well-behaved client.
pub fn normal() -> MetadataMap {
    let mut m = MetadataMap::new();
    m.insert(
        "x-mq-client-id",
        AsciiMetadataValue::from_static("fz-check"),
    );
    m.insert(
        "x-mq-client-version",
        AsciiMetadataValue::from_static("5.0.7"),
    );
    m.insert("x-mq-language", AsciiMetadataValue::from_static("JAVA"));
    m
}
