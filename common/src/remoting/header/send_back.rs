//! Header of `CONSUMER_SEND_MSG_BACK` (36): a consumer hands back a message
//! it failed to consume, for a later retry or the dead-letter queue.

use std::collections::BTreeMap;

use super::{put, put_opt};
use crate::remoting::ext_fields::{ExtFields, HeaderError};

/// `ConsumerSendMsgBackRequestHeader`.
///
/// Required: `offset`, `group`, `delayLevel`. Clients older than 3.4.9 send
/// no `maxReconsumeTimes`; some send no `originMsgId`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerSendMsgBackRequestHeader {
    /// `offset`: CommitLog offset of the failed message.
    pub offset: i64,
    /// `group`: the consumer group.
    pub group: String,
    /// `delayLevel`: 0 lets the broker choose (`3 + reconsumeTimes`), a
    /// negative level sends the message straight to the DLQ.
    pub delay_level: i32,
    /// `originMsgId`: the msgId the consumer saw.
    pub origin_msg_id: Option<String>,
    /// `originTopic`: the topic the consumer pulled it from.
    pub origin_topic: Option<String>,
    /// `unitMode`.
    pub unit_mode: bool,
    /// `maxReconsumeTimes`: the consumer's retry budget.
    pub max_reconsume_times: Option<i32>,
}

impl ConsumerSendMsgBackRequestHeader {
    /// Reads the header from `extFields`.
    pub fn from_ext(ext: &ExtFields<'_>) -> Result<Self, HeaderError> {
        Ok(Self {
            offset: ext.req_i64("offset")?,
            group: ext.req_str("group")?.trim().to_owned(),
            delay_level: ext.req_i32("delayLevel")?,
            origin_msg_id: ext
                .get_str("originMsgId")
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            origin_topic: ext
                .get_str("originTopic")
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            unit_mode: ext.get_bool("unitMode")?.unwrap_or(false),
            max_reconsume_times: ext.get_i32("maxReconsumeTimes")?,
        })
    }

    /// The fields under their Java names.
    pub fn to_ext(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        put(&mut m, "offset", self.offset);
        put(&mut m, "group", &self.group);
        put(&mut m, "delayLevel", self.delay_level);
        put_opt(&mut m, "originMsgId", self.origin_msg_id.as_ref());
        put_opt(&mut m, "originTopic", self.origin_topic.as_ref());
        put(&mut m, "unitMode", self.unit_mode);
        put_opt(&mut m, "maxReconsumeTimes", self.max_reconsume_times);
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_accepts_what_old_clients_send() {
        let h = ConsumerSendMsgBackRequestHeader {
            offset: 4096,
            group: "g".into(),
            delay_level: 0,
            origin_msg_id: Some("ID".into()),
            origin_topic: Some("T".into()),
            unit_mode: false,
            max_reconsume_times: Some(3),
        };
        let map = h.to_ext();
        assert_eq!(
            ConsumerSendMsgBackRequestHeader::from_ext(&ExtFields::new(&map)).unwrap(),
            h
        );
        let mut old = BTreeMap::new();
        old.insert("offset".to_owned(), "7".to_owned());
        old.insert("group".to_owned(), "g".to_owned());
        old.insert("delayLevel".to_owned(), "-1".to_owned());
        old.insert("originMsgId".to_owned(), String::new());
        let h = ConsumerSendMsgBackRequestHeader::from_ext(&ExtFields::new(&old)).unwrap();
        assert_eq!(
            (
                h.offset,
                h.delay_level,
                h.origin_msg_id,
                h.max_reconsume_times
            ),
            (7, -1, None, None)
        );
        old.remove("group");
        assert!(ConsumerSendMsgBackRequestHeader::from_ext(&ExtFields::new(&old)).is_err());
    }
}
