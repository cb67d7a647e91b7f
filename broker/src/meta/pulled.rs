//! How far each group has pulled each queue (RocketMQ's pull-offset
//! table): the next offset the last pull that found messages handed out.
//! In memory only, as RocketMQ keeps it; with the committed offsets it
//! splits a group's lag into in flight (pulled, not committed) and ready
//! (stored, not pulled) for the `rocketmq_consumer_*` gauges.

use std::collections::HashMap;

use parking_lot::Mutex;

/// topic -> group -> queue -> next offset to pull.
type Table = HashMap<String, HashMap<String, HashMap<i32, i64>>>;

/// The pull-offset table.
#[derive(Debug, Default)]
pub struct PullOffsets {
    table: Mutex<Table>,
}

impl PullOffsets {
    /// Records that `group` pulled `queue_id` of `topic` up to `next`
    /// (exclusive). Allocates only for a (topic, group) seen first.
    pub fn pulled(&self, group: &str, topic: &str, queue_id: i32, next: i64) {
        let mut t = self.table.lock();
        let groups = match t.get_mut(topic) {
            Some(g) => g,
            None => t.entry(topic.to_owned()).or_default(),
        };
        let queues = match groups.get_mut(group) {
            Some(q) => q,
            None => groups.entry(group.to_owned()).or_default(),
        };
        queues.insert(queue_id, next);
    }

    /// The next offset `group` will pull from `queue_id` of `topic`, if
    /// it pulled there since the start.
    pub fn query(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        self.table
            .lock()
            .get(topic)?
            .get(group)?
            .get(&queue_id)
            .copied()
    }

    /// Every (group, topic, queue, next offset to pull).
    pub fn all(&self) -> Vec<(String, String, i32, i64)> {
        let t = self.table.lock();
        let mut out = Vec::new();
        for (topic, groups) in t.iter() {
            for (group, queues) in groups {
                out.extend(
                    queues
                        .iter()
                        .map(|(q, o)| (group.clone(), topic.clone(), *q, *o)),
                );
            }
        }
        out
    }

    /// Forgets `group` everywhere.
    pub fn remove_group(&self, group: &str) {
        for groups in self.table.lock().values_mut() {
            groups.remove(group);
        }
    }

    /// Forgets `topic`.
    pub fn remove_topic(&self, topic: &str) {
        self.table.lock().remove(topic);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pulls_are_kept_per_group_topic_and_queue() {
        let p = PullOffsets::default();
        p.pulled("G", "T", 0, 5);
        p.pulled("G", "T", 0, 9);
        p.pulled("H", "T", 1, 3);
        assert_eq!(p.query("G", "T", 0), Some(9));
        assert_eq!(p.query("G", "T", 1), None);
        assert_eq!(p.query("H", "T", 1), Some(3));
        let mut all = p.all();
        all.sort();
        assert_eq!(
            all,
            [
                ("G".into(), "T".into(), 0, 9),
                ("H".into(), "T".into(), 1, 3)
            ]
        );
        p.remove_group("G");
        assert_eq!(p.query("G", "T", 0), None);
        p.remove_topic("T");
        assert_eq!(p.query("H", "T", 1), None);
    }
}
