//! Names POP uses: the revive topic and its group, the POP retry topics
//! (V1 `%RETRY%<group>_<topic>`, V2 `%RETRY%<group>+<topic>`) and the retry
//! flag a receipt handle carries.

use crate::constants::{RETRY_GROUP_TOPIC_PREFIX, SYSTEM_TOPIC_PREFIX};

/// The group whose offsets in the revive topic are the revive progress.
pub const REVIVE_GROUP: &str = "CID_RMQ_SYS_REVIVE_GROUP";

/// `rmq_sys_REVIVE_LOG_<cluster>`.
pub fn revive_topic(cluster: &str) -> String {
    format!("{SYSTEM_TOPIC_PREFIX}REVIVE_LOG_{cluster}")
}

/// Which topic a popped message was read from, as a receipt handle says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryFlag {
    /// The topic itself (`0`).
    Normal,
    /// A V1 retry topic (`1`).
    RetryV1,
    /// A V2 retry topic (`2`).
    RetryV2,
}

impl RetryFlag {
    /// The digit in an extraInfo.
    pub fn digit(self) -> i32 {
        match self {
            Self::Normal => 0,
            Self::RetryV1 => 1,
            Self::RetryV2 => 2,
        }
    }

    /// From the digit in an extraInfo; anything else reads as normal (Java
    /// compares with `"1"` and `"2"` only).
    pub fn from_text(s: &str) -> Self {
        match s.trim() {
            "1" => Self::RetryV1,
            "2" => Self::RetryV2,
            _ => Self::Normal,
        }
    }

    /// The real topic of (topic, group) under this flag.
    pub fn topic(self, topic: &str, group: &str) -> String {
        match self {
            Self::Normal => topic.to_owned(),
            Self::RetryV1 => retry_topic_v1(group, topic),
            Self::RetryV2 => retry_topic_v2(group, topic),
        }
    }
}

/// The flag of a topic name: a `%RETRY%` name holding `+` is V2, another
/// `%RETRY%` name V1.
pub fn retry_flag(topic: &str) -> RetryFlag {
    match topic.strip_prefix(RETRY_GROUP_TOPIC_PREFIX) {
        Some(rest) if rest.contains('+') => RetryFlag::RetryV2,
        Some(_) => RetryFlag::RetryV1,
        None => RetryFlag::Normal,
    }
}

/// `%RETRY%<group>_<topic>`.
pub fn retry_topic_v1(group: &str, topic: &str) -> String {
    format!("{RETRY_GROUP_TOPIC_PREFIX}{group}_{topic}")
}

/// `%RETRY%<group>+<topic>`.
pub fn retry_topic_v2(group: &str, topic: &str) -> String {
    format!("{RETRY_GROUP_TOPIC_PREFIX}{group}+{topic}")
}

/// The POP retry topic of (topic, group) as the broker writes it.
pub fn pop_retry_topic(topic: &str, group: &str, v2: bool) -> String {
    if v2 {
        retry_topic_v2(group, topic)
    } else {
        retry_topic_v1(group, topic)
    }
}

/// The topic a POP retry topic of `group` stands for; `None` when `retry`
/// is not one of that group's POP retry topics.
pub fn original_topic<'a>(retry: &'a str, group: &str) -> Option<&'a str> {
    let rest = retry
        .strip_prefix(RETRY_GROUP_TOPIC_PREFIX)?
        .strip_prefix(group)?;
    rest.strip_prefix('+')
        .or_else(|| rest.strip_prefix('_'))
        .filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(
            revive_topic("DefaultCluster"),
            "rmq_sys_REVIVE_LOG_DefaultCluster"
        );
        assert_eq!(pop_retry_topic("T", "G", false), "%RETRY%G_T");
        assert_eq!(pop_retry_topic("T", "G", true), "%RETRY%G+T");
        assert_eq!(retry_flag("%RETRY%G_T"), RetryFlag::RetryV1);
        assert_eq!(retry_flag("%RETRY%G+T"), RetryFlag::RetryV2);
        assert_eq!(retry_flag("T"), RetryFlag::Normal);
        assert_eq!(original_topic("%RETRY%G_T", "G"), Some("T"));
        assert_eq!(original_topic("%RETRY%G+T_x", "G"), Some("T_x"));
        assert_eq!(original_topic("%RETRY%H_T", "G"), None);
        assert_eq!(RetryFlag::from_text("2").topic("T", "G"), "%RETRY%G+T");
        assert_eq!(RetryFlag::from_text("x"), RetryFlag::Normal);
    }
}
