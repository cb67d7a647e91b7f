//! Request and response codes, with the values of RocketMQ's Java
//! `RequestCode` and `ResponseCode` (plus `RemotingSysResponseCode`).
//!
//! The `code` field of a command stays a plain `i32` on [`super::RemotingCommand`]
//! so unknown codes survive decoding; these enums name the known ones.
//! [`RequestCode`] is generated from the request table in
//! [`super::requests`].

pub use super::requests::RequestCode;

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
pub(crate) use wire_codes;

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
        InvalidParameter = 29 => "INVALID_PARAMETER",
        TransactionShouldCommit = 200 => "TRANSACTION_SHOULD_COMMIT",
        TransactionShouldRollback = 201 => "TRANSACTION_SHOULD_ROLLBACK",
        TransactionStateUnknow = 202 => "TRANSACTION_STATE_UNKNOW",
        ConsumerNotOnline = 206 => "CONSUMER_NOT_ONLINE",
        NoMessage = 208 => "NO_MESSAGE",
        UpdateAndCreateAclConfigFailed = 209 => "UPDATE_AND_CREATE_ACL_CONFIG_FAILED",
        DeleteAclConfigFailed = 210 => "DELETE_ACL_CONFIG_FAILED",
        UpdateGlobalWhiteAddrsConfigFailed = 211 => "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED",
        FlowControl = 215 => "FLOW_CONTROL",
        IllegalOperation = 604 => "ILLEGAL_OPERATION",
        ControllerFencedMasterEpoch = 2000 => "CONTROLLER_FENCED_MASTER_EPOCH",
        ControllerFencedSyncStateSetEpoch = 2001 => "CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH",
        ControllerInvalidMaster = 2002 => "CONTROLLER_INVALID_MASTER",
        ControllerInvalidReplicas = 2003 => "CONTROLLER_INVALID_REPLICAS",
        ControllerMasterNotAvailable = 2004 => "CONTROLLER_MASTER_NOT_AVAILABLE",
        ControllerInvalidRequest = 2005 => "CONTROLLER_INVALID_REQUEST",
        ControllerBrokerNotAlive = 2006 => "CONTROLLER_BROKER_NOT_ALIVE",
        ControllerNotLeader = 2007 => "CONTROLLER_NOT_LEADER",
        ControllerBrokerMetadataNotExist = 2008 => "CONTROLLER_BROKER_METADATA_NOT_EXIST",
        ControllerInvalidCleanBrokerMetadata = 2009 => "CONTROLLER_INVALID_CLEAN_BROKER_METADATA",
        ControllerBrokerNeedToBeRegistered = 2010 => "CONTROLLER_BROKER_NEED_TO_BE_REGISTERED",
        ControllerMasterStillExist = 2011 => "CONTROLLER_MASTER_STILL_EXIST",
        ControllerElectMasterFailed = 2012 => "CONTROLLER_ELECT_MASTER_FAILED",
        ControllerAlterSyncStateSetFailed = 2013 => "CONTROLLER_ALTER_SYNC_STATE_SET_FAILED",
        ControllerBrokerIdInvalid = 2014 => "CONTROLLER_BROKER_ID_INVALID",
        ControllerJraftInternalError = 2015 => "CONTROLLER_JRAFT_INTERNAL_ERROR",
        ControllerBrokerLiveInfoNotExists = 2016 => "CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS",
    }
}

impl ResponseCode {
    /// RocketMQ 5.x's POLLING_FULL: a POP or NOTIFICATION wait refused
    /// because too many wait. 5.x reuses 4.x's number 209.
    pub const POLLING_FULL: Self = Self::UpdateAndCreateAclConfigFailed;
    /// RocketMQ 5.x's POLLING_TIMEOUT: a POP found nothing (or waited out
    /// its poll time). 5.x reuses 4.x's number 210.
    pub const POLLING_TIMEOUT: Self = Self::DeleteAclConfigFailed;
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
            (RequestCode::GetTopicConfig, 351),
            (RequestCode::GetSubscriptionGroupConfig, 352),
            (RequestCode::LitePullMessage, 361),
            (RequestCode::RecallMessage, 370),
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
            (RequestCode::GetTimerCheckPoint, 60),
            (RequestCode::GetTimerMetrics, 61),
            (RequestCode::QueryTopicsByConsumer, 343),
            (RequestCode::QuerySubscriptionByConsumer, 345),
            (RequestCode::UpdateAndGetGroupForbidden, 353),
            (RequestCode::CheckRocksdbCqWriteProgress, 354),
            (RequestCode::ExportRocksdbConfigToJson, 355),
            (RequestCode::QueryAssignment, 400),
            (RequestCode::SetMessageRequestMode, 401),
            (RequestCode::GetAllMessageRequestMode, 402),
            (RequestCode::UpdateAndCreateStaticTopic, 513),
            (RequestCode::NotifyMinBrokerIdChange, 905),
            (RequestCode::ExchangeBrokerHaInfo, 906),
            (RequestCode::GetBrokerHaStatus, 907),
            (RequestCode::ResetMasterFlushOffset, 908),
            (RequestCode::GetBrokerEpochCache, 1007),
            (RequestCode::NotifyBrokerRoleChanged, 1008),
            (RequestCode::UpdateColdDataFlowCtrConfig, 2001),
            (RequestCode::RemoveColdDataFlowCtrConfig, 2002),
            (RequestCode::GetColdDataFlowCtrInfo, 2003),
            (RequestCode::SetCommitlogReadMode, 2004),
            (RequestCode::AuthCreateUser, 3001),
            (RequestCode::AuthUpdateUser, 3002),
            (RequestCode::AuthDeleteUser, 3003),
            (RequestCode::AuthGetUser, 3004),
            (RequestCode::AuthListUser, 3005),
            (RequestCode::AuthCreateAcl, 3006),
            (RequestCode::AuthUpdateAcl, 3007),
            (RequestCode::AuthDeleteAcl, 3008),
            (RequestCode::AuthGetAcl, 3009),
            (RequestCode::AuthListAcl, 3010),
            (RequestCode::RmqCqStatus, 30001),
            (RequestCode::RmqCqVerify, 30002),
            (RequestCode::RmqCqAddShadow, 30003),
            (RequestCode::RmqCqServe, 30004),
            (RequestCode::RmqCqDropShadow, 30005),
            (RequestCode::PopMessage, 200050),
            (RequestCode::AckMessage, 200051),
            (RequestCode::PeekMessage, 200052),
            (RequestCode::ChangeMessageInvisibletime, 200053),
            (RequestCode::Notification, 200054),
            (RequestCode::PollingInfo, 200055),
            (RequestCode::PopRollback, 200056),
            (RequestCode::BatchAckMessage, 200151),
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
            (ResponseCode::InvalidParameter, 29),
            (ResponseCode::TransactionShouldCommit, 200),
            (ResponseCode::TransactionShouldRollback, 201),
            (ResponseCode::TransactionStateUnknow, 202),
            (ResponseCode::ConsumerNotOnline, 206),
            (ResponseCode::NoMessage, 208),
            (ResponseCode::UpdateAndCreateAclConfigFailed, 209),
            (ResponseCode::DeleteAclConfigFailed, 210),
            (ResponseCode::UpdateGlobalWhiteAddrsConfigFailed, 211),
            (ResponseCode::FlowControl, 215),
            (ResponseCode::IllegalOperation, 604),
            (ResponseCode::ControllerFencedMasterEpoch, 2000),
            (ResponseCode::ControllerFencedSyncStateSetEpoch, 2001),
            (ResponseCode::ControllerInvalidMaster, 2002),
            (ResponseCode::ControllerInvalidReplicas, 2003),
            (ResponseCode::ControllerMasterNotAvailable, 2004),
            (ResponseCode::ControllerInvalidRequest, 2005),
            (ResponseCode::ControllerBrokerNotAlive, 2006),
            (ResponseCode::ControllerNotLeader, 2007),
            (ResponseCode::ControllerBrokerMetadataNotExist, 2008),
            (ResponseCode::ControllerInvalidCleanBrokerMetadata, 2009),
            (ResponseCode::ControllerBrokerNeedToBeRegistered, 2010),
            (ResponseCode::ControllerMasterStillExist, 2011),
            (ResponseCode::ControllerElectMasterFailed, 2012),
            (ResponseCode::ControllerAlterSyncStateSetFailed, 2013),
            (ResponseCode::ControllerBrokerIdInvalid, 2014),
            (ResponseCode::ControllerJraftInternalError, 2015),
            (ResponseCode::ControllerBrokerLiveInfoNotExists, 2016),
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
