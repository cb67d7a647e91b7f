//! Entry points for the fuzz targets (`common/fuzz/`), one per decoder of
//! untrusted bytes. Each must return (never panic, never loop without end)
//! whatever the input; the ordinary test `tests/fuzz_corpus.rs` replays the
//! checked-in corpus and every crash input found so far through them.

use bytes::BytesMut;

use crate::message::batch::decode_batch;
use crate::message::record::RecordView;
use crate::message::Properties;
use crate::remoting::{RemotingCommand, SerializeType, MAX_FRAME_BYTES};

/// A target's entry point.
pub type Target = fn(&[u8]);

/// The targets, by name (the fuzz target and corpus folder names).
pub const TARGETS: [(&str, Target); 6] = [
    ("frame", frame),
    ("header_json", header_json),
    ("header_binary", header_binary),
    ("record", record),
    ("batch", batch),
    ("properties", properties),
];

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

/// The JSON header decoder.
pub fn header_json(data: &[u8]) {
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
