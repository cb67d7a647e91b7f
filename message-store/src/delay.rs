//! The delay rewrite of the put path: a message with a DELAY level is stored
//! in `SCHEDULE_TOPIC_XXXX` (queue = level - 1) with its real topic and queue
//! kept in properties; the schedule service writes it back when it is due.

use std::borrow::Cow;

use rmq_common::constants::{property, SCHEDULE_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC};
use rmq_common::delay::{delay_level_of, DelayLevels};
use rmq_common::message::{sysflag, MessageToStore};

/// The delay level `msg` is stored under, if it is delayed: a level in the
/// table, on a plain or committed message (prepared and rolled-back
/// transactional messages ignore the level, as RocketMQ does), never in the
/// schedule or transaction system topics.
pub(crate) fn schedule_level(levels: &DelayLevels, msg: &MessageToStore) -> Option<i32> {
    let delayable = matches!(
        sysflag::transaction_value(msg.sys_flag),
        sysflag::TRANSACTION_NOT_TYPE | sysflag::TRANSACTION_COMMIT_TYPE
    );
    let level = levels.clamp(delay_level_of(&msg.properties))?;
    let system =
        [SCHEDULE_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC].contains(&msg.topic.as_str());
    (delayable && !system).then_some(level)
}

/// `msg` as it must be stored: rewritten into the schedule topic when it
/// asks for a delay ([`schedule_level`]), unchanged otherwise (a half keeps
/// its DELAY property untouched).
pub(crate) fn schedule_rewrite<'a>(
    levels: &DelayLevels,
    msg: &'a MessageToStore,
) -> Cow<'a, MessageToStore> {
    let Some(level) = schedule_level(levels, msg) else {
        return Cow::Borrowed(msg);
    };
    let mut out = msg.clone();
    out.properties
        .insert(property::REAL_TOPIC, msg.topic.as_str());
    out.properties
        .insert(property::REAL_QUEUE_ID, msg.queue_id.to_string());
    out.properties
        .insert(property::DELAY_TIME_LEVEL, level.to_string());
    out.topic = SCHEDULE_TOPIC.to_owned();
    out.queue_id = DelayLevels::queue_id(level);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delayed(level: &str) -> MessageToStore {
        let mut m = MessageToStore::new("Orders", 3, b"x".to_vec());
        m.properties.insert(property::DELAY_TIME_LEVEL, level);
        m
    }

    #[test]
    fn rewrites_into_the_level_queue_and_clamps() {
        let levels = DelayLevels::parse("1s 2s 3s").unwrap();
        let m = delayed("2");
        let out = schedule_rewrite(&levels, &m);
        assert_eq!(out.topic, SCHEDULE_TOPIC);
        assert_eq!(out.queue_id, 1);
        assert_eq!(out.properties.get(property::REAL_TOPIC), Some("Orders"));
        assert_eq!(out.properties.get(property::REAL_QUEUE_ID), Some("3"));
        let m = delayed("40");
        let out = schedule_rewrite(&levels, &m);
        assert_eq!(out.queue_id, 2);
        assert_eq!(out.properties.get(property::DELAY_TIME_LEVEL), Some("3"));
    }

    #[test]
    fn leaves_undelayed_and_prepared_messages_alone() {
        let levels = DelayLevels::default();
        for level in ["0", "-1", "x"] {
            let m = delayed(level);
            assert!(matches!(schedule_rewrite(&levels, &m), Cow::Borrowed(_)));
        }
        let mut m = delayed("2");
        m.sys_flag = sysflag::TRANSACTION_PREPARED_TYPE;
        assert!(matches!(schedule_rewrite(&levels, &m), Cow::Borrowed(_)));
        m.sys_flag = sysflag::TRANSACTION_COMMIT_TYPE;
        assert_eq!(schedule_rewrite(&levels, &m).topic, SCHEDULE_TOPIC);
    }
}
