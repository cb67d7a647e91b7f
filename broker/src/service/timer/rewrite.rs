//! The send path's timer step (RocketMQ 5.x `HookUtils.handleScheduleMessage`
//! and `transformTimerMessage`): a message with TIMER_DELIVER_MS,
//! TIMER_DELAY_SEC or TIMER_DELAY_MS is stored in `rmq_sys_wheel_timer`,
//! queue 0, with its real topic and queue in REAL_TOPIC / REAL_QID and its
//! slot in TIMER_OUT_MS; the timer service puts it back when it is due.

use rmq_common::constants::{property, TIMER_TOPIC};
use rmq_common::message::{sysflag, MessageToStore};
use rmq_common::remoting::ResponseCode;
use rmq_common::StoreConfig;

/// Why a timer message is refused, with 5.x's codes and remarks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimerRefusal {
    /// `timerWheelEnable` is false (WHEEL_TIMER_NOT_ENABLE).
    NotEnabled,
    /// A value that is not a number, a delay beyond `timerMaxDelaySec`, or
    /// a delete marker whose time has passed (WHEEL_TIMER_MSG_ILLEGAL).
    Illegal {
        /// `timerMaxDelaySec * 1000`.
        max_delay_ms: i64,
    },
}

impl TimerRefusal {
    /// The response code 5.x answers.
    pub fn code(&self) -> ResponseCode {
        match self {
            Self::NotEnabled => ResponseCode::SystemError,
            Self::Illegal { .. } => ResponseCode::MessageIllegal,
        }
    }

    /// The remark 5.x answers.
    pub fn remark(&self) -> String {
        match self {
            Self::NotEnabled => {
                "accurate timer message is not enabled, timerWheelEnable is false".to_owned()
            }
            Self::Illegal { max_delay_ms } => format!(
                "timer message illegal, the delay time should not be bigger than the max delay {max_delay_ms}ms; or if set del msg, the delay time should be bigger than the current time"
            ),
        }
    }
}

/// Whether `msg` carries any of the client's timer properties.
pub fn has_timer_property(msg: &MessageToStore) -> bool {
    [
        property::TIMER_DELIVER_MS,
        property::TIMER_DELAY_SEC,
        property::TIMER_DELAY_MS,
    ]
    .iter()
    .any(|p| msg.properties.get(p).is_some())
}

/// The slot a delivery time is filed under: rounded down to the
/// precision, one precision earlier for an exact multiple (the slot is
/// read once its end has passed, so delivery is never early).
pub fn slot_of(deliver_ms: i64, precision: i64) -> i64 {
    let rem = deliver_ms.rem_euclid(precision);
    if rem == 0 {
        deliver_ms - precision
    } else {
        deliver_ms - rem
    }
}

/// Applies the timer step to one message at broker time `now_ms`: true
/// when it was rewritten into the timer topic. Half messages, messages
/// already in the timer topic or already carrying TIMER_OUT_MS (a
/// delivery coming back), and messages without timer properties are left
/// alone; a DELAY level wins over timer properties, which are removed.
/// A due time already passed leaves the message in its own topic.
pub fn apply(
    msg: &mut MessageToStore,
    now_ms: i64,
    config: &StoreConfig,
) -> Result<bool, TimerRefusal> {
    let timed_type = matches!(
        sysflag::transaction_value(msg.sys_flag),
        sysflag::TRANSACTION_NOT_TYPE | sysflag::TRANSACTION_COMMIT_TYPE
    );
    if !timed_type || msg.topic == TIMER_TOPIC {
        return Ok(false);
    }
    if rmq_common::delay::delay_level_of(&msg.properties) > 0 {
        for p in [
            property::TIMER_DELIVER_MS,
            property::TIMER_DELAY_SEC,
            property::TIMER_DELAY_MS,
        ] {
            msg.properties.remove(p);
        }
        return Ok(false);
    }
    if msg.properties.get(property::TIMER_OUT_MS).is_some() || !has_timer_property(msg) {
        return Ok(false);
    }
    if !config.timer_wheel_enable {
        return Err(TimerRefusal::NotEnabled);
    }
    let max_delay_ms = i64::try_from(config.timer_max_delay_sec)
        .unwrap_or(i64::MAX / 1000)
        .saturating_mul(1000);
    let illegal = TimerRefusal::Illegal { max_delay_ms };
    let number = |p: &str| -> Result<Option<i64>, TimerRefusal> {
        msg.properties
            .get(p)
            .map(|v| v.trim().parse::<i64>().map_err(|_| illegal.clone()))
            .transpose()
    };
    let deliver_ms = if let Some(sec) = number(property::TIMER_DELAY_SEC)? {
        now_ms.saturating_add(sec.saturating_mul(1000))
    } else if let Some(ms) = number(property::TIMER_DELAY_MS)? {
        now_ms.saturating_add(ms)
    } else {
        number(property::TIMER_DELIVER_MS)?.unwrap_or(now_ms)
    };
    if deliver_ms <= now_ms {
        if msg.properties.get(property::TIMER_DEL_UNIQKEY).is_some() {
            return Err(illegal);
        }
        return Ok(false);
    }
    if deliver_ms - now_ms > max_delay_ms {
        return Err(illegal);
    }
    let slot = slot_of(deliver_ms, config.timer_precision());
    msg.properties
        .insert(property::TIMER_OUT_MS, slot.to_string());
    msg.properties
        .insert(property::REAL_TOPIC, msg.topic.as_str());
    msg.properties
        .insert(property::REAL_QUEUE_ID, msg.queue_id.to_string());
    msg.topic = TIMER_TOPIC.to_owned();
    msg.queue_id = 0;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_750_000_000_300;

    fn msg(prop: &str, value: &str) -> MessageToStore {
        let mut m = MessageToStore::new("Orders", 3, b"x".to_vec());
        m.properties.insert(prop, value);
        m
    }

    #[test]
    fn each_property_rewrites_into_the_timer_topic() {
        let c = StoreConfig::default();
        for (prop, value, due) in [
            (property::TIMER_DELAY_SEC, "10", NOW + 10_000),
            (property::TIMER_DELAY_MS, "2500", NOW + 2_500),
            (
                property::TIMER_DELIVER_MS,
                "1750000005000",
                1_750_000_005_000,
            ),
        ] {
            let mut m = msg(prop, value);
            assert_eq!(apply(&mut m, NOW, &c), Ok(true), "{prop}");
            assert_eq!(m.topic, TIMER_TOPIC);
            assert_eq!(m.queue_id, 0);
            assert_eq!(m.properties.get(property::REAL_TOPIC), Some("Orders"));
            assert_eq!(m.properties.get(property::REAL_QUEUE_ID), Some("3"));
            let out: i64 = m
                .properties
                .get(property::TIMER_OUT_MS)
                .unwrap()
                .parse()
                .unwrap();
            assert!(
                out < due && due <= out + 1_000,
                "{prop}: slot {out} for {due}"
            );
            assert_eq!(out % 1_000, 0);
            // A second pass (the delivery coming back) leaves it alone.
            assert_eq!(apply(&mut m, NOW, &c), Ok(false));
        }
    }

    #[test]
    fn slots_round_down_and_exact_multiples_go_one_earlier() {
        assert_eq!(slot_of(5_300, 1_000), 5_000);
        assert_eq!(slot_of(5_000, 1_000), 4_000);
        assert_eq!(slot_of(5_000, 100), 4_900);
    }

    #[test]
    fn refusals_carry_5x_codes_and_remarks() {
        let mut c = StoreConfig::default();
        let mut m = msg(property::TIMER_DELAY_SEC, "x");
        let e = apply(&mut m, NOW, &c).unwrap_err();
        assert_eq!(e.code(), ResponseCode::MessageIllegal);
        assert!(
            e.remark().contains("max delay 259200000ms"),
            "{}",
            e.remark()
        );
        let mut m = msg(property::TIMER_DELAY_SEC, "259201");
        assert!(apply(&mut m, NOW, &c).is_err());
        let mut m = msg(property::TIMER_DELAY_SEC, "259200");
        assert_eq!(apply(&mut m, NOW, &c), Ok(true));
        c.timer_wheel_enable = false;
        let mut m = msg(property::TIMER_DELAY_MS, "10");
        let e = apply(&mut m, NOW, &c).unwrap_err();
        assert_eq!(e.code(), ResponseCode::SystemError);
        assert_eq!(
            e.remark(),
            "accurate timer message is not enabled, timerWheelEnable is false"
        );
    }

    #[test]
    fn past_times_stay_in_place_and_levels_win() {
        let c = StoreConfig::default();
        let mut m = msg(property::TIMER_DELIVER_MS, "1000");
        assert_eq!(apply(&mut m, NOW, &c), Ok(false));
        assert_eq!(m.topic, "Orders");
        m.properties.insert(property::TIMER_DEL_UNIQKEY, "Orders+X");
        assert!(apply(&mut m, NOW, &c).is_err());
        let mut m = msg(property::TIMER_DELAY_SEC, "10");
        m.properties.insert(property::DELAY_TIME_LEVEL, "3");
        assert_eq!(apply(&mut m, NOW, &c), Ok(false));
        assert_eq!(m.properties.get(property::TIMER_DELAY_SEC), None);
        let mut m = msg(property::TIMER_DELAY_SEC, "10");
        m.sys_flag = sysflag::TRANSACTION_PREPARED_TYPE;
        assert_eq!(apply(&mut m, NOW, &c), Ok(false));
    }
}
