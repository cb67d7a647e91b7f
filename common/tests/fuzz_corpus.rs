//! Replays the fuzz corpus (`fuzz/corpus/<target>/`) and every input a
//! fuzzer ever crashed on (`fuzz/regressions/<target>/`) through the same
//! entry points the fuzz targets use: each must return without a panic.
//!
//! `FUZZ_WRITE_SEEDS=1 cargo test --release -p rmq-common --test fuzz_corpus`
//! (re)writes the seed inputs, encoded with this crate's own encoders (and
//! `grpc_request`'s with prost, `fuzz_corpus/grpc_seeds.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use bytes::BytesMut;
use rmq_common::fuzz_harness::TARGETS;
use rmq_common::message::batch::{encode_batch, BatchItem};
use rmq_common::message::record::{encode_record, RecordHeader};
use rmq_common::message::{MessageToStore, Properties};
use rmq_common::remoting::{RemotingCommand, RequestCode, SerializeType};

#[path = "fuzz_corpus/grpc_seeds.rs"]
mod grpc_seeds;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

fn inputs(kind: &str, target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = fuzz_dir().join(kind).join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<_> = entries
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| (e.path(), std::fs::read(e.path()).unwrap()))
        .collect();
    out.sort();
    out
}

#[test]
fn corpus_and_regressions_replay_without_panic() {
    if std::env::var_os("FUZZ_WRITE_SEEDS").is_some() {
        write_seeds();
    }
    let mut replayed = 0;
    for (target, run) in TARGETS {
        let seeds = inputs("corpus", target);
        assert!(!seeds.is_empty(), "no corpus for fuzz target {target}");
        for (path, data) in seeds.iter().chain(&inputs("regressions", target)) {
            let r = std::panic::catch_unwind(|| run(data));
            assert!(r.is_ok(), "{target} panicked on {}", path.display());
            replayed += 1;
        }
    }
    assert!(replayed >= TARGETS.len());
}

/// The `grpc_request` target's in-process half (prost round trips of the
/// body as every request type); its broker half needs a broker process.
#[test]
fn grpc_request_corpus_and_regressions_replay_without_panic() {
    let target = "grpc_request";
    if std::env::var_os("FUZZ_WRITE_SEEDS").is_some() {
        grpc_seeds::write(&fuzz_dir().join("corpus").join(target));
    }
    let seeds = inputs("corpus", target);
    assert!(seeds.len() >= 16, "no corpus for fuzz target {target}");
    for (path, data) in seeds.iter().chain(&inputs("regressions", target)) {
        let r = std::panic::catch_unwind(|| rmq_grpc::fuzz_harness::grpc_request(data));
        assert!(r.is_ok(), "{target} panicked on {}", path.display());
    }
}

fn command(serialize: SerializeType, with_body: bool) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(RequestCode::SendMessageV2);
    cmd.serialize_type = serialize;
    for (k, v) in [
        ("a", "group"),
        ("b", "TopicA"),
        ("e", "3"),
        ("i", "TAGS\u{1}x\u{2}"),
    ] {
        cmd.put_ext(k, v);
    }
    cmd.remark = Some("remark".into());
    if with_body {
        cmd.body = Some(bytes::Bytes::from_static(b"hello body"));
    }
    cmd
}

fn frame_bytes(cmd: &RemotingCommand) -> Vec<u8> {
    let mut b = BytesMut::new();
    cmd.encode(&mut b).unwrap();
    b.to_vec()
}

/// The header of a frame: after the length and header-word prefixes.
fn header_of(frame: &[u8]) -> Vec<u8> {
    let word = u32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
    let len = (word & 0x00FF_FFFF) as usize;
    frame[8..8 + len].to_vec()
}

fn write_seeds() {
    let put = |target: &str, name: &str, data: &[u8]| {
        let dir = fuzz_dir().join("corpus").join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), data).unwrap();
    };
    let json = frame_bytes(&command(SerializeType::Json, true));
    let binary = frame_bytes(&command(SerializeType::RocketMq, true));
    put("frame", "json", &json);
    put("frame", "binary", &binary);
    put("frame", "two", &[binary.clone(), json.clone()].concat());
    put("frame", "short", &binary[..binary.len() / 2]);
    put("header_json", "send", &header_of(&json));
    put("header_binary", "send", &header_of(&binary));
    let empty = frame_bytes(&command(SerializeType::RocketMq, false));
    put("header_binary", "no_remark_body", &header_of(&empty));

    let mut p = Properties::default();
    p.insert("TAGS", "TagA");
    p.insert("KEYS", "k1 k2");
    p.insert("UNIQ_KEY", "0A0B0C");
    let props = p.encode().unwrap();
    put("properties", "three", &props);
    put("properties", "empty", b"");

    let mut msg = MessageToStore::new("TopicA", 2, b"record body".to_vec());
    msg.properties = p;
    let header = RecordHeader {
        queue_offset: 7,
        physical_offset: 4096,
        store_timestamp: 1_700_000_000_000,
    };
    put("record", "one", &encode_record(&msg, header).unwrap());

    let items: Vec<BatchItem> = (0..3)
        .map(|i| BatchItem {
            flag: i,
            body: format!("batch body {i}").into_bytes(),
            properties: props.clone(),
        })
        .collect();
    put("batch", "three", &encode_batch(&items));

    put(
        "json_body",
        "fastjson",
        br#"{clientID:'c1',count:"5",offset:7L,ratio:'1.5',flag:1,name:null,kind:"Broadcasting",
            items:[{count:1,},],addrs:{0:"127.0.0.1:10911"},
            table:{{"topic":"T","queueId":0}:3,"{\"topic\":\"U\"}":4}}"#,
    );
    put("json_body", "heartbeat", br#"{"clientID":"10.0.0.1@1","consumerDataSet":[{"groupName":"g","consumeType":1,"subscriptionDataSet":[{"topic":"T","subString":"*","subVersion":"17"}]}]}"#);
    put("sql92", "and", b"a > 5 AND b = 'x'");
    let yaml = "globalWhiteRemoteAddresses:\n  - 10.10.103.*\n  - 192.168.0.{1,2}\naccounts:\n  - accessKey: RocketMQ\n    secretKey: 12345678\n    whiteRemoteAddress: 192.168.1.1-5\n    defaultTopicPerm: DENY\n    defaultGroupPerm: SUB\n    topicPerms: [topicA=DENY, topicB=PUB|SUB]\n    groupPerms: [groupA=PUB]\n  - {accessKey: rocketmq2, secretKey: '87654321', admin: true}\n";
    // SEND_MESSAGE_V2 from 127.0.0.1, signed, then signed and changed.
    for (name, flags) in [("send_signed", 1u8), ("send_changed", 3)] {
        let mut d = yaml.as_bytes().to_vec();
        d.push(0);
        d.extend_from_slice(&310u16.to_be_bytes());
        d.extend_from_slice(&[127, 0, 0, 1, flags, 0, 1]);
        d.extend_from_slice(b"a\x01producer\x02b\x01topicB\x02e\x010\x00body bytes");
        put("acl", name, &d);
    }
    put(
        "sql92",
        "all",
        b"(a BETWEEN 1 AND 9 OR c NOT IN ('1', '2')) AND NOT (TAGS IS NULL) AND c >= 2.0 AND b <> 'y'",
    );
}
