//! Headers of `SEND_MESSAGE` (10), `SEND_MESSAGE_V2` (310) and
//! `SEND_BATCH_MESSAGE` (320), and of their response.

use std::collections::BTreeMap;

use super::{put, put_opt};
use crate::remoting::ext_fields::{ExtFields, HeaderError};

/// The topic auto-created topics are templated on; the default `defaultTopic`.
pub const AUTO_CREATE_TOPIC_KEY_TOPIC: &str = "TBW102";

/// Queue count clients ask for when auto-creating a topic; the default
/// `defaultTopicQueueNums`.
pub const DEFAULT_TOPIC_QUEUE_NUMS: i32 = 4;

/// Field names: the V1 (Java field) name and the V2 single-letter name.
mod name {
    pub const PRODUCER_GROUP: (&str, &str) = ("producerGroup", "a");
    pub const TOPIC: (&str, &str) = ("topic", "b");
    pub const DEFAULT_TOPIC: (&str, &str) = ("defaultTopic", "c");
    pub const DEFAULT_TOPIC_QUEUE_NUMS: (&str, &str) = ("defaultTopicQueueNums", "d");
    pub const QUEUE_ID: (&str, &str) = ("queueId", "e");
    pub const SYS_FLAG: (&str, &str) = ("sysFlag", "f");
    pub const BORN_TIMESTAMP: (&str, &str) = ("bornTimestamp", "g");
    pub const FLAG: (&str, &str) = ("flag", "h");
    pub const PROPERTIES: (&str, &str) = ("properties", "i");
    pub const RECONSUME_TIMES: (&str, &str) = ("reconsumeTimes", "j");
    pub const UNIT_MODE: (&str, &str) = ("unitMode", "k");
    pub const MAX_RECONSUME_TIMES: (&str, &str) = ("maxReconsumeTimes", "l");
    pub const BATCH: (&str, &str) = ("batch", "m");
    /// V1 carries the broker name in `RpcRequestHeader.bname`.
    pub const BROKER_NAME: (&str, &str) = ("bname", "n");
}

/// The send request header (`SendMessageRequestHeader`; V2 uses the same
/// fields under the names `a`..`n`).
///
/// Required: `producerGroup`, `topic`, `queueId`. The rest default to
/// `defaultTopic` TBW102, `defaultTopicQueueNums` 4 and 0/false otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendMessageRequestHeader {
    /// `producerGroup` / `a`.
    pub producer_group: String,
    /// `topic` / `b`.
    pub topic: String,
    /// `defaultTopic` / `c`: the template for auto-creation.
    pub default_topic: String,
    /// `defaultTopicQueueNums` / `d`: queue count for auto-creation.
    pub default_topic_queue_nums: i32,
    /// `queueId` / `e`; negative lets the broker choose.
    pub queue_id: i32,
    /// `sysFlag` / `f`: `MessageSysFlag` bits.
    pub sys_flag: i32,
    /// `bornTimestamp` / `g`, ms since the epoch.
    pub born_timestamp: i64,
    /// `flag` / `h`: the user's message flag.
    pub flag: i32,
    /// `properties` / `i`: the encoded property string.
    pub properties: Option<String>,
    /// `reconsumeTimes` / `j`.
    pub reconsume_times: i32,
    /// `unitMode` / `k`.
    pub unit_mode: bool,
    /// `maxReconsumeTimes` / `l`.
    pub max_reconsume_times: Option<i32>,
    /// `batch` / `m`: the body is a batch, whatever the request code.
    pub batch: bool,
    /// `bname` / `n`: the broker the client meant to reach.
    pub broker_name: Option<String>,
}

/// The name under which the field was sent: the V1 name if present, else the
/// V2 name if present, else the V1 name (for error messages).
fn sent_as(ext: &ExtFields<'_>, (long, short): (&'static str, &'static str)) -> &'static str {
    if !ext.contains(long) && ext.contains(short) {
        short
    } else {
        long
    }
}

impl SendMessageRequestHeader {
    /// Reads the header from `extFields` sent with either the V1 names or the
    /// V2 short names (a field may use either).
    pub fn from_ext(ext: &ExtFields<'_>) -> Result<Self, HeaderError> {
        let n = |names| sent_as(ext, names);
        Ok(Self {
            producer_group: ext.req_str(n(name::PRODUCER_GROUP))?.trim().to_owned(),
            topic: ext.req_str(n(name::TOPIC))?.trim().to_owned(),
            default_topic: ext
                .get_str(n(name::DEFAULT_TOPIC))
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .unwrap_or(AUTO_CREATE_TOPIC_KEY_TOPIC)
                .to_owned(),
            default_topic_queue_nums: ext
                .get_i32(n(name::DEFAULT_TOPIC_QUEUE_NUMS))?
                .unwrap_or(DEFAULT_TOPIC_QUEUE_NUMS),
            queue_id: ext.req_i32(n(name::QUEUE_ID))?,
            sys_flag: ext.get_i32(n(name::SYS_FLAG))?.unwrap_or(0),
            born_timestamp: ext.get_i64(n(name::BORN_TIMESTAMP))?.unwrap_or(0),
            flag: ext.get_i32(n(name::FLAG))?.unwrap_or(0),
            properties: ext.get_str(n(name::PROPERTIES)).map(str::to_owned),
            reconsume_times: ext.get_i32(n(name::RECONSUME_TIMES))?.unwrap_or(0),
            unit_mode: ext.get_bool(n(name::UNIT_MODE))?.unwrap_or(false),
            max_reconsume_times: ext.get_i32(n(name::MAX_RECONSUME_TIMES))?,
            batch: ext.get_bool(n(name::BATCH))?.unwrap_or(false),
            broker_name: ext
                .get_str(n(name::BROKER_NAME))
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        })
    }

    /// The fields under their V1 names (for `SEND_MESSAGE`).
    pub fn to_ext(&self) -> BTreeMap<String, String> {
        self.write(|(long, _)| long)
    }

    /// The fields under their V2 short names (for `SEND_MESSAGE_V2` and
    /// `SEND_BATCH_MESSAGE`).
    pub fn to_ext_v2(&self) -> BTreeMap<String, String> {
        self.write(|(_, short)| short)
    }

    fn write(
        &self,
        pick: impl Fn((&'static str, &'static str)) -> &'static str,
    ) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        put(&mut m, pick(name::PRODUCER_GROUP), &self.producer_group);
        put(&mut m, pick(name::TOPIC), &self.topic);
        put(&mut m, pick(name::DEFAULT_TOPIC), &self.default_topic);
        put(
            &mut m,
            pick(name::DEFAULT_TOPIC_QUEUE_NUMS),
            self.default_topic_queue_nums,
        );
        put(&mut m, pick(name::QUEUE_ID), self.queue_id);
        put(&mut m, pick(name::SYS_FLAG), self.sys_flag);
        put(&mut m, pick(name::BORN_TIMESTAMP), self.born_timestamp);
        put(&mut m, pick(name::FLAG), self.flag);
        put_opt(&mut m, pick(name::PROPERTIES), self.properties.as_ref());
        put(&mut m, pick(name::RECONSUME_TIMES), self.reconsume_times);
        put(&mut m, pick(name::UNIT_MODE), self.unit_mode);
        put_opt(
            &mut m,
            pick(name::MAX_RECONSUME_TIMES),
            self.max_reconsume_times,
        );
        put(&mut m, pick(name::BATCH), self.batch);
        put_opt(&mut m, pick(name::BROKER_NAME), self.broker_name.as_ref());
        m
    }
}

/// The send response header (`SendMessageResponseHeader`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendMessageResponseHeader {
    /// `msgId`: the offset message id (store host + CommitLog offset).
    pub msg_id: String,
    /// `queueId`.
    pub queue_id: i32,
    /// `queueOffset`: the consume-queue offset assigned.
    pub queue_offset: i64,
    /// `transactionId`, for transactional sends.
    pub transaction_id: Option<String>,
}

impl SendMessageResponseHeader {
    /// The fields under their Java names.
    pub fn to_ext(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        put(&mut m, "msgId", &self.msg_id);
        put(&mut m, "queueId", self.queue_id);
        put(&mut m, "queueOffset", self.queue_offset);
        put_opt(&mut m, "transactionId", self.transaction_id.as_ref());
        m
    }

    /// Reads the header; `msgId`, `queueId` and `queueOffset` are required.
    pub fn from_ext(ext: &ExtFields<'_>) -> Result<Self, HeaderError> {
        Ok(Self {
            msg_id: ext.req_str("msgId")?.to_owned(),
            queue_id: ext.req_i32("queueId")?,
            queue_offset: ext.req_i64("queueOffset")?,
            transaction_id: ext.get_str("transactionId").map(str::to_owned),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn sample() -> SendMessageRequestHeader {
        SendMessageRequestHeader {
            producer_group: "PG".into(),
            topic: "T".into(),
            default_topic: "TBW102".into(),
            default_topic_queue_nums: 4,
            queue_id: 2,
            sys_flag: 0,
            born_timestamp: 1_700_000_000_123,
            flag: 0,
            properties: Some("TAGS\u{1}a\u{2}".into()),
            reconsume_times: 0,
            unit_mode: false,
            max_reconsume_times: Some(16),
            batch: true,
            broker_name: Some("broker-a".into()),
        }
    }

    #[test]
    fn v2_short_names_are_accepted() {
        let m = map(&[
            ("a", "PG"),
            ("b", "T"),
            ("c", "TBW102"),
            ("d", "4"),
            ("e", "2"),
            ("f", "0"),
            ("g", "1700000000123"),
            ("h", "0"),
            ("i", "TAGS\u{1}a\u{2}"),
            ("j", "0"),
            ("k", "false"),
            ("l", "16"),
            ("m", "1"),
            ("n", "broker-a"),
        ]);
        let h = SendMessageRequestHeader::from_ext(&ExtFields::new(&m)).unwrap();
        assert_eq!(h, sample());
    }

    #[test]
    fn v1_and_v2_round_trip() {
        let h = sample();
        let v1 = h.to_ext();
        assert_eq!(v1["producerGroup"], "PG");
        assert_eq!(v1["bname"], "broker-a");
        assert_eq!(v1["batch"], "true");
        assert_eq!(
            SendMessageRequestHeader::from_ext(&ExtFields::new(&v1)).unwrap(),
            h
        );
        let v2 = h.to_ext_v2();
        assert_eq!(v2["a"], "PG");
        assert_eq!(v2["g"], "1700000000123");
        assert_eq!(v2["m"], "true");
        assert_eq!(v2.len(), 14);
        assert_eq!(
            SendMessageRequestHeader::from_ext(&ExtFields::new(&v2)).unwrap(),
            h
        );
    }

    #[test]
    fn lenient_defaults_and_named_errors() {
        let m = map(&[
            ("producerGroup", "PG"),
            ("topic", "T"),
            ("queueId", "1"),
            ("AccessKey", "x"),
        ]);
        let h = SendMessageRequestHeader::from_ext(&ExtFields::new(&m)).unwrap();
        assert_eq!(h.default_topic, "TBW102");
        assert_eq!(h.default_topic_queue_nums, 4);
        assert!(!h.batch);
        assert_eq!(h.max_reconsume_times, None);

        let m = map(&[("a", "PG"), ("e", "1")]);
        let err = SendMessageRequestHeader::from_ext(&ExtFields::new(&m)).unwrap_err();
        assert_eq!(err, HeaderError::Missing { field: "topic" });

        let m = map(&[("a", "PG"), ("b", "T"), ("e", "one")]);
        let err = SendMessageRequestHeader::from_ext(&ExtFields::new(&m)).unwrap_err();
        assert!(
            matches!(err, HeaderError::InvalidInt { field: "e", .. }),
            "{err}"
        );
    }

    #[test]
    fn response_round_trip() {
        let r = SendMessageResponseHeader {
            msg_id: "0A0000010000000000000000000000FF".into(),
            queue_id: 3,
            queue_offset: 42,
            transaction_id: None,
        };
        let m = r.to_ext();
        assert!(!m.contains_key("transactionId"));
        assert_eq!(
            SendMessageResponseHeader::from_ext(&ExtFields::new(&m)).unwrap(),
            r
        );
    }
}
