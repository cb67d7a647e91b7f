//! Gauges read from the broker's state: set every second by the broker's
//! sampler task and once more right before each scrape.

mod clients;
mod consumers;
mod lanes;
mod pop;
mod rocketmq;
mod timer;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use metrics::Label;

use crate::config::Settings;
use crate::ha::ReplicaAcks;
use crate::meta::{ConsumerOffsetManager, SubscriptionGroupManager, TopicConfigManager};
use crate::metrics::names;
use crate::metrics::{BrokerStats, StatsItems};
use crate::service::schedule::Scheduler;
use crate::service::transaction::Transactions;
use crate::service::transaction::TRANS_GROUP;
use rmq_store::clean::{DiskUsage, FsDiskUsage};
use rmq_store::MessageStore;

/// Most (group, topic) consumer-lag series; the rest are summed into one
/// series labelled `group="_other", topic="_other"`.
pub const CONSUMER_LAG_SERIES_MAX: usize = 50;

/// What the sampler reads: the broker's tables and services, each shared
/// with the code that owns it.
#[derive(Debug)]
pub struct Sources {
    /// Settings (role, store root, cluster and broker names).
    pub settings: Settings,
    /// Master or slave now.
    pub role: Arc<crate::role::RoleState>,
    /// Controller mode's manager, once it runs.
    pub replicas: Arc<std::sync::OnceLock<Arc<crate::replicas::ReplicasManager>>>,
    /// Controller mode, on the master: the SyncStateSet's bookkeeping.
    pub in_sync: Arc<parking_lot::RwLock<Option<Arc<crate::ha::switch_sync::InSync>>>>,
    /// Settings changed at run time (the broker's permission).
    pub runtime: Arc<crate::runtime_config::RuntimeConfig>,
    /// RocketMQ 5.x's recorded series (the processor watermarks).
    pub rocketmq: Arc<crate::metrics::RocketmqMeters>,
    /// The message store.
    pub store: Arc<MessageStore>,
    /// Topic table.
    pub topics: Arc<TopicConfigManager>,
    /// Subscription groups.
    pub groups: Arc<SubscriptionGroupManager>,
    /// Consumer offsets.
    pub offsets: Arc<ConsumerOffsetManager>,
    /// Put/get rates and day totals.
    pub stats: Arc<BrokerStats>,
    /// Per-topic and per-group counters.
    pub items: Arc<StatsItems>,
    /// What slaves acknowledged.
    pub ha_acks: Arc<ReplicaAcks>,
    /// Delay-level delivery.
    pub scheduler: Arc<Scheduler>,
    /// Half messages.
    pub transactions: Arc<Transactions>,
    /// Timer messages, when `timerWheelEnable`.
    pub timers: Option<Arc<crate::service::timer::Timers>>,
    /// Client connections open now.
    pub connections: Arc<std::sync::atomic::AtomicI64>,
    /// POP consumption.
    pub pop: Arc<crate::pop::PopRuntime>,
    /// Client tables (the connection gauges).
    pub clients: Arc<crate::clients::ClientManager>,
}

/// Sets one broker's gauges.
#[derive(Debug)]
pub struct Sampler {
    ctx: Sources,
    labels: Vec<Label>,
    /// Bytes each consume-queue backend's folder holds on disk, re-read
    /// every [`lanes::DISK_BYTES_EVERY`] (a walk of every queue folder).
    disk_bytes: parking_lot::Mutex<lanes::DiskBytes>,
    /// `rocketmq_timer_message_snapshot`, recounted every
    /// [`timer::SNAPSHOT_EVERY`].
    timer_snapshot: parking_lot::Mutex<timer::Snapshot>,
    /// The connection gauges' label sets at the last sample.
    seen_clients: parking_lot::Mutex<clients::Seen>,
}

impl Sampler {
    /// A sampler reading `ctx`, labelling with `labels` (`broker`, `backend`).
    pub fn new(ctx: Sources, labels: Vec<Label>) -> Self {
        Self {
            ctx,
            labels,
            disk_bytes: parking_lot::Mutex::default(),
            timer_snapshot: parking_lot::Mutex::default(),
            seen_clients: parking_lot::Mutex::default(),
        }
    }

    /// The `broker` label alone (series about one backend add their own
    /// `backend`).
    fn broker_label(&self) -> Label {
        self.labels
            .iter()
            .find(|l| l.key() == "broker")
            .cloned()
            .unwrap_or_else(|| Label::new("broker", ""))
    }

    fn with(&self, extra: &[(&'static str, String)]) -> Vec<Label> {
        let mut l = self.labels.clone();
        l.extend(extra.iter().map(|(k, v)| Label::new(*k, v.clone())));
        l
    }

    fn gauge(&self, name: &'static str, value: f64) {
        metrics::gauge!(name, self.labels.clone()).set(value);
    }

    /// Reads everything once. Blocking (store and /proc reads).
    pub fn sample(&self) {
        let totals = self.ctx.store.metrics().totals();
        self.ctx.stats.record(
            self.ctx.store.clock().now_ms(),
            totals.put_messages.load(Ordering::Relaxed),
            totals.get_messages.load(Ordering::Relaxed),
        );
        self.ctx.items.sample(self.ctx.store.clock().now_ms());
        self.topic_rates();
        self.dispatch();
        self.replication();
        self.consume_queues();
        let lag = self.lag_by_group();
        self.consumer_lag(&lag);
        self.rocketmq();
        self.services();
        self.process();
    }

    /// Age of the record at CommitLog offset `offset`, seconds (0 if none
    /// starts there).
    fn age_s(&self, offset: i64) -> f64 {
        let store = &self.ctx.store;
        store.store_time_at(offset).map_or(0.0, |ts| {
            (store.clock().now_ms() - ts).max(0) as f64 / 1000.0
        })
    }

    fn dispatch(&self) {
        let store = &self.ctx.store;
        let behind = store.dispatch_behind_bytes();
        let reput = store.reput_from_offset();
        self.gauge(names::DISPATCH_BEHIND_BYTES, behind as f64);
        let age_s = if behind > 0 { self.age_s(reput) } else { 0.0 };
        self.gauge(names::DISPATCH_BEHIND_SECONDS, age_s);
        self.gauge(names::REPUT_FROM_OFFSET, reput as f64);
        self.gauge(names::COMMITLOG_MAX_OFFSET, store.max_phy_offset() as f64);
        self.gauge(names::COMMITLOG_MIN_OFFSET, store.min_phy_offset() as f64);
    }

    /// How LMQ names become labels (`enableLmq`, `enableLmqStats`).
    pub(super) fn lmq_fold(&self) -> crate::metrics::LmqFold {
        crate::metrics::LmqFold::new(
            self.ctx.settings.store.enable_lmq,
            self.ctx.settings.broker.enable_lmq_stats,
        )
    }

    /// Messages not consumed per (group, topic): the committed offsets'
    /// distance to each queue's max.
    fn lag_by_group(&self) -> HashMap<(String, String), i64> {
        let store = &self.ctx.store;
        let mut lag: HashMap<(String, String), i64> = HashMap::new();
        let fold = self.lmq_fold();
        for (group, topic, queue, offset) in self.ctx.offsets.all() {
            if group == TRANS_GROUP {
                continue;
            }
            let max = store.max_offset_in_queue(&topic, queue).unwrap_or(0);
            let key = (fold.name(&group).to_owned(), fold.name(&topic).to_owned());
            *lag.entry(key).or_default() += (max - offset).max(0);
        }
        lag
    }

    /// Lag per (group, topic), the largest [`CONSUMER_LAG_SERIES_MAX`] as
    /// their own series and the rest summed.
    fn consumer_lag(&self, lag: &HashMap<(String, String), i64>) {
        let rows = lag
            .iter()
            .map(|((group, topic), l)| {
                (
                    vec![("group", group.clone()), ("topic", topic.clone())],
                    *l as f64,
                )
            })
            .collect();
        self.capped(names::CONSUMER_LAG_MESSAGES, rows);
    }

    /// Sets `name` for the [`CONSUMER_LAG_SERIES_MAX`] largest `rows`
    /// (label pairs, value) and their sum for the rest, every label
    /// `_other`: label values stay bounded at any number of topics.
    fn capped(&self, name: &'static str, mut rows: Vec<(Vec<(&'static str, String)>, f64)>) {
        rows.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        for (labels, v) in rows.iter().take(CONSUMER_LAG_SERIES_MAX) {
            metrics::gauge!(name, self.with(labels)).set(*v);
        }
        if let Some((first, _)) = rows.get(CONSUMER_LAG_SERIES_MAX) {
            let rest: f64 = rows.iter().skip(CONSUMER_LAG_SERIES_MAX).map(|r| r.1).sum();
            let other: Vec<(&'static str, String)> = first
                .iter()
                .map(|(k, _)| (*k, "_other".to_owned()))
                .collect();
            metrics::gauge!(name, self.with(&other)).set(rest);
        }
    }

    /// Put rates of the busiest topics and get rates of the busiest
    /// (group, topic) pairs over the last minute, and the day's counts.
    fn topic_rates(&self) {
        let crate::metrics::items::MinuteRates { puts, gets } = self.ctx.items.minute_rates();
        let puts = puts
            .into_iter()
            .filter(|(_, tps)| *tps > 0.0)
            .map(|(topic, tps)| (vec![("topic", topic)], tps))
            .collect();
        self.capped(names::TOPIC_PUT_TPS, puts);
        let gets = gets
            .into_iter()
            .filter(|(_, _, tps)| *tps > 0.0)
            .map(|(topic, group, tps)| (vec![("group", group), ("topic", topic)], tps))
            .collect();
        self.capped(names::GROUP_GET_TPS, gets);
        let marks = self.ctx.stats.day_marks();
        let totals = self.ctx.store.metrics().totals();
        let put = totals.put_messages.load(Ordering::Relaxed);
        let get = totals.get_messages.load(Ordering::Relaxed);
        for (name, v) in [
            (
                names::PUT_MESSAGES_TODAY,
                put.saturating_sub(marks.put_today_morning),
            ),
            (
                names::PUT_MESSAGES_YESTERDAY,
                marks
                    .put_today_morning
                    .saturating_sub(marks.put_yesterday_morning),
            ),
            (
                names::GET_MESSAGES_TODAY,
                get.saturating_sub(marks.get_today_morning),
            ),
            (
                names::GET_MESSAGES_YESTERDAY,
                marks
                    .get_today_morning
                    .saturating_sub(marks.get_yesterday_morning),
            ),
        ] {
            self.gauge(name, v as f64);
        }
    }

    /// Replication, on a master: slaves connected and in sync, and per
    /// slave what it acknowledged and how far behind the CommitLog's end
    /// that is, in bytes and seconds.
    fn replication(&self) {
        let role = self.ctx.role.now();
        let master = !role.is_slave() && !role.fenced;
        self.gauge(names::HA_IS_MASTER, if master { 1.0 } else { 0.0 });
        if let Some(manager) = self.ctx.replicas.get() {
            self.gauge(names::CONTROLLER_MASTER_EPOCH, f64::from(role.master_epoch));
            let members = self
                .ctx
                .in_sync
                .read()
                .as_ref()
                .map_or(0, |s| s.sync_state_set().len());
            self.gauge(names::CONTROLLER_SYNC_STATE_SET_SIZE, members as f64);
            metrics::counter!(names::CONTROLLER_ROLE_CHANGES_TOTAL, self.labels.clone())
                .absolute(manager.role_changes());
        }
        if role.is_slave() {
            return;
        }
        let acks = &self.ctx.ha_acks;
        let end = self.ctx.store.max_phy_offset();
        self.gauge(names::HA_SLAVES, acks.slaves() as f64);
        self.gauge(names::HA_IN_SYNC_SLAVES, acks.in_sync(end) as f64);
        for (slave, acked) in acks.per_slave() {
            let lag = (end - acked).max(0);
            let lag_s = if lag > 0 { self.age_s(acked) } else { 0.0 };
            let labels = self.with(&[("slave", slave)]);
            metrics::gauge!(names::HA_ACKED_OFFSET, labels.clone()).set(acked as f64);
            metrics::gauge!(names::HA_LAG_BYTES, labels.clone()).set(lag as f64);
            metrics::gauge!(names::HA_LAG_SECONDS, labels).set(lag_s);
        }
    }

    fn services(&self) {
        let s = &self.ctx.scheduler;
        for (level, _) in s.levels().iter() {
            let labels = self.with(&[("level", level.to_string())]);
            metrics::gauge!(names::SCHEDULE_PENDING, labels).set(s.pending(level) as f64);
        }
        self.timers();
        self.pop();
        let tx = &self.ctx.transactions;
        self.gauge(names::TRANSACTION_HALF_PENDING, tx.pending_halves() as f64);
        metrics::counter!(names::TRANSACTION_CHECKS_TOTAL, self.labels.clone())
            .absolute(tx.checks_sent());
        for (service, n) in [("schedule", s.poisoned()), ("transaction", tx.poisoned())] {
            let labels = self.with(&[("service", service.into())]);
            metrics::counter!(names::POISON_MESSAGES_TOTAL, labels).absolute(n);
        }
        self.gauge(
            names::CONNECTIONS,
            self.ctx.connections.load(Ordering::Relaxed) as f64,
        );
    }

    fn process(&self) {
        let root = &self.ctx.settings.store.store_path_root_dir;
        if let Some(used) = FsDiskUsage(root.clone()).used_ratio() {
            self.gauge(names::STORE_DISK_USED_RATIO, used);
        }
        let stats = crate::metrics::process::ProcessStats::sample();
        for (name, value) in [
            (names::OPEN_FILES, stats.open_files),
            (names::MEMORY_MAPS, stats.memory_maps),
            (names::PROCESS_RESIDENT_BYTES, stats.resident_bytes),
        ] {
            if let Some(v) = value {
                self.gauge(name, v as f64);
            }
        }
        if let Some(cpu) = stats.cpu_seconds {
            crate::metrics::float::set(
                names::PROCESS_CPU_SECONDS_TOTAL,
                "User plus system CPU time of the process, seconds.",
                &self.labels,
                cpu,
            );
        }
    }
}
