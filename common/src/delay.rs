//! Delay levels (`messageDelayLevel`): the table that maps a message's DELAY
//! property to how long it waits in `SCHEDULE_TOPIC_XXXX`.
//!
//! Level `n` (1-based) waits `delays[n - 1]` and lives in schedule queue
//! `n - 1`. Levels above the table's top are clamped to it; level 0 (or a
//! missing or unparsable property) means "not delayed".

use crate::config_error::ConfigError;
use crate::constants::{property, SCHEDULE_TOPIC};
use crate::message::record::RecordView;
use crate::message::Properties;

/// The broker.conf key the table comes from.
pub const DELAY_LEVEL_KEY: &str = "messageDelayLevel";

/// RocketMQ's default table (18 levels).
pub const DEFAULT_DELAY_LEVELS: &str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h";

/// A parsed delay-level table: at least one level, delays non-decreasing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelayLevels {
    delays_ms: Vec<i64>,
}

impl Default for DelayLevels {
    fn default() -> Self {
        // The default string is a constant that parses; an empty table is
        // never built (it would make every delayed message undeliverable).
        Self::parse(DEFAULT_DELAY_LEVELS).unwrap_or(Self {
            delays_ms: vec![1_000],
        })
    }
}

impl DelayLevels {
    /// Parses a space-separated list of `<positive integer><s|m|h|d>`.
    /// Delays must not decrease from one level to the next (RocketMQ's
    /// levels grow; equal neighbours are allowed). Any number of levels.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let bad = |reason: String| ConfigError::new(DELAY_LEVEL_KEY, reason);
        let mut delays_ms: Vec<i64> = Vec::new();
        for (i, item) in text.split_whitespace().enumerate() {
            let level = i + 1;
            let unit_at = item.len().saturating_sub(1);
            let (number, unit) = item.split_at(unit_at);
            let unit_ms: i64 = match unit {
                "s" => 1_000,
                "m" => 60_000,
                "h" => 3_600_000,
                "d" => 86_400_000,
                _ => {
                    return Err(bad(format!(
                        "level {level} `{item}` must end in a unit: s, m, h or d"
                    )))
                }
            };
            let n: i64 =
                number.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                    bad(format!("level {level} `{item}` needs a positive integer"))
                })?;
            let ms = n
                .checked_mul(unit_ms)
                .ok_or_else(|| bad(format!("level {level} `{item}` is too long")))?;
            if let Some(prev) = delays_ms.last() {
                if ms < *prev {
                    return Err(bad(format!(
                        "level {level} `{item}` is shorter than level {}; levels must ascend",
                        level - 1
                    )));
                }
            }
            delays_ms.push(ms);
        }
        if delays_ms.is_empty() {
            return Err(bad("needs at least one level, e.g. \"1s 5s 10s\"".into()));
        }
        Ok(Self { delays_ms })
    }

    /// The highest level.
    pub fn max_level(&self) -> i32 {
        i32::try_from(self.delays_ms.len()).unwrap_or(i32::MAX)
    }

    /// Delay of `level` in ms, `None` outside `1..=max_level`.
    pub fn delay_ms(&self, level: i32) -> Option<i64> {
        let i = usize::try_from(level).ok()?.checked_sub(1)?;
        self.delays_ms.get(i).copied()
    }

    /// `level` clamped to the table's top; `None` when it is not positive.
    pub fn clamp(&self, level: i32) -> Option<i32> {
        (level > 0).then(|| level.min(self.max_level()))
    }

    /// When a message stored at `store_timestamp_ms` with `level` is due.
    pub fn deliver_time_ms(&self, level: i32, store_timestamp_ms: i64) -> Option<i64> {
        let delay = self.delay_ms(self.clamp(level)?)?;
        Some(store_timestamp_ms.saturating_add(delay))
    }

    /// Iterates `(level, delay_ms)` from level 1.
    pub fn iter(&self) -> impl Iterator<Item = (i32, i64)> + '_ {
        (1..).zip(self.delays_ms.iter().copied())
    }

    /// The schedule queue of a level.
    pub fn queue_id(level: i32) -> i32 {
        level - 1
    }

    /// The level of a schedule queue.
    pub fn level_of_queue(queue_id: i32) -> i32 {
        queue_id + 1
    }
}

/// The DELAY property of a message as a level, 0 when absent or not a number.
pub fn delay_level_of(properties: &Properties) -> i32 {
    parse_level(properties.get(property::DELAY_TIME_LEVEL))
}

/// The DELAY property of a parsed record as a level, 0 when absent.
pub fn delay_level_of_view(view: &RecordView<'_>) -> i32 {
    parse_level(view.property(property::DELAY_TIME_LEVEL).as_deref())
}

fn parse_level(value: Option<&str>) -> i32 {
    value.and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

/// Whether a topic is the schedule topic.
pub fn is_schedule_topic(topic: &str) -> bool {
    topic == SCHEDULE_TOPIC
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_default_table() {
        let d = DelayLevels::default();
        assert_eq!(d.max_level(), 18);
        assert_eq!(d.delay_ms(1), Some(1_000));
        assert_eq!(d.delay_ms(5), Some(60_000));
        assert_eq!(d.delay_ms(18), Some(7_200_000));
        assert_eq!(d.delay_ms(0), None);
        assert_eq!(d.delay_ms(19), None);
    }

    #[test]
    fn units_and_more_than_18_levels() {
        let text = (1..=25)
            .map(|i| format!("{i}s"))
            .collect::<Vec<_>>()
            .join(" ")
            + " 1d";
        let d = DelayLevels::parse(&text).unwrap();
        assert_eq!(d.max_level(), 26);
        assert_eq!(d.delay_ms(26), Some(86_400_000));
        let d = DelayLevels::parse("  2s\t2s 3m 1h ").unwrap();
        assert_eq!(
            d.iter().collect::<Vec<_>>(),
            vec![(1, 2_000), (2, 2_000), (3, 180_000), (4, 3_600_000)]
        );
    }

    #[test]
    fn bad_tables_name_the_key_and_the_level() {
        for (text, needle) in [
            ("", "at least one"),
            ("1s 5x", "level 2 `5x`"),
            ("1s 0s", "positive"),
            ("1s -1s", "positive"),
            ("10s 5s", "ascend"),
            ("s", "positive"),
            ("1.5s", "positive"),
            ("99999999999999999d", "too long"),
        ] {
            let e = DelayLevels::parse(text).unwrap_err();
            assert_eq!(e.key, DELAY_LEVEL_KEY, "{text}");
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn clamps_and_computes_delivery() {
        let d = DelayLevels::parse("1s 2s 3s").unwrap();
        assert_eq!(d.clamp(0), None);
        assert_eq!(d.clamp(-2), None);
        assert_eq!(d.clamp(2), Some(2));
        assert_eq!(d.clamp(99), Some(3));
        assert_eq!(d.deliver_time_ms(99, 10_000), Some(13_000));
        assert_eq!(d.deliver_time_ms(1, 10_000), Some(11_000));
        assert_eq!(d.deliver_time_ms(0, 10_000), None);
        assert_eq!(DelayLevels::queue_id(3), 2);
        assert_eq!(DelayLevels::level_of_queue(2), 3);
    }

    #[test]
    fn reads_the_property() {
        let mut p = Properties::new();
        assert_eq!(delay_level_of(&p), 0);
        p.insert(property::DELAY_TIME_LEVEL, "3");
        assert_eq!(delay_level_of(&p), 3);
        p.insert(property::DELAY_TIME_LEVEL, "x");
        assert_eq!(delay_level_of(&p), 0);
    }
}
