//! Headers of QUERY_MESSAGE (12) and VIEW_MESSAGE_BY_ID (33).

use super::ext_header;

ext_header! {
    /// `QueryMessageRequestHeader`.
    pub struct QueryMessageRequestHeader {
        /// `topic`.
        pub topic: String = string("topic"),
        /// `key`.
        pub key: String = string("key"),
        /// `maxNum`.
        pub max_num: i32 = i32("maxNum"),
        /// `beginTimestamp`.
        pub begin_timestamp: Option<i64> = opt_i64("beginTimestamp"),
        /// `endTimestamp`.
        pub end_timestamp: Option<i64> = opt_i64("endTimestamp"),
    }
}

ext_header! {
    /// `ViewMessageRequestHeader`.
    pub struct ViewMessageByIdRequestHeader {
        /// `offset`: the message's CommitLog offset.
        pub offset: i64 = i64("offset"),
    }
}
