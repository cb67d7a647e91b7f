//! The request table: one row per request code, from which the
//! [`RequestCode`] enum, the [`catalog`](super::catalog) (and so
//! `docs/request-codes.md`) and the typed [`BrokerRequest`] are generated.
//!
//! A row is `Variant = value, "JAVA_NAME", served, rule, [Header,] "note";`:
//! where the code is answered ([`Served`]), what the broker checks before
//! decoding it ([`Rule`]), and — in the `handled` section, the codes the
//! broker answers — the header it decodes into (one struct per header under
//! [`super::header`], [`NoHeader`] when the request is all body). Adding a
//! request code is one row here and one handler in the broker, plus its arm
//! in the broker's dispatch match (which the compiler asks for).

use super::catalog::{Entry, Served, TO_CLIENT};
use super::ext_fields::{ExtFields, HeaderError};
use super::header::*;

/// What the broker checks of a request before it decodes its header,
/// beyond the names every request's header fields follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Names, and a queue id is one of its topic's queues.
    Plain,
    /// A send: names only; the queue may be left to the broker (-1), and
    /// the send path checks the rest against the topic it may create.
    Send,
    /// Refused on a slave: its topics and groups are its master's (Java's
    /// "Can't modify topic or subscription group from slave broker").
    MasterMeta,
    /// Refused on a slave: a transaction ends on its master.
    MasterTxn,
    /// POP consumption: names only; a negative queue id means every queue,
    /// and the POP processors answer an out-of-range one as RocketMQ 5.x
    /// does (INVALID_PARAMETER or MESSAGE_ILLEGAL).
    Pop,
}

/// A header read from `extFields`, naming the missing or unreadable field
/// when it cannot be.
pub trait DecodeHeader: Sized {
    /// Reads the header.
    fn decode(ext: &ExtFields<'_>) -> Result<Self, HeaderError>;
}

/// The header of a request that carries everything in its body (or
/// nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NoHeader;

impl DecodeHeader for NoHeader {
    fn decode(_: &ExtFields<'_>) -> Result<Self, HeaderError> {
        Ok(NoHeader)
    }
}

/// Generates [`RequestCode`], [`CATALOG`] and [`BrokerRequest`] from the
/// table below.
macro_rules! requests {
    (
        handled {
            $( $hv:ident = $hval:literal, $hjava:literal, $hserved:expr, $hrule:ident, $hheader:ty, $hnote:literal; )+
        }
        unhandled {
            $( $uv:ident = $uval:literal, $ujava:literal, $userved:expr, $urule:ident, $unote:literal; )+
        }
    ) => {
        super::codes::wire_codes! {
            /// The request codes this broker and its embedded NameServer
            /// understand, with the values of RocketMQ's Java `RequestCode`.
            pub enum RequestCode {
                $( $hv = $hval => $hjava, )+
                $( $uv = $uval => $ujava, )+
            }
        }

        impl RequestCode {
            /// What the broker checks before decoding the request.
            pub fn rule(self) -> Rule {
                match self {
                    $( RequestCode::$hv => Rule::$hrule, )+
                    $( RequestCode::$uv => Rule::$urule, )+
                }
            }
        }

        /// The table, by code (rendered as `docs/request-codes.md`).
        pub const CATALOG: &[Entry] = &[
            $( Entry { code: RequestCode::$hv, served: $hserved, note: $hnote }, )+
            $( Entry { code: RequestCode::$uv, served: $userved, note: $unote }, )+
        ];

        /// A request the broker answers, decoded once: its code and its
        /// typed header.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum BrokerRequest {
            $(
                #[doc = concat!("`", $hjava, "` (", stringify!($hval), ").")]
                $hv($hheader),
            )+
        }

        impl BrokerRequest {
            /// The request `code` with the header in `ext`; `None` when the
            /// broker does not answer `code`.
            pub fn decode(
                code: RequestCode,
                ext: &ExtFields<'_>,
            ) -> Option<Result<Self, HeaderError>> {
                match code {
                    $( RequestCode::$hv => Some(
                        <$hheader as DecodeHeader>::decode(ext).map(BrokerRequest::$hv),
                    ), )+
                    _ => None,
                }
            }

            /// The request's code.
            pub fn code(&self) -> RequestCode {
                match self {
                    $( BrokerRequest::$hv(_) => RequestCode::$hv, )+
                }
            }
        }
    };
}

use Served::{Broker as B, NameServer as N, No};

requests! {
    handled {
        SendMessage = 10, "SEND_MESSAGE", B, Send, SendMessageRequestHeader, "";
        PullMessage = 11, "PULL_MESSAGE", B, Plain, PullMessageRequestHeader, "";
        QueryMessage = 12, "QUERY_MESSAGE", B, Plain, QueryMessageRequestHeader, "";
        QueryConsumerOffset = 14, "QUERY_CONSUMER_OFFSET", B, Plain, QueryConsumerOffsetRequestHeader, "";
        UpdateConsumerOffset = 15, "UPDATE_CONSUMER_OFFSET", B, Plain, UpdateConsumerOffsetRequestHeader, "";
        UpdateAndCreateTopic = 17, "UPDATE_AND_CREATE_TOPIC", B, MasterMeta, CreateTopicRequestHeader, "";
        UpdateAndCreateTopicList = 18, "UPDATE_AND_CREATE_TOPIC_LIST", B, MasterMeta, NoHeader, "RocketMQ 5.x's batch create; 4.9 has no such code";
        GetAllTopicConfig = 21, "GET_ALL_TOPIC_CONFIG", B, Plain, NoHeader, "";
        UpdateBrokerConfig = 25, "UPDATE_BROKER_CONFIG", B, Plain, NoHeader, "only brokerPermission, longPollingEnable, shortPollingTimeMills, maxReconsumeTimes and storeReplyMessageEnable change at runtime; any other key refuses the whole update by name (Java records every key, most without effect until restart); kept in config/broker.runtime.properties";
        GetBrokerConfig = 26, "GET_BROKER_CONFIG", B, Plain, NoHeader, "this broker's own keys";
        GetBrokerRuntimeInfo = 28, "GET_BROKER_RUNTIME_INFO", B, Plain, NoHeader, "thread-pool queue keys are 0: requests are not queued in pools here";
        GetBrokerEpochCache = 1007, "GET_BROKER_EPOCH_CACHE", B, Plain, NoHeader, "controller mode: the epoch file's entries (mqadmin getBrokerEpoch); SYSTEM_ERROR outside controller mode, as Java";
        NotifyBrokerRoleChanged = 1008, "NOTIFY_BROKER_ROLE_CHANGED", B, Plain, NoHeader, "controller mode: a controller's election result, acted on when its master epoch is newer than the broker's";
        SearchOffsetByTimestamp = 29, "SEARCH_OFFSET_BY_TIMESTAMP", B, Plain, SearchOffsetRequestHeader, "";
        GetMaxOffset = 30, "GET_MAX_OFFSET", B, Plain, QueueRequestHeader, "";
        GetMinOffset = 31, "GET_MIN_OFFSET", B, Plain, QueueRequestHeader, "";
        GetEarliestMsgStoretime = 32, "GET_EARLIEST_MSG_STORETIME", B, Plain, QueueRequestHeader, "";
        ViewMessageById = 33, "VIEW_MESSAGE_BY_ID", B, Plain, ViewMessageByIdRequestHeader, "";
        HeartBeat = 34, "HEART_BEAT", B, Plain, NoHeader, "";
        UnregisterClient = 35, "UNREGISTER_CLIENT", B, Plain, UnregisterClientRequestHeader, "";
        ConsumerSendMsgBack = 36, "CONSUMER_SEND_MSG_BACK", B, Plain, ConsumerSendMsgBackRequestHeader, "";
        EndTransaction = 37, "END_TRANSACTION", B, MasterTxn, EndTransactionRequestHeader, "";
        GetConsumerListByGroup = 38, "GET_CONSUMER_LIST_BY_GROUP", B, Plain, GetConsumerListByGroupRequestHeader, "";
        LockBatchMq = 41, "LOCK_BATCH_MQ", B, Plain, NoHeader, "";
        UnlockBatchMq = 42, "UNLOCK_BATCH_MQ", B, Plain, NoHeader, "";
        GetAllConsumerOffset = 43, "GET_ALL_CONSUMER_OFFSET", B, Plain, NoHeader, "queue ids as quoted JSON keys (fastjson writes them bare; both parse)";
        GetAllDelayOffset = 45, "GET_ALL_DELAY_OFFSET", B, Plain, NoHeader, "levels as quoted JSON keys (fastjson writes them bare; both parse)";
        CheckClientConfig = 46, "CHECK_CLIENT_CONFIG", B, Plain, NoHeader, "";
        UpdateAndCreateAclConfig = 50, "UPDATE_AND_CREATE_ACL_CONFIG", B, Plain, UpdateAclRequestHeader, "admin accounts only; DENY may be listed; refused with aclEnable=false (Java: a NullPointerException)";
        DeleteAclConfig = 51, "DELETE_ACL_CONFIG", B, Plain, DeleteAclRequestHeader, "admin accounts only";
        GetBrokerClusterAclInfo = 52, "GET_BROKER_CLUSTER_ACL_INFO", B, Plain, NoHeader, "refused with aclEnable=false (Java sends no answer)";
        UpdateGlobalWhiteAddrsConfig = 53, "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG", B, Plain, GlobalWhiteAddrsRequestHeader, "admin accounts only; aclFileFullPath may be left out";
        GetBrokerClusterAclConfig = 54, "GET_BROKER_CLUSTER_ACL_CONFIG", B, Plain, NoHeader, "admin accounts only (it answers secrets); refused with aclEnable=false (Java sends no answer)";
        GetKvConfig = 101, "GET_KV_CONFIG", N, Plain, NoHeader, "the broker also answers it, QUERY_NOT_FOUND (it keeps no KV config)";
        UpdateAndCreateSubscriptionGroup = 200, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP", B, MasterMeta, NoHeader, "";
        UpdateAndCreateSubscriptionGroupList = 225, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST", B, Plain, NoHeader, "RocketMQ 5.x's batch create; 4.9 has no such code";
        GetAllSubscriptiongroupConfig = 201, "GET_ALL_SUBSCRIPTIONGROUP_CONFIG", B, Plain, NoHeader, "no built-in groups (TOOLS_CONSUMER, ...) are listed: they are not created here";
        GetTopicStatsInfo = 202, "GET_TOPIC_STATS_INFO", B, Plain, TopicStatsRequestHeader, "";
        GetConsumerConnectionList = 203, "GET_CONSUMER_CONNECTION_LIST", B, Plain, ConsumerConnectionRequestHeader, "";
        GetProducerConnectionList = 204, "GET_PRODUCER_CONNECTION_LIST", B, Plain, ProducerConnectionRequestHeader, "";
        DeleteSubscriptionGroup = 207, "DELETE_SUBSCRIPTIONGROUP", B, MasterMeta, DeleteGroupRequestHeader, "";
        GetConsumeStats = 208, "GET_CONSUME_STATS", B, Plain, ConsumeStatsRequestHeader, "";
        DeleteTopicInBroker = 215, "DELETE_TOPIC_IN_BROKER", B, MasterMeta, DeleteTopicRequestHeader, "";
        InvokeBrokerToResetOffset = 222, "INVOKE_BROKER_TO_RESET_OFFSET", B, Plain, ResetOffsetRequestHeader, "";
        InvokeBrokerToGetConsumerStatus = 223, "INVOKE_BROKER_TO_GET_CONSUMER_STATUS", B, Plain, ConsumerStatusRequestHeader, "a group never online gets SYSTEM_ERROR naming it (Java: a NullPointerException)";
        QueryTopicConsumeByWho = 300, "QUERY_TOPIC_CONSUME_BY_WHO", B, Plain, TopicConsumeByWhoRequestHeader, "";
        QueryConsumeTimeSpan = 303, "QUERY_CONSUME_TIME_SPAN", B, Plain, ConsumeTimeSpanRequestHeader, "times print in UTC; delayTime of a group with no committed offset is the age of the oldest message (Java: now + 1)";
        GetSystemTopicListFromBroker = 305, "GET_SYSTEM_TOPIC_LIST_FROM_BROKER", B, Plain, NoHeader, "";
        CleanExpiredConsumequeue = 306, "CLEAN_EXPIRED_CONSUMEQUEUE", B, Plain, NoHeader, "";
        GetConsumerRunningInfo = 307, "GET_CONSUMER_RUNNING_INFO", B, Plain, ConsumerRunningInfoRequestHeader, "forwarded to the client named; its answer relayed";
        QueryCorrectionOffset = 308, "QUERY_CORRECTION_OFFSET", B, Plain, CorrectionOffsetRequestHeader, "filterGroups are left out without deleting their offsets, and compareGroup is compared (Java 4.9 deletes the former and, with its arguments swapped, never finds the latter)";
        ConsumeMessageDirectly = 309, "CONSUME_MESSAGE_DIRECTLY", B, Plain, ConsumeMessageDirectlyRequestHeader, "forwarded to the client named with the stored message; its answer relayed";
        SendMessageV2 = 310, "SEND_MESSAGE_V2", B, Send, SendMessageRequestHeader, "";
        CloneGroupOffset = 314, "CLONE_GROUP_OFFSET", B, Plain, CloneGroupOffsetRequestHeader, "with no topic, every topic of srcGroup is cloned (Java 4.9 clones nothing then)";
        ViewBrokerStatsData = 315, "VIEW_BROKER_STATS_DATA", B, Plain, ViewBrokerStatsRequestHeader, "TOPIC_PUT_NUMS/SIZE, GROUP_GET_NUMS/SIZE, SNDBCK_PUT_NUMS, BROKER_PUT/GET_NUMS; no per-queue items";
        CleanUnusedTopic = 316, "CLEAN_UNUSED_TOPIC", B, Plain, NoHeader, "";
        GetBrokerConsumeStats = 317, "GET_BROKER_CONSUME_STATS", B, Plain, BrokerConsumeStatsRequestHeader, "";
        SendBatchMessage = 320, "SEND_BATCH_MESSAGE", B, Send, SendMessageRequestHeader, "";
        QueryConsumeQueue = 321, "QUERY_CONSUME_QUEUE", B, Plain, QueryConsumeQueueRequestHeader, "both backends; at most 1,000 entries per request";
        ResumeCheckHalfMessage = 323, "RESUME_CHECK_HALF_MESSAGE", B, Plain, ResumeCheckHalfRequestHeader, "only a message of RMQ_SYS_TRANS_HALF_TOPIC is put back (Java copies any message there)";
        SendReplyMessage = 324, "SEND_REPLY_MESSAGE", B, Send, SendMessageRequestHeader, "";
        SendReplyMessageV2 = 325, "SEND_REPLY_MESSAGE_V2", B, Send, SendMessageRequestHeader, "";
        GetAllProducerInfo = 328, "GET_ALL_PRODUCER_INFO", B, Plain, NoHeader, "";
        DeleteExpiredCommitlog = 329, "DELETE_EXPIRED_COMMITLOG", B, Plain, NoHeader, "RocketMQ 5.x's code: one clean pass now";
        GetTopicConfig = 351, "GET_TOPIC_CONFIG", B, Plain, GetTopicConfigRequestHeader, "RocketMQ 5.x's code: one topic's config with its attributes; no static-topic mapping (none exist here)";
        GetSubscriptionGroupConfig = 352, "GET_SUBSCRIPTIONGROUP_CONFIG", B, Plain, GetGroupConfigRequestHeader, "RocketMQ 5.x's code: one group's config, created first with the defaults when autoCreateSubscriptionGroup";
        LitePullMessage = 361, "LITE_PULL_MESSAGE", B, Plain, PullMessageRequestHeader, "RocketMQ 5.x's lite pull code; served as PULL_MESSAGE";
        RecallMessage = 370, "RECALL_MESSAGE", B, Plain, RecallMessageRequestHeader, "RocketMQ 5.x: cancels a timer message by the recallHandle its send answer carried; refused unless recallMessageEnable (off by default, as 5.x)";
        QueryAssignment = 400, "QUERY_ASSIGNMENT", B, Plain, NoHeader, "RocketMQ 5.x server-side assignment (a push consumer with clientRebalance off): AVG or AVG_BY_CIRCLE over the group's online clients, in the mode SET_MESSAGE_REQUEST_MODE set (else defaultMessageRequestMode); the queues are this broker's own (no route cache of other brokers)";
        SetMessageRequestMode = 401, "SET_MESSAGE_REQUEST_MODE", B, Plain, NoHeader, "RocketMQ 5.x: PULL or POP per (topic, group), kept in config/messageRequestMode.json";
        GetAllMessageRequestMode = 402, "GET_ALL_MESSAGE_REQUEST_MODE", B, Plain, NoHeader, "RocketMQ 5.x: the table config/messageRequestMode.json holds";
        PopMessage = 200050, "POP_MESSAGE", B, Pop, PopMessageRequestHeader, "RocketMQ 5.x POP; POP state in the revive topic, or in RocksDB with popConsumerKVServiceEnable";
        AckMessage = 200051, "ACK_MESSAGE", B, Pop, AckMessageRequestHeader, "RocketMQ 5.x POP";
        PeekMessage = 200052, "PEEK_MESSAGE", B, Pop, PeekMessageRequestHeader, "RocketMQ 5.x POP";
        ChangeMessageInvisibletime = 200053, "CHANGE_MESSAGE_INVISIBLETIME", B, Pop, ChangeInvisibleTimeRequestHeader, "RocketMQ 5.x POP";
        Notification = 200054, "NOTIFICATION", B, Pop, NotificationRequestHeader, "RocketMQ 5.x POP";
        PollingInfo = 200055, "POLLING_INFO", B, Pop, PollingInfoRequestHeader, "RocketMQ 5.x POP: POP requests waiting under the key";
        BatchAckMessage = 200151, "BATCH_ACK_MESSAGE", B, Pop, NoHeader, "RocketMQ 5.x POP";
        RmqCqStatus = 30001, "RMQ_CQ_STATUS", B, Plain, NoHeader, "this broker's own (rmq-admin cq status): the consume-queue backends, serving and shadow; a code RocketMQ does not use";
        RmqCqVerify = 30002, "RMQ_CQ_VERIFY", B, Plain, CqVerifyRequestHeader, "this broker's own (rmq-admin cq verify): compares the shadow consume queue with the serving one";
        RmqCqAddShadow = 30003, "RMQ_CQ_ADD_SHADOW", B, Plain, CqBackendRequestHeader, "this broker's own (rmq-admin cq add-shadow): a second backend built from the CommitLog";
        RmqCqServe = 30004, "RMQ_CQ_SERVE", B, Plain, CqBackendRequestHeader, "this broker's own (rmq-admin cq serve): the shadow serves, the serving backend shadows";
        RmqCqDropShadow = 30005, "RMQ_CQ_DROP_SHADOW", B, Plain, NoHeader, "this broker's own (rmq-admin cq drop-shadow): stops the shadow and removes its files";
    }
    unhandled {
        QueryBrokerOffset = 13, "QUERY_BROKER_OFFSET", No("not served by Apache RocketMQ 4.9 either (no processor takes it)"), Plain, "";
        CheckTransactionState = 39, "CHECK_TRANSACTION_STATE", No(TO_CLIENT), Plain, "";
        NotifyConsumerIdsChanged = 40, "NOTIFY_CONSUMER_IDS_CHANGED", No(TO_CLIENT), Plain, "";
        GetTimerCheckPoint = 60, "GET_TIMER_CHECK_POINT", No("timer messages are not implemented yet (timer work pending)"), Plain, "RocketMQ 5.x's code";
        GetTimerMetrics = 61, "GET_TIMER_METRICS", No("timer messages are not implemented yet (timer work pending)"), Plain, "RocketMQ 5.x's code";
        PutKvConfig = 100, "PUT_KV_CONFIG", N, Plain, "kept in kvConfigPath (default <storePathRootDir>/namesrv/kvConfig.json)";
        DeleteKvConfig = 102, "DELETE_KV_CONFIG", N, Plain, "";
        RegisterBroker = 103, "REGISTER_BROKER", N, Plain, "";
        UnregisterBroker = 104, "UNREGISTER_BROKER", N, Plain, "";
        GetRouteInfoByTopic = 105, "GET_ROUTEINFO_BY_TOPIC", N, Plain, "";
        GetBrokerClusterInfo = 106, "GET_BROKER_CLUSTER_INFO", N, Plain, "";
        WipeWritePermOfBroker = 205, "WIPE_WRITE_PERM_OF_BROKER", N, Plain, "";
        GetAllTopicListFromNameserver = 206, "GET_ALL_TOPIC_LIST_FROM_NAMESERVER", N, Plain, "";
        DeleteTopicInNamesrv = 216, "DELETE_TOPIC_IN_NAMESRV", N, Plain, "";
        GetKvlistByNamespace = 219, "GET_KVLIST_BY_NAMESPACE", N, Plain, "";
        ResetConsumerClientOffset = 220, "RESET_CONSUMER_CLIENT_OFFSET", No(TO_CLIENT), Plain, "";
        GetConsumerStatusFromClient = 221, "GET_CONSUMER_STATUS_FROM_CLIENT", No(TO_CLIENT), Plain, "";
        GetTopicsByCluster = 224, "GET_TOPICS_BY_CLUSTER", N, Plain, "";
        GetSystemTopicListFromNs = 304, "GET_SYSTEM_TOPIC_LIST_FROM_NS", N, Plain, "";
        GetUnitTopicList = 311, "GET_UNIT_TOPIC_LIST", N, Plain, "";
        GetHasUnitSubTopicList = 312, "GET_HAS_UNIT_SUB_TOPIC_LIST", N, Plain, "";
        GetHasUnitSubUnunitTopicList = 313, "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST", N, Plain, "";
        UpdateNamesrvConfig = 318, "UPDATE_NAMESRV_CONFIG", N, Plain, "namesrvBrokerExpiry changes at runtime; listenPort is refused by name; kept in <storePathRootDir>/namesrv/namesrv.properties";
        GetNamesrvConfig = 319, "GET_NAMESRV_CONFIG", N, Plain, "this NameServer's own keys";
        QueryDataVersion = 322, "QUERY_DATA_VERSION", N, Plain, "";
        PushReplyMessageToClient = 326, "PUSH_REPLY_MESSAGE_TO_CLIENT", No(TO_CLIENT), Plain, "";
        AddWritePermOfBroker = 327, "ADD_WRITE_PERM_OF_BROKER", N, Plain, "";
        QueryTopicsByConsumer = 343, "QUERY_TOPICS_BY_CONSUMER", No("not implemented yet"), Plain, "RocketMQ 5.x's code";
        QuerySubscriptionByConsumer = 345, "QUERY_SUBSCRIPTION_BY_CONSUMER", No("not implemented yet"), Plain, "RocketMQ 5.x's code";
        UpdateAndGetGroupForbidden = 353, "UPDATE_AND_GET_GROUP_FORBIDDEN", No("not implemented yet: no per-topic read-forbidden flag of groups"), Plain, "RocketMQ 5.x's code";
        CheckRocksdbCqWriteProgress = 354, "CHECK_ROCKSDB_CQ_WRITE_PROGRESS", No("this broker compares its consume-queue backends with RMQ_CQ_VERIFY (30002) instead"), Plain, "RocketMQ 5.x's code";
        ExportRocksdbConfigToJson = 355, "EXPORT_ROCKSDB_CONFIG_TO_JSON", No("topics, groups and offsets are kept in JSON files here, never in RocksDB: nothing to export"), Plain, "RocketMQ 5.x's code";
        UpdateAndCreateStaticTopic = 513, "UPDATE_AND_CREATE_STATIC_TOPIC", No("static topics (logical queues) are not supported"), Plain, "RocketMQ 5.x's code";
        NotifyMinBrokerIdChange = 905, "NOTIFY_MIN_BROKER_ID_CHANGE", No("slave-acting-master mode is not supported (controller mode is: see the controller section of the README)"), Plain, "RocketMQ 5.x's code";
        ExchangeBrokerHaInfo = 906, "EXCHANGE_BROKER_HA_INFO", No("slave-acting-master mode is not supported (controller mode is: see the controller section of the README)"), Plain, "RocketMQ 5.x's code";
        GetBrokerHaStatus = 907, "GET_BROKER_HA_STATUS", No("not implemented yet"), Plain, "RocketMQ 5.x's code";
        ResetMasterFlushOffset = 908, "RESET_MASTER_FLUSH_OFFSET", No("not implemented yet"), Plain, "RocketMQ 5.x's code";
        UpdateColdDataFlowCtrConfig = 2001, "UPDATE_COLD_DATA_FLOW_CTR_CONFIG", No("cold-read flow control is not implemented"), Plain, "RocketMQ 5.x's code";
        RemoveColdDataFlowCtrConfig = 2002, "REMOVE_COLD_DATA_FLOW_CTR_CONFIG", No("cold-read flow control is not implemented"), Plain, "RocketMQ 5.x's code";
        GetColdDataFlowCtrInfo = 2003, "GET_COLD_DATA_FLOW_CTR_INFO", No("cold-read flow control is not implemented"), Plain, "RocketMQ 5.x's code";
        SetCommitlogReadMode = 2004, "SET_COMMITLOG_READ_MODE", No("not implemented yet: CommitLog read-ahead is not switchable at runtime"), Plain, "RocketMQ 5.x's code";
        AuthCreateUser = 3001, "AUTH_CREATE_USER", No("ACL 2.0 (users and policies) is not implemented; this broker has ACL 1.0 (codes 50 to 54)"), Plain, "RocketMQ 5.x's code";
        AuthUpdateUser = 3002, "AUTH_UPDATE_USER", No("ACL 2.0 (users and policies) is not implemented; this broker has ACL 1.0 (codes 50 to 54)"), Plain, "RocketMQ 5.x's code";
        AuthDeleteUser = 3003, "AUTH_DELETE_USER", No("ACL 2.0 (users and policies) is not implemented; this broker has ACL 1.0 (codes 50 to 54)"), Plain, "RocketMQ 5.x's code";
        AuthGetUser = 3004, "AUTH_GET_USER", No("ACL 2.0 (users and policies) is not implemented; this broker has ACL 1.0 (codes 50 to 54)"), Plain, "RocketMQ 5.x's code";
        AuthListUser = 3005, "AUTH_LIST_USER", No("ACL 2.0 (users and policies) is not implemented; this broker has ACL 1.0 (codes 50 to 54)"), Plain, "RocketMQ 5.x's code";
        AuthCreateAcl = 3006, "AUTH_CREATE_ACL", No("ACL 2.0 (users and policies) is not implemented; this broker has ACL 1.0 (codes 50 to 54)"), Plain, "RocketMQ 5.x's code";
        AuthUpdateAcl = 3007, "AUTH_UPDATE_ACL", No("ACL 2.0 (users and policies) is not implemented; this broker has ACL 1.0 (codes 50 to 54)"), Plain, "RocketMQ 5.x's code";
        AuthDeleteAcl = 3008, "AUTH_DELETE_ACL", No("ACL 2.0 (users and policies) is not implemented; this broker has ACL 1.0 (codes 50 to 54)"), Plain, "RocketMQ 5.x's code";
        AuthGetAcl = 3009, "AUTH_GET_ACL", No("ACL 2.0 (users and policies) is not implemented; this broker has ACL 1.0 (codes 50 to 54)"), Plain, "RocketMQ 5.x's code";
        AuthListAcl = 3010, "AUTH_LIST_ACL", No("ACL 2.0 (users and policies) is not implemented; this broker has ACL 1.0 (codes 50 to 54)"), Plain, "RocketMQ 5.x's code";
        PopRollback = 200056, "POP_ROLLBACK", No("declared by RocketMQ 5.x but served by no processor there either"), Plain, "";
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Every code the broker answers has a typed request, and every code
    /// the table says the broker serves is one of them.
    #[test]
    fn served_codes_decode() {
        let empty = BTreeMap::new();
        let ext = ExtFields::new(&empty);
        for e in CATALOG {
            let decoded = BrokerRequest::decode(e.code, &ext);
            if e.served == Served::Broker {
                assert!(decoded.is_some(), "{}", e.code);
            }
            if let Some(Ok(r)) = decoded {
                assert_eq!(r.code(), e.code);
            }
        }
        assert!(BrokerRequest::decode(RequestCode::RegisterBroker, &ext).is_none());
    }

    #[test]
    fn missing_fields_are_named_as_before() {
        let empty = BTreeMap::new();
        let ext = ExtFields::new(&empty);
        let err = BrokerRequest::decode(RequestCode::QueryConsumerOffset, &ext)
            .and_then(Result::err)
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("missing required header field `topic`")
        );
        let mut m = BTreeMap::new();
        m.insert("topic".to_owned(), " T ".to_owned());
        m.insert("queueId".to_owned(), "x".to_owned());
        let ext = ExtFields::new(&m);
        let err = BrokerRequest::decode(RequestCode::GetMaxOffset, &ext)
            .and_then(Result::err)
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.starts_with("header field `queueId` = \"x\""), "{err}");
    }
}

/// The headers that predate [`ext_header!`](super::header): their own
/// `from_ext`.
macro_rules! decode_with_from_ext {
    ($($t:ty),+) => {
        $(impl DecodeHeader for $t {
            fn decode(ext: &ExtFields<'_>) -> Result<Self, HeaderError> {
                Self::from_ext(ext)
            }
        })+
    };
}

decode_with_from_ext!(
    SendMessageRequestHeader,
    PullMessageRequestHeader,
    ConsumerSendMsgBackRequestHeader,
    EndTransactionRequestHeader
);
