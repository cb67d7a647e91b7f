//! Route bodies: what GET_ROUTEINFO_BY_TOPIC and GET_BROKER_CLUSTER_INFO
//! answer.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// A broker's name, cluster and addresses by broker id (0 = master).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BrokerData {
    /// Cluster name.
    pub cluster: String,
    /// Broker name.
    pub broker_name: String,
    /// Address by broker id; JSON keys are the ids as strings.
    pub broker_addrs: BTreeMap<i64, String>,
    /// Strict 5.x clients expect the field.
    pub enable_acting_master: bool,
}

/// One broker's queues for a topic.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueueData {
    /// Broker name.
    pub broker_name: String,
    /// Read queues.
    pub read_queue_nums: i32,
    /// Write queues.
    pub write_queue_nums: i32,
    /// Permission bits.
    pub perm: i32,
    /// Topic system flags.
    pub topic_sys_flag: i32,
}

/// The answer to GET_ROUTEINFO_BY_TOPIC.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicRouteData {
    /// Brokers serving the topic.
    pub broker_datas: Vec<BrokerData>,
    /// Filter servers (none).
    pub filter_server_table: BTreeMap<String, Vec<String>>,
    /// Queues per broker.
    pub queue_datas: Vec<QueueData>,
}

/// The answer to GET_BROKER_CLUSTER_INFO.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterInfo {
    /// Broker name to its data.
    pub broker_addr_table: BTreeMap<String, BrokerData>,
    /// Cluster to broker names.
    pub cluster_addr_table: BTreeMap<String, BTreeSet<String>>,
}
