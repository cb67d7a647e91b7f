//! Entry points for the fuzz targets (`common/fuzz/`), one per decoder of
//! untrusted bytes. Each must return (never panic, never loop without end)
//! whatever the input; the ordinary test `tests/fuzz_corpus.rs` replays the
//! checked-in corpus and every crash input found so far through them.

use bytes::BytesMut;

use crate::message::batch::decode_batch;
use crate::message::record::RecordView;
use crate::message::Properties;
use crate::remoting::{RemotingCommand, SerializeType, MAX_FRAME_BYTES};

/// Header fields some broker request reads, by their Java wire names: what a
/// hostile client fills with troublesome values (the `hostile_client` fuzz
/// target and the integration suite's `hostile_fuzz` property test).
pub const HOSTILE_FIELDS: &[&str] = &[
    "topic",
    "consumerGroup",
    "producerGroup",
    "group",
    "groupName",
    "queueId",
    "queueOffset",
    "commitOffset",
    "maxMsgNums",
    "maxMsgBytes",
    "readQueueNums",
    "writeQueueNums",
    "perm",
    "offset",
    "delayLevel",
    "timestamp",
    "key",
    "maxNum",
    "beginTimestamp",
    "endTimestamp",
    "commitLogOffset",
    "msgId",
    "properties",
    "sysFlag",
    "suspendTimeoutMillis",
    "subscription",
    "reconsumeTimes",
    "maxReconsumeTimes",
    "transactionId",
    "tranStateTableOffset",
    "commitOrRollback",
];

/// Values that have broken brokers before: system topics, retry names,
/// edges of the number types, an empty string, and a property string that
/// names the schedule topic as its own real topic.
pub const HOSTILE_VALUES: &[&str] = &[
    "TopicA",
    "g1",
    "%RETRY%g1",
    "%DLQ%g1",
    "SCHEDULE_TOPIC_XXXX",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "TBW102",
    "",
    "0",
    "1",
    "-1",
    "2147483647",
    "-9223372036854775808",
    "true",
    "*",
    "DELAY\u{1}1\u{2}REAL_TOPIC\u{1}SCHEDULE_TOPIC_XXXX\u{2}REAL_QID\u{1}2147483647\u{2}",
];

/// A target's entry point.
pub type Target = fn(&[u8]);

/// The targets, by name (the fuzz target and corpus folder names).
pub const TARGETS: [(&str, Target); 9] = [
    ("frame", frame),
    ("header_json", header_json),
    ("header_binary", header_binary),
    ("record", record),
    ("batch", batch),
    ("properties", properties),
    ("json_body", json_body),
    ("sql92", sql92),
    ("acl", acl),
];

/// A body shape that exercises every conversion of the lenient JSON layer:
/// numbers, booleans, strings, options, enums, sequences and maps keyed by
/// numbers and by objects.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[allow(dead_code)]
struct FuzzBody {
    client_id: String,
    count: i32,
    offset: i64,
    ratio: f64,
    flag: bool,
    name: Option<String>,
    kind: Option<FuzzKind>,
    items: Vec<FuzzBody>,
    addrs: std::collections::BTreeMap<i64, String>,
    table: std::collections::BTreeMap<FuzzKey, i64>,
}

impl Default for FuzzBody {
    fn default() -> Self {
        Self {
            client_id: String::new(),
            count: 16,
            offset: 0,
            ratio: 0.0,
            flag: false,
            name: None,
            kind: None,
            items: Vec::new(),
            addrs: std::collections::BTreeMap::new(),
            table: std::collections::BTreeMap::new(),
        }
    }
}

#[derive(Debug, serde::Deserialize)]
enum FuzzKind {
    Clustering,
    Broadcasting,
}

#[derive(Debug, Default, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct FuzzKey {
    topic: String,
    queue_id: i32,
}

/// The lenient JSON body decoder (`rmq_common::json`), as a generic value
/// and as a body type.
pub fn json_body(data: &[u8]) {
    let _ = crate::json::from_slice::<serde_json::Value>(data);
    let _ = crate::json::from_slice::<FuzzBody>(data);
}

/// The SQL92 filter: parse, render, and evaluate against a few properties.
pub fn sql92(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(f) = crate::sql92::Sql92Filter::parse(&text) {
        let _ = f.to_string();
        let props = [("a", "7"), ("b", "x"), ("TAGS", "TagA"), ("c", "2.5")];
        let _ = f.matches(&|name| props.iter().find(|(k, _)| *k == name).map(|(_, v)| *v));
    }
}

/// Plain ACL: the file's parser, then the check of a request made from the
/// rest of the input, signed with an account of the file when the input
/// asks (and then changed in one byte when it asks that too). Beyond not
/// panicking: a request signed with the right secret is never refused for
/// its signature, and one changed after signing never gets past the
/// signature check from an address no white list names.
///
/// Input: the YAML text, a 0 byte, then the request: code (2 bytes), an
/// IPv4 peer (4), a flag byte (bit 0 sign, bit 1 change a byte), the byte to
/// change (2), then `key\x01value\x02` pairs and, after a 0 byte, the body.
pub fn acl(data: &[u8]) {
    use crate::acl::plain::AclTable;
    use std::collections::BTreeMap;
    let (yaml, rest) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let Ok(table) = AclTable::parse(&String::from_utf8_lossy(yaml)) else {
        return;
    };
    let Some((head, rest)) = rest.split_at_checked(9) else {
        return;
    };
    let code = i32::from(u16::from_be_bytes([head[0], head[1]]));
    let peer = std::net::IpAddr::from([head[2], head[3], head[4], head[5]]);
    let (sign, change) = (head[6] & 1 == 1, head[6] & 2 == 2);
    let at = usize::from(u16::from_be_bytes([head[7], head[8]]));
    let (fields, body) = match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let mut ext: BTreeMap<String, String> = fields
        .split(|&b| b == 2)
        .filter_map(|pair| {
            let mut kv = pair.splitn(2, |&b| b == 1);
            let k = String::from_utf8_lossy(kv.next()?).into_owned();
            let v = String::from_utf8_lossy(kv.next().unwrap_or_default()).into_owned();
            Some((k, v))
        })
        .collect();
    let mut keys: Vec<_> = table.accounts.values().collect();
    keys.sort_by(|a, b| a.access_key.cmp(&b.access_key));
    let account = keys.first().filter(|_| sign);
    let mut body = body.map(<[u8]>::to_vec);
    if let Some(a) = account {
        crate::acl::sign_request(&mut ext, body.as_deref(), &a.access_key, &a.secret_key);
    }
    let mut changed = false;
    if change {
        // One byte of one value (not the signature), or of the body.
        let value = ext
            .iter_mut()
            .filter(|(k, _)| {
                k.as_str() != crate::acl::SIGNATURE && k.as_str() != crate::acl::ACCESS_KEY
            })
            .map(|(_, v)| v)
            .find(|v| at < v.len() && v.is_char_boundary(at) && v.is_char_boundary(at + 1));
        if let Some(v) = value {
            let old = v.as_bytes()[at];
            let new = if old == b'a' { 'b' } else { 'a' };
            v.replace_range(at..=at, &new.to_string());
            changed = true;
        } else if let Some(b) = body.as_mut().filter(|b| at < b.len()) {
            b[at] ^= 1;
            changed = true;
        }
    }
    let verdict = table.check(code, peer, &ext, body.as_deref());
    let Some(a) = account else { return };
    let white = table.global_white.iter().any(|p| p.matches(peer)) || a.white.matches(peer);
    let refused_for_signature = matches!(&verdict, Err(d) if d.0.contains("signature"));
    if !changed {
        assert!(
            !refused_for_signature,
            "a rightly signed request refused: {verdict:?}"
        );
    } else if !white {
        assert!(
            verdict.is_err(),
            "a request changed after signing was taken"
        );
    }
}

/// The frame decoder over a stream: decodes frames until it needs more
/// bytes or refuses the stream, reading every decoded command's fields.
pub fn frame(data: &[u8]) {
    let mut buf = BytesMut::from(data);
    // Each decoded frame consumes at least its 4-byte prefix.
    for _ in 0..=data.len() / 4 {
        match RemotingCommand::decode(&mut buf, MAX_FRAME_BYTES) {
            Ok(Some(cmd)) => touch(&cmd),
            Ok(None) | Err(_) => return,
        }
    }
}

fn touch(cmd: &RemotingCommand) {
    let ext = cmd.ext();
    let _ = ext.get_i32("queueId");
    let _ = ext.get_i64("queueOffset");
    let _ = ext.get_str("topic");
    let _ = cmd.remark.as_deref().map(str::len);
}

/// The JSON header decoder; where its fast path answers, the answer must be
/// the general decoder's.
pub fn header_json(data: &[u8]) {
    if let Some(fast) = crate::remoting::json_header_fast::decode(data) {
        match crate::remoting::json_header::decode_general(data) {
            Ok(general) => assert_eq!(
                fast, general,
                "fast and general JSON header decoders differ"
            ),
            Err(e) => {
                panic!("the fast JSON header path took a header the general one refuses: {e}")
            }
        }
    }
    if let Ok(cmd) = RemotingCommand::decode_header(SerializeType::Json, data) {
        touch(&cmd);
    }
}

/// RocketMQ's binary header decoder.
pub fn header_binary(data: &[u8]) {
    if let Ok(cmd) = RemotingCommand::decode_header(SerializeType::RocketMq, data) {
        touch(&cmd);
    }
}

/// The CommitLog record decoder, with and without the CRC check, and the
/// conversions a pull or a lookup does on a parsed record.
pub fn record(data: &[u8]) {
    for check_crc in [true, false] {
        if let Ok(v) = RecordView::parse(data, check_crc) {
            let _ = v.properties();
            let _ = v.to_message();
            let _ = v.body_crc();
        }
    }
}

/// The batch body decoder (SEND_BATCH_MESSAGE).
pub fn batch(data: &[u8]) {
    if let Ok(items) = decode_batch(data) {
        for item in &items {
            let _ = Properties::decode(&item.properties);
        }
    }
}

/// The properties decoder.
pub fn properties(data: &[u8]) {
    let p = Properties::decode(data);
    let _ = p.encode();
}
