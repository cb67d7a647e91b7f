//! Headers of `PULL_MESSAGE` (11) and of its response.

use std::collections::BTreeMap;

use super::{put, put_opt};
use crate::remoting::ext_fields::{ExtFields, HeaderError};

/// The pull request header (`PullMessageRequestHeader`).
///
/// Required: `consumerGroup`, `topic`, `queueId`, `queueOffset`,
/// `maxMsgNums`; `sysFlag`, `commitOffset`, `suspendTimeoutMillis` and
/// `subVersion` default to 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullMessageRequestHeader {
    /// `consumerGroup`.
    pub consumer_group: String,
    /// `topic`.
    pub topic: String,
    /// `queueId`.
    pub queue_id: i32,
    /// `queueOffset`: the first consume-queue offset wanted.
    pub queue_offset: i64,
    /// `maxMsgNums`: at most this many messages.
    pub max_msg_nums: i32,
    /// `sysFlag`: [`super::pull_sys_flag`] bits.
    pub sys_flag: i32,
    /// `commitOffset`: the consumer's offset to store; -1 when it has none.
    pub commit_offset: i64,
    /// `suspendTimeoutMillis`: how long a long poll may be held.
    pub suspend_timeout_millis: i64,
    /// `subscription`: the filter expression, with the `SUBSCRIPTION` flag.
    pub subscription: Option<String>,
    /// `subVersion`: the subscription's version (a timestamp).
    pub sub_version: i64,
    /// `expressionType`: `TAG` or `SQL92`.
    pub expression_type: Option<String>,
    /// `maxMsgBytes`: at most this many bytes.
    pub max_msg_bytes: Option<i32>,
}

impl PullMessageRequestHeader {
    /// Reads the header from `extFields`.
    pub fn from_ext(ext: &ExtFields<'_>) -> Result<Self, HeaderError> {
        Ok(Self {
            consumer_group: ext.req_str("consumerGroup")?.trim().to_owned(),
            topic: ext.req_str("topic")?.trim().to_owned(),
            queue_id: ext.req_i32("queueId")?,
            queue_offset: ext.req_i64("queueOffset")?,
            max_msg_nums: ext.req_i32("maxMsgNums")?,
            sys_flag: ext.get_i32("sysFlag")?.unwrap_or(0),
            commit_offset: ext.get_i64("commitOffset")?.unwrap_or(0),
            suspend_timeout_millis: ext.get_i64("suspendTimeoutMillis")?.unwrap_or(0),
            subscription: ext.get_str("subscription").map(str::to_owned),
            sub_version: ext.get_i64("subVersion")?.unwrap_or(0),
            expression_type: ext.get_str("expressionType").map(str::to_owned),
            max_msg_bytes: ext.get_i32("maxMsgBytes")?,
        })
    }

    /// The fields under their Java names.
    pub fn to_ext(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        put(&mut m, "consumerGroup", &self.consumer_group);
        put(&mut m, "topic", &self.topic);
        put(&mut m, "queueId", self.queue_id);
        put(&mut m, "queueOffset", self.queue_offset);
        put(&mut m, "maxMsgNums", self.max_msg_nums);
        put(&mut m, "sysFlag", self.sys_flag);
        put(&mut m, "commitOffset", self.commit_offset);
        put(&mut m, "suspendTimeoutMillis", self.suspend_timeout_millis);
        put_opt(&mut m, "subscription", self.subscription.as_ref());
        put(&mut m, "subVersion", self.sub_version);
        put_opt(&mut m, "expressionType", self.expression_type.as_ref());
        put_opt(&mut m, "maxMsgBytes", self.max_msg_bytes);
        m
    }
}

/// The pull response header (`PullMessageResponseHeader`). Strict clients
/// require all four fields, on every pull response code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PullMessageResponseHeader {
    /// `suggestWhichBrokerId`: 0 for the master.
    pub suggest_which_broker_id: i64,
    /// `nextBeginOffset`: where the next pull should start.
    pub next_begin_offset: i64,
    /// `minOffset` of the queue.
    pub min_offset: i64,
    /// `maxOffset` of the queue.
    pub max_offset: i64,
}

impl PullMessageResponseHeader {
    /// The fields under their Java names.
    pub fn to_ext(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        put(&mut m, "suggestWhichBrokerId", self.suggest_which_broker_id);
        put(&mut m, "nextBeginOffset", self.next_begin_offset);
        put(&mut m, "minOffset", self.min_offset);
        put(&mut m, "maxOffset", self.max_offset);
        m
    }

    /// Reads the header; all four fields are required.
    pub fn from_ext(ext: &ExtFields<'_>) -> Result<Self, HeaderError> {
        Ok(Self {
            suggest_which_broker_id: ext.req_i64("suggestWhichBrokerId")?,
            next_begin_offset: ext.req_i64("nextBeginOffset")?,
            min_offset: ext.req_i64("minOffset")?,
            max_offset: ext.req_i64("maxOffset")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remoting::header::pull_sys_flag;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn java_client_pull_request() {
        // As a Java push consumer sends it: commitOffset -1 on first pull.
        let m = map(&[
            ("consumerGroup", "CG"),
            ("topic", "T"),
            ("queueId", "0"),
            ("queueOffset", "0"),
            ("maxMsgNums", "32"),
            ("sysFlag", "6"),
            ("commitOffset", "-1"),
            ("suspendTimeoutMillis", "15000"),
            ("subscription", "*"),
            ("subVersion", "1700000000000"),
            ("expressionType", "TAG"),
            ("bname", "broker-a"),
        ]);
        let h = PullMessageRequestHeader::from_ext(&ExtFields::new(&m)).unwrap();
        assert_eq!(h.commit_offset, -1);
        assert!(pull_sys_flag::has_suspend(h.sys_flag));
        assert!(pull_sys_flag::has_subscription(h.sys_flag));
        assert_eq!(h.max_msg_bytes, None);
        let back = h.to_ext();
        assert!(!back.contains_key("bname"));
        assert_eq!(
            PullMessageRequestHeader::from_ext(&ExtFields::new(&back)).unwrap(),
            h
        );
    }

    #[test]
    fn missing_required_field_is_named() {
        let m = map(&[
            ("consumerGroup", "CG"),
            ("topic", "T"),
            ("queueId", "0"),
            ("maxMsgNums", "32"),
        ]);
        let err = PullMessageRequestHeader::from_ext(&ExtFields::new(&m)).unwrap_err();
        assert_eq!(
            err,
            HeaderError::Missing {
                field: "queueOffset"
            }
        );
    }

    #[test]
    fn response_round_trip_and_strictness() {
        let r = PullMessageResponseHeader {
            suggest_which_broker_id: 0,
            next_begin_offset: 10,
            min_offset: 0,
            max_offset: 10,
        };
        let m = r.to_ext();
        assert_eq!(m.len(), 4);
        assert_eq!(
            PullMessageResponseHeader::from_ext(&ExtFields::new(&m)).unwrap(),
            r
        );
        let mut partial = m.clone();
        partial.remove("minOffset");
        let err = PullMessageResponseHeader::from_ext(&ExtFields::new(&partial)).unwrap_err();
        assert_eq!(err, HeaderError::Missing { field: "minOffset" });
    }
}
