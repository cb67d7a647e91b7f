//! Light message queue names in stats keys and metric labels. RocketMQ
//! 5.3.3's `LmqBrokerStatsManager` (used when `enableLmq` is on) replaces
//! every `%LMQ%…` topic or group by `%LMQ%` in its per-group stats unless
//! `enableLmqStats`; a million LMQs then make one stats entry, not a
//! million. Here the same rule covers every place a topic or group name
//! becomes a stats key or a Prometheus label (stats items, consumer lag,
//! POP and dead-letter counters, message sizes), so that the number of
//! series stays bounded whatever the number of LMQs.

use rmq_common::constants::LMQ_PREFIX;
use rmq_common::names::is_lmq;

/// Whether LMQ names are folded into `%LMQ%` (`enableLmq` on and
/// `enableLmqStats` off).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LmqFold {
    on: bool,
}

impl LmqFold {
    /// The rule for a broker with these two settings.
    pub fn new(enable_lmq: bool, enable_lmq_stats: bool) -> Self {
        Self {
            on: enable_lmq && !enable_lmq_stats,
        }
    }

    /// Whether names are folded.
    pub fn is_on(self) -> bool {
        self.on
    }

    /// `name` as it appears in a stats key or label: `%LMQ%` for an LMQ
    /// name when folding, else itself.
    pub fn name(self, name: &str) -> &str {
        if self.on && is_lmq(name) {
            LMQ_PREFIX
        } else {
            name
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_lmq_names_only_with_lmq_on_and_lmq_stats_off() {
        let fold = LmqFold::new(true, false);
        assert_eq!(fold.name("%LMQ%123"), "%LMQ%");
        assert_eq!(fold.name("%LMQ%"), "%LMQ%");
        assert_eq!(fold.name("TopicA"), "TopicA");
        assert_eq!(
            fold.name("%lmq%x"),
            "%lmq%x",
            "the prefix is case-sensitive"
        );
        assert_eq!(LmqFold::new(true, true).name("%LMQ%123"), "%LMQ%123");
        assert_eq!(LmqFold::new(false, false).name("%LMQ%123"), "%LMQ%123");
    }
}
