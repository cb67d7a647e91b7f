//! RECALL_MESSAGE's header (RocketMQ 5.x `RecallMessageRequestHeader`).

use super::ext_header;

ext_header! {
    /// `RecallMessageRequestHeader`.
    pub struct RecallMessageRequestHeader {
        /// `producerGroup` (may be absent).
        pub producer_group: Option<String> = raw("producerGroup"),
        /// `topic`: the recalled message's topic.
        pub topic: String = string("topic"),
        /// `recallHandle`: as the send answer carried it.
        pub recall_handle: String = string("recallHandle"),
    }
}
