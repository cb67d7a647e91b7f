//! The rules every name and number a client sends must pass, in one place,
//! so that each request code checks them the same way before its processor
//! runs: topic and group names in the header, queue ids against the topic,
//! and the system topics that only the broker may write or manage.
//!
//! The remarks are the ones Apache RocketMQ's `TopicValidator` answers with,
//! so clients and tools that match on them keep working.

use rmq_common::names::{is_not_allowed_send_topic, is_system_topic, validate_group};
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode, Rule};

use super::Refusal;
use crate::meta::TopicConfigManager;
use rmq_store::MessageStore;

/// Most queues a topic may have (read or write). RocketMQ sets no limit;
/// one keeps a typing slip or a hostile admin request from announcing
/// billions of queues to every client through the NameServer.
pub(crate) const MAX_QUEUE_NUMS: i32 = 16_384;

/// Header fields that name a consumer or producer group.
const GROUP_FIELDS: [&str; 4] = ["consumerGroup", "producerGroup", "group", "groupName"];

/// A topic name as RocketMQ's `TopicValidator.validateTopic` checks it, with
/// its remarks, followed by the name (cut to [`SHOWN_NAME_CHARS`]).
pub(crate) fn topic(name: &str) -> Result<(), Refusal> {
    use rmq_common::names::NameError;
    rmq_common::names::validate_topic(name).map_err(|e| {
        let remark = match e {
            NameError::Empty { .. } => "The specified topic is blank.".to_owned(),
            NameError::IllegalCharacter { .. } => format!(
                "The specified topic contains illegal characters, allowing only \
                 ^[%|a-zA-Z0-9_-]+$: {}",
                shown(name)
            ),
            NameError::TooLong { len, max, .. } => format!(
                "The specified topic is longer than topic max length ({len} > {max}): {}",
                shown(name)
            ),
        };
        Refusal::new(ResponseCode::SystemError, remark)
    })
}

/// Most characters of a refused name a remark repeats.
pub(crate) const SHOWN_NAME_CHARS: usize = 64;

/// `name` quoted for a remark, cut to [`SHOWN_NAME_CHARS`] characters.
fn shown(name: &str) -> String {
    match name.char_indices().nth(SHOWN_NAME_CHARS) {
        Some((cut, _)) => format!("{:?}... ({} bytes)", &name[..cut], name.len()),
        None => format!("{name:?}"),
    }
}

/// A topic a client creates, updates or deletes: a legal name that is not
/// one of the broker's own.
pub(crate) fn managed_topic(name: &str) -> Result<(), Refusal> {
    topic(name)?;
    if is_system_topic(name) {
        return Err(Refusal::new(
            ResponseCode::SystemError,
            format!("The topic[{name}] is conflict with system topic."),
        ));
    }
    Ok(())
}

/// A topic a client sends to: a legal name that only the broker writes is
/// refused as RocketMQ refuses it (NO_PERMISSION).
pub(crate) fn send_topic(name: &str) -> Result<(), Refusal> {
    topic(name)?;
    if is_not_allowed_send_topic(name) {
        return Err(Refusal::new(
            ResponseCode::NoPermission,
            format!("Sending message to topic[{name}] is forbidden."),
        ));
    }
    Ok(())
}

/// A group name.
pub(crate) fn group(name: &str) -> Result<(), Refusal> {
    use rmq_common::names::NameError;
    validate_group(name).map_err(|e| {
        let remark = match e {
            NameError::Empty { .. } => "the specified group is blank".to_owned(),
            NameError::IllegalCharacter { .. } => format!(
                "group name {} has a character outside [%|a-zA-Z0-9_-]",
                shown(name)
            ),
            NameError::TooLong { len, max, .. } => {
                format!(
                    "group name {} is {len} characters, at most {max}",
                    shown(name)
                )
            }
        };
        Refusal::new(ResponseCode::SystemError, remark)
    })
}

/// A topic's read or write queue count.
pub(crate) fn queue_nums(what: &str, n: i32) -> Result<i32, Refusal> {
    if !(1..=MAX_QUEUE_NUMS).contains(&n) {
        return Err(Refusal::new(
            ResponseCode::SystemError,
            format!("{what} {n} is illegal: a topic has 1 to {MAX_QUEUE_NUMS} queues"),
        ));
    }
    Ok(n)
}

/// A topic's permission bits (PRIORITY 8 | READ 4 | WRITE 2 | INHERIT 1).
pub(crate) fn perm(n: i32) -> Result<i32, Refusal> {
    if !(0..=15).contains(&n) {
        return Err(Refusal::new(
            ResponseCode::SystemError,
            format!("perm {n} is illegal: it is a combination of 8, 4, 2 and 1"),
        ));
    }
    Ok(n)
}

/// A queue id of a request that reads or tracks a queue: not negative and,
/// when the topic is in the table, one of its queues.
pub(crate) fn queue_of(
    topics: &TopicConfigManager,
    topic: &str,
    queue_id: i32,
) -> Result<(), Refusal> {
    if queue_id < 0 {
        return Err(Refusal::new(
            ResponseCode::SystemError,
            format!("queueId[{queue_id}] is illegal, topic:[{topic}]"),
        ));
    }
    if let Some(config) = topics.get(topic) {
        let queues = config.read_queue_nums.max(config.write_queue_nums);
        if queue_id >= queues {
            return Err(Refusal::new(
                ResponseCode::SystemError,
                format!("queueId[{queue_id}] is illegal, topic:[{topic}] has {queues} queues"),
            ));
        }
    }
    Ok(())
}

/// A slave's topics and groups are its master's (copied every 10 s), and it
/// ends no transaction: Java's answers to those requests on a slave.
fn slave_role(store: &MessageStore, rule: Rule) -> Result<(), Refusal> {
    if !store.is_replica_only() {
        return Ok(());
    }
    match rule {
        Rule::MasterMeta => Err(Refusal::new(
            ResponseCode::SystemError,
            "Can't modify topic or subscription group from slave broker, please execute it from \
             master broker.",
        )),
        Rule::MasterTxn => Err(Refusal::new(
            ResponseCode::SlaveNotAvailable,
            "this broker is a slave: end the transaction on its master",
        )),
        Rule::Plain | Rule::Send | Rule::Pop => Ok(()),
    }
}

/// The header checks every request passes before its header is decoded,
/// by the rule its row of the request table gives: each field that names a
/// topic or a group follows the naming rules (as sent, untrimmed), and a
/// queue id is one of the topic's queues. Empty optional fields are left
/// to the processors, which know whether they are required.
pub(crate) fn request(
    store: &MessageStore,
    topics: &TopicConfigManager,
    rule: Rule,
    req: &RemotingCommand,
) -> Result<(), Refusal> {
    slave_role(store, rule)?;
    let ext = req.ext();
    let topic_name = ext.get_str("topic").filter(|t| !t.is_empty());
    if let Some(t) = topic_name {
        topic(t)?;
    }
    for field in GROUP_FIELDS {
        if let Some(g) = ext.get_str(field).filter(|g| !g.is_empty()) {
            group(g)?;
        }
    }
    // A send may leave the queue to the broker (-1); the send processor
    // checks the rest against the topic it may create. POP reads every
    // queue with -1 and answers a bad id with 5.x's own codes.
    // RocketMQ 5.x's INVOKE_BROKER_TO_RESET_OFFSET always carries
    // `queueId`, -1 for every queue (mqadmin 5.3.3 resetOffsetByTime).
    let every_queue =
        RequestCode::from_i32(req.code) == Some(RequestCode::InvokeBrokerToResetOffset);
    if rule != Rule::Send && rule != Rule::Pop {
        if let (Some(t), Some(q)) = (topic_name, ext.get_i32("queueId")?) {
            if !(every_queue && q == -1) {
                queue_of(topics, t, q)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remark(r: Result<(), Refusal>) -> String {
        r.err().map(|r| r.remark).unwrap_or_default()
    }

    #[test]
    fn java_remarks_for_bad_topics() {
        assert_eq!(remark(topic("")), "The specified topic is blank.");
        assert!(remark(topic("a b")).contains("illegal characters"));
        assert!(remark(topic("a b")).ends_with("\"a b\""));
        let long = remark(topic(&"t".repeat(100_000)));
        assert!(long.contains("longer than topic max length"));
        assert!(long.len() < 200, "a long name is cut: {long}");
        assert!(topic("TopicTest").is_ok());
    }

    #[test]
    fn system_topics_are_refused_where_java_refuses_them() {
        let r = send_topic("SCHEDULE_TOPIC_XXXX").unwrap_err();
        assert_eq!(r.code, ResponseCode::NoPermission);
        assert_eq!(
            r.remark,
            "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden."
        );
        assert!(send_topic("RMQ_SYS_TRACE_TOPIC").is_ok());
        assert!(send_topic("%RETRY%g").is_ok());
        let r = managed_topic("RMQ_SYS_TRANS_HALF_TOPIC").unwrap_err();
        assert_eq!(r.code, ResponseCode::SystemError);
        assert!(r.remark.contains("conflict with system topic"));
        assert!(managed_topic("rmq_sys_anything").is_err());
        assert!(managed_topic("TBW102").is_err());
        assert!(managed_topic("Orders").is_ok());
    }

    #[test]
    fn counts_and_perms() {
        assert!(queue_nums("readQueueNums", 0).is_err());
        assert!(queue_nums("readQueueNums", -1).is_err());
        assert!(queue_nums("readQueueNums", MAX_QUEUE_NUMS + 1).is_err());
        assert_eq!(queue_nums("writeQueueNums", 8).ok(), Some(8));
        assert!(perm(6).is_ok());
        assert!(perm(16).is_err());
        assert!(perm(-1).is_err());
    }
}
