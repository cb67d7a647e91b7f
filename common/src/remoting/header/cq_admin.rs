//! Headers of this broker's own consume-queue backend codes:
//! RMQ_CQ_VERIFY (30002), RMQ_CQ_ADD_SHADOW (30003) and RMQ_CQ_SERVE
//! (30004).

use super::ext_header;

ext_header! {
    /// RMQ_CQ_VERIFY's fields.
    pub struct CqVerifyRequestHeader {
        /// `every`: compare every n-th unit (default 1).
        pub every: Option<i64> = opt_i64("every"),
        /// `maxDifferences`: stop after this many (default 20).
        pub max_differences: Option<i32> = opt_i32("maxDifferences"),
    }
}

ext_header! {
    /// RMQ_CQ_ADD_SHADOW's and RMQ_CQ_SERVE's field.
    pub struct CqBackendRequestHeader {
        /// `backend`: file or rocksdb (RocketMQ's names accepted).
        pub backend: String = string("backend"),
    }
}
