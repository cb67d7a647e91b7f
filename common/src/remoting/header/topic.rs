//! Headers of UPDATE_AND_CREATE_TOPIC (17), DELETE_TOPIC_IN_BROKER (215)
//! and GET_TOPIC_CONFIG (351).

use super::ext_header;

ext_header! {
    /// `CreateTopicRequestHeader`; what is left out takes the broker's
    /// defaults.
    pub struct CreateTopicRequestHeader {
        /// `topic`.
        pub topic: String = string("topic"),
        /// `readQueueNums`.
        pub read_queue_nums: Option<i32> = opt_i32("readQueueNums"),
        /// `writeQueueNums`.
        pub write_queue_nums: Option<i32> = opt_i32("writeQueueNums"),
        /// `perm`.
        pub perm: Option<i32> = opt_i32("perm"),
        /// `topicFilterType`, as sent.
        pub topic_filter_type: Option<String> = raw("topicFilterType"),
        /// `topicSysFlag`.
        pub topic_sys_flag: Option<i32> = opt_i32("topicSysFlag"),
        /// `order`.
        pub order: Option<bool> = opt_bool("order"),
        /// `attributes` (RocketMQ 5.x): `+key=value` and `-key` items,
        /// comma-separated, as sent.
        pub attributes: Option<String> = raw("attributes"),
        /// `force` (RocketMQ 5.x), read and not used: it lets 5.x's own
        /// broker skip checks this broker does not make.
        pub force: Option<bool> = opt_bool("force"),
    }
}

ext_header! {
    /// `DeleteTopicRequestHeader`.
    pub struct DeleteTopicRequestHeader {
        /// `topic`.
        pub topic: String = string("topic"),
    }
}

ext_header! {
    /// `GetTopicConfigRequestHeader` (RocketMQ 5.x).
    pub struct GetTopicConfigRequestHeader {
        /// `topic`.
        pub topic: String = string("topic"),
        /// `lo` (logical queues): the static-topic mapping is wanted too;
        /// this broker has no static topics.
        pub lo: Option<bool> = opt_bool("lo"),
    }
}
