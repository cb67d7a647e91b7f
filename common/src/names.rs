//! Topic and group name rules (RocketMQ's `Validators` / `TopicValidator`).

use crate::constants::{
    AUTO_CREATE_TOPIC, BENCHMARK_TOPIC, DLQ_GROUP_TOPIC_PREFIX, LMQ_PREFIX, OFFSET_MOVED_EVENT,
    RETRY_GROUP_TOPIC_PREFIX, SCHEDULE_TOPIC, SELF_TEST_TOPIC, SYSTEM_TOPIC_PREFIX, TRACE_TOPIC,
    TRANS_CHECK_MAX_TIME_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC,
};

/// Longest ordinary topic name.
pub const MAX_TOPIC_LEN: usize = 127;
/// Longest retry or DLQ topic name.
pub const MAX_RETRY_TOPIC_LEN: usize = 255;
/// Longest consumer or producer group name (the Java client's
/// `Validators.CHARACTER_MAX_LENGTH`).
pub const MAX_GROUP_LEN: usize = 255;

/// Why a name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Empty or blank.
    #[error("{kind} name is empty")]
    Empty {
        /// "topic" or "group".
        kind: &'static str,
    },
    /// Longer than allowed.
    #[error("{kind} name {name:?} is {len} characters, at most {max}")]
    TooLong {
        /// "topic" or "group".
        kind: &'static str,
        /// The name.
        name: String,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A character outside `[%|a-zA-Z0-9_-]`.
    #[error("{kind} name {name:?} has a character outside [%|a-zA-Z0-9_-]")]
    IllegalCharacter {
        /// "topic" or "group".
        kind: &'static str,
        /// The name.
        name: String,
    },
}

fn legal_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '%' | '|' | '_' | '-')
}

fn check(kind: &'static str, name: &str, max: usize) -> Result<(), NameError> {
    if name.trim().is_empty() {
        return Err(NameError::Empty { kind });
    }
    if !name.chars().all(legal_char) {
        return Err(NameError::IllegalCharacter {
            kind,
            name: name.to_owned(),
        });
    }
    if name.len() > max {
        return Err(NameError::TooLong {
            kind,
            name: name.to_owned(),
            len: name.len(),
            max,
        });
    }
    Ok(())
}

/// Checks a topic name: `^[%|a-zA-Z0-9_-]+$`, at most 127 characters, or 255
/// for `%RETRY%` / `%DLQ%` topics.
pub fn validate_topic(name: &str) -> Result<(), NameError> {
    let max =
        if name.starts_with(RETRY_GROUP_TOPIC_PREFIX) || name.starts_with(DLQ_GROUP_TOPIC_PREFIX) {
            MAX_RETRY_TOPIC_LEN
        } else {
            MAX_TOPIC_LEN
        };
    check("topic", name, max)
}

/// Checks a group name: same characters as a topic, at most 255.
pub fn validate_group(name: &str) -> Result<(), NameError> {
    check("group", name, MAX_GROUP_LEN)
}

/// Whether `name` (a topic or a group) names a light message queue
/// (`MixAll.isLmq`): it starts with `%LMQ%`.
pub fn is_lmq(name: &str) -> bool {
    name.starts_with(LMQ_PREFIX)
}

/// Whether a message stored in `topic` may be multi-dispatched into light
/// message queues (`MixAll.topicAllowsLMQ`: not a retry topic, not a
/// `rmq_sys_` topic, not the schedule topic). This broker also leaves out
/// the two transaction topics: a prepared message reaches its queues once,
/// when its commit is stored, never before.
pub fn topic_allows_lmq(topic: &str) -> bool {
    !topic.starts_with(RETRY_GROUP_TOPIC_PREFIX)
        && !topic.starts_with(SYSTEM_TOPIC_PREFIX)
        && topic != SCHEDULE_TOPIC
        && topic != TRANS_HALF_TOPIC
        && topic != TRANS_OP_HALF_TOPIC
}

/// The broker's own topics (RocketMQ's `TopicValidator.SYSTEM_TOPIC_SET`,
/// plus any name starting with `rmq_sys_`): a client may not create,
/// update or delete them.
pub fn is_system_topic(name: &str) -> bool {
    SYSTEM_TOPICS.contains(&name) || name.starts_with(SYSTEM_TOPIC_PREFIX)
}

/// RocketMQ's `TopicValidator.SYSTEM_TOPIC_SET` (the broker adds its
/// cluster name, its broker name and its reply topic).
pub const SYSTEM_TOPICS: [&str; 9] = [
    AUTO_CREATE_TOPIC,
    SCHEDULE_TOPIC,
    BENCHMARK_TOPIC,
    TRANS_HALF_TOPIC,
    TRACE_TOPIC,
    TRANS_OP_HALF_TOPIC,
    TRANS_CHECK_MAX_TIME_TOPIC,
    SELF_TEST_TOPIC,
    OFFSET_MOVED_EVENT,
];

/// Topics only the broker writes (`TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET`):
/// a client's send to one is refused, whatever its properties say.
pub fn is_not_allowed_send_topic(name: &str) -> bool {
    [
        SCHEDULE_TOPIC,
        TRANS_HALF_TOPIC,
        TRANS_OP_HALF_TOPIC,
        TRANS_CHECK_MAX_TIME_TOPIC,
        SELF_TEST_TOPIC,
        OFFSET_MOVED_EVENT,
    ]
    .contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics() {
        assert!(validate_topic("TopicTest").is_ok());
        assert!(validate_topic("%RETRY%group_1").is_ok());
        assert!(validate_topic("a|b-c_d").is_ok());
        assert!(matches!(validate_topic(""), Err(NameError::Empty { .. })));
        assert!(matches!(
            validate_topic("   "),
            Err(NameError::Empty { .. })
        ));
        assert!(matches!(
            validate_topic("a b"),
            Err(NameError::IllegalCharacter { .. })
        ));
        assert!(matches!(
            validate_topic("a/b"),
            Err(NameError::IllegalCharacter { .. })
        ));
        assert!(matches!(
            validate_topic("tópico"),
            Err(NameError::IllegalCharacter { .. })
        ));
        assert!(validate_topic(&"t".repeat(127)).is_ok());
        assert!(matches!(
            validate_topic(&"t".repeat(128)),
            Err(NameError::TooLong { len: 128, .. })
        ));
        let retry = format!("%RETRY%{}", "g".repeat(200));
        assert!(validate_topic(&retry).is_ok());
        let retry = format!("%DLQ%{}", "g".repeat(251));
        assert!(matches!(
            validate_topic(&retry),
            Err(NameError::TooLong { max: 255, .. })
        ));
    }

    #[test]
    fn system_topics() {
        for t in [
            "SCHEDULE_TOPIC_XXXX",
            "RMQ_SYS_TRANS_HALF_TOPIC",
            "RMQ_SYS_TRANS_OP_HALF_TOPIC",
            "TRANS_CHECK_MAX_TIME_TOPIC",
        ] {
            assert!(is_system_topic(t), "{t}");
            assert!(is_not_allowed_send_topic(t), "{t}");
        }
        // System, but clients write them (traces, benchmark, auto-create).
        for t in [
            "TBW102",
            "RMQ_SYS_TRACE_TOPIC",
            "BenchmarkTest",
            "rmq_sys_x",
        ] {
            assert!(is_system_topic(t), "{t}");
            assert!(!is_not_allowed_send_topic(t), "{t}");
        }
        for t in ["TopicTest", "%RETRY%g", "%DLQ%g", "schedule_topic_xxxx"] {
            assert!(!is_system_topic(t), "{t}");
            assert!(!is_not_allowed_send_topic(t), "{t}");
        }
    }

    #[test]
    fn groups() {
        assert!(validate_group("please_rename_unique_group_name").is_ok());
        assert!(validate_group(&"g".repeat(255)).is_ok());
        assert!(matches!(
            validate_group(&"g".repeat(256)),
            Err(NameError::TooLong { .. })
        ));
        assert!(matches!(
            validate_group("g!"),
            Err(NameError::IllegalCharacter { .. })
        ));
    }
}
