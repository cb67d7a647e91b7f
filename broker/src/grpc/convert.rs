//! Messages between their gRPC form (a `Message` with typed system
//! properties and a map of user properties) and the broker's (one
//! properties string and a CommitLog record), as Apache RocketMQ 5.3.3's
//! proxy converts them (`SendMessageActivity.buildMessageProperty`,
//! `GrpcConverter.buildMessage`): the same property names, the same
//! checks with the same codes and messages.

use std::net::SocketAddr;

use rmq_common::constants::property as prop;
use rmq_common::message::record::RecordView;
use rmq_common::message::{msg_id, sysflag, Properties};
use rmq_grpc::pb;

use super::status::Failure;

/// RocketMQ's `MessageConst.STRING_HASH_SET`: properties a client may not
/// set as user properties, and that an answer does not list among them.
pub(crate) const SYSTEM_PROPERTIES: [&str; 52] = [
    "TRACE_ON",
    "MSG_REGION",
    "KEYS",
    "TAGS",
    "WAIT",
    "DELAY",
    "RETRY_TOPIC",
    "REAL_TOPIC",
    "REAL_QID",
    "TRAN_MSG",
    "PGROUP",
    "MIN_OFFSET",
    "MAX_OFFSET",
    "BUYER_ID",
    "ORIGIN_MESSAGE_ID",
    "TRANSFER_FLAG",
    "CORRECTION_FLAG",
    "MQ2_FLAG",
    "RECONSUME_TIME",
    "UNIQ_KEY",
    "MAX_RECONSUME_TIMES",
    "CONSUME_START_TIME",
    "POP_CK",
    "POP_CK_OFFSET",
    "1ST_POP_TIME",
    "TRAN_PREPARED_QUEUE_OFFSET",
    "DUP_INFO",
    "EXTEND_UNIQ_INFO",
    "INSTANCE_ID",
    "CORRELATION_ID",
    "REPLY_TO_CLIENT",
    "TTL",
    "ARRIVE_TIME",
    "PUSH_REPLY_TIME",
    "CLUSTER",
    "MSG_TYPE",
    "INNER_MULTI_QUEUE_OFFSET",
    "TIMER_DELAY_MS",
    "TIMER_DELAY_SEC",
    "TIMER_DELIVER_MS",
    "TIMER_ENQUEUE_MS",
    "TIMER_DEQUEUE_MS",
    "TIMER_ROLL_TIMES",
    "TIMER_OUT_MS",
    "TIMER_DEL_UNIQKEY",
    "TIMER_DELAY_LEVEL",
    "__BORNHOST",
    "BORN_TIMESTAMP",
    "DLQ_ORIGIN_TOPIC",
    "DLQ_ORIGIN_MESSAGE_ID",
    "__CRC32#",
    "INNER_MULTI_DISPATCH",
];

const SHARDING_KEY: &str = "__SHARDINGKEY";
const BORN_HOST: &str = "__BORNHOST";
const POP_CK: &str = "POP_CK";
const DLQ_ORIGIN_TOPIC: &str = "DLQ_ORIGIN_TOPIC";
const DLQ_ORIGIN_MESSAGE_ID: &str = "DLQ_ORIGIN_MESSAGE_ID";

/// The proxy's limits on what a send carries (its `ProxyConfig` defaults,
/// the body limit from the broker's `maxMessageSize`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SendLimits {
    pub max_body_bytes: usize,
    pub max_user_properties: usize,
    pub max_user_property_bytes: usize,
    pub max_message_group_bytes: usize,
    pub max_delay_ms: i64,
    pub max_transaction_recovery_s: i64,
}

impl SendLimits {
    pub fn with_max_body(max_body_bytes: usize) -> Self {
        Self {
            max_body_bytes,
            max_user_properties: 128,
            max_user_property_bytes: 16 * 1024,
            max_message_group_bytes: 64,
            max_delay_ms: 24 * 3600 * 1000,
            max_transaction_recovery_s: 3600,
        }
    }
}

/// Java's `Character.isISOControl` over UTF-16 code units.
fn has_control(s: &str) -> bool {
    s.chars()
        .any(|c| matches!(c as u32, 0x00..=0x1F | 0x7F..=0x9F))
}

fn is_blank(s: &str) -> bool {
    s.chars().all(char::is_whitespace)
}

/// The proxy's tag check (`GrpcValidator.validateTag`).
pub(crate) fn check_tag(tag: &str) -> Result<(), Failure> {
    let bad = |m: &str| Err(Failure::new(pb::Code::IllegalMessageTag, m));
    if tag.is_empty() {
        return Ok(());
    }
    if is_blank(tag) {
        return bad("tag cannot be the char sequence of whitespace");
    }
    if tag.contains('|') {
        return bad("tag cannot contain '|'");
    }
    if has_control(tag) {
        return bad("tag cannot contain control character");
    }
    Ok(())
}

fn check_key(key: &str) -> Result<(), Failure> {
    let bad = |m: &str| Err(Failure::new(pb::Code::IllegalMessageKey, m));
    if key.is_empty() {
        return Ok(());
    }
    if is_blank(key) {
        return bad("key cannot be the char sequence of whitespace");
    }
    if has_control(key) {
        return bad("key cannot contain control character");
    }
    Ok(())
}

fn check_message_group(group: &str, limits: &SendLimits) -> Result<(), Failure> {
    let bad = |m: String| Err(Failure::new(pb::Code::IllegalMessageGroup, m));
    if is_blank(group) {
        return bad("message group cannot be the char sequence of whitespace".into());
    }
    if group.len() >= limits.max_message_group_bytes {
        return bad(format!(
            "message group exceed the max size {}",
            limits.max_message_group_bytes
        ));
    }
    if has_control(group) {
        return bad("message group cannot contain control character".into());
    }
    Ok(())
}

/// Milliseconds of a protobuf timestamp, if it is a valid one.
pub(crate) fn timestamp_ms(t: &prost_types::Timestamp) -> Option<i64> {
    let valid = (-62_135_596_800..=253_402_300_799).contains(&t.seconds)
        && (0..1_000_000_000).contains(&t.nanos);
    valid.then(|| t.seconds * 1000 + i64::from(t.nanos) / 1_000_000)
}

pub(crate) fn timestamp(ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

pub(crate) fn duration_ms(d: &prost_types::Duration) -> i64 {
    d.seconds
        .saturating_mul(1000)
        .saturating_add(i64::from(d.nanos) / 1_000_000)
}

pub(crate) fn duration(ms: i64) -> prost_types::Duration {
    prost_types::Duration {
        seconds: ms / 1000,
        nanos: ((ms % 1000) * 1_000_000) as i32,
    }
}

/// A message's system properties (the defaults when it has none),
/// borrowed: a send reads them several times.
pub(crate) fn system_properties(m: &pb::Message) -> std::borrow::Cow<'_, pb::SystemProperties> {
    match &m.system_properties {
        Some(sp) => std::borrow::Cow::Borrowed(sp),
        None => std::borrow::Cow::Owned(pb::SystemProperties::default()),
    }
}

/// The sysFlag of a message to send: compressed body, transaction half.
pub(crate) fn send_sys_flag(m: &pb::Message) -> i32 {
    let sp = system_properties(m);
    let mut flag = 0;
    if sp.body_encoding() == pb::Encoding::Gzip {
        flag |= sysflag::COMPRESSED;
    }
    if sp.message_type() == pb::MessageType::Transaction {
        flag |= sysflag::TRANSACTION_PREPARED_TYPE;
    }
    flag
}

/// The properties of a message to send, checked as the proxy checks them.
/// `producer_group` is the topic (the proxy's choice: the transaction
/// check-back finds the producer by it); `peer` is the born host when the
/// client names none.
pub(crate) fn send_properties(
    m: &pb::Message,
    producer_group: &str,
    peer: SocketAddr,
    now_ms: i64,
    limits: &SendLimits,
) -> Result<Properties, Failure> {
    if m.body.is_empty() {
        return Err(Failure::new(
            pb::Code::MessageBodyEmpty,
            "message body cannot be empty",
        ));
    }
    if m.body.len() > limits.max_body_bytes {
        return Err(Failure::new(
            pb::Code::MessageBodyTooLarge,
            format!(
                "message body cannot exceed the max {}",
                limits.max_body_bytes
            ),
        ));
    }
    let too_large = |m: String| Failure::new(pb::Code::MessagePropertiesTooLarge, m);
    let bad_key = |m: String| Failure::new(pb::Code::IllegalMessagePropertyKey, m);
    if m.user_properties.len() > limits.max_user_properties {
        return Err(too_large(format!(
            "too many user properties, max is {}",
            limits.max_user_properties
        )));
    }
    let mut props = Properties::new();
    let mut user_bytes = 0usize;
    // Sorted, so the stored properties do not depend on the map's order.
    let mut user: Vec<(&String, &String)> = m.user_properties.iter().collect();
    user.sort();
    for (k, v) in user {
        if SYSTEM_PROPERTIES.contains(&k.as_str()) {
            return Err(bad_key(format!("property is used by system: {k}")));
        }
        if has_control(k) {
            return Err(bad_key(
                "the key of property cannot contain control character".into(),
            ));
        }
        if has_control(v) {
            return Err(bad_key(
                "the value of property cannot contain control character".into(),
            ));
        }
        user_bytes += k.len() + v.len();
        props.insert(k.as_str(), v.as_str());
    }
    let sp = system_properties(m);
    let tag = sp.tag.clone().unwrap_or_default();
    check_tag(&tag)?;
    if !tag.is_empty() {
        props.insert(prop::TAGS, tag.as_str());
    }
    user_bytes += tag.len();
    for key in &sp.keys {
        check_key(key)?;
        user_bytes += key.len();
    }
    if !sp.keys.is_empty() {
        props.insert(prop::KEYS, sp.keys.join(" "));
    }
    if user_bytes > limits.max_user_property_bytes {
        return Err(too_large(format!(
            "the total size of user property is too large, max is {}",
            limits.max_user_property_bytes
        )));
    }
    if is_blank(&sp.message_id) {
        return Err(Failure::new(
            pb::Code::IllegalMessageId,
            "message id cannot be empty",
        ));
    }
    props.insert(prop::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, sp.message_id.as_str());
    if sp.message_type() == pb::MessageType::Transaction {
        props.insert(prop::TRANSACTION_PREPARED, "true");
        if let Some(d) = &sp.orphaned_transaction_recovery_duration {
            let seconds = d.seconds;
            if seconds > limits.max_transaction_recovery_s {
                return Err(Failure::new(
                    pb::Code::BadRequest,
                    format!(
                        "the max transaction recovery time of message is too large, max is {}",
                        limits.max_transaction_recovery_s
                    ),
                ));
            }
            props.insert(prop::CHECK_IMMUNITY_TIME_IN_SECONDS, seconds.to_string());
        }
    }
    if let Some(t) = &sp.delivery_timestamp {
        // Out of the Timestamp range (say milliseconds sent as seconds):
        // refused, not delivered at once as if due at 0.
        let Some(at) = timestamp_ms(t) else {
            return Err(Failure::new(
                pb::Code::IllegalDeliveryTime,
                format!(
                    "the delivery timestamp {}s {}ns is not a valid time",
                    t.seconds, t.nanos
                ),
            ));
        };
        if at - now_ms > limits.max_delay_ms {
            return Err(Failure::new(
                pb::Code::IllegalDeliveryTime,
                format!(
                    "the max delay time of message is too large, max is {}",
                    limits.max_delay_ms
                ),
            ));
        }
        props.insert(prop::TIMER_DELIVER_MS, at.to_string());
    }
    props.insert(
        prop::RECONSUME_TIME,
        sp.delivery_attempt.unwrap_or(0).to_string(),
    );
    props.insert(prop::PRODUCER_GROUP, producer_group);
    if let Some(group) = sp.message_group.as_deref().filter(|g| !g.is_empty()) {
        check_message_group(group, limits)?;
        props.insert(SHARDING_KEY, group);
    }
    if let Some(trace) = sp.trace_context.as_deref().filter(|t| !t.is_empty()) {
        props.insert(prop::TRACE_CONTEXT, trace);
    }
    let born_host = if is_blank(&sp.born_host) {
        peer.to_string()
    } else {
        sp.born_host.clone()
    };
    props.insert(BORN_HOST, born_host);
    if let Some(ms) = sp.born_timestamp.as_ref().and_then(timestamp_ms) {
        props.insert(prop::BORN_TIMESTAMP, ms.to_string());
    }
    Ok(props)
}

/// Uppercase hex MD5 of `body` (the proxy's `BinaryUtil.generateMd5`).
pub(crate) fn md5_hex(body: &[u8]) -> String {
    use md5::{Digest, Md5};
    let digest = Md5::digest(body);
    let mut s = String::with_capacity(32);
    for b in digest {
        s.push_str(&format!("{b:02X}"));
    }
    s
}

/// A stored message as an answer carries it, under `topic` (a retried
/// message is reported under its original topic), with the receipt handle
/// of a popped one.
pub(crate) fn message_of_record(
    view: &RecordView<'_>,
    topic: &str,
    receipt_handle: Option<String>,
    now_ms: i64,
) -> pb::Message {
    let props = view.properties();
    let get = |k: &str| props.get(k).map(str::to_owned);
    let mut user = std::collections::HashMap::new();
    for (k, v) in props.iter() {
        if !SYSTEM_PROPERTIES.contains(&k) {
            user.insert(k.to_owned(), v.to_owned());
        }
    }
    let message_type = if props.get(prop::TRANSACTION_PREPARED) == Some("true") {
        pb::MessageType::Transaction
    } else if props.get(prop::DELAY_TIME_LEVEL).is_some()
        || props.get(prop::TIMER_DELIVER_MS).is_some()
        || props.get(prop::TIMER_DELAY_SEC).is_some()
    {
        pb::MessageType::Delay
    } else if props.get(SHARDING_KEY).is_some() {
        pb::MessageType::Fifo
    } else {
        pb::MessageType::Normal
    };
    let delivery_ms = match props
        .get(prop::TIMER_DELAY_SEC)
        .and_then(|s| s.parse::<i64>().ok())
    {
        Some(sec) => Some(now_ms + sec * 1000),
        None => props
            .get(prop::TIMER_DELIVER_MS)
            .and_then(|s| s.parse::<i64>().ok()),
    };
    let message_id = get(prop::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        .unwrap_or_else(|| msg_id::encode_offset_msg_id(view.store_host(), view.physical_offset()));
    let born_host = get(BORN_HOST).unwrap_or_else(|| view.born_host().ip().to_string());
    let dead_letter_queue = match (get(DLQ_ORIGIN_TOPIC), get(DLQ_ORIGIN_MESSAGE_ID)) {
        (Some(topic), Some(message_id)) => Some(pb::DeadLetterQueue { topic, message_id }),
        _ => None,
    };
    let body = bytes::Bytes::copy_from_slice(view.body());
    let encoding = if view.sys_flag() & sysflag::COMPRESSED != 0 {
        pb::Encoding::Gzip
    } else {
        pb::Encoding::Identity
    };
    let sp = pb::SystemProperties {
        tag: get(prop::TAGS),
        keys: props
            .get(prop::KEYS)
            .map(|k| k.split(' ').map(str::to_owned).collect())
            .unwrap_or_default(),
        message_id,
        body_digest: Some(pb::Digest {
            r#type: pb::DigestType::Md5 as i32,
            checksum: md5_hex(&body),
        }),
        body_encoding: encoding as i32,
        message_type: message_type as i32,
        born_timestamp: Some(timestamp(view.born_timestamp())),
        born_host,
        store_timestamp: Some(timestamp(view.store_timestamp())),
        store_host: view.store_host().to_string(),
        delivery_timestamp: delivery_ms.map(timestamp),
        receipt_handle: receipt_handle.or_else(|| get(POP_CK)),
        queue_id: view.queue_id(),
        queue_offset: Some(view.queue_offset()),
        invisible_duration: None,
        delivery_attempt: Some(view.reconsume_times() + 1),
        message_group: get(SHARDING_KEY),
        trace_context: get(prop::TRACE_CONTEXT),
        orphaned_transaction_recovery_duration: None,
        dead_letter_queue,
    };
    pb::Message {
        topic: Some(pb::Resource {
            resource_namespace: String::new(),
            name: topic.to_owned(),
        }),
        user_properties: user,
        system_properties: Some(sp),
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(body: &[u8]) -> pb::Message {
        pb::Message {
            topic: Some(pb::Resource {
                resource_namespace: String::new(),
                name: "T".into(),
            }),
            user_properties: [("color".to_owned(), "red".to_owned())].into(),
            system_properties: Some(pb::SystemProperties {
                tag: Some("TagA".into()),
                keys: vec!["k1".into(), "k2".into()],
                message_id: "01ABC".into(),
                message_type: pb::MessageType::Normal as i32,
                born_timestamp: Some(timestamp(1_700_000_000_123)),
                ..Default::default()
            }),
            body: body.to_vec().into(),
        }
    }

    fn peer() -> SocketAddr {
        "127.0.0.1:4000".parse().unwrap()
    }

    #[test]
    fn send_properties_as_the_proxy_sets_them() {
        let p = send_properties(
            &message(b"x"),
            "T",
            peer(),
            0,
            &SendLimits::with_max_body(10),
        )
        .unwrap();
        assert_eq!(p.get("TAGS"), Some("TagA"));
        assert_eq!(p.get("KEYS"), Some("k1 k2"));
        assert_eq!(p.get("UNIQ_KEY"), Some("01ABC"));
        assert_eq!(p.get("PGROUP"), Some("T"));
        assert_eq!(p.get("color"), Some("red"));
        assert_eq!(p.get("__BORNHOST"), Some("127.0.0.1:4000"));
        assert_eq!(p.get("BORN_TIMESTAMP"), Some("1700000000123"));
        assert_eq!(p.get("RECONSUME_TIME"), Some("0"));
        assert_eq!(p.get("TRAN_MSG"), None);
    }

    #[test]
    fn send_refusals_carry_the_proxy_codes() {
        let limits = SendLimits::with_max_body(4);
        let code = |m: &pb::Message| {
            send_properties(m, "T", peer(), 0, &limits)
                .unwrap_err()
                .code
        };
        assert_eq!(code(&message(b"")), pb::Code::MessageBodyEmpty);
        assert_eq!(code(&message(b"12345")), pb::Code::MessageBodyTooLarge);
        let mut m = message(b"x");
        m.user_properties.insert("TAGS".into(), "x".into());
        assert_eq!(code(&m), pb::Code::IllegalMessagePropertyKey);
        let mut m = message(b"x");
        m.system_properties.as_mut().unwrap().tag = Some("a|b".into());
        assert_eq!(code(&m), pb::Code::IllegalMessageTag);
        let mut m = message(b"x");
        m.system_properties.as_mut().unwrap().message_id = " ".into();
        assert_eq!(code(&m), pb::Code::IllegalMessageId);
        let mut m = message(b"x");
        m.system_properties.as_mut().unwrap().message_group = Some("g".repeat(64));
        assert_eq!(code(&m), pb::Code::IllegalMessageGroup);
        let mut m = message(b"x");
        m.system_properties.as_mut().unwrap().delivery_timestamp =
            Some(timestamp(2 * 24 * 3600 * 1000));
        assert_eq!(code(&m), pb::Code::IllegalDeliveryTime);
        // Milliseconds in the seconds field: past year 9999.
        let mut m = message(b"x");
        m.system_properties.as_mut().unwrap().delivery_timestamp = Some(prost_types::Timestamp {
            seconds: 1_796_517_777_663,
            nanos: 0,
        });
        assert_eq!(code(&m), pb::Code::IllegalDeliveryTime);
    }

    #[test]
    fn md5_is_uppercase_hex() {
        assert_eq!(md5_hex(b"abc"), "900150983CD24FB0D6963F7D28E17F72");
    }

    #[test]
    fn timestamps_round_trip() {
        for ms in [0, 1, 999, 1_700_000_000_123, -1] {
            assert_eq!(timestamp_ms(&timestamp(ms)), Some(ms));
        }
        let bad = prost_types::Timestamp {
            seconds: 0,
            nanos: -1,
        };
        assert_eq!(timestamp_ms(&bad), None);
        assert_eq!(duration_ms(&duration(61_500)), 61_500);
    }
}
