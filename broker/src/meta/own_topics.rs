//! The topics a broker makes for itself at start, as RocketMQ's
//! `TopicConfigManager` does: one named after its cluster, one named after
//! the broker, and the cluster's reply topic.
//!
//! The first two are how a client finds the brokers of a cluster or one
//! broker through the NameServer: Apache's 5.x proxy asks for the route of
//! the topic named after the cluster (`clusterTopicEnable`, default true)
//! and refuses to start without it, and `mqadmin updateTopic -c` and the
//! 4.x clients' `createTopic` use the same lookup.

use rmq_common::remoting::body::{TopicConfig, JAVA_DEFAULT_QUEUE_NUMS, PERM_READ, PERM_WRITE};

use super::TopicConfigManager;
use crate::config::BrokerConfig;

/// Java's `PermName.PERM_INHERIT`: new topics may take their settings from
/// this one. Set on the cluster and broker topics, as Java sets it.
pub const PERM_INHERIT: i32 = 1;

/// The topics of `broker` ([`TopicConfig`]s as Java makes them): the
/// cluster topic with Java's default 16 queues, the broker topic with one,
/// both readable and writable (Java's `clusterTopicEnable` and
/// `brokerTopicEnable` defaults); the reply topic with one queue.
pub fn configs(broker: &BrokerConfig) -> Vec<TopicConfig> {
    let own = PERM_INHERIT | PERM_READ | PERM_WRITE;
    vec![
        TopicConfig {
            perm: own,
            ..TopicConfig::new(&broker.broker_cluster_name, JAVA_DEFAULT_QUEUE_NUMS)
        },
        TopicConfig {
            perm: own,
            ..TopicConfig::new(&broker.broker_name, 1)
        },
        TopicConfig::new(
            &crate::processor::reply::reply_topic(&broker.broker_cluster_name),
            1,
        ),
    ]
}

/// Creates those of [`configs`] that are missing (kept as they are when an
/// operator changed them), written behind by the persister. A name that is
/// not a legal topic is logged and skipped: the broker still starts.
pub fn create(topics: &TopicConfigManager, broker: &BrokerConfig) {
    for config in configs(broker) {
        let name = config.topic_name.clone();
        if let Err(e) = topics.create_if_missing(config) {
            tracing::warn!(topic = %name, error = %e, "the broker's own topic is not created");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_and_broker_topics_as_java_makes_them() {
        let dir = tempfile::tempdir().unwrap();
        let topics = TopicConfigManager::open(dir.path(), 8).unwrap();
        let broker = BrokerConfig {
            broker_cluster_name: "C1".into(),
            broker_name: "b1".into(),
            ..BrokerConfig::default()
        };
        create(&topics, &broker);
        let cluster = topics.get("C1").expect("cluster topic");
        assert_eq!((cluster.read_queue_nums, cluster.perm), (16, 7));
        let own = topics.get("b1").expect("broker topic");
        assert_eq!((own.write_queue_nums, own.perm), (1, 7));
        assert!(topics.get("C1_REPLY_TOPIC").is_some());
        // An operator's change is kept over a restart.
        topics.upsert(TopicConfig::new("b1", 4)).unwrap();
        create(&topics, &broker);
        assert_eq!(topics.get("b1").unwrap().write_queue_nums, 4);
    }
}
