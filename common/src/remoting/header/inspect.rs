//! Headers of the inspection codes: QUERY_CONSUME_TIME_SPAN (303),
//! VIEW_BROKER_STATS_DATA (315), GET_BROKER_CONSUME_STATS (317) and
//! QUERY_CONSUME_QUEUE (321).

use super::ext_header;

ext_header! {
    /// `QueryConsumeTimeSpanRequestHeader`.
    pub struct ConsumeTimeSpanRequestHeader {
        /// `topic`.
        pub topic: String = string("topic"),
        /// `group`.
        pub group: String = string("group"),
    }
}

ext_header! {
    /// `ViewBrokerStatsDataRequestHeader`.
    pub struct ViewBrokerStatsRequestHeader {
        /// `statsName`.
        pub stats_name: String = string("statsName"),
        /// `statsKey`.
        pub stats_key: String = string("statsKey"),
    }
}

ext_header! {
    /// `GetConsumeStatsInBrokerHeader`.
    pub struct BrokerConsumeStatsRequestHeader {
        /// `isOrder`: only orderly groups.
        pub is_order: Option<bool> = opt_bool("isOrder"),
    }
}

ext_header! {
    /// `QueryConsumeQueueRequestHeader`.
    pub struct QueryConsumeQueueRequestHeader {
        /// `topic`.
        pub topic: String = string("topic"),
        /// `queueId`.
        pub queue_id: i32 = i32("queueId"),
        /// `index`: the first consume-queue index.
        pub index: i64 = i64("index"),
        /// `count` (default 10).
        pub count: Option<i32> = opt_i32("count"),
        /// `consumerGroup`: whose offset and filter to show, when given.
        pub consumer_group: Option<String> = non_empty("consumerGroup"),
    }
}
