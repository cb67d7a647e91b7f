//! Which connections belong to which producer and consumer groups, and what
//! each consumer group subscribed to.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::RwLock;
use rmq_common::remoting::LanguageCode;

use rmq_common::remoting::body::{
    ClientConnection, ConsumerConnection, HeartbeatData, SubscriptionData,
};
use rmq_remoting::{ConnId, Connection};

#[derive(Debug, Clone)]
struct Member {
    client_id: String,
    conn: Arc<Connection>,
    /// The client's language and version, from its heartbeat's header.
    language: LanguageCode,
    version: i32,
    /// When its last heartbeat came, ms since the epoch.
    last_update_ms: i64,
}

#[derive(Debug, Default)]
struct ConsumerGroup {
    members: BTreeMap<ConnId, Member>,
    subscriptions: HashMap<String, SubscriptionData>,
    message_model: String,
    consume_type: String,
    consume_from_where: String,
}

/// One producer connection, as GET_ALL_PRODUCER_INFO lists it (Java's
/// `ProducerInfo`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProducerInfo {
    /// Client id.
    pub client_id: String,
    /// `/ip:port`, as Java prints a channel's address.
    #[serde(rename = "remoteIP")]
    pub remote_ip: String,
    /// Client language.
    pub language: String,
    /// Client version.
    pub version: i32,
    /// Its last heartbeat, ms.
    pub last_update_timestamp: i64,
}

/// What a registered connection is, as the connection gauges
/// (`rocketmq_producer_connections`, `rocketmq_consumer_connections`)
/// count it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientKind {
    /// The language its heartbeat named.
    pub language: LanguageCode,
    /// The version its heartbeat named (a `MQVersion` ordinal).
    pub version: i32,
    /// A gRPC client (a detached connection), not a remoting one.
    pub grpc: bool,
}

/// Consumer groups whose membership changed (their members get
/// NOTIFY_CONSUMER_IDS_CHANGED).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct GroupChange {
    /// Groups that changed.
    pub groups: Vec<String>,
}

/// Client tables.
#[derive(Debug, Default)]
pub struct ClientManager {
    producers: RwLock<HashMap<String, BTreeMap<ConnId, Member>>>,
    consumers: RwLock<HashMap<String, ConsumerGroup>>,
    /// Heartbeat v2: each consumer group's last heartbeat fingerprint (0
    /// after a v1 heartbeat), as Java's `consumerGroupHeartbeatTable`.
    fingerprints: RwLock<HashMap<String, i32>>,
}

impl ClientManager {
    /// Empty tables.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies a heartbeat from `conn`; returns the consumer groups whose
    /// membership changed. A v2 heartbeat without subscriptions
    /// (`withoutSub` with a fingerprint) keeps the groups' known ones.
    pub fn heartbeat(
        &self,
        conn: &Arc<Connection>,
        hb: &HeartbeatData,
        language: LanguageCode,
        version: i32,
    ) -> GroupChange {
        let member = Member {
            client_id: hb.client_id.clone(),
            conn: Arc::clone(conn),
            language,
            version,
            last_update_ms: rmq_common::time::now_ms(),
        };
        {
            let mut producers = self.producers.write();
            for p in &hb.producer_data_set {
                producers
                    .entry(p.group_name.clone())
                    .or_default()
                    .insert(conn.id, member.clone());
            }
        }
        let mut change = GroupChange::default();
        let mut consumers = self.consumers.write();
        for c in &hb.consumer_data_set {
            let group = consumers.entry(c.group_name.clone()).or_default();
            let new_member = group.members.insert(conn.id, member.clone()).is_none();
            group.message_model = java_enum(&c.message_model, &["BROADCASTING", "CLUSTERING"]);
            group.consume_type = java_enum(&c.consume_type, CONSUME_TYPES);
            group.consume_from_where = java_enum(&c.consume_from_where, CONSUME_FROM_WHERE);
            let without_sub = hb.without_sub && hb.heartbeat_fingerprint != 0;
            for s in c.subscription_data_set.iter().filter(|_| !without_sub) {
                let keep = group
                    .subscriptions
                    .get(&s.topic)
                    .is_some_and(|old| old.sub_version > s.sub_version);
                if !keep {
                    group.subscriptions.insert(s.topic.clone(), s.clone());
                }
            }
            if new_member {
                change.groups.push(c.group_name.clone());
            }
        }
        change
    }

    /// Heartbeat v2: records the heartbeat's fingerprint for each of its
    /// consumer groups and says whether a group's subscriptions may have
    /// changed, so the client should send them in full next time: always
    /// for a v1 heartbeat (fingerprint 0), and for a v2 one when a group's
    /// last fingerprint is known and differs (RocketMQ 5.3.3's
    /// `IS_SUB_CHANGE`).
    pub fn fingerprint_changed(&self, hb: &HeartbeatData) -> bool {
        let mut table = self.fingerprints.write();
        let mut changed = hb.heartbeat_fingerprint == 0;
        for c in &hb.consumer_data_set {
            let last = table.insert(c.group_name.clone(), hb.heartbeat_fingerprint);
            changed |= last.is_some_and(|f| f != hb.heartbeat_fingerprint);
        }
        changed
    }

    /// Removes `conn` from the named groups (UNREGISTER_CLIENT).
    pub fn unregister(
        &self,
        conn: ConnId,
        producer_group: Option<&str>,
        consumer_group: Option<&str>,
    ) -> GroupChange {
        if let Some(g) = producer_group {
            if let Some(m) = self.producers.write().get_mut(g) {
                m.remove(&conn);
            }
        }
        let mut change = GroupChange::default();
        if let Some(g) = consumer_group {
            let mut consumers = self.consumers.write();
            if let Some(group) = consumers.get_mut(g) {
                if group.members.remove(&conn).is_some() {
                    change.groups.push(g.to_owned());
                }
            }
        }
        change
    }

    /// Removes a closed connection from every group.
    pub fn connection_closed(&self, conn: ConnId) -> GroupChange {
        for members in self.producers.write().values_mut() {
            members.remove(&conn);
        }
        let mut change = GroupChange::default();
        for (name, group) in self.consumers.write().iter_mut() {
            if group.members.remove(&conn).is_some() {
                change.groups.push(name.clone());
            }
        }
        change
    }

    /// Client ids of a consumer group's live members.
    pub fn consumer_ids(&self, group: &str) -> Vec<String> {
        let consumers = self.consumers.read();
        let mut ids: Vec<String> = consumers
            .get(group)
            .map(|g| g.members.values().map(|m| m.client_id.clone()).collect())
            .unwrap_or_default();
        ids.sort();
        ids.dedup();
        ids
    }

    /// Connections of a consumer group.
    pub fn consumer_connections(&self, group: &str) -> Vec<Arc<Connection>> {
        self.consumers
            .read()
            .get(group)
            .map(|g| g.members.values().map(|m| Arc::clone(&m.conn)).collect())
            .unwrap_or_default()
    }

    /// A consumer group's live members: client id and connection.
    pub fn consumer_members(&self, group: &str) -> Vec<(String, Arc<Connection>)> {
        self.consumers
            .read()
            .get(group)
            .map(|g| {
                g.members
                    .values()
                    .filter(|m| !m.conn.is_closed())
                    .map(|m| (m.client_id.clone(), Arc::clone(&m.conn)))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every producer group's live members (GET_ALL_PRODUCER_INFO).
    pub fn producer_table(&self) -> BTreeMap<String, Vec<ProducerInfo>> {
        self.producers
            .read()
            .iter()
            .map(|(group, members)| {
                let infos: Vec<ProducerInfo> = members
                    .values()
                    .filter(|m| !m.conn.is_closed())
                    .map(|m| ProducerInfo {
                        client_id: m.client_id.clone(),
                        remote_ip: format!("/{}", m.conn.peer),
                        language: m.language.name().to_owned(),
                        version: m.version,
                        last_update_timestamp: m.last_update_ms,
                    })
                    .collect();
                (group.clone(), infos)
            })
            .filter(|(_, infos)| !infos.is_empty())
            .collect()
    }

    /// Live connections of a producer group.
    pub fn producer_connections(&self, group: &str) -> Vec<Arc<Connection>> {
        self.producers
            .read()
            .get(group)
            .map(|m| {
                m.values()
                    .filter(|m| !m.conn.is_closed())
                    .map(|m| Arc::clone(&m.conn))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A live connection of the producer whose client id is `client_id`
    /// (where a reply goes back to its requester), as Java's
    /// `ProducerManager.findChannel`.
    pub fn producer_by_client_id(&self, client_id: &str) -> Option<Arc<Connection>> {
        self.producers
            .read()
            .values()
            .flat_map(|members| members.values())
            .find(|m| m.client_id == client_id && !m.conn.is_closed())
            .map(|m| Arc::clone(&m.conn))
    }

    /// The group's subscription to `topic` from its last heartbeat; `None`
    /// when the group is unknown, `Some(None)` when it does not subscribe.
    pub fn subscription(&self, group: &str, topic: &str) -> Option<Option<SubscriptionData>> {
        self.consumers
            .read()
            .get(group)
            .map(|g| g.subscriptions.get(topic).cloned())
    }

    /// Whether the group's members consume by broadcasting (their last
    /// heartbeat said BROADCASTING).
    pub fn is_broadcasting(&self, group: &str) -> bool {
        self.consumers
            .read()
            .get(group)
            .is_some_and(|g| g.message_model == "BROADCASTING")
    }

    /// Names of consumer groups with members.
    pub fn consumer_groups(&self) -> Vec<String> {
        self.consumers
            .read()
            .iter()
            .filter(|(_, g)| !g.members.is_empty())
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// A consumer group's live members and subscriptions; `None` when it
    /// has no live member.
    pub fn consumer_connection(&self, group: &str) -> Option<ConsumerConnection> {
        let consumers = self.consumers.read();
        let g = consumers.get(group)?;
        let mut connection_set: Vec<ClientConnection> = g
            .members
            .values()
            .filter(|m| !m.conn.is_closed())
            .map(Member::describe)
            .collect();
        if connection_set.is_empty() {
            return None;
        }
        connection_set.sort();
        Some(ConsumerConnection {
            connection_set,
            subscription_table: g
                .subscriptions
                .iter()
                .map(|(t, s)| (t.clone(), s.clone()))
                .collect(),
            consume_type: g.consume_type.clone(),
            message_model: g.message_model.clone(),
            consume_from_where: g.consume_from_where.clone(),
        })
    }

    /// One row per live connection of each producer group (a connection
    /// in two groups is two rows, as Java counts its channel table).
    pub fn producer_kinds(&self) -> Vec<ClientKind> {
        self.producers
            .read()
            .values()
            .flat_map(|members| members.values())
            .filter(|m| !m.conn.is_closed())
            .map(Member::kind)
            .collect()
    }

    /// One row per live connection of each consumer group: the group, its
    /// consume type (Java's name, as its last heartbeat gave it) and the
    /// connection's kind.
    pub fn consumer_kinds(&self) -> Vec<(String, String, ClientKind)> {
        self.consumers
            .read()
            .iter()
            .flat_map(|(name, g)| {
                g.members
                    .values()
                    .filter(|m| !m.conn.is_closed())
                    .map(|m| (name.clone(), g.consume_type.clone(), m.kind()))
            })
            .collect()
    }

    /// A producer group's live members.
    pub fn producer_connection(&self, group: &str) -> Vec<ClientConnection> {
        let mut out: Vec<ClientConnection> = self
            .producers
            .read()
            .get(group)
            .map(|m| {
                m.values()
                    .filter(|m| !m.conn.is_closed())
                    .map(Member::describe)
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }
}

impl Member {
    fn kind(&self) -> ClientKind {
        ClientKind {
            language: self.language,
            version: self.version,
            grpc: self.conn.is_detached(),
        }
    }

    fn describe(&self) -> ClientConnection {
        ClientConnection {
            client_addr: self.conn.peer.to_string(),
            client_id: self.client_id.clone(),
            language: self.language.name().to_owned(),
            version: self.version,
        }
    }
}

/// Java's `ConsumeType` constants in ordinal order.
const CONSUME_TYPES: &[&str] = &["CONSUME_ACTIVELY", "CONSUME_PASSIVELY", "CONSUME_POP"];

/// Java's `ConsumeFromWhere` constants in ordinal order (the deprecated
/// ones included, as ordinals count them).
const CONSUME_FROM_WHERE: &[&str] = &[
    "CONSUME_FROM_LAST_OFFSET",
    "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
    "CONSUME_FROM_MIN_OFFSET",
    "CONSUME_FROM_MAX_OFFSET",
    "CONSUME_FROM_FIRST_OFFSET",
    "CONSUME_FROM_TIMESTAMP",
];

/// An enum a client sent by name or by ordinal, as its Java name (what the
/// admin answers carry); an unknown ordinal stays as sent.
fn java_enum(sent: &str, names: &[&str]) -> String {
    sent.parse::<usize>()
        .ok()
        .and_then(|i| names.get(i))
        .map_or_else(|| sent.to_owned(), |n| (*n).to_owned())
}
