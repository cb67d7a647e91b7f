//! Per-topic and per-group counters, as Java's `BrokerStatsManager` keeps
//! them: every stats item (`TOPIC_PUT_NUMS` of a topic, `GROUP_GET_NUMS` of
//! `topic@group`, ...) is a running sum and a count of additions, sampled
//! into three rings (every 10 s for the last minute, every 10 min for the
//! last hour, every hour for the last day). VIEW_BROKER_STATS_DATA,
//! GET_CONSUME_STATS' `consumeTps` and the per-topic gauges read them here,
//! so each number is kept once.
//!
//! The hot paths add through [`StatsItems::topic_put`] and
//! [`StatsItems::group_get`]: a read-locked lookup by `&str`, no allocation
//! once the item exists.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

/// Sampling period and ring length of the minute, hour and day views
/// (Java: 10 s x 7, 10 min x 7, 1 h x 25).
const RINGS: [(i64, usize); 3] = [(10_000, 7), (600_000, 7), (3_600_000, 25)];

/// A stats family and the key format of its items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatsKind {
    /// Messages stored, by topic.
    TopicPutNums,
    /// Bytes stored, by topic.
    TopicPutSize,
    /// Messages pulled, by `topic@group`.
    GroupGetNums,
    /// Bytes pulled, by `topic@group`.
    GroupGetSize,
    /// Messages sent back for retry, by `topic@group`.
    SndbckPutNums,
    /// Messages stored, by broker (its cluster name).
    BrokerPutNums,
    /// Messages pulled, by broker (its cluster name).
    BrokerGetNums,
}

impl StatsKind {
    /// Every kind, with its Java `statsName`.
    pub const ALL: [(StatsKind, &'static str); 7] = [
        (StatsKind::TopicPutNums, "TOPIC_PUT_NUMS"),
        (StatsKind::TopicPutSize, "TOPIC_PUT_SIZE"),
        (StatsKind::GroupGetNums, "GROUP_GET_NUMS"),
        (StatsKind::GroupGetSize, "GROUP_GET_SIZE"),
        (StatsKind::SndbckPutNums, "SNDBCK_PUT_NUMS"),
        (StatsKind::BrokerPutNums, "BROKER_PUT_NUMS"),
        (StatsKind::BrokerGetNums, "BROKER_GET_NUMS"),
    ];

    /// The kind Java names `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(k, _)| *k)
    }
}

/// A running sum and how many additions made it.
#[derive(Debug, Default)]
struct Counter {
    value: AtomicU64,
    times: AtomicU64,
}

impl Counter {
    fn add(&self, n: u64) {
        self.value.fetch_add(n, Ordering::Relaxed);
        self.times.fetch_add(1, Ordering::Relaxed);
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Snapshot {
    at_ms: i64,
    value: u64,
    times: u64,
}

/// One item: its counter and its three rings.
#[derive(Debug, Default)]
struct Item {
    counter: Counter,
    rings: Mutex<[VecDeque<Snapshot>; 3]>,
}

impl Item {
    fn snapshot(&self, at_ms: i64) -> Snapshot {
        Snapshot {
            at_ms,
            value: self.counter.value.load(Ordering::Relaxed),
            times: self.counter.times.load(Ordering::Relaxed),
        }
    }
}

/// A topic's put counters and its groups' get counters.
#[derive(Debug, Default)]
struct TopicItems {
    put_nums: Item,
    put_size: Item,
    groups: RwLock<HashMap<String, Arc<GroupItems>>>,
}

#[derive(Debug, Default)]
struct GroupItems {
    get_nums: Item,
    get_size: Item,
    sndbck_nums: Item,
}

/// Sum, rate and average per addition over one view (Java's
/// `BrokerStatsItem`).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct StatsData {
    /// Added over the view.
    pub sum: u64,
    /// Added per second over the view.
    pub tps: f64,
    /// Average amount per addition over the view.
    pub avgpt: f64,
}

/// An item's minute, hour and day views (Java's `BrokerStatsData`).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatsViews {
    /// The last minute.
    pub stats_minute: StatsData,
    /// The last hour.
    pub stats_hour: StatsData,
    /// The last day.
    pub stats_day: StatsData,
}

/// Running totals, as [`StatsItems::totals`] reads them.
#[derive(Debug, Default)]
pub struct ItemTotals {
    /// (topic, messages stored, bytes stored).
    pub puts: Vec<(String, u64, u64)>,
    /// (topic, group, messages pulled, bytes pulled).
    pub gets: Vec<(String, String, u64, u64)>,
}

/// Last-minute rates, per second.
#[derive(Debug, Default)]
pub struct MinuteRates {
    /// (topic, put rate).
    pub puts: Vec<(String, f64)>,
    /// (topic, group, get rate).
    pub gets: Vec<(String, String, f64)>,
}

/// Which ring a view reads.
#[derive(Debug, Clone, Copy)]
enum View {
    Minute = 0,
    Hour = 1,
    Day = 2,
}

/// Every stats item of one broker.
#[derive(Debug, Default)]
pub struct StatsItems {
    topics: RwLock<HashMap<String, Arc<TopicItems>>>,
    broker_put: Item,
    broker_get: Item,
    /// When each ring was last sampled.
    last_sample: Mutex<[i64; 3]>,
    /// LMQ topics and groups are counted as `%LMQ%`.
    fold: super::LmqFold,
}

impl StatsItems {
    /// No items yet; LMQ names are kept as they are.
    pub fn new() -> Self {
        Self::default()
    }

    /// No items yet; LMQ names folded by `fold` (RocketMQ's
    /// `LmqBrokerStatsManager`).
    pub fn with_lmq_fold(fold: super::LmqFold) -> Self {
        Self {
            fold,
            ..Self::default()
        }
    }

    fn topic(&self, topic: &str) -> Arc<TopicItems> {
        let topic = self.fold.name(topic);
        if let Some(t) = self.topics.read().get(topic) {
            return Arc::clone(t);
        }
        Arc::clone(self.topics.write().entry(topic.to_owned()).or_default())
    }

    fn group(&self, topic: &str, group: &str) -> Arc<GroupItems> {
        let t = self.topic(topic);
        let group = self.fold.name(group);
        if let Some(g) = t.groups.read().get(group) {
            return Arc::clone(g);
        }
        let g = Arc::clone(t.groups.write().entry(group.to_owned()).or_default());
        g
    }

    /// `messages` messages of `bytes` bytes stored in `topic` (one put).
    pub fn topic_put(&self, topic: &str, messages: u64, bytes: u64) {
        let t = self.topic(topic);
        t.put_nums.counter.add(messages);
        t.put_size.counter.add(bytes);
        self.broker_put.counter.add(messages);
    }

    /// `messages` messages of `bytes` bytes pulled from `topic` by `group`
    /// (one pull that found messages).
    pub fn group_get(&self, topic: &str, group: &str, messages: u64, bytes: u64) {
        let g = self.group(topic, group);
        g.get_nums.counter.add(messages);
        g.get_size.counter.add(bytes);
        self.broker_get.counter.add(messages);
    }

    /// Running totals since start: per topic (messages, bytes) stored, and
    /// per (topic, group) (messages, bytes) pulled.
    pub fn totals(&self) -> ItemTotals {
        let value = |i: &Item| i.counter.value.load(Ordering::Relaxed);
        let mut out = ItemTotals::default();
        for (topic, t) in self.topics.read().iter() {
            out.puts
                .push((topic.clone(), value(&t.put_nums), value(&t.put_size)));
            for (group, g) in t.groups.read().iter() {
                out.gets.push((
                    topic.clone(),
                    group.clone(),
                    value(&g.get_nums),
                    value(&g.get_size),
                ));
            }
        }
        out
    }

    /// A message of `topic` sent back for retry by `group`.
    pub fn send_back(&self, topic: &str, group: &str) {
        self.group(topic, group).sndbck_nums.counter.add(1);
    }

    /// Forgets a deleted topic's items.
    pub fn remove_topic(&self, topic: &str) {
        self.topics.write().remove(topic);
    }

    /// Forgets a deleted group's items under every topic.
    pub fn remove_group(&self, group: &str) {
        for t in self.topics.read().values() {
            t.groups.write().remove(group);
        }
    }

    /// Samples the rings that are due at `now_ms` (called every second).
    pub fn sample(&self, now_ms: i64) {
        let due: Vec<usize> = {
            let mut last = self.last_sample.lock();
            (0..RINGS.len())
                .filter(|&i| {
                    let due = now_ms - last[i] >= RINGS[i].0;
                    if due {
                        last[i] = now_ms;
                    }
                    due
                })
                .collect()
        };
        if due.is_empty() {
            return;
        }
        let mut items: Vec<&Item> = vec![&self.broker_put, &self.broker_get];
        let topics: Vec<Arc<TopicItems>> = self.topics.read().values().cloned().collect();
        let groups: Vec<Arc<GroupItems>> = topics
            .iter()
            .flat_map(|t| t.groups.read().values().cloned().collect::<Vec<_>>())
            .collect();
        for t in &topics {
            items.push(&t.put_nums);
            items.push(&t.put_size);
        }
        for g in &groups {
            items.extend([&g.get_nums, &g.get_size, &g.sndbck_nums]);
        }
        for item in items {
            let snap = item.snapshot(now_ms);
            let mut rings = item.rings.lock();
            for &i in &due {
                let ring = &mut rings[i];
                if ring.is_empty() {
                    // As Java: an item's first sample follows a zero one a
                    // period earlier, so what it counted before shows.
                    ring.push_back(Snapshot {
                        at_ms: now_ms - RINGS[i].0,
                        value: 0,
                        times: 0,
                    });
                }
                ring.push_back(snap);
                while ring.len() > RINGS[i].1 {
                    ring.pop_front();
                }
            }
        }
    }

    /// The views of item `key` of `kind`; `None` if there is no such item.
    pub fn views(&self, kind: StatsKind, key: &str) -> Option<StatsViews> {
        let topics = self.topics.read();
        let group_item = |pick: fn(&GroupItems) -> &Item| -> Option<StatsViews> {
            let (topic, group) = key.split_once('@')?;
            let t = topics.get(topic)?;
            let groups = t.groups.read();
            Some(views_of(pick(groups.get(group)?)))
        };
        match kind {
            StatsKind::TopicPutNums => topics.get(key).map(|t| views_of(&t.put_nums)),
            StatsKind::TopicPutSize => topics.get(key).map(|t| views_of(&t.put_size)),
            StatsKind::GroupGetNums => group_item(|g| &g.get_nums),
            StatsKind::GroupGetSize => group_item(|g| &g.get_size),
            StatsKind::SndbckPutNums => group_item(|g| &g.sndbck_nums),
            StatsKind::BrokerPutNums => Some(views_of(&self.broker_put)),
            StatsKind::BrokerGetNums => Some(views_of(&self.broker_get)),
        }
    }

    /// `group`'s pulls per second from `topic` over the last minute (Java's
    /// `tpsGroupGetNums`; 0 without pulls).
    pub fn group_get_tps(&self, topic: &str, group: &str) -> f64 {
        let (topic, group) = (self.fold.name(topic), self.fold.name(group));
        self.views(StatsKind::GroupGetNums, &format!("{topic}@{group}"))
            .map_or(0.0, |v| v.stats_minute.tps)
    }

    /// The minute put rate of every topic, and the minute get rate of
    /// every (topic, group).
    pub fn minute_rates(&self) -> MinuteRates {
        let topics = self.topics.read();
        let mut puts = Vec::new();
        let mut gets = Vec::new();
        for (name, t) in topics.iter() {
            puts.push((name.clone(), stats_of(&t.put_nums, View::Minute).tps));
            for (group, g) in t.groups.read().iter() {
                gets.push((
                    name.clone(),
                    group.clone(),
                    stats_of(&g.get_nums, View::Minute).tps,
                ));
            }
        }
        MinuteRates { puts, gets }
    }
}

fn views_of(item: &Item) -> StatsViews {
    StatsViews {
        stats_minute: stats_of(item, View::Minute),
        stats_hour: stats_of(item, View::Hour),
        stats_day: stats_of(item, View::Day),
    }
}

/// Java's `computeStatsData`: the difference between the oldest and the
/// newest sample of the ring.
fn stats_of(item: &Item, view: View) -> StatsData {
    let rings = item.rings.lock();
    let ring = &rings[view as usize];
    let (Some(first), Some(last)) = (ring.front(), ring.back()) else {
        return StatsData::default();
    };
    let sum = last.value.saturating_sub(first.value);
    let times = last.times.saturating_sub(first.times);
    let span_ms = last.at_ms - first.at_ms;
    StatsData {
        sum,
        tps: if span_ms > 0 {
            sum as f64 * 1000.0 / span_ms as f64
        } else {
            0.0
        },
        avgpt: if times > 0 {
            sum as f64 / times as f64
        } else {
            0.0
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_are_differences_across_each_ring() {
        let s = StatsItems::new();
        let t0 = 1_000_000_000;
        s.sample(t0);
        assert!(s.views(StatsKind::TopicPutNums, "T").is_none());
        // 10 puts of 2 messages (100 bytes) every 10 s, for 60 s.
        for step in 1..=6 {
            for _ in 0..10 {
                s.topic_put("T", 2, 100);
                s.group_get("T", "G", 1, 50);
            }
            s.sample(t0 + step * 10_000);
        }
        let v = s.views(StatsKind::TopicPutNums, "T").unwrap();
        // The item's first sample follows a zero one: all 120 count.
        assert_eq!(v.stats_minute.sum, 120);
        assert_eq!(v.stats_minute.tps, 2.0);
        assert_eq!(v.stats_minute.avgpt, 2.0);
        let size = s.views(StatsKind::TopicPutSize, "T").unwrap();
        assert_eq!(size.stats_minute.sum, 6_000);
        let g = s.views(StatsKind::GroupGetNums, "T@G").unwrap();
        assert_eq!((g.stats_minute.sum, g.stats_minute.tps), (60, 1.0));
        assert_eq!(s.group_get_tps("T", "G"), 1.0);
        assert_eq!(s.group_get_tps("T", "other"), 0.0);
        assert!(s.views(StatsKind::GroupGetNums, "T").is_none());
        // The hour ring was sampled once for the item: no span yet.
        assert_eq!(v.stats_hour, StatsData::default());
        // The broker's item was sampled from the start (0 then).
        let b = s.views(StatsKind::BrokerPutNums, "any").unwrap();
        assert_eq!(b.stats_minute.sum, 120);
        // The minute ring keeps 7 samples: 60 s.
        for step in 7..=20 {
            s.sample(t0 + step * 10_000);
        }
        let v = s.views(StatsKind::TopicPutNums, "T").unwrap();
        assert_eq!(v.stats_minute.sum, 0);
        s.remove_topic("T");
        assert!(s.views(StatsKind::TopicPutNums, "T").is_none());
        assert_eq!(
            StatsKind::from_name("GROUP_GET_NUMS"),
            Some(StatsKind::GroupGetNums)
        );
    }
}
