//! RocketMQ 5.x's connection gauges, as its BrokerMetricsManager counts
//! the client tables: `rocketmq_producer_connections` by (language,
//! version, protocol_type) and `rocketmq_consumer_connections` by (group,
//! language, version, consume_mode, protocol_type, is_system). RocketMQ's
//! broker always says `protocol_type="remoting"` (behind its proxy every
//! client reaches it by remoting); this broker serves gRPC itself, so a
//! gRPC client's connection says `grpc`.
//!
//! A label set that was counted and has no connection left is set to 0
//! once and then left alone, so it goes with the recorder's idle timeout
//! (RocketMQ's gauge callback stops reporting it at once).

use std::collections::{HashMap, HashSet};

use metrics::Label;
use rmq_common::remoting::version::version_desc;
use rmq_common::remoting::LanguageCode;

use super::Sampler;
use crate::clients::ClientKind;
use crate::metrics::rocketmq::{system_group, CARDINALITY_LIMIT};
use crate::metrics::rocketmq_names as n;

/// Label pairs of one series.
pub(super) type LabelSet = Vec<(&'static str, String)>;

/// The label sets each connection gauge had at the last sample.
#[derive(Debug, Default)]
pub(super) struct Seen {
    producers: HashSet<LabelSet>,
    consumers: HashSet<LabelSet>,
}

/// RocketMQ's `language` label: the `LanguageCode` name in lower case.
pub(super) fn language_label(l: LanguageCode) -> String {
    l.name().to_ascii_lowercase()
}

/// RocketMQ's `version` label: `MQVersion.getVersionDesc` in lower case
/// (`"v5_3_3"`).
pub(super) fn version_label(ordinal: i32) -> String {
    version_desc(ordinal).to_ascii_lowercase()
}

/// RocketMQ's `consume_mode` label: the `ConsumeType`'s `typeCN` in lower
/// case, from the Java name a heartbeat gave.
pub(super) fn consume_mode_label(consume_type: &str) -> &'static str {
    match consume_type {
        "CONSUME_ACTIVELY" => "pull",
        "CONSUME_PASSIVELY" => "push",
        "CONSUME_POP" => "pop",
        _ => "unknown",
    }
}

/// `protocol_type`: how the client reaches this broker.
pub(super) fn protocol_label(k: &ClientKind) -> &'static str {
    if k.grpc {
        "grpc"
    } else {
        "remoting"
    }
}

fn client_labels(k: &ClientKind) -> LabelSet {
    vec![
        ("language", language_label(k.language)),
        ("version", version_label(k.version)),
        ("protocol_type", protocol_label(k).to_owned()),
    ]
}

/// Counts rows by label set, at most [`CARDINALITY_LIMIT`] sets.
fn tally(rows: impl Iterator<Item = LabelSet>) -> HashMap<LabelSet, u64> {
    let mut counts: HashMap<LabelSet, u64> = HashMap::new();
    for labels in rows {
        if let Some(c) = counts.get_mut(&labels) {
            *c += 1;
        } else if counts.len() < CARDINALITY_LIMIT {
            counts.insert(labels, 1);
        }
    }
    counts
}

/// The producer gauge's counts.
pub(super) fn producer_counts(kinds: &[ClientKind]) -> HashMap<LabelSet, u64> {
    tally(kinds.iter().map(client_labels))
}

/// The consumer gauge's counts from (group, consume type, kind) rows.
pub(super) fn consumer_counts(rows: &[(String, String, ClientKind)]) -> HashMap<LabelSet, u64> {
    tally(rows.iter().map(|(group, consume_type, k)| {
        let mut l = vec![("consumer_group", group.clone())];
        l.extend(client_labels(k));
        l.push(("consume_mode", consume_mode_label(consume_type).to_owned()));
        l.push(("is_system", system_group(group).to_string()));
        l
    }))
}

impl Sampler {
    pub(super) fn rocketmq_connections(&self) {
        let clients = &self.ctx.clients;
        let producers = producer_counts(&clients.producer_kinds());
        let consumers = consumer_counts(&clients.consumer_kinds());
        let mut seen = self.seen_clients.lock();
        self.set_counts(n::PRODUCER_CONNECTIONS, &producers, &mut seen.producers);
        self.set_counts(n::CONSUMER_CONNECTIONS, &consumers, &mut seen.consumers);
    }

    /// Sets `name` for every label set of `counts`, and 0 for those `seen`
    /// last time and gone now; `seen` becomes this sample's sets.
    fn set_counts(
        &self,
        name: &'static str,
        counts: &HashMap<LabelSet, u64>,
        seen: &mut HashSet<LabelSet>,
    ) {
        let labels = |set: &LabelSet| -> Vec<Label> { self.rocketmq_labels(set) };
        for gone in seen.iter().filter(|s| !counts.contains_key(*s)) {
            metrics::gauge!(name, labels(gone)).set(0.0);
        }
        for (set, count) in counts {
            metrics::gauge!(name, labels(set)).set(*count as f64);
        }
        *seen = counts.keys().cloned().collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(language: LanguageCode, version: i32, grpc: bool) -> ClientKind {
        ClientKind {
            language,
            version,
            grpc,
        }
    }

    #[test]
    fn labels_are_rocketmqs() {
        assert_eq!(language_label(LanguageCode::Java), "java");
        assert_eq!(language_label(LanguageCode::NodeJs), "node_js");
        assert_eq!(language_label(LanguageCode::Go), "go");
        assert_eq!(version_label(409), "v4_9_8");
        assert_eq!(version_label(479), "v5_3_3");
        assert_eq!(consume_mode_label("CONSUME_ACTIVELY"), "pull");
        assert_eq!(consume_mode_label("CONSUME_PASSIVELY"), "push");
        assert_eq!(consume_mode_label("CONSUME_POP"), "pop");
        assert_eq!(consume_mode_label("3"), "unknown");
    }

    #[test]
    fn producers_are_counted_by_language_version_and_protocol() {
        let java = kind(LanguageCode::Java, 409, false);
        let grpc = kind(LanguageCode::Java, 427, true);
        let counts = producer_counts(&[java.clone(), java, grpc]);
        let remoting: LabelSet = vec![
            ("language", "java".into()),
            ("version", "v4_9_8".into()),
            ("protocol_type", "remoting".into()),
        ];
        let over_grpc: LabelSet = vec![
            ("language", "java".into()),
            ("version", "v5_0_7".into()),
            ("protocol_type", "grpc".into()),
        ];
        assert_eq!(counts.len(), 2);
        assert_eq!(counts[&remoting], 2);
        assert_eq!(counts[&over_grpc], 1);
    }

    #[test]
    fn consumers_carry_group_mode_and_system_flag() {
        let rows = vec![
            (
                "G".to_owned(),
                "CONSUME_PASSIVELY".to_owned(),
                kind(LanguageCode::Java, 409, false),
            ),
            (
                "CID_RMQ_SYS_X".to_owned(),
                "CONSUME_ACTIVELY".to_owned(),
                kind(LanguageCode::Python, 479, true),
            ),
        ];
        let counts = consumer_counts(&rows);
        let system: LabelSet = vec![
            ("consumer_group", "CID_RMQ_SYS_X".into()),
            ("language", "python".into()),
            ("version", "v5_3_3".into()),
            ("protocol_type", "grpc".into()),
            ("consume_mode", "pull".into()),
            ("is_system", "true".into()),
        ];
        assert_eq!(counts[&system], 1);
        assert!(counts
            .keys()
            .any(|l| l.contains(&("consume_mode", "push".into()))
                && l.contains(&("is_system", "false".into()))));
    }
}
