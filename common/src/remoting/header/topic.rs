//! Headers of UPDATE_AND_CREATE_TOPIC (17) and DELETE_TOPIC_IN_BROKER
//! (215).

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
    }
}

ext_header! {
    /// `DeleteTopicRequestHeader`.
    pub struct DeleteTopicRequestHeader {
        /// `topic`.
        pub topic: String = string("topic"),
    }
}
