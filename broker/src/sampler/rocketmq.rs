//! The series Apache RocketMQ 5.x exports through its Prometheus exporter
//! (`metricsExporterType=PROM`, OpenTelemetry Java 1.29), under the same
//! names, units and labels, so dashboards and alerts written for it work
//! here: besides this broker's `broker` label, every series carries
//! `cluster`, `node_type="broker"`, `node_id` (the broker name) and
//! `otel_scope_name` (`crate::metrics::rocketmq::common_labels`), and the
//! store's carry `storage_type="local"` and `storage_medium="disk"`. The
//! sampled ones are set here and in `consumers`, `timer` and `pop`; the
//! recorded ones (message sizes, topic creation, per request) are
//! `crate::metrics::rocketmq` and `crate::metrics::rpc`.
//!
//! Counters are set from the broker's running totals (the same ones
//! GET_BROKER_RUNTIME_INFO and VIEW_BROKER_STATS_DATA read), so the put and
//! pull paths record nothing extra. As in RocketMQ, `%RETRY%` and `%DLQ%`
//! topics are left out of the message counters; `message_type` follows the
//! stored topic (the schedule topic is `delay`, the half topic
//! `transaction`, anything else `normal`).

use metrics::Label;
use rmq_common::names::is_system_topic;

use super::Sampler;

use crate::metrics::rocketmq::{
    common_labels, counted, message_type, system_group, CARDINALITY_LIMIT,
};
use crate::metrics::rocketmq_names as n;

fn flag(b: bool) -> String {
    b.to_string()
}

impl Sampler {
    /// `broker` plus RocketMQ's common labels, then `extra`.
    pub(super) fn rocketmq_labels(&self, extra: &[(&'static str, String)]) -> Vec<Label> {
        let broker = &self.ctx.settings.broker;
        let mut l = common_labels(&broker.broker_name, &broker.broker_cluster_name);
        l.extend(extra.iter().map(|(k, v)| Label::new(*k, v.clone())));
        l
    }

    /// RocketMQ's labels of the store's timer series.
    pub(super) fn rocketmq_timer_labels(&self) -> Vec<Label> {
        self.rocketmq_labels(&[
            ("storage_type", "local".into()),
            ("storage_medium", "disk".into()),
        ])
    }

    pub(super) fn rocketmq(&self) {
        self.rocketmq_storage();
        self.rocketmq_traffic();
        self.rocketmq_consumers();
        self.rocketmq_connections();
        self.rocketmq_transactions();
        let gauge = |name: &'static str, v: f64| {
            metrics::gauge!(name, self.rocketmq_labels(&[])).set(v);
        };
        gauge(n::TOPIC_NUMBER, self.ctx.topics.all().len() as f64);
        gauge(n::CONSUMER_GROUP_NUMBER, self.ctx.groups.all().len() as f64);
        gauge(
            n::BROKER_PERMISSION,
            f64::from(self.ctx.runtime.broker_permission()),
        );
        for (p, busy) in self.ctx.rocketmq.rpc.watermarks() {
            let labels = self.rocketmq_labels(&[("processor", p.as_str().into())]);
            metrics::gauge!(n::PROCESSOR_WATERMARK, labels).set(busy as f64);
        }
    }

    /// `rocketmq_half_messages`: unresolved halves per real topic.
    fn rocketmq_transactions(&self) {
        let fold = self.lmq_fold();
        let mut halves: std::collections::BTreeMap<String, i64> = Default::default();
        for (topic, count) in self.ctx.transactions.half_counts() {
            *halves.entry(fold.name(&topic).to_owned()).or_default() += count;
        }
        for (topic, count) in halves {
            let labels = self.rocketmq_labels(&[("topic", topic)]);
            metrics::gauge!(n::HALF_MESSAGES, labels).set(count as f64);
        }
    }

    fn rocketmq_storage(&self) {
        let store = &self.ctx.store;
        let labels = self.rocketmq_labels(&[
            ("storage_type", "local".into()),
            ("storage_medium", "disk".into()),
        ]);
        let gauge = |name: &'static str, v: f64| metrics::gauge!(name, labels.clone()).set(v);
        gauge(
            n::STORAGE_DISPATCH_BEHIND_BYTES,
            store.dispatch_behind_bytes() as f64,
        );
        let log = store.commit_log();
        gauge(
            n::STORAGE_FLUSH_BEHIND_BYTES,
            (log.max_offset() - log.flushed_offset()).max(0) as f64,
        );
        let root = &store.config().store_path_root_dir;
        // As Java: the disk's total less its free blocks (reserve included).
        if let (Ok(total), Ok(free)) = (fs4::total_space(root), fs4::free_space(root)) {
            if total > 0 {
                gauge(n::STORAGE_SIZE_BYTES, total.saturating_sub(free) as f64);
            }
        }
        if let Some(oldest) = store.store_time_at(store.min_phy_offset()) {
            let age = store.clock().now_ms() - oldest;
            if age > 0 {
                gauge(n::STORAGE_MESSAGE_RESERVE_TIME_MS, age as f64);
            }
        }
    }

    fn rocketmq_traffic(&self) {
        let totals = self.ctx.items.totals();
        for (topic, messages, bytes) in totals
            .puts
            .into_iter()
            .filter(|(t, m, _)| counted(t) && *m > 0)
            .take(CARDINALITY_LIMIT)
        {
            let labels = self.rocketmq_labels(&[
                ("topic", topic.clone()),
                ("message_type", message_type(&topic).into()),
                ("is_system", flag(is_system_topic(&topic))),
            ]);
            metrics::counter!(n::MESSAGES_IN_TOTAL, labels.clone()).absolute(messages);
            metrics::counter!(n::THROUGHPUT_IN_TOTAL, labels).absolute(bytes);
        }
        for (topic, group, messages, bytes) in totals
            .gets
            .into_iter()
            .filter(|(t, _, m, _)| counted(t) && *m > 0)
            .take(CARDINALITY_LIMIT)
        {
            let system = is_system_topic(&topic) || system_group(&group);
            let labels = self.rocketmq_labels(&[
                ("topic", topic),
                ("consumer_group", group),
                ("is_system", flag(system)),
            ]);
            metrics::counter!(n::MESSAGES_OUT_TOTAL, labels.clone()).absolute(messages);
            metrics::counter!(n::THROUGHPUT_OUT_TOTAL, labels).absolute(bytes);
        }
    }
}
