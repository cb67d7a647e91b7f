//! POP-state writes and revives per (group, topic), for RocketMQ 5.3.3's
//! `rocketmq_pop_revive_in_message_total{consumer_group,topic,
//! revive_message_type,put_status}` and
//! `rocketmq_pop_revive_retry_messages_total{consumer_group,topic,put_status}`.
//! Only successful writes are counted (a failed one is refused to the
//! client), so `put_status` is always `PUT_OK`.

use std::collections::HashMap;

use parking_lot::Mutex;

/// What is counted per (group, topic).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Checkpoint records written (a pop, a change of invisible time).
    pub ck: u64,
    /// Ack records written (acks, and revives recorded as acks).
    pub ack: u64,
    /// Messages revived into retry topics.
    pub retried: u64,
}

/// topic -> group -> counts.
#[derive(Debug, Default)]
pub struct PairCounts {
    table: Mutex<HashMap<String, HashMap<String, Counts>>>,
    /// LMQ topics and groups are counted as `%LMQ%`.
    fold: crate::metrics::LmqFold,
}

impl PairCounts {
    /// No counts yet; LMQ names folded by `fold`.
    pub fn with_lmq_fold(fold: crate::metrics::LmqFold) -> Self {
        Self {
            table: Mutex::default(),
            fold,
        }
    }

    /// Adds to the counts of (`group`, `topic`); allocates only for a pair
    /// seen first.
    pub fn add(&self, group: &str, topic: &str, f: impl FnOnce(&mut Counts)) {
        let (group, topic) = (self.fold.name(group), self.fold.name(topic));
        let mut t = self.table.lock();
        let groups = match t.get_mut(topic) {
            Some(g) => g,
            None => t.entry(topic.to_owned()).or_default(),
        };
        match groups.get_mut(group) {
            Some(c) => f(c),
            None => f(groups.entry(group.to_owned()).or_default()),
        }
    }

    /// Every (group, topic, counts).
    pub fn all(&self) -> Vec<(String, String, Counts)> {
        let t = self.table.lock();
        t.iter()
            .flat_map(|(topic, groups)| {
                groups
                    .iter()
                    .map(move |(group, c)| (group.clone(), topic.clone(), *c))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_per_pair() {
        let p = PairCounts::default();
        p.add("G", "T", |c| c.ck += 1);
        p.add("G", "T", |c| c.ack += 2);
        p.add("H", "T", |c| c.retried += 3);
        let mut all = p.all();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            all,
            [
                (
                    "G".into(),
                    "T".into(),
                    Counts {
                        ck: 1,
                        ack: 2,
                        retried: 0
                    }
                ),
                (
                    "H".into(),
                    "T".into(),
                    Counts {
                        ck: 0,
                        ack: 0,
                        retried: 3
                    }
                ),
            ]
        );
    }
}
