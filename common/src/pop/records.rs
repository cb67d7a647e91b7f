//! The JSON records of POP, with RocketMQ's short field names (the long
//! names are accepted when read): the checkpoint a pop writes, the ack a
//! client's ack writes, and the BATCH_ACK_MESSAGE request body.

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// A pop's checkpoint (`PopCheckPoint`): which offsets of one queue one
/// pop handed out, and until when they are invisible.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PopCheckPoint {
    /// The offset the read started at.
    #[serde(rename = "so", alias = "startOffset")]
    pub start_offset: i64,
    /// When it was popped, ms.
    #[serde(rename = "pt", alias = "popTime")]
    pub pop_time: i64,
    /// How long it is invisible, ms.
    #[serde(rename = "it", alias = "invisibleTime")]
    pub invisible_time: i64,
    /// Acked indexes (bit i: the i-th message).
    #[serde(rename = "bm", alias = "bitMap", default)]
    pub bit_map: i32,
    /// Messages in the pop.
    #[serde(rename = "n", alias = "num")]
    pub num: u8,
    /// Queue read.
    #[serde(rename = "q", alias = "queueId")]
    pub queue_id: i32,
    /// Topic read (the original or the retry topic).
    #[serde(rename = "t", alias = "topic")]
    pub topic: String,
    /// The group.
    #[serde(rename = "c", alias = "cid")]
    pub cid: String,
    /// Where this checkpoint sits in its revive queue (set by the reader).
    #[serde(rename = "ro", alias = "reviveOffset", default)]
    pub revive_offset: i64,
    /// Each message's `offset - startOffset`; absent in old checkpoints
    /// (then the offsets are consecutive).
    #[serde(
        rename = "d",
        alias = "queueOffsetDiff",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub queue_offset_diff: Vec<i32>,
    /// The broker that popped.
    #[serde(rename = "bn", alias = "brokerName", default)]
    pub broker_name: String,
    /// Rewrites of this checkpoint after failed revives.
    #[serde(
        rename = "rp",
        alias = "rePutTimes",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub re_put_times: Option<String>,
    /// `pt + it`, written as Java's getter makes fastjson write it; ignored
    /// when read.
    #[serde(rename = "reviveTime", default, skip_deserializing)]
    pub revive_time_field: i64,
}

impl PopCheckPoint {
    /// When its messages come back, ms.
    pub fn revive_time(&self) -> i64 {
        self.pop_time.saturating_add(self.invisible_time)
    }

    /// The queue offset of the i-th message.
    pub fn offset_at(&self, i: usize) -> i64 {
        match self.queue_offset_diff.get(i) {
            Some(d) => self.start_offset + i64::from(*d),
            None => self.start_offset + i as i64,
        }
    }

    /// The queue offsets it covers.
    pub fn offsets(&self) -> Vec<i64> {
        (0..usize::from(self.num))
            .map(|i| self.offset_at(i))
            .collect()
    }

    /// The index of `offset` among its messages.
    pub fn index_of(&self, offset: i64) -> Option<usize> {
        (0..usize::from(self.num)).find(|i| self.offset_at(*i) == offset)
    }

    /// The JSON written to the revive topic.
    pub fn to_json(&self) -> Vec<u8> {
        let mut c = self.clone();
        c.revive_time_field = c.revive_time();
        serde_json::to_vec(&c).unwrap_or_default()
    }

    /// RocketMQ's merge key: topic, group, queue, start offset, pop time and
    /// broker name run together.
    pub fn merge_key(&self) -> String {
        merge_key(
            &self.topic,
            &self.cid,
            self.queue_id,
            self.start_offset,
            self.pop_time,
            &self.broker_name,
        )
    }
}

/// The key that joins acks to their checkpoint.
pub fn merge_key(
    topic: &str,
    group: &str,
    queue_id: i32,
    start_offset: i64,
    pop_time: i64,
    broker_name: &str,
) -> String {
    format!("{topic}{group}{queue_id}{start_offset}{pop_time}{broker_name}")
}

/// An ack (`AckMsg`, or `BatchAckMsg` with `aol`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AckMsg {
    /// The acked offset (-1 in a batch).
    #[serde(rename = "ao", alias = "ackOffset")]
    pub ack_offset: i64,
    /// The checkpoint's start offset.
    #[serde(rename = "so", alias = "startOffset")]
    pub start_offset: i64,
    /// The group.
    #[serde(rename = "c", alias = "consumerGroup")]
    pub consumer_group: String,
    /// The topic read (the retry topic for a retried message).
    #[serde(rename = "t", alias = "topic")]
    pub topic: String,
    /// The queue read.
    #[serde(rename = "q", alias = "queueId")]
    pub queue_id: i32,
    /// The pop's time.
    #[serde(rename = "pt", alias = "popTime")]
    pub pop_time: i64,
    /// The popping broker.
    #[serde(rename = "bn", alias = "brokerName", default)]
    pub broker_name: String,
    /// The acked offsets of a batch ack.
    #[serde(
        rename = "aol",
        alias = "ackOffsetList",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub ack_offset_list: Vec<i64>,
}

impl AckMsg {
    /// The offsets it acks.
    pub fn offsets(&self) -> Vec<i64> {
        if self.ack_offset_list.is_empty() {
            vec![self.ack_offset]
        } else {
            self.ack_offset_list.clone()
        }
    }

    /// The key of the checkpoint it acks.
    pub fn merge_key(&self, default_broker: &str) -> String {
        let bn = if self.broker_name.trim().is_empty() {
            default_broker
        } else {
            &self.broker_name
        };
        merge_key(
            &self.topic,
            &self.consumer_group,
            self.queue_id,
            self.start_offset,
            self.pop_time,
            bn,
        )
    }
}

/// One entry of a BATCH_ACK_MESSAGE body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchAck {
    /// The group.
    #[serde(rename = "c", alias = "consumerGroup")]
    pub consumer_group: String,
    /// The original topic.
    #[serde(rename = "t", alias = "topic")]
    pub topic: String,
    /// `0`, `1` or `2` (see [`super::RetryFlag`]).
    #[serde(rename = "r", alias = "retry", default)]
    pub retry: String,
    /// The checkpoint's start offset.
    #[serde(rename = "so", alias = "startOffset")]
    pub start_offset: i64,
    /// The queue.
    #[serde(rename = "q", alias = "queueId")]
    pub queue_id: i32,
    /// The revive queue (999: orderly).
    #[serde(rename = "rq", alias = "reviveQueueId")]
    pub revive_queue_id: i32,
    /// The pop's time.
    #[serde(rename = "pt", alias = "popTime")]
    pub pop_time: i64,
    /// Its invisible time.
    #[serde(rename = "it", alias = "invisibleTime")]
    pub invisible_time: i64,
    /// Base64 of Java's `BitSet.toByteArray()`: bit i acks `so + i`.
    #[serde(rename = "b", alias = "bitSet")]
    pub bit_set: String,
}

impl BatchAck {
    /// The acked offsets; an unreadable bit set is named.
    pub fn offsets(&self) -> Result<Vec<i64>, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(self.bit_set.trim())
            .map_err(|e| format!("bit set {:?} is not base64: {e}", self.bit_set))?;
        let mut out = Vec::new();
        for (byte_index, byte) in bytes.iter().enumerate() {
            for bit in 0..8 {
                if byte & (1 << bit) != 0 {
                    out.push(self.start_offset + (byte_index * 8 + bit) as i64);
                }
            }
        }
        Ok(out)
    }

    /// Java's bit set of `offsets` relative to `start`.
    pub fn encode_bits(start: i64, offsets: &[i64]) -> String {
        let mut bytes: Vec<u8> = Vec::new();
        for o in offsets {
            let Ok(i) = usize::try_from(o - start) else {
                continue;
            };
            if bytes.len() <= i / 8 {
                bytes.resize(i / 8 + 1, 0);
            }
            bytes[i / 8] |= 1 << (i % 8);
        }
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }
}

/// The BATCH_ACK_MESSAGE body (`BatchAckMessageRequestBody`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchAckBody {
    /// The broker the acks are for.
    #[serde(default)]
    pub broker_name: String,
    /// The acks.
    #[serde(default)]
    pub acks: Vec<BatchAck>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_json_as_java_writes_it() {
        let ck = PopCheckPoint {
            start_offset: 5,
            pop_time: 1000,
            invisible_time: 60000,
            bit_map: 0,
            num: 2,
            queue_id: 1,
            topic: "T".into(),
            cid: "G".into(),
            revive_offset: 0,
            queue_offset_diff: vec![0, 3],
            broker_name: "b".into(),
            re_put_times: None,
            revive_time_field: 0,
        };
        let json = String::from_utf8(ck.to_json()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let java: serde_json::Value = serde_json::from_str(
            r#"{"bm":0,"bn":"b","c":"G","d":[0,3],"it":60000,"n":2,"pt":1000,"q":1,"reviveTime":61000,"ro":0,"so":5,"t":"T"}"#,
        )
        .unwrap();
        assert_eq!(v, java);
        let back: PopCheckPoint = serde_json::from_str(&json).unwrap();
        assert_eq!(back.offsets(), vec![5, 8]);
        assert_eq!(back.index_of(8), Some(1));
        assert_eq!(back.index_of(6), None);
        let old: PopCheckPoint =
            serde_json::from_str(r#"{"so":5,"pt":1,"it":2,"n":3,"q":0,"t":"T","c":"G"}"#).unwrap();
        assert_eq!(old.offsets(), vec![5, 6, 7]);
    }

    #[test]
    fn batch_ack_bits_are_javas() {
        let b: BatchAckBody = serde_json::from_str(
            r#"{"brokerName":"broker-a","acks":[{"b":"BQI=","c":"G","it":60000,"pt":1000,"q":1,"r":"0","rq":3,"so":100,"t":"T"}]}"#,
        )
        .unwrap();
        assert_eq!(b.acks[0].offsets().unwrap(), vec![100, 102, 109]);
        assert_eq!(BatchAck::encode_bits(100, &[100, 102, 109]), "BQI=");
        let ack: AckMsg = serde_json::from_str(
            r#"{"ao":-1,"aol":[7,8],"bn":"b","c":"G","pt":1000,"q":1,"so":5,"t":"T"}"#,
        )
        .unwrap();
        assert_eq!(ack.offsets(), vec![7, 8]);
        assert_eq!(ack.merge_key("x"), "TG151000b");
    }
}
