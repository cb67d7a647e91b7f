//! Every request code Apache RocketMQ 4.9's broker and NameServer serve,
//! every one this broker serves besides, and the requests the broker sends
//! to clients: where each is answered here, and for each one not answered,
//! why. `docs/request-codes.md` (and DESIGN.md section 7) is this table
//! rendered by [`markdown`]; a test keeps the two equal and another sends
//! every code to a running broker and NameServer.

use super::RequestCode;

/// Where a request code is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// On the broker port.
    Broker,
    /// On the NameServer port.
    NameServer,
    /// Nowhere here: the broker answers REQUEST_CODE_NOT_SUPPORTED with
    /// the reason as the remark.
    No(&'static str),
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The code.
    pub code: RequestCode,
    /// Where it is answered.
    pub served: Served,
    /// How the answer differs from Java 4.9.7's, if it does.
    pub note: &'static str,
}

const fn e(code: RequestCode, served: Served, note: &'static str) -> Entry {
    Entry { code, served, note }
}

/// Sent by the broker to a client, which answers it.
pub const TO_CLIENT: &str = "sent by the broker to clients, not served by it";

use RequestCode as C;
use Served::{Broker as B, NameServer as N, No};

/// The table, by code.
pub const CATALOG: &[Entry] = &[
    e(C::SendMessage, B, ""),
    e(C::PullMessage, B, ""),
    e(C::QueryMessage, B, ""),
    e(C::QueryBrokerOffset, No("not served by Apache RocketMQ 4.9 either (no processor takes it)"), ""),
    e(C::QueryConsumerOffset, B, ""),
    e(C::UpdateConsumerOffset, B, ""),
    e(C::UpdateAndCreateTopic, B, ""),
    e(C::UpdateAndCreateTopicList, B, "RocketMQ 5.x's batch create; 4.9 has no such code"),
    e(C::GetAllTopicConfig, B, ""),
    e(C::UpdateBrokerConfig, B, "only brokerPermission, longPollingEnable, shortPollingTimeMills, maxReconsumeTimes and storeReplyMessageEnable change at runtime; any other key refuses the whole update by name (Java records every key, most without effect until restart); kept in config/broker.runtime.properties"),
    e(C::GetBrokerConfig, B, "this broker's own keys"),
    e(C::GetBrokerRuntimeInfo, B, "thread-pool queue keys are 0: requests are not queued in pools here"),
    e(C::SearchOffsetByTimestamp, B, ""),
    e(C::GetMaxOffset, B, ""),
    e(C::GetMinOffset, B, ""),
    e(C::GetEarliestMsgStoretime, B, ""),
    e(C::ViewMessageById, B, ""),
    e(C::HeartBeat, B, ""),
    e(C::UnregisterClient, B, ""),
    e(C::ConsumerSendMsgBack, B, ""),
    e(C::EndTransaction, B, ""),
    e(C::GetConsumerListByGroup, B, ""),
    e(C::CheckTransactionState, No(TO_CLIENT), ""),
    e(C::NotifyConsumerIdsChanged, No(TO_CLIENT), ""),
    e(C::LockBatchMq, B, ""),
    e(C::UnlockBatchMq, B, ""),
    e(C::GetAllConsumerOffset, B, "queue ids as quoted JSON keys (fastjson writes them bare; both parse)"),
    e(C::GetAllDelayOffset, B, "levels as quoted JSON keys (fastjson writes them bare; both parse)"),
    e(C::CheckClientConfig, B, ""),
    e(C::UpdateAndCreateAclConfig, B, "admin accounts only; DENY may be listed; refused with aclEnable=false (Java: a NullPointerException)"),
    e(C::DeleteAclConfig, B, "admin accounts only"),
    e(C::GetBrokerClusterAclInfo, B, "refused with aclEnable=false (Java sends no answer)"),
    e(C::UpdateGlobalWhiteAddrsConfig, B, "admin accounts only; aclFileFullPath may be left out"),
    e(C::GetBrokerClusterAclConfig, B, "admin accounts only (it answers secrets); refused with aclEnable=false (Java sends no answer)"),
    e(C::PutKvConfig, N, "kept in <storePathRootDir>/namesrv/kvConfig.json"),
    e(C::GetKvConfig, N, "the broker also answers it, QUERY_NOT_FOUND (it keeps no KV config)"),
    e(C::DeleteKvConfig, N, ""),
    e(C::RegisterBroker, N, ""),
    e(C::UnregisterBroker, N, ""),
    e(C::GetRouteInfoByTopic, N, ""),
    e(C::GetBrokerClusterInfo, N, ""),
    e(C::UpdateAndCreateSubscriptionGroup, B, ""),
    e(C::UpdateAndCreateSubscriptionGroupList, B, "RocketMQ 5.x's batch create; 4.9 has no such code"),
    e(C::GetAllSubscriptiongroupConfig, B, "no built-in groups (TOOLS_CONSUMER, ...) are listed: they are not created here"),
    e(C::GetTopicStatsInfo, B, ""),
    e(C::GetConsumerConnectionList, B, ""),
    e(C::GetProducerConnectionList, B, ""),
    e(C::WipeWritePermOfBroker, N, ""),
    e(C::GetAllTopicListFromNameserver, N, ""),
    e(C::DeleteSubscriptionGroup, B, ""),
    e(C::GetConsumeStats, B, ""),
    e(C::DeleteTopicInBroker, B, ""),
    e(C::DeleteTopicInNamesrv, N, ""),
    e(C::GetKvlistByNamespace, N, ""),
    e(C::ResetConsumerClientOffset, No(TO_CLIENT), ""),
    e(C::GetConsumerStatusFromClient, No(TO_CLIENT), ""),
    e(C::InvokeBrokerToResetOffset, B, ""),
    e(C::InvokeBrokerToGetConsumerStatus, B, "a group never online gets SYSTEM_ERROR naming it (Java: a NullPointerException)"),
    e(C::GetTopicsByCluster, N, ""),
    e(C::QueryTopicConsumeByWho, B, ""),
    e(C::QueryConsumeTimeSpan, B, "times print in UTC; delayTime of a group with no committed offset is the age of the oldest message (Java: now + 1)"),
    e(C::GetSystemTopicListFromNs, N, ""),
    e(C::GetSystemTopicListFromBroker, B, ""),
    e(C::CleanExpiredConsumequeue, B, ""),
    e(C::GetConsumerRunningInfo, B, "forwarded to the client named; its answer relayed"),
    e(C::QueryCorrectionOffset, B, "filterGroups are left out without deleting their offsets, and compareGroup is compared (Java 4.9 deletes the former and, with its arguments swapped, never finds the latter)"),
    e(C::ConsumeMessageDirectly, B, "forwarded to the client named with the stored message; its answer relayed"),
    e(C::SendMessageV2, B, ""),
    e(C::GetUnitTopicList, N, ""),
    e(C::GetHasUnitSubTopicList, N, ""),
    e(C::GetHasUnitSubUnunitTopicList, N, ""),
    e(C::CloneGroupOffset, B, "with no topic, every topic of srcGroup is cloned (Java 4.9 clones nothing then)"),
    e(C::ViewBrokerStatsData, B, "TOPIC_PUT_NUMS/SIZE, GROUP_GET_NUMS/SIZE, SNDBCK_PUT_NUMS, BROKER_PUT/GET_NUMS; no per-queue items"),
    e(C::CleanUnusedTopic, B, ""),
    e(C::GetBrokerConsumeStats, B, ""),
    e(C::UpdateNamesrvConfig, N, "namesrvBrokerExpiry changes at runtime; listenPort is refused by name; kept in <storePathRootDir>/namesrv/namesrv.properties"),
    e(C::GetNamesrvConfig, N, "this NameServer's own keys"),
    e(C::SendBatchMessage, B, ""),
    e(C::QueryConsumeQueue, B, "both backends; at most 1,000 entries per request"),
    e(C::QueryDataVersion, N, ""),
    e(C::ResumeCheckHalfMessage, B, "only a message of RMQ_SYS_TRANS_HALF_TOPIC is put back (Java copies any message there)"),
    e(C::SendReplyMessage, B, ""),
    e(C::SendReplyMessageV2, B, ""),
    e(C::PushReplyMessageToClient, No(TO_CLIENT), ""),
    e(C::AddWritePermOfBroker, N, ""),
    e(C::GetAllProducerInfo, B, ""),
    e(C::DeleteExpiredCommitlog, B, "RocketMQ 5.x's code: one clean pass now"),
    e(C::LitePullMessage, B, "RocketMQ 5.x's lite pull code; served as PULL_MESSAGE"),
    e(C::RmqCqStatus, B, "this broker's own (rmq-admin cq status): the consume-queue backends, serving and shadow; a code RocketMQ does not use"),
    e(C::RmqCqVerify, B, "this broker's own (rmq-admin cq verify): compares the shadow consume queue with the serving one"),
    e(C::RmqCqAddShadow, B, "this broker's own (rmq-admin cq add-shadow): a second backend built from the CommitLog"),
    e(C::RmqCqServe, B, "this broker's own (rmq-admin cq serve): the shadow serves, the serving backend shadows"),
    e(C::RmqCqDropShadow, B, "this broker's own (rmq-admin cq drop-shadow): stops the shadow and removes its files"),
];

/// The row of `code`, if the table has one.
pub fn entry(code: i32) -> Option<&'static Entry> {
    CATALOG.iter().find(|e| e.code.code() == code)
}

/// Why this broker does not serve `code` (`None`: it does, or the code is
/// unknown).
pub fn not_served_reason(code: i32) -> Option<&'static str> {
    match entry(code)?.served {
        Served::No(why) => Some(why),
        _ => None,
    }
}

/// The table as the markdown of `docs/request-codes.md`.
pub fn markdown() -> String {
    let mut out = String::from(
        "| Code | Name | Served | Differs from Apache RocketMQ 4.9.7 |\n|---:|---|---|---|\n",
    );
    let mut rows: Vec<&Entry> = CATALOG.iter().collect();
    rows.sort_by_key(|e| e.code.code());
    for e in rows {
        let served = match e.served {
            Served::Broker => "broker".to_owned(),
            Served::NameServer => "NameServer".to_owned(),
            Served::No(why) => format!("no: {why}"),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            e.code.code(),
            e.code.name(),
            served,
            e.note
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_code_has_exactly_one_row() {
        for code in RequestCode::ALL {
            let rows = CATALOG.iter().filter(|e| e.code == *code).count();
            assert_eq!(rows, 1, "{code}");
        }
        assert_eq!(CATALOG.len(), RequestCode::ALL.len());
        assert_eq!(not_served_reason(39), Some(TO_CLIENT));
        assert_eq!(not_served_reason(10), None);
    }

    /// `docs/request-codes.md` is the table rendered; `UPDATE_DOCS=1`
    /// rewrites it.
    #[test]
    fn the_docs_table_is_the_catalog() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/request-codes.md");
        let want = format!("{DOC_HEAD}{}", markdown());
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "{} is not the catalog: run `UPDATE_DOCS=1 cargo test -p rmq-common catalog`",
            path.display()
        );
    }

    const DOC_HEAD: &str = "# Request codes\n\n\
Every request code Apache RocketMQ 4.9.7's broker and NameServer serve, the ones this\n\
broker serves besides, and the requests the broker sends to clients. Generated from\n\
`common/src/remoting/catalog.rs` (a test keeps them equal; `tests/tests/it/request_codes.rs`\n\
sends every code to a running broker and NameServer). A code not served is answered\n\
REQUEST_CODE_NOT_SUPPORTED with the reason below as its remark. Headers a Java 4.9 server\n\
would silently default when missing are refused here with SYSTEM_ERROR naming the field.\n\n";
}
