//! Request and response codes, with the values of RocketMQ's Java
//! `RequestCode` and `ResponseCode` (plus `RemotingSysResponseCode`).
//!
//! The `code` field of a command stays a plain `i32` on [`super::RemotingCommand`]
//! so unknown codes survive decoding; these enums name the known ones.

/// Declares a `#[repr(i32)]` wire-code enum with `from_i32`, `name` and `ALL`.
macro_rules! wire_codes {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $variant:ident = $value:literal => $java:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(i32)]
        pub enum $name {
            $(
                #[doc = concat!("`", $java, "` (", stringify!($value), ").")]
                $variant = $value,
            )+
        }

        impl $name {
            /// Every known code, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The known code with this wire value, if any.
            pub fn from_i32(value: i32) -> Option<Self> {
                match value {
                    $( $value => Some($name::$variant), )+
                    _ => None,
                }
            }

            /// The wire value.
            pub fn code(self) -> i32 {
                self as i32
            }

            /// The Java constant name, for logs and metric labels.
            pub fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $java, )+
                }
            }
        }

        impl From<$name> for i32 {
            fn from(code: $name) -> i32 {
                code as i32
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}({})", self.name(), self.code())
            }
        }
    };
}

wire_codes! {
    /// The request codes this broker and its embedded NameServer understand.
    pub enum RequestCode {
        SendMessage = 10 => "SEND_MESSAGE",
        PullMessage = 11 => "PULL_MESSAGE",
        QueryMessage = 12 => "QUERY_MESSAGE",
        QueryBrokerOffset = 13 => "QUERY_BROKER_OFFSET",
        QueryConsumerOffset = 14 => "QUERY_CONSUMER_OFFSET",
        UpdateConsumerOffset = 15 => "UPDATE_CONSUMER_OFFSET",
        UpdateAndCreateTopic = 17 => "UPDATE_AND_CREATE_TOPIC",
        UpdateAndCreateTopicList = 18 => "UPDATE_AND_CREATE_TOPIC_LIST",
        GetAllTopicConfig = 21 => "GET_ALL_TOPIC_CONFIG",
        GetBrokerConfig = 26 => "GET_BROKER_CONFIG",
        SearchOffsetByTimestamp = 29 => "SEARCH_OFFSET_BY_TIMESTAMP",
        GetMaxOffset = 30 => "GET_MAX_OFFSET",
        GetMinOffset = 31 => "GET_MIN_OFFSET",
        GetEarliestMsgStoretime = 32 => "GET_EARLIEST_MSG_STORETIME",
        ViewMessageById = 33 => "VIEW_MESSAGE_BY_ID",
        HeartBeat = 34 => "HEART_BEAT",
        UnregisterClient = 35 => "UNREGISTER_CLIENT",
        ConsumerSendMsgBack = 36 => "CONSUMER_SEND_MSG_BACK",
        EndTransaction = 37 => "END_TRANSACTION",
        GetConsumerListByGroup = 38 => "GET_CONSUMER_LIST_BY_GROUP",
        CheckTransactionState = 39 => "CHECK_TRANSACTION_STATE",
        NotifyConsumerIdsChanged = 40 => "NOTIFY_CONSUMER_IDS_CHANGED",
        LockBatchMq = 41 => "LOCK_BATCH_MQ",
        UnlockBatchMq = 42 => "UNLOCK_BATCH_MQ",
        CheckClientConfig = 46 => "CHECK_CLIENT_CONFIG",
        GetKvConfig = 101 => "GET_KV_CONFIG",
        RegisterBroker = 103 => "REGISTER_BROKER",
        UnregisterBroker = 104 => "UNREGISTER_BROKER",
        GetRouteInfoByTopic = 105 => "GET_ROUTEINFO_BY_TOPIC",
        GetBrokerClusterInfo = 106 => "GET_BROKER_CLUSTER_INFO",
        SendMessageV2 = 310 => "SEND_MESSAGE_V2",
        SendBatchMessage = 320 => "SEND_BATCH_MESSAGE",
        DeleteExpiredCommitlog = 329 => "DELETE_EXPIRED_COMMITLOG",
        UpdateBrokerConfig = 25 => "UPDATE_BROKER_CONFIG",
        GetBrokerRuntimeInfo = 28 => "GET_BROKER_RUNTIME_INFO",
        UpdateAndCreateSubscriptionGroup = 200 => "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
        GetTopicStatsInfo = 202 => "GET_TOPIC_STATS_INFO",
        GetConsumerConnectionList = 203 => "GET_CONSUMER_CONNECTION_LIST",
        GetProducerConnectionList = 204 => "GET_PRODUCER_CONNECTION_LIST",
        GetAllTopicListFromNameserver = 206 => "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
        DeleteSubscriptionGroup = 207 => "DELETE_SUBSCRIPTIONGROUP",
        GetConsumeStats = 208 => "GET_CONSUME_STATS",
        DeleteTopicInBroker = 215 => "DELETE_TOPIC_IN_BROKER",
        UpdateAndCreateSubscriptionGroupList = 225 => "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST",
        DeleteTopicInNamesrv = 216 => "DELETE_TOPIC_IN_NAMESRV",
        ResetConsumerClientOffset = 220 => "RESET_CONSUMER_CLIENT_OFFSET",
        InvokeBrokerToResetOffset = 222 => "INVOKE_BROKER_TO_RESET_OFFSET",
        QueryTopicConsumeByWho = 300 => "QUERY_TOPIC_CONSUME_BY_WHO",
        CleanExpiredConsumequeue = 306 => "CLEAN_EXPIRED_CONSUMEQUEUE",
        SendReplyMessage = 324 => "SEND_REPLY_MESSAGE",
        SendReplyMessageV2 = 325 => "SEND_REPLY_MESSAGE_V2",
        PushReplyMessageToClient = 326 => "PUSH_REPLY_MESSAGE_TO_CLIENT",
        LitePullMessage = 361 => "LITE_PULL_MESSAGE",
        PutKvConfig = 100 => "PUT_KV_CONFIG",
        DeleteKvConfig = 102 => "DELETE_KV_CONFIG",
        GetAllSubscriptiongroupConfig = 201 => "GET_ALL_SUBSCRIPTIONGROUP_CONFIG",
        WipeWritePermOfBroker = 205 => "WIPE_WRITE_PERM_OF_BROKER",
        GetKvlistByNamespace = 219 => "GET_KVLIST_BY_NAMESPACE",
        GetConsumerStatusFromClient = 221 => "GET_CONSUMER_STATUS_FROM_CLIENT",
        InvokeBrokerToGetConsumerStatus = 223 => "INVOKE_BROKER_TO_GET_CONSUMER_STATUS",
        GetTopicsByCluster = 224 => "GET_TOPICS_BY_CLUSTER",
        QueryConsumeTimeSpan = 303 => "QUERY_CONSUME_TIME_SPAN",
        GetSystemTopicListFromNs = 304 => "GET_SYSTEM_TOPIC_LIST_FROM_NS",
        GetSystemTopicListFromBroker = 305 => "GET_SYSTEM_TOPIC_LIST_FROM_BROKER",
        GetConsumerRunningInfo = 307 => "GET_CONSUMER_RUNNING_INFO",
        QueryCorrectionOffset = 308 => "QUERY_CORRECTION_OFFSET",
        ConsumeMessageDirectly = 309 => "CONSUME_MESSAGE_DIRECTLY",
        GetUnitTopicList = 311 => "GET_UNIT_TOPIC_LIST",
        GetHasUnitSubTopicList = 312 => "GET_HAS_UNIT_SUB_TOPIC_LIST",
        GetHasUnitSubUnunitTopicList = 313 => "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST",
        CloneGroupOffset = 314 => "CLONE_GROUP_OFFSET",
        ViewBrokerStatsData = 315 => "VIEW_BROKER_STATS_DATA",
        CleanUnusedTopic = 316 => "CLEAN_UNUSED_TOPIC",
        GetBrokerConsumeStats = 317 => "GET_BROKER_CONSUME_STATS",
        UpdateNamesrvConfig = 318 => "UPDATE_NAMESRV_CONFIG",
        GetNamesrvConfig = 319 => "GET_NAMESRV_CONFIG",
        QueryConsumeQueue = 321 => "QUERY_CONSUME_QUEUE",
        QueryDataVersion = 322 => "QUERY_DATA_VERSION",
        ResumeCheckHalfMessage = 323 => "RESUME_CHECK_HALF_MESSAGE",
        AddWritePermOfBroker = 327 => "ADD_WRITE_PERM_OF_BROKER",
        GetAllProducerInfo = 328 => "GET_ALL_PRODUCER_INFO",
        GetAllConsumerOffset = 43 => "GET_ALL_CONSUMER_OFFSET",
        GetAllDelayOffset = 45 => "GET_ALL_DELAY_OFFSET",
        UpdateAndCreateAclConfig = 50 => "UPDATE_AND_CREATE_ACL_CONFIG",
        DeleteAclConfig = 51 => "DELETE_ACL_CONFIG",
        GetBrokerClusterAclInfo = 52 => "GET_BROKER_CLUSTER_ACL_INFO",
        UpdateGlobalWhiteAddrsConfig = 53 => "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG",
        GetBrokerClusterAclConfig = 54 => "GET_BROKER_CLUSTER_ACL_CONFIG",
        RmqCqStatus = 30001 => "RMQ_CQ_STATUS",
        RmqCqVerify = 30002 => "RMQ_CQ_VERIFY",
        RmqCqAddShadow = 30003 => "RMQ_CQ_ADD_SHADOW",
        RmqCqServe = 30004 => "RMQ_CQ_SERVE",
        RmqCqDropShadow = 30005 => "RMQ_CQ_DROP_SHADOW",
    }
}

wire_codes! {
    /// The response codes this broker sends or a client must recognise.
    pub enum ResponseCode {
        Success = 0 => "SUCCESS",
        SystemError = 1 => "SYSTEM_ERROR",
        SystemBusy = 2 => "SYSTEM_BUSY",
        RequestCodeNotSupported = 3 => "REQUEST_CODE_NOT_SUPPORTED",
        FlushDiskTimeout = 10 => "FLUSH_DISK_TIMEOUT",
        SlaveNotAvailable = 11 => "SLAVE_NOT_AVAILABLE",
        FlushSlaveTimeout = 12 => "FLUSH_SLAVE_TIMEOUT",
        MessageIllegal = 13 => "MESSAGE_ILLEGAL",
        ServiceNotAvailable = 14 => "SERVICE_NOT_AVAILABLE",
        NoPermission = 16 => "NO_PERMISSION",
        TopicNotExist = 17 => "TOPIC_NOT_EXIST",
        PullNotFound = 19 => "PULL_NOT_FOUND",
        PullRetryImmediately = 20 => "PULL_RETRY_IMMEDIATELY",
        PullOffsetMoved = 21 => "PULL_OFFSET_MOVED",
        QueryNotFound = 22 => "QUERY_NOT_FOUND",
        SubscriptionParseFailed = 23 => "SUBSCRIPTION_PARSE_FAILED",
        SubscriptionNotExist = 24 => "SUBSCRIPTION_NOT_EXIST",
        SubscriptionNotLatest = 25 => "SUBSCRIPTION_NOT_LATEST",
        SubscriptionGroupNotExist = 26 => "SUBSCRIPTION_GROUP_NOT_EXIST",
        TransactionShouldCommit = 200 => "TRANSACTION_SHOULD_COMMIT",
        TransactionShouldRollback = 201 => "TRANSACTION_SHOULD_ROLLBACK",
        TransactionStateUnknow = 202 => "TRANSACTION_STATE_UNKNOW",
        ConsumerNotOnline = 206 => "CONSUMER_NOT_ONLINE",
        NoMessage = 208 => "NO_MESSAGE",
        UpdateAndCreateAclConfigFailed = 209 => "UPDATE_AND_CREATE_ACL_CONFIG_FAILED",
        DeleteAclConfigFailed = 210 => "DELETE_ACL_CONFIG_FAILED",
        UpdateGlobalWhiteAddrsConfigFailed = 211 => "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED",
        FlowControl = 215 => "FLOW_CONTROL",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins the Java values, written out independently of the enum; a retired
    /// code is never reused.
    #[test]
    fn request_codes_match_java() {
        let expected: &[(RequestCode, i32)] = &[
            (RequestCode::SendMessage, 10),
            (RequestCode::PullMessage, 11),
            (RequestCode::QueryMessage, 12),
            (RequestCode::QueryBrokerOffset, 13),
            (RequestCode::QueryConsumerOffset, 14),
            (RequestCode::UpdateConsumerOffset, 15),
            (RequestCode::UpdateAndCreateTopic, 17),
            (RequestCode::UpdateAndCreateTopicList, 18),
            (RequestCode::GetAllTopicConfig, 21),
            (RequestCode::GetBrokerConfig, 26),
            (RequestCode::SearchOffsetByTimestamp, 29),
            (RequestCode::GetMaxOffset, 30),
            (RequestCode::GetMinOffset, 31),
            (RequestCode::GetEarliestMsgStoretime, 32),
            (RequestCode::ViewMessageById, 33),
            (RequestCode::HeartBeat, 34),
            (RequestCode::UnregisterClient, 35),
            (RequestCode::ConsumerSendMsgBack, 36),
            (RequestCode::EndTransaction, 37),
            (RequestCode::GetConsumerListByGroup, 38),
            (RequestCode::CheckTransactionState, 39),
            (RequestCode::DeleteExpiredCommitlog, 329),
            (RequestCode::NotifyConsumerIdsChanged, 40),
            (RequestCode::LockBatchMq, 41),
            (RequestCode::UnlockBatchMq, 42),
            (RequestCode::CheckClientConfig, 46),
            (RequestCode::GetKvConfig, 101),
            (RequestCode::RegisterBroker, 103),
            (RequestCode::UnregisterBroker, 104),
            (RequestCode::GetRouteInfoByTopic, 105),
            (RequestCode::GetBrokerClusterInfo, 106),
            (RequestCode::SendMessageV2, 310),
            (RequestCode::SendBatchMessage, 320),
            (RequestCode::UpdateBrokerConfig, 25),
            (RequestCode::GetBrokerRuntimeInfo, 28),
            (RequestCode::UpdateAndCreateSubscriptionGroup, 200),
            (RequestCode::GetTopicStatsInfo, 202),
            (RequestCode::GetConsumerConnectionList, 203),
            (RequestCode::GetProducerConnectionList, 204),
            (RequestCode::GetAllTopicListFromNameserver, 206),
            (RequestCode::DeleteSubscriptionGroup, 207),
            (RequestCode::GetConsumeStats, 208),
            (RequestCode::DeleteTopicInBroker, 215),
            (RequestCode::UpdateAndCreateSubscriptionGroupList, 225),
            (RequestCode::DeleteTopicInNamesrv, 216),
            (RequestCode::ResetConsumerClientOffset, 220),
            (RequestCode::InvokeBrokerToResetOffset, 222),
            (RequestCode::QueryTopicConsumeByWho, 300),
            (RequestCode::CleanExpiredConsumequeue, 306),
            (RequestCode::SendReplyMessage, 324),
            (RequestCode::SendReplyMessageV2, 325),
            (RequestCode::PushReplyMessageToClient, 326),
            (RequestCode::LitePullMessage, 361),
            (RequestCode::PutKvConfig, 100),
            (RequestCode::DeleteKvConfig, 102),
            (RequestCode::GetAllSubscriptiongroupConfig, 201),
            (RequestCode::WipeWritePermOfBroker, 205),
            (RequestCode::GetKvlistByNamespace, 219),
            (RequestCode::GetConsumerStatusFromClient, 221),
            (RequestCode::InvokeBrokerToGetConsumerStatus, 223),
            (RequestCode::GetTopicsByCluster, 224),
            (RequestCode::QueryConsumeTimeSpan, 303),
            (RequestCode::GetSystemTopicListFromNs, 304),
            (RequestCode::GetSystemTopicListFromBroker, 305),
            (RequestCode::GetConsumerRunningInfo, 307),
            (RequestCode::QueryCorrectionOffset, 308),
            (RequestCode::ConsumeMessageDirectly, 309),
            (RequestCode::GetUnitTopicList, 311),
            (RequestCode::GetHasUnitSubTopicList, 312),
            (RequestCode::GetHasUnitSubUnunitTopicList, 313),
            (RequestCode::CloneGroupOffset, 314),
            (RequestCode::ViewBrokerStatsData, 315),
            (RequestCode::CleanUnusedTopic, 316),
            (RequestCode::GetBrokerConsumeStats, 317),
            (RequestCode::UpdateNamesrvConfig, 318),
            (RequestCode::GetNamesrvConfig, 319),
            (RequestCode::QueryConsumeQueue, 321),
            (RequestCode::QueryDataVersion, 322),
            (RequestCode::ResumeCheckHalfMessage, 323),
            (RequestCode::AddWritePermOfBroker, 327),
            (RequestCode::GetAllProducerInfo, 328),
            (RequestCode::GetAllConsumerOffset, 43),
            (RequestCode::GetAllDelayOffset, 45),
            (RequestCode::UpdateAndCreateAclConfig, 50),
            (RequestCode::DeleteAclConfig, 51),
            (RequestCode::GetBrokerClusterAclInfo, 52),
            (RequestCode::UpdateGlobalWhiteAddrsConfig, 53),
            (RequestCode::GetBrokerClusterAclConfig, 54),
            (RequestCode::RmqCqStatus, 30001),
            (RequestCode::RmqCqVerify, 30002),
            (RequestCode::RmqCqAddShadow, 30003),
            (RequestCode::RmqCqServe, 30004),
            (RequestCode::RmqCqDropShadow, 30005),
        ];
        assert_eq!(expected.len(), RequestCode::ALL.len());
        for &(code, value) in expected {
            assert_eq!(code as i32, value, "{}", code.name());
            assert_eq!(i32::from(code), value);
            assert_eq!(RequestCode::from_i32(value), Some(code));
        }
        assert_eq!(RequestCode::from_i32(16), None);
        assert_eq!(
            RequestCode::GetRouteInfoByTopic.name(),
            "GET_ROUTEINFO_BY_TOPIC"
        );
    }

    #[test]
    fn response_codes_match_java() {
        let expected: &[(ResponseCode, i32)] = &[
            (ResponseCode::Success, 0),
            (ResponseCode::SystemError, 1),
            (ResponseCode::SystemBusy, 2),
            (ResponseCode::RequestCodeNotSupported, 3),
            (ResponseCode::FlushDiskTimeout, 10),
            (ResponseCode::SlaveNotAvailable, 11),
            (ResponseCode::FlushSlaveTimeout, 12),
            (ResponseCode::MessageIllegal, 13),
            (ResponseCode::ServiceNotAvailable, 14),
            (ResponseCode::NoPermission, 16),
            (ResponseCode::TopicNotExist, 17),
            (ResponseCode::PullNotFound, 19),
            (ResponseCode::PullRetryImmediately, 20),
            (ResponseCode::PullOffsetMoved, 21),
            (ResponseCode::QueryNotFound, 22),
            (ResponseCode::SubscriptionParseFailed, 23),
            (ResponseCode::SubscriptionNotExist, 24),
            (ResponseCode::SubscriptionNotLatest, 25),
            (ResponseCode::SubscriptionGroupNotExist, 26),
            (ResponseCode::TransactionShouldCommit, 200),
            (ResponseCode::TransactionShouldRollback, 201),
            (ResponseCode::TransactionStateUnknow, 202),
            (ResponseCode::ConsumerNotOnline, 206),
            (ResponseCode::NoMessage, 208),
            (ResponseCode::UpdateAndCreateAclConfigFailed, 209),
            (ResponseCode::DeleteAclConfigFailed, 210),
            (ResponseCode::UpdateGlobalWhiteAddrsConfigFailed, 211),
            (ResponseCode::FlowControl, 215),
        ];
        assert_eq!(expected.len(), ResponseCode::ALL.len());
        for &(code, value) in expected {
            assert_eq!(code as i32, value, "{}", code.name());
            assert_eq!(ResponseCode::from_i32(value), Some(code));
        }
        assert_eq!(ResponseCode::from_i32(-1), None);
        assert_eq!(ResponseCode::PullNotFound.to_string(), "PULL_NOT_FOUND(19)");
    }
}
