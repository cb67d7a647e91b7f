//! Headers of the group administration codes: DELETE_SUBSCRIPTIONGROUP
//! (207), GET_CONSUMER_CONNECTION_LIST (203), GET_PRODUCER_CONNECTION_LIST
//! (204), INVOKE_BROKER_TO_RESET_OFFSET (222), CLONE_GROUP_OFFSET (314) and
//! QUERY_CORRECTION_OFFSET (308), and GET_SUBSCRIPTIONGROUP_CONFIG (352).

use super::ext_header;

ext_header! {
    /// `DeleteSubscriptionGroupRequestHeader`.
    pub struct DeleteGroupRequestHeader {
        /// `groupName`.
        pub group_name: String = string("groupName"),
        /// `removeOffset` (RocketMQ 4.x's name of the flag).
        pub remove_offset: Option<bool> = opt_bool("removeOffset"),
        /// `cleanOffset` (5.x's name of the same flag; mqadmin 5.3.3
        /// `deleteSubGroup -r true` sends only this one).
        pub clean_offset: Option<bool> = opt_bool("cleanOffset"),
    }
}

ext_header! {
    /// `GetConsumerConnectionListRequestHeader`.
    pub struct ConsumerConnectionRequestHeader {
        /// `consumerGroup`.
        pub consumer_group: String = string("consumerGroup"),
    }
}

ext_header! {
    /// `GetProducerConnectionListRequestHeader`.
    pub struct ProducerConnectionRequestHeader {
        /// `producerGroup`.
        pub producer_group: String = string("producerGroup"),
    }
}

ext_header! {
    /// `ResetOffsetRequestHeader`.
    pub struct ResetOffsetRequestHeader {
        /// `topic`.
        pub topic: String = string("topic"),
        /// `group`.
        pub group: String = string("group"),
        /// `timestamp`.
        pub timestamp: i64 = i64("timestamp"),
        /// `isForce` (default true).
        pub is_force: Option<bool> = opt_bool("isForce"),
    }
}

ext_header! {
    /// `CloneGroupOffsetRequestHeader`.
    pub struct CloneGroupOffsetRequestHeader {
        /// `srcGroup`.
        pub src_group: String = string("srcGroup"),
        /// `destGroup`.
        pub dest_group: String = string("destGroup"),
        /// `topic`: every topic of `srcGroup` when not given.
        pub topic: Option<String> = non_empty("topic"),
        /// `offline`.
        pub offline: Option<bool> = opt_bool("offline"),
    }
}

ext_header! {
    /// `QueryCorrectionOffsetHeader`.
    pub struct CorrectionOffsetRequestHeader {
        /// `topic`.
        pub topic: String = string("topic"),
        /// `compareGroup`.
        pub compare_group: String = string("compareGroup"),
        /// `filterGroups`: comma-separated, as sent.
        pub filter_groups: Option<String> = raw("filterGroups"),
    }
}

ext_header! {
    /// `GetSubscriptionGroupConfigRequestHeader` (RocketMQ 5.x).
    pub struct GetGroupConfigRequestHeader {
        /// `group`.
        pub group: String = string("group"),
    }
}
