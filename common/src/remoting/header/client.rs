//! Headers of the client-table requests: UNREGISTER_CLIENT (35) and
//! GET_CONSUMER_LIST_BY_GROUP (38). HEART_BEAT and CHECK_CLIENT_CONFIG are
//! all body.

use super::ext_header;

ext_header! {
    /// `UnregisterClientRequestHeader` (`clientID` is the connection's).
    pub struct UnregisterClientRequestHeader {
        /// `producerGroup`, as sent.
        pub producer_group: Option<String> = raw("producerGroup"),
        /// `consumerGroup`, as sent.
        pub consumer_group: Option<String> = raw("consumerGroup"),
    }
}

ext_header! {
    /// `GetConsumerListByGroupRequestHeader`.
    pub struct GetConsumerListByGroupRequestHeader {
        /// `consumerGroup`.
        pub consumer_group: String = string("consumerGroup"),
    }
}
