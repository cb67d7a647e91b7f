//! Headers of the offset requests: QUERY_CONSUMER_OFFSET (14),
//! UPDATE_CONSUMER_OFFSET (15), SEARCH_OFFSET_BY_TIMESTAMP (29),
//! GET_MAX_OFFSET (30), GET_MIN_OFFSET (31) and GET_EARLIEST_MSG_STORETIME
//! (32).

use super::ext_header;

ext_header! {
    /// `QueryConsumerOffsetRequestHeader`.
    pub struct QueryConsumerOffsetRequestHeader {
        /// `topic`.
        pub topic: String = string("topic"),
        /// `queueId`.
        pub queue_id: i32 = i32("queueId"),
        /// `consumerGroup`.
        pub consumer_group: String = string("consumerGroup"),
    }
}

ext_header! {
    /// `UpdateConsumerOffsetRequestHeader`.
    pub struct UpdateConsumerOffsetRequestHeader {
        /// `topic`.
        pub topic: String = string("topic"),
        /// `queueId`.
        pub queue_id: i32 = i32("queueId"),
        /// `consumerGroup`.
        pub consumer_group: String = string("consumerGroup"),
        /// `commitOffset`.
        pub commit_offset: i64 = i64("commitOffset"),
    }
}

ext_header! {
    /// One queue of a topic: `GetMaxOffsetRequestHeader`,
    /// `GetMinOffsetRequestHeader`, `GetEarliestMsgStoretimeRequestHeader`.
    pub struct QueueRequestHeader {
        /// `topic`.
        pub topic: String = string("topic"),
        /// `queueId`.
        pub queue_id: i32 = i32("queueId"),
    }
}

ext_header! {
    /// `SearchOffsetRequestHeader`.
    pub struct SearchOffsetRequestHeader {
        /// `topic`.
        pub topic: String = string("topic"),
        /// `queueId`.
        pub queue_id: i32 = i32("queueId"),
        /// `timestamp`.
        pub timestamp: i64 = i64("timestamp"),
        /// `boundaryType`: `UPPER` or (default) `LOWER`.
        pub boundary_type: Option<String> = raw("boundaryType"),
    }
}
