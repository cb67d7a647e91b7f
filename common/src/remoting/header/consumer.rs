//! Headers of the requests the broker answers by asking consumers:
//! INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223), GET_CONSUMER_RUNNING_INFO
//! (307) and CONSUME_MESSAGE_DIRECTLY (309).

use super::ext_header;

ext_header! {
    /// `GetConsumerStatusRequestHeader`.
    pub struct ConsumerStatusRequestHeader {
        /// `topic`.
        pub topic: String = string("topic"),
        /// `group`.
        pub group: String = string("group"),
        /// `clientAddr`: only this client id when given.
        pub client_addr: Option<String> = non_empty("clientAddr"),
    }
}

ext_header! {
    /// `GetConsumerRunningInfoRequestHeader`.
    pub struct ConsumerRunningInfoRequestHeader {
        /// `consumerGroup`.
        pub consumer_group: String = string("consumerGroup"),
        /// `clientId`, as sent.
        pub client_id: Option<String> = raw("clientId"),
    }
}

ext_header! {
    /// `ConsumeMessageDirectlyResultRequestHeader`.
    pub struct ConsumeMessageDirectlyRequestHeader {
        /// `msgId`: an offset message id.
        pub msg_id: String = string("msgId"),
        /// `consumerGroup`.
        pub consumer_group: String = string("consumerGroup"),
        /// `clientId`, as sent.
        pub client_id: Option<String> = raw("clientId"),
    }
}
