//! Headers of GET_TOPIC_STATS_INFO (202), GET_CONSUME_STATS (208) and
//! QUERY_TOPIC_CONSUME_BY_WHO (300).

use super::ext_header;

ext_header! {
    /// `GetTopicStatsInfoRequestHeader`.
    pub struct TopicStatsRequestHeader {
        /// `topic`.
        pub topic: String = string("topic"),
    }
}

ext_header! {
    /// `GetConsumeStatsRequestHeader`.
    pub struct ConsumeStatsRequestHeader {
        /// `consumerGroup`.
        pub consumer_group: String = string("consumerGroup"),
        /// `topic`: only this topic when given.
        pub topic: Option<String> = non_empty("topic"),
    }
}

ext_header! {
    /// `QueryTopicConsumeByWhoRequestHeader`.
    pub struct TopicConsumeByWhoRequestHeader {
        /// `topic`.
        pub topic: String = string("topic"),
    }
}
