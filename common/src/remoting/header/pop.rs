//! Headers of RocketMQ 5.x POP consumption: POP_MESSAGE (200050),
//! ACK_MESSAGE (200051), PEEK_MESSAGE (200052),
//! CHANGE_MESSAGE_INVISIBLETIME (200053), NOTIFICATION (200054) and
//! POLLING_INFO (200055), and their answers. BATCH_ACK_MESSAGE (200151)
//! has no header.

use std::collections::BTreeMap;

use super::{ext_header, put, put_opt};
use crate::remoting::{ExtFields, HeaderError};

ext_header! {
    /// `PopMessageRequestHeader`.
    pub struct PopMessageRequestHeader {
        /// `consumerGroup`.
        pub consumer_group: String = string("consumerGroup"),
        /// `topic`: the original topic, never the retry topic.
        pub topic: String = string("topic"),
        /// `queueId`: negative reads every read queue.
        pub queue_id: i32 = i32("queueId"),
        /// `maxMsgNums`: at most 32.
        pub max_msg_nums: i32 = i32("maxMsgNums"),
        /// `invisibleTime`, ms.
        pub invisible_time: i64 = i64("invisibleTime"),
        /// `pollTime`: long-poll budget, ms (0 or less: answer at once).
        pub poll_time: i64 = i64("pollTime"),
        /// `bornTime`: the client's send time; absent or 0 means now.
        pub born_time: Option<i64> = opt_i64("bornTime"),
        /// `initMode`: where a group with no offset starts (0 MIN, 1 MAX).
        pub init_mode: i32 = i32("initMode"),
        /// `expType`: `TAG` or `SQL92`.
        pub exp_type: Option<String> = opt_string("expType"),
        /// `exp`: the filter; missing means `*`.
        pub exp: Option<String> = opt_string("exp"),
        /// `order`: orderly (FIFO) POP.
        pub order: Option<bool> = opt_bool("order"),
        /// `attemptId`: the receive attempt, for orderly POP.
        pub attempt_id: Option<String> = opt_string("attemptId"),
    }
}

ext_header! {
    /// `PeekMessageRequestHeader`.
    pub struct PeekMessageRequestHeader {
        /// `consumerGroup`.
        pub consumer_group: String = string("consumerGroup"),
        /// `topic`.
        pub topic: String = string("topic"),
        /// `queueId`: negative reads every queue.
        pub queue_id: i32 = i32("queueId"),
        /// `maxMsgNums`.
        pub max_msg_nums: i32 = i32("maxMsgNums"),
    }
}

ext_header! {
    /// `AckMessageRequestHeader`.
    pub struct AckMessageRequestHeader {
        /// `consumerGroup`.
        pub consumer_group: String = string("consumerGroup"),
        /// `topic`: the topic the message was read from.
        pub topic: String = string("topic"),
        /// `queueId`.
        pub queue_id: i32 = i32("queueId"),
        /// `extraInfo`: the message's receipt handle.
        pub extra_info: String = string("extraInfo"),
        /// `offset`: the message's queue offset.
        pub offset: i64 = i64("offset"),
    }
}

ext_header! {
    /// `ChangeInvisibleTimeRequestHeader`.
    pub struct ChangeInvisibleTimeRequestHeader {
        /// `consumerGroup`.
        pub consumer_group: String = string("consumerGroup"),
        /// `topic`: the topic the message was read from.
        pub topic: String = string("topic"),
        /// `queueId`.
        pub queue_id: i32 = i32("queueId"),
        /// `extraInfo`.
        pub extra_info: String = string("extraInfo"),
        /// `offset`.
        pub offset: i64 = i64("offset"),
        /// `invisibleTime`: the new invisibility from now, ms.
        pub invisible_time: i64 = i64("invisibleTime"),
    }
}

ext_header! {
    /// `NotificationRequestHeader`.
    pub struct NotificationRequestHeader {
        /// `consumerGroup`.
        pub consumer_group: String = string("consumerGroup"),
        /// `topic`.
        pub topic: String = string("topic"),
        /// `queueId`: negative for every queue.
        pub queue_id: i32 = i32("queueId"),
        /// `pollTime`, ms.
        pub poll_time: i64 = i64("pollTime"),
        /// `bornTime`; absent or 0 means now.
        pub born_time: Option<i64> = opt_i64("bornTime"),
        /// `order`.
        pub order: Option<bool> = opt_bool("order"),
        /// `attemptId`.
        pub attempt_id: Option<String> = opt_string("attemptId"),
    }
}

ext_header! {
    /// `PollingInfoRequestHeader`.
    pub struct PollingInfoRequestHeader {
        /// `consumerGroup`.
        pub consumer_group: String = string("consumerGroup"),
        /// `topic`.
        pub topic: String = string("topic"),
        /// `queueId`.
        pub queue_id: i32 = i32("queueId"),
    }
}

/// `PopMessageResponseHeader` (PEEK_MESSAGE fills only `restNum`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PopMessageResponseHeader {
    /// The pop's time.
    pub pop_time: i64,
    /// The request's invisible time.
    pub invisible_time: i64,
    /// The revive queue of its checkpoints (999 for orderly).
    pub revive_qid: i32,
    /// Backlog left in the queues looked at.
    pub rest_num: i64,
    /// `startOffsetInfo`.
    pub start_offset_info: Option<String>,
    /// `msgOffsetInfo`.
    pub msg_offset_info: Option<String>,
    /// `orderCountInfo`.
    pub order_count_info: Option<String>,
}

impl PopMessageResponseHeader {
    /// The fields under their Java names.
    pub fn to_ext(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        put(&mut m, "popTime", self.pop_time);
        put(&mut m, "invisibleTime", self.invisible_time);
        put(&mut m, "reviveQid", self.revive_qid);
        put(&mut m, "restNum", self.rest_num);
        put_opt(&mut m, "startOffsetInfo", self.start_offset_info.as_ref());
        put_opt(&mut m, "msgOffsetInfo", self.msg_offset_info.as_ref());
        put_opt(&mut m, "orderCountInfo", self.order_count_info.as_ref());
        m
    }

    /// Reads the header as a client does; the four numbers are required,
    /// a blank info string reads as absent.
    pub fn from_ext(ext: &ExtFields<'_>) -> Result<Self, HeaderError> {
        let text = |f: &str| {
            ext.get_str(f)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        Ok(Self {
            pop_time: ext.req_i64("popTime")?,
            invisible_time: ext.req_i64("invisibleTime")?,
            revive_qid: ext.req_i32("reviveQid")?,
            rest_num: ext.req_i64("restNum")?,
            start_offset_info: text("startOffsetInfo"),
            msg_offset_info: text("msgOffsetInfo"),
            order_count_info: text("orderCountInfo"),
        })
    }
}

/// `ChangeInvisibleTimeResponseHeader`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChangeInvisibleTimeResponseHeader {
    /// The handle's new pop time.
    pub pop_time: i64,
    /// Its new invisible time.
    pub invisible_time: i64,
    /// Its revive queue.
    pub revive_qid: i32,
}

impl ChangeInvisibleTimeResponseHeader {
    /// The fields under their Java names.
    pub fn to_ext(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        put(&mut m, "popTime", self.pop_time);
        put(&mut m, "invisibleTime", self.invisible_time);
        put(&mut m, "reviveQid", self.revive_qid);
        m
    }
}

/// `NotificationResponseHeader`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NotificationResponseHeader {
    /// Something can be popped.
    pub has_msg: bool,
    /// The wait was refused: too many waiting.
    pub polling_full: bool,
}

impl NotificationResponseHeader {
    /// The fields under their Java names.
    pub fn to_ext(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        put(&mut m, "hasMsg", self.has_msg);
        put(&mut m, "pollingFull", self.polling_full);
        m
    }
}

/// `PollingInfoResponseHeader`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PollingInfoResponseHeader {
    /// POP requests waiting under the key.
    pub polling_num: i32,
}

impl PollingInfoResponseHeader {
    /// The fields under their Java names.
    pub fn to_ext(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        put(&mut m, "pollingNum", self.polling_num);
        m
    }
}
