//! The NameServer's tables: which brokers exist, where they listen, and which
//! topics (with how many queues) each one serves.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use parking_lot::RwLock;
use rmq_common::remoting::body::{
    BrokerData, ClusterInfo, DataVersion, QueueData, TopicConfig, TopicConfigSerializeWrapper,
    TopicRouteData,
};
use rmq_common::remoting::body::{PERM_READ, PERM_WRITE};

/// A registration request's identity fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerIdentity {
    /// Cluster.
    pub cluster: String,
    /// Broker name.
    pub broker_name: String,
    /// Broker id (0 master).
    pub broker_id: i64,
    /// Address clients use.
    pub broker_addr: String,
    /// Where its slaves connect for replication (`haServerAddr`; blank when
    /// it takes none).
    pub ha_server_addr: String,
}

#[derive(Debug, Default)]
struct Tables {
    brokers: BTreeMap<String, BrokerData>,
    clusters: BTreeMap<String, BTreeSet<String>>,
    /// topic -> broker name -> queues
    topics: HashMap<String, BTreeMap<String, QueueData>>,
    /// broker name -> its topics (the keys of `topics` it appears under),
    /// so a registration or a removal touches that broker's topics only,
    /// not every topic of the cluster.
    broker_topics: HashMap<String, HashSet<String>>,
    /// broker address -> its last heartbeat
    live: HashMap<String, Live>,
}

/// What a broker address's last registration left.
#[derive(Debug)]
struct Live {
    /// When, ms.
    seen_ms: i64,
    /// The data version its body carried.
    version: DataVersion,
    /// The connection it came over (RocketMQ's `BrokerLiveInfo.channel`):
    /// when that closes the broker leaves the routes. `None` for a
    /// registration that did not come over a connection.
    channel: Option<u64>,
}

/// The NameServer's route tables.
#[derive(Debug, Default)]
pub struct RouteInfoManager {
    tables: RwLock<Tables>,
}

impl RouteInfoManager {
    /// Empty tables.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a broker and its topics (every heartbeat re-registers). As
    /// RocketMQ 5.x, per topic: a master's topic is added when the routes
    /// lack it, and updated when the body's data version is new (so an
    /// unchanged re-registration leaves a WIPE_WRITE_PERM in place). With
    /// `replace` (`deleteTopicWithBrokerRegistration`) its topics missing
    /// from a body with a new version also leave it. Without it, a body may
    /// carry only some topics: an incremental registration (the topics one
    /// change touched) or one part of a split one.
    pub fn register(
        &self,
        id: &BrokerIdentity,
        topics: &TopicConfigSerializeWrapper,
        now_ms: i64,
        replace: bool,
    ) {
        self.register_on(id, topics, now_ms, replace, None);
    }

    /// [`RouteInfoManager::register`] of a registration that came over the
    /// connection `channel`: the broker stays only as long as the
    /// connection of its latest registration is open (see
    /// [`RouteInfoManager::drop_channel`]).
    pub fn register_on(
        &self,
        id: &BrokerIdentity,
        topics: &TopicConfigSerializeWrapper,
        now_ms: i64,
        replace: bool,
        channel: Option<u64>,
    ) {
        let mut t = self.tables.write();
        // RocketMQ 5.x (controller mode): a broker registering an id held by
        // another live address under a newer master epoch (stateVersion) is
        // a stale master; the newer one keeps the id.
        let holder = t
            .brokers
            .get(&id.broker_name)
            .and_then(|d| d.broker_addrs.get(&id.broker_id))
            .filter(|a| **a != id.broker_addr)
            .cloned();
        if let Some(holder) = holder {
            let newer = t
                .live
                .get(&holder)
                .map(|l| l.version.state_version)
                .unwrap_or(0);
            if newer > topics.data_version.state_version {
                tracing::warn!(
                    broker = %id.broker_addr,
                    holder = %holder,
                    epoch = topics.data_version.state_version,
                    holder_epoch = newer,
                    "registration of a stale master ignored: the id is held under a newer epoch"
                );
                t.live.remove(&id.broker_addr);
                return;
            }
        }
        t.clusters
            .entry(id.cluster.clone())
            .or_default()
            .insert(id.broker_name.clone());
        let data = t
            .brokers
            .entry(id.broker_name.clone())
            .or_insert_with(|| BrokerData {
                cluster: id.cluster.clone(),
                broker_name: id.broker_name.clone(),
                broker_addrs: BTreeMap::new(),
                enable_acting_master: false,
            });
        // One address per id: a broker that moved replaces its old address.
        data.broker_addrs
            .retain(|bid, addr| *bid != id.broker_id && *addr != id.broker_addr);
        data.broker_addrs
            .insert(id.broker_id, id.broker_addr.clone());
        let changed = t
            .live
            .get(&id.broker_addr)
            .is_none_or(|l| l.version != topics.data_version);
        if id.broker_id == 0 {
            if replace && changed {
                replace_topics(&mut t, &id.broker_name, &topics.topic_config_table);
            } else {
                upsert_topics(
                    &mut t,
                    &id.broker_name,
                    &topics.topic_config_table,
                    !changed,
                );
            }
        }
        t.live.insert(
            id.broker_addr.clone(),
            Live {
                seen_ms: now_ms,
                version: topics.data_version.clone(),
                channel,
            },
        );
    }

    /// A connection closed: every broker address whose latest registration
    /// came over it leaves the routes at once, as RocketMQ's NameServer
    /// does (`BrokerHousekeepingService`), so a killed broker is not
    /// routed to until its expiry. Returns (broker name, address) of each.
    pub fn drop_channel(&self, channel: u64) -> Vec<(String, String)> {
        let mut t = self.tables.write();
        let addrs: Vec<String> = t
            .live
            .iter()
            .filter(|(_, l)| l.channel == Some(channel))
            .map(|(a, _)| a.clone())
            .collect();
        let mut dropped = Vec::with_capacity(addrs.len());
        for addr in addrs {
            match name_of(&t, &addr) {
                Some(name) => {
                    remove_addr(&mut t, &name, &addr);
                    dropped.push((name, addr));
                }
                None => {
                    t.live.remove(&addr);
                }
            }
        }
        dropped
    }

    /// The connection `broker_addr` last registered over, if it is known
    /// and came over one.
    pub fn channel_of(&self, broker_addr: &str) -> Option<u64> {
        self.tables.read().live.get(broker_addr)?.channel
    }

    /// Removes a broker address (UNREGISTER_BROKER or expiry).
    pub fn unregister(&self, broker_name: &str, broker_addr: &str) {
        let mut t = self.tables.write();
        remove_addr(&mut t, broker_name, broker_addr);
    }

    /// Drops brokers not heard from for `expiry_ms`; returns their addresses.
    pub fn expire(&self, now_ms: i64, expiry_ms: i64) -> Vec<String> {
        let mut t = self.tables.write();
        let dead: Vec<String> = t
            .live
            .iter()
            .filter(|(_, l)| now_ms - l.seen_ms > expiry_ms)
            .map(|(a, _)| a.clone())
            .collect();
        for addr in &dead {
            if let Some(name) = name_of(&t, addr) {
                remove_addr(&mut t, &name, addr);
            } else {
                t.live.remove(addr);
            }
        }
        dead
    }

    /// The route of a topic, if any live broker serves it.
    pub fn route(&self, topic: &str) -> Option<TopicRouteData> {
        let t = self.tables.read();
        let queues = t.topics.get(topic)?;
        let queue_datas: Vec<QueueData> = queues.values().cloned().collect();
        let broker_datas: Vec<BrokerData> = queues
            .keys()
            .filter_map(|name| t.brokers.get(name).cloned())
            .collect();
        (!broker_datas.is_empty()).then_some(TopicRouteData {
            broker_datas,
            filter_server_table: BTreeMap::new(),
            queue_datas,
        })
    }

    /// Brokers and clusters.
    pub fn cluster_info(&self) -> ClusterInfo {
        let t = self.tables.read();
        ClusterInfo {
            broker_addr_table: t.brokers.clone(),
            cluster_addr_table: t.clusters.clone(),
        }
    }

    /// Number of topics known.
    pub fn topic_count(&self) -> usize {
        self.tables.read().topics.len()
    }

    /// Every topic some broker serves, sorted.
    pub fn topic_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.tables.read().topics.keys().cloned().collect();
        names.sort();
        names
    }

    /// WIPE_WRITE_PERM_OF_BROKER (`wipe`) and ADD_WRITE_PERM_OF_BROKER: the
    /// write bit of every topic `broker_name` serves is cleared, or the
    /// perm set to read-write (6) as Java sets it; returns how many topics
    /// that touched. The broker's routine re-registrations (same data
    /// version) leave it so; a topic change on the broker brings its own
    /// perms back, as in Java.
    pub fn change_write_perm(&self, broker_name: &str, wipe: bool) -> usize {
        let mut t = self.tables.write();
        let Tables {
            topics,
            broker_topics,
            ..
        } = &mut *t;
        let Some(names) = broker_topics.get(broker_name) else {
            return 0;
        };
        let mut count = 0;
        for topic in names {
            if let Some(q) = topics.get_mut(topic).and_then(|m| m.get_mut(broker_name)) {
                q.perm = if wipe {
                    q.perm & !PERM_WRITE
                } else {
                    PERM_READ | PERM_WRITE
                };
                count += 1;
            }
        }
        count
    }

    /// GET_TOPICS_BY_CLUSTER: every topic a broker of `cluster` serves
    /// (none for an unknown cluster), sorted.
    pub fn topics_of_cluster(&self, cluster: &str) -> Vec<String> {
        let t = self.tables.read();
        let mut out = BTreeSet::new();
        for name in t.clusters.get(cluster).into_iter().flatten() {
            out.extend(t.broker_topics.get(name).into_iter().flatten().cloned());
        }
        out.into_iter().collect()
    }

    /// GET_SYSTEM_TOPIC_LIST_FROM_NS: the cluster names and broker names
    /// (each is a topic in Java), and the address of one broker to ask for
    /// its own (a master where there is one).
    pub fn system_topics(&self) -> (Vec<String>, Option<String>) {
        let t = self.tables.read();
        let mut names: BTreeSet<String> = BTreeSet::new();
        for (cluster, brokers) in &t.clusters {
            names.insert(cluster.clone());
            names.extend(brokers.iter().cloned());
        }
        let addr = t
            .brokers
            .values()
            .find_map(|b| b.broker_addrs.values().next().cloned());
        (names.into_iter().collect(), addr)
    }

    /// Topics whose `topicSysFlag` (from the first broker serving them)
    /// passes `keep`, sorted.
    pub fn topics_by_sys_flag(&self, keep: impl Fn(i32) -> bool) -> Vec<String> {
        let t = self.tables.read();
        let mut out: Vec<String> = t
            .topics
            .iter()
            .filter(|(_, q)| q.values().next().is_some_and(|q| keep(q.topic_sys_flag)))
            .map(|(name, _)| name.clone())
            .collect();
        out.sort();
        out
    }

    /// QUERY_DATA_VERSION: whether `version` differs from what `broker_addr`
    /// last registered (an unknown broker: changed), and what that was. An
    /// unchanged answer counts as a heartbeat, as in Java.
    pub fn query_data_version(
        &self,
        broker_addr: &str,
        version: &DataVersion,
        now_ms: i64,
    ) -> (bool, Option<DataVersion>) {
        let mut t = self.tables.write();
        match t.live.get_mut(broker_addr) {
            Some(live) => {
                let changed = live.version != *version;
                if !changed {
                    live.seen_ms = now_ms;
                }
                (changed, Some(live.version.clone()))
            }
            None => (true, None),
        }
    }

    /// DELETE_TOPIC_IN_NAMESRV: the topic leaves the routes of `broker`
    /// when one is named (a broker telling of its own delete), else of the
    /// brokers of `cluster` (of every broker when `None`). A broker that
    /// still has the topic brings it back with its next registration, as
    /// in Java.
    pub fn delete_topic(&self, topic: &str, cluster: Option<&str>, broker: Option<&str>) {
        let mut t = self.tables.write();
        let names: Vec<String> = match (broker, cluster) {
            (Some(b), _) => vec![b.to_owned()],
            (None, Some(c)) => t
                .clusters
                .get(c)
                .map(|n| n.iter().cloned().collect())
                .unwrap_or_default(),
            (None, None) => t
                .topics
                .get(topic)
                .map(|q| q.keys().cloned().collect())
                .unwrap_or_default(),
        };
        for name in &names {
            if let Some(topics) = t.broker_topics.get_mut(name) {
                topics.remove(topic);
            }
        }
        if let Some(queues) = t.topics.get_mut(topic) {
            queues.retain(|broker, _| !names.contains(broker));
            if queues.is_empty() {
                t.topics.remove(topic);
            }
        }
    }
}

/// The broker name `broker_addr` is registered under.
fn name_of(t: &Tables, broker_addr: &str) -> Option<String> {
    t.brokers
        .values()
        .find(|b| b.broker_addrs.values().any(|a| a == broker_addr))
        .map(|b| b.broker_name.clone())
}

fn remove_addr(t: &mut Tables, broker_name: &str, broker_addr: &str) {
    t.live.remove(broker_addr);
    let mut gone = false;
    if let Some(b) = t.brokers.get_mut(broker_name) {
        b.broker_addrs.retain(|_, a| a != broker_addr);
        gone = b.broker_addrs.is_empty();
    }
    if gone {
        if let Some(b) = t.brokers.remove(broker_name) {
            if let Some(names) = t.clusters.get_mut(&b.cluster) {
                names.remove(broker_name);
                if names.is_empty() {
                    t.clusters.remove(&b.cluster);
                }
            }
        }
        replace_topics(t, broker_name, &BTreeMap::new());
    }
}

fn queue_data(broker_name: &str, c: &TopicConfig) -> QueueData {
    QueueData {
        broker_name: broker_name.to_owned(),
        read_queue_nums: c.read_queue_nums,
        write_queue_nums: c.write_queue_nums,
        perm: c.perm,
        topic_sys_flag: c.topic_sys_flag,
    }
}

/// Adds `broker_name`'s queues of every topic of `table` the routes lack
/// and, unless `only_missing`, updates those that differ; its other topics
/// stay.
fn upsert_topics(
    t: &mut Tables,
    broker_name: &str,
    table: &BTreeMap<String, TopicConfig>,
    only_missing: bool,
) {
    let mut added = Vec::new();
    for (topic, c) in table {
        let queues = t.topics.entry(topic.clone()).or_default();
        match queues.get(broker_name) {
            None => {
                queues.insert(broker_name.to_owned(), queue_data(broker_name, c));
                added.push(topic.clone());
            }
            Some(old) if !only_missing && *old != queue_data(broker_name, c) => {
                queues.insert(broker_name.to_owned(), queue_data(broker_name, c));
            }
            Some(_) => {}
        }
    }
    if !added.is_empty() {
        t.broker_topics
            .entry(broker_name.to_owned())
            .or_default()
            .extend(added);
    }
}

/// Makes `broker_name` serve exactly `table`: its topics missing from
/// `table` lose it (and go if no broker is left), the others are upserted.
fn replace_topics(t: &mut Tables, broker_name: &str, table: &BTreeMap<String, TopicConfig>) {
    let old = t.broker_topics.remove(broker_name).unwrap_or_default();
    for topic in old.iter().filter(|topic| !table.contains_key(*topic)) {
        if let Some(queues) = t.topics.get_mut(topic) {
            queues.remove(broker_name);
            if queues.is_empty() {
                t.topics.remove(topic);
            }
        }
    }
    for (topic, c) in table {
        t.topics
            .entry(topic.clone())
            .or_default()
            .insert(broker_name.to_owned(), queue_data(broker_name, c));
    }
    if !table.is_empty() {
        t.broker_topics
            .insert(broker_name.to_owned(), table.keys().cloned().collect());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(name: &str, addr: &str) -> BrokerIdentity {
        BrokerIdentity {
            cluster: "DefaultCluster".into(),
            broker_name: name.into(),
            broker_id: 0,
            broker_addr: addr.into(),
            ha_server_addr: String::new(),
        }
    }

    fn topics(names: &[&str], counter: i64) -> TopicConfigSerializeWrapper {
        TopicConfigSerializeWrapper {
            topic_config_table: names
                .iter()
                .map(|n| ((*n).to_owned(), TopicConfig::new(n, 4)))
                .collect(),
            data_version: DataVersion {
                timestamp: 1,
                counter,
                state_version: 0,
            },
        }
    }

    #[test]
    fn a_stale_master_does_not_take_the_id_from_a_newer_epochs_master() {
        let m = RouteInfoManager::new();
        let at_epoch = |epoch: i64| TopicConfigSerializeWrapper {
            data_version: DataVersion {
                state_version: epoch,
                ..topics(&["T"], epoch).data_version
            },
            ..topics(&["T"], epoch)
        };
        let (old, new) = (id("a", "127.0.0.1:1"), id("a", "127.0.0.1:2"));
        m.register(&old, &at_epoch(1), 0, false);
        // Elected at epoch 2, the other broker takes id 0.
        m.register(&new, &at_epoch(2), 1, false);
        let master =
            |m: &RouteInfoManager| m.route("T").unwrap().broker_datas[0].broker_addrs[&0].clone();
        assert_eq!(master(&m), "127.0.0.1:2");
        // The old master, cut off from the controller, registers again at
        // its epoch: ignored.
        m.register(&old, &at_epoch(1), 2, false);
        assert_eq!(master(&m), "127.0.0.1:2");
        // A later epoch does take it.
        m.register(&old, &at_epoch(3), 3, false);
        assert_eq!(master(&m), "127.0.0.1:1");
    }

    #[test]
    fn route_json_has_the_fields_strict_clients_need() {
        let m = RouteInfoManager::new();
        m.register(
            &id("broker-a", "127.0.0.1:10911"),
            &topics(&["T"], 1),
            0,
            false,
        );
        let json = serde_json::to_string(&m.route("T").unwrap()).unwrap();
        assert_eq!(
            json,
            r#"{"brokerDatas":[{"cluster":"DefaultCluster","brokerName":"broker-a","brokerAddrs":{"0":"127.0.0.1:10911"},"enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0}]}"#
        );
        assert!(m.route("Nope").is_none());
    }

    #[test]
    fn several_brokers_topic_changes_and_expiry() {
        let m = RouteInfoManager::new();
        m.register(&id("a", "127.0.0.1:1"), &topics(&["T", "U"], 1), 0, true);
        m.register(&id("b", "127.0.0.1:2"), &topics(&["T"], 1), 0, true);
        assert_eq!(m.route("T").unwrap().broker_datas.len(), 2);
        // With deleteTopicWithBrokerRegistration, broker a drops topic U
        // in a new version.
        m.register(&id("a", "127.0.0.1:1"), &topics(&["T"], 2), 10, true);
        assert!(m.route("U").is_none());
        assert_eq!(m.expire(100_000, 120_000), Vec::<String>::new());
        // b stays silent past the expiry.
        m.register(&id("a", "127.0.0.1:1"), &topics(&["T"], 2), 130_000, true);
        assert_eq!(m.expire(130_001, 120_000), vec!["127.0.0.1:2".to_owned()]);
        assert_eq!(m.route("T").unwrap().broker_datas.len(), 1);
        assert_eq!(
            m.cluster_info().cluster_addr_table["DefaultCluster"].len(),
            1
        );
        m.unregister("a", "127.0.0.1:1");
        assert!(m.route("T").is_none());
        assert!(m.cluster_info().broker_addr_table.is_empty());
    }

    #[test]
    fn registrations_add_and_update_only_and_a_broker_deletes_its_own_topic() {
        let m = RouteInfoManager::new();
        let a = id("a", "127.0.0.1:1");
        m.register(&a, &topics(&["T", "U"], 1), 0, false);
        m.register(&id("b", "127.0.0.1:2"), &topics(&["T"], 1), 0, false);
        // An incremental body: one new topic; the others stay.
        m.register(&a, &topics(&["V"], 2), 1, false);
        for t in ["T", "U", "V"] {
            assert!(m.route(t).is_some(), "{t}");
        }
        // The same version again: a topic the routes lack is added (a
        // split registration's parts share one version), a changed one is
        // not (an unchanged broker leaves a wiped write permission alone).
        let mut part = topics(&["U", "W"], 2);
        part.topic_config_table
            .get_mut("U")
            .unwrap()
            .write_queue_nums = 16;
        m.register(&a, &part, 2, false);
        assert!(m.route("W").is_some());
        assert_eq!(m.route("U").unwrap().queue_datas[0].write_queue_nums, 4);
        // A new version updates it.
        part.data_version.counter = 5;
        m.register(&a, &part, 2, false);
        assert_eq!(m.route("U").unwrap().queue_datas[0].write_queue_nums, 16);
        // Broker a tells of its own delete: b keeps T.
        m.delete_topic("T", Some("DefaultCluster"), Some("a"));
        let route = m.route("T").unwrap();
        assert_eq!(route.queue_datas.len(), 1);
        assert_eq!(route.queue_datas[0].broker_name, "b");
        // Its next full registration without T does not bring it back.
        m.register(&a, &topics(&["U", "V"], 6), 3, false);
        assert_eq!(m.route("T").unwrap().queue_datas.len(), 1);
        // Unregistering a drops all of its topics.
        m.unregister("a", "127.0.0.1:1");
        assert!(m.route("U").is_none() && m.route("V").is_none());
        assert!(m.route("T").is_some());
    }

    #[test]
    fn a_closed_connection_drops_the_brokers_whose_latest_registration_it_carried() {
        let m = RouteInfoManager::new();
        let (master, slave) = (id("a", "127.0.0.1:1"), id("a", "127.0.0.1:2"));
        let slave = BrokerIdentity {
            broker_id: 1,
            ..slave
        };
        m.register_on(&master, &topics(&["T"], 1), 0, false, Some(7));
        m.register_on(&slave, &topics(&["T"], 1), 0, false, Some(8));
        m.register_on(&id("b", "127.0.0.1:3"), &topics(&["T"], 1), 0, false, None);
        assert_eq!(m.channel_of("127.0.0.1:1"), Some(7));
        // The master re-registered over a new connection: closing the old
        // one leaves it.
        m.register_on(&master, &topics(&["T"], 1), 1, false, Some(9));
        assert!(m.drop_channel(7).is_empty());
        assert_eq!(m.route("T").unwrap().broker_datas.len(), 2);
        // Its connection closes: the master leaves, the slave stays and
        // its broker name keeps the topic.
        assert_eq!(
            m.drop_channel(9),
            vec![("a".to_owned(), "127.0.0.1:1".to_owned())]
        );
        let route = m.route("T").unwrap();
        let a = route
            .broker_datas
            .iter()
            .find(|b| b.broker_name == "a")
            .unwrap();
        assert_eq!(a.broker_addrs.len(), 1);
        assert_eq!(a.broker_addrs[&1], "127.0.0.1:2");
        assert_eq!(route.queue_datas.len(), 2);
        // The slave's goes too: broker name a and its queues leave.
        assert_eq!(m.drop_channel(8).len(), 1);
        let route = m.route("T").unwrap();
        assert_eq!(route.broker_datas.len(), 1);
        assert_eq!(route.queue_datas.len(), 1);
        assert_eq!(route.queue_datas[0].broker_name, "b");
        assert!(m.channel_of("127.0.0.1:1").is_none());
    }
}
