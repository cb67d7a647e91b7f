//! What each request needs from an account: the topics and groups it
//! touches with the permission wanted (as RocketMQ's
//! `PlainAccessValidator.parse`), and whether it is an administration
//! code. Groups are named by their retry topic, `%RETRY%<group>`.
//!
//! Stricter than RocketMQ 4.9.7 where 4.9.7 checks nothing: batch and reply
//! sends need PUB on their topic like single sends; a send to a retry topic
//! needs SUB on that retry topic (Java reads a header field v1 sends lack);
//! QUERY_CONSUMER_OFFSET needs what UPDATE_CONSUMER_OFFSET needs; queue
//! locks need SUB on the group. Administration is every code that changes
//! the broker's or the NameServer's state or reads secrets, not only 4.9.7's
//! five (17, 25, 200, 207, 215).

use std::collections::BTreeMap;

use crate::remoting::RequestCode;

use super::perm::Perm;
use super::plain::RETRY_PREFIX;

/// Codes only an admin account may send.
pub const ADMIN_CODES: &[RequestCode] = &[
    RequestCode::UpdateAndCreateTopic,
    RequestCode::UpdateAndCreateTopicList,
    RequestCode::UpdateBrokerConfig,
    RequestCode::UpdateAndCreateAclConfig,
    RequestCode::DeleteAclConfig,
    RequestCode::UpdateGlobalWhiteAddrsConfig,
    RequestCode::GetBrokerClusterAclConfig,
    RequestCode::PutKvConfig,
    RequestCode::DeleteKvConfig,
    RequestCode::RegisterBroker,
    RequestCode::UnregisterBroker,
    RequestCode::UpdateAndCreateSubscriptionGroup,
    RequestCode::UpdateAndCreateSubscriptionGroupList,
    RequestCode::WipeWritePermOfBroker,
    RequestCode::AddWritePermOfBroker,
    RequestCode::DeleteSubscriptionGroup,
    RequestCode::DeleteTopicInBroker,
    RequestCode::DeleteTopicInNamesrv,
    RequestCode::InvokeBrokerToResetOffset,
    RequestCode::CleanExpiredConsumequeue,
    RequestCode::CloneGroupOffset,
    RequestCode::CleanUnusedTopic,
    RequestCode::UpdateNamesrvConfig,
    RequestCode::ResumeCheckHalfMessage,
    RequestCode::DeleteExpiredCommitlog,
    RequestCode::RmqCqVerify,
    RequestCode::RmqCqAddShadow,
    RequestCode::RmqCqServe,
    RequestCode::RmqCqDropShadow,
];

/// Whether `code` is an administration code.
pub fn is_admin(code: i32) -> bool {
    ADMIN_CODES.iter().any(|c| c.code() == code)
}

/// The resources a request needs, with the permission on each; an error
/// names a body that cannot be read.
pub fn needed(
    code: i32,
    ext: &BTreeMap<String, String>,
    body: Option<&[u8]>,
) -> Result<Vec<(String, Perm)>, String> {
    let get = |k: &str| ext.get(k).map(String::as_str);
    let group = |g: Option<&str>| g.map(|g| (format!("{RETRY_PREFIX}{g}"), Perm::SUB));
    let topic = |t: Option<&str>, p: Perm| t.map(|t| (t.to_owned(), p));
    let mut out = Vec::new();
    let Some(code) = RequestCode::from_i32(code) else {
        return Ok(out);
    };
    match code {
        RequestCode::SendMessage
        | RequestCode::SendMessageV2
        | RequestCode::SendBatchMessage
        | RequestCode::SendReplyMessage
        | RequestCode::SendReplyMessageV2 => {
            // V2 headers use one-letter names (b: topic).
            let t = get("topic").or_else(|| get("b"));
            out.extend(t.map(|t| {
                let p = if t.starts_with(RETRY_PREFIX) {
                    Perm::SUB
                } else {
                    Perm::PUB
                };
                (t.to_owned(), p)
            }));
        }
        RequestCode::ConsumerSendMsgBack => out.extend(group(get("group"))),
        RequestCode::PullMessage | RequestCode::LitePullMessage => {
            out.extend(topic(get("topic"), Perm::SUB));
            out.extend(group(get("consumerGroup")));
        }
        RequestCode::QueryMessage => out.extend(topic(get("topic"), Perm::SUB)),
        RequestCode::UpdateConsumerOffset | RequestCode::QueryConsumerOffset => {
            out.extend(group(get("consumerGroup")));
            out.extend(topic(get("topic"), Perm::SUB));
        }
        RequestCode::UnregisterClient | RequestCode::GetConsumerListByGroup => {
            out.extend(group(get("consumerGroup")));
        }
        RequestCode::HeartBeat => heartbeat(body, &mut out)?,
        RequestCode::LockBatchMq | RequestCode::UnlockBatchMq => {
            let v = json(body, "queue lock")?;
            out.extend(group(v.get("consumerGroup").and_then(|g| g.as_str())));
        }
        _ => {}
    }
    Ok(out)
}

fn json(body: Option<&[u8]>, what: &str) -> Result<serde_json::Value, String> {
    crate::json::from_slice(body.unwrap_or_default())
        .map_err(|e| format!("the {what} body is not JSON: {e}"))
}

/// A heartbeat: SUB on each consumer group and on each topic it subscribes.
fn heartbeat(body: Option<&[u8]>, out: &mut Vec<(String, Perm)>) -> Result<(), String> {
    let v = json(body, "heartbeat")?;
    let list = |v: &serde_json::Value, k: &str| {
        v.get(k)
            .and_then(|x| x.as_array())
            .cloned()
            .unwrap_or_default()
    };
    for c in list(&v, "consumerDataSet") {
        if let Some(g) = c.get("groupName").and_then(|g| g.as_str()) {
            out.push((format!("{RETRY_PREFIX}{g}"), Perm::SUB));
        }
        for s in list(&c, "subscriptionDataSet") {
            if let Some(t) = s.get("topic").and_then(|t| t.as_str()) {
                out.push((t.to_owned(), Perm::SUB));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::tests::ext;

    #[test]
    fn each_code_needs_what_rocketmq_checks() {
        let n = |code: RequestCode, e: &[(&str, &str)], body: Option<&[u8]>| {
            needed(code.code(), &ext(e), body).unwrap()
        };
        assert_eq!(
            n(RequestCode::SendMessageV2, &[("b", "T")], None),
            [("T".into(), Perm::PUB)]
        );
        assert_eq!(
            n(RequestCode::SendMessage, &[("topic", "%RETRY%g")], None),
            [("%RETRY%g".into(), Perm::SUB)]
        );
        assert_eq!(
            n(
                RequestCode::PullMessage,
                &[("topic", "T"), ("consumerGroup", "g")],
                None
            ),
            [("T".into(), Perm::SUB), ("%RETRY%g".into(), Perm::SUB)]
        );
        let hb = br#"{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T"}]}],"producerDataSet":[{"groupName":"p"}]}"#;
        assert_eq!(
            n(RequestCode::HeartBeat, &[], Some(hb)),
            [("%RETRY%g".into(), Perm::SUB), ("T".into(), Perm::SUB)]
        );
        assert!(needed(RequestCode::HeartBeat.code(), &ext(&[]), Some(b"{")).is_err());
        assert!(n(RequestCode::GetRouteInfoByTopic, &[("topic", "T")], None).is_empty());
        assert!(is_admin(17) && is_admin(329) && is_admin(103) && !is_admin(10) && !is_admin(21));
    }
}
