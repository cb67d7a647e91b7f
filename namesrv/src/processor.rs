//! The NameServer's request handler: broker registration, topic routes and
//! cluster info, answered from the [`RouteInfoManager`].
//!
//! Wire facts (RocketMQ 4.9.x / 5.x `DefaultRequestProcessor`,
//! `ClientRequestProcessor` and their headers):
//! - `REGISTER_BROKER` header: `brokerName`, `brokerAddr`, `clusterName`,
//!   `haServerAddr`, `brokerId` (all not-null), optional `compressed`,
//!   `bodyCrc32` (0 = unchecked; otherwise `crc32(body) & 0x7FFFFFFF`),
//!   `heartbeatTimeoutMillis`, `enableActingMaster`. Body: `RegisterBrokerBody`
//!   JSON, or with `compressed=true` the zlib form of [`register_body`]; an
//!   absent body registers no topics. The response header carries
//!   `masterAddr` and `haServerAddr`, both nullable and set only for a slave
//!   whose master is registered.
//! - `UNREGISTER_BROKER` header: `brokerName`, `brokerAddr`, `clusterName`,
//!   `brokerId`.
//! - `GET_ROUTEINFO_BY_TOPIC` header: `topic` (and `acceptStandardJsonOnly`,
//!   which changes nothing here: this side only writes standard JSON).
//! - The administration codes (KV config, write permission, topic lists,
//!   settings, data version) are in `admin.rs`.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use rmq_common::message::record::body_crc;
use rmq_common::remoting::body::{register as register_body, TopicList};
use rmq_common::remoting::{HeaderError, RemotingCommand, RequestCode, ResponseCode};
use rmq_common::time::Clock;
use serde::Serialize;

use super::config::{NamesrvConfig, NamesrvOptions};
use super::kv::KvConfig;
use super::route::{BrokerIdentity, RouteInfoManager};
use rmq_remoting::{ConnId, Connection, RequestHandler};

/// The id of a master broker.
const MASTER_ID: i64 = 0;

/// The codes that change what the NameServer holds: with an ACL, only
/// requests signed by an admin account are taken (all are ACL admin codes).
pub const GUARDED_CODES: &[RequestCode] = &[
    RequestCode::RegisterBroker,
    RequestCode::UnregisterBroker,
    RequestCode::PutKvConfig,
    RequestCode::DeleteKvConfig,
    RequestCode::WipeWritePermOfBroker,
    RequestCode::AddWritePermOfBroker,
    RequestCode::DeleteTopicInNamesrv,
    RequestCode::UpdateNamesrvConfig,
];

/// A request the handler refuses: the response code and the remark.
#[derive(Debug)]
pub(super) struct Refusal {
    code: ResponseCode,
    remark: String,
}

impl Refusal {
    pub(super) fn new(code: ResponseCode, remark: impl Into<String>) -> Self {
        Self {
            code,
            remark: remark.into(),
        }
    }
}

impl From<HeaderError> for Refusal {
    /// Java answers an undecodable custom header with `SYSTEM_ERROR`.
    fn from(e: HeaderError) -> Self {
        Self::new(ResponseCode::SystemError, e.to_string())
    }
}

/// A success response: optional body and extra header fields.
#[derive(Debug, Default)]
pub(super) struct Reply {
    pub(super) body: Option<Vec<u8>>,
    pub(super) ext: Vec<(&'static str, String)>,
}

/// Answers NameServer requests.
#[derive(Debug)]
pub struct NameServerHandler {
    routes: Arc<RouteInfoManager>,
    clock: Arc<dyn Clock>,
    /// `haServerAddr` by broker address, kept here because the route tables
    /// do not hold it; a slave's registration is answered with its master's.
    ha_addrs: Mutex<HashMap<String, String>>,
    /// The KV config.
    pub(super) kv: KvConfig,
    /// The NameServer's settings.
    config: NamesrvConfig,
    /// Checks [`GUARDED_CODES`] when set.
    acl: Option<Arc<rmq_remoting::acl::Acl>>,
}

impl NameServerHandler {
    /// A handler over `routes`, with an in-memory KV table and default
    /// settings; `clock` stamps heartbeats.
    pub fn new(routes: Arc<RouteInfoManager>, clock: Arc<dyn Clock>) -> Self {
        let options = NamesrvOptions::in_memory(super::config::BROKER_EXPIRY_MS);
        let kv = KvConfig::open(None).unwrap_or_else(|_| unreachable!("no file to read"));
        Self::with_state(routes, clock, kv, NamesrvConfig::open(&options))
    }

    /// A handler over `routes`, `kv` and `config`.
    pub fn with_state(
        routes: Arc<RouteInfoManager>,
        clock: Arc<dyn Clock>,
        kv: KvConfig,
        config: NamesrvConfig,
    ) -> Self {
        Self {
            routes,
            clock,
            ha_addrs: Mutex::new(HashMap::new()),
            kv,
            config,
            acl: None,
        }
    }

    /// Takes [`GUARDED_CODES`] only when `acl` lets their sender in as an
    /// admin account (`None`: from anyone).
    pub fn with_acl(mut self, acl: Option<Arc<rmq_remoting::acl::Acl>>) -> Self {
        self.acl = acl;
        self
    }

    /// The refusal of a guarded request `acl` does not let in.
    fn refusal(&self, peer: std::net::IpAddr, req: &RemotingCommand) -> Option<RemotingCommand> {
        let acl = self.acl.as_ref()?;
        if !GUARDED_CODES.iter().any(|c| c.code() == req.code) {
            return None;
        }
        let denied = acl
            .check(req.code, peer, &req.ext_fields, req.body.as_deref())
            .err()?;
        tracing::warn!(%peer, code = req.code, remark = %denied.0, "NameServer request refused by ACL");
        Some(RemotingCommand::response_to(
            req,
            ResponseCode::NoPermission,
            Some(denied.0),
        ))
    }

    /// The NameServer's settings.
    pub fn config(&self) -> &NamesrvConfig {
        &self.config
    }

    pub(super) fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The route tables.
    pub fn routes(&self) -> &Arc<RouteInfoManager> {
        &self.routes
    }

    /// The connection `channel` closed: the brokers whose latest
    /// registration came over it leave the routes (see
    /// [`RouteInfoManager::drop_channel`]); returns their addresses.
    pub fn channel_closed(&self, channel: ConnId, peer: std::net::SocketAddr) -> Vec<String> {
        let dropped = self.routes.drop_channel(channel);
        let addrs: Vec<String> = dropped.iter().map(|(_, a)| a.clone()).collect();
        for (name, addr) in &dropped {
            tracing::warn!(
                broker = %name,
                broker_addr = %addr,
                %peer,
                "the connection a broker registered over closed; dropped from routes"
            );
        }
        self.forget(&addrs);
        addrs
    }

    /// Forgets what the handler keeps about broker addresses the route
    /// tables dropped (expiry, a closed connection).
    pub fn forget(&self, broker_addrs: &[String]) {
        let mut ha = self.ha_addrs.lock();
        for addr in broker_addrs {
            ha.remove(addr);
        }
    }

    /// Answers one request, in the request's serialize type. Never fails:
    /// a bad request gets an error response that says why.
    pub fn process(&self, req: &RemotingCommand) -> RemotingCommand {
        self.process_on(None, req)
    }

    /// [`NameServerHandler::process`] of a request that came over the
    /// connection `channel`: a broker registered over it leaves the routes
    /// when it closes ([`NameServerHandler::channel_closed`]).
    pub fn process_on(&self, channel: Option<ConnId>, req: &RemotingCommand) -> RemotingCommand {
        let outcome = match RequestCode::from_i32(req.code) {
            Some(RequestCode::RegisterBroker) => self.register_broker(channel, req),
            Some(RequestCode::UnregisterBroker) => self.unregister_broker(req),
            Some(RequestCode::GetRouteInfoByTopic) => self.route_by_topic(req),
            Some(RequestCode::GetBrokerClusterInfo) => self.cluster_info(),
            Some(RequestCode::GetAllTopicListFromNameserver) => json_reply(&TopicList {
                topic_list: self.routes.topic_names(),
            }),
            Some(RequestCode::DeleteTopicInNamesrv) => self.delete_topic(req),
            Some(code) => self.admin(code, req),
            None => Err(Refusal::new(
                ResponseCode::RequestCodeNotSupported,
                format!("request type {} not supported", req.code),
            )),
        };
        match outcome {
            Ok(reply) => {
                let mut resp = RemotingCommand::response_to(req, ResponseCode::Success, None);
                for (key, value) in reply.ext {
                    resp.put_ext(key, value);
                }
                if let Some(body) = reply.body {
                    resp = resp.with_body(body);
                }
                resp
            }
            Err(refusal) => {
                tracing::debug!(
                    code = req.code,
                    answer = %refusal.code,
                    remark = %refusal.remark,
                    "NameServer request refused"
                );
                RemotingCommand::response_to(req, refusal.code, Some(refusal.remark))
            }
        }
    }

    fn register_broker(
        &self,
        channel: Option<ConnId>,
        req: &RemotingCommand,
    ) -> Result<Reply, Refusal> {
        let ext = req.ext();
        // Not-null in Java, but a broker without HA sends it blank.
        let ha_server_addr = ext
            .get_str("haServerAddr")
            .ok_or(HeaderError::Missing {
                field: "haServerAddr",
            })?
            .trim()
            .to_owned();
        let id = BrokerIdentity {
            cluster: ext.req_str("clusterName")?.to_owned(),
            broker_name: ext.req_str("brokerName")?.to_owned(),
            broker_id: ext.req_i64("brokerId")?,
            broker_addr: ext.req_str("brokerAddr")?.to_owned(),
            ha_server_addr: ha_server_addr.clone(),
        };
        let compressed = ext.get_bool("compressed")?.unwrap_or(false);
        let body = req.body.as_deref().unwrap_or_default();
        let expected_crc = ext.get_i32("bodyCrc32")?.unwrap_or(0);
        if expected_crc != 0 && body_crc(body) != expected_crc {
            return Err(Refusal::new(
                ResponseCode::SystemError,
                format!(
                    "REGISTER_BROKER from {}: crc32 not match (bodyCrc32 {expected_crc}, body {})",
                    id.broker_addr,
                    body_crc(body)
                ),
            ));
        }
        let body = register_body::decode(body, compressed).map_err(|e| {
            Refusal::new(
                ResponseCode::SystemError,
                format!("REGISTER_BROKER from {}: {e}", id.broker_addr),
            )
        })?;
        self.routes.register_on(
            &id,
            &body.topic_config_serialize_wrapper,
            self.clock.now_ms(),
            self.config.delete_with_registration(),
            channel,
        );
        self.ha_addrs
            .lock()
            .insert(id.broker_addr.clone(), ha_server_addr);
        tracing::debug!(
            cluster = %id.cluster,
            broker = %id.broker_name,
            broker_id = id.broker_id,
            addr = %id.broker_addr,
            topics = body.topic_config_serialize_wrapper.topic_config_table.len(),
            "broker registered"
        );
        let mut reply = Reply::default();
        if id.broker_id != MASTER_ID {
            if let Some((master_addr, master_ha)) = self.master_of(&id.broker_name) {
                reply.ext.push(("masterAddr", master_addr));
                reply.ext.push(("haServerAddr", master_ha));
            }
        }
        Ok(reply)
    }

    /// The registered master of `broker_name`: its address and HA address.
    fn master_of(&self, broker_name: &str) -> Option<(String, String)> {
        let master_addr = self
            .routes
            .cluster_info()
            .broker_addr_table
            .get(broker_name)?
            .broker_addrs
            .get(&MASTER_ID)?
            .clone();
        let ha = self.ha_addrs.lock().get(&master_addr)?.clone();
        Some((master_addr, ha))
    }

    fn unregister_broker(&self, req: &RemotingCommand) -> Result<Reply, Refusal> {
        let ext = req.ext();
        let cluster = ext.req_str("clusterName")?;
        let broker_name = ext.req_str("brokerName")?;
        let broker_id = ext.req_i64("brokerId")?;
        let broker_addr = ext.req_str("brokerAddr")?;
        self.routes.unregister(broker_name, broker_addr);
        self.ha_addrs.lock().remove(broker_addr);
        tracing::info!(
            %cluster,
            broker = %broker_name,
            broker_id,
            addr = %broker_addr,
            "broker unregistered"
        );
        Ok(Reply::default())
    }

    fn route_by_topic(&self, req: &RemotingCommand) -> Result<Reply, Refusal> {
        let topic = req.ext().req_str("topic")?;
        let route = self.routes.route(topic).ok_or_else(|| {
            Refusal::new(
                ResponseCode::TopicNotExist,
                format!("No topic route info in name server for the topic: {topic}"),
            )
        })?;
        json_reply(&route)
    }

    fn cluster_info(&self) -> Result<Reply, Refusal> {
        json_reply(&self.routes.cluster_info())
    }

    fn delete_topic(&self, req: &RemotingCommand) -> Result<Reply, Refusal> {
        let ext = req.ext();
        let topic = ext.req_str("topic")?;
        let cluster = ext.get_str("clusterName").filter(|c| !c.is_empty());
        // Not in Java's header: our broker names itself when it tells of
        // its own delete, so the topic's other brokers keep their queues
        // (a Java NameServer ignores the field and drops the cluster's).
        let broker = ext.get_str("brokerName").filter(|b| !b.is_empty());
        self.routes.delete_topic(topic, cluster, broker);
        tracing::info!(topic, cluster, broker, "topic deleted from the routes");
        Ok(Reply::default())
    }
}

pub(super) fn json_reply<T: Serialize>(value: &T) -> Result<Reply, Refusal> {
    let body = serde_json::to_vec(value).map_err(|e| {
        Refusal::new(
            ResponseCode::SystemError,
            format!("cannot encode the answer as JSON: {e}"),
        )
    })?;
    Ok(Reply {
        body: Some(body),
        ext: Vec::new(),
    })
}

impl RequestHandler for NameServerHandler {
    fn handle(
        self: Arc<Self>,
        conn: Arc<Connection>,
        req: RemotingCommand,
    ) -> BoxFuture<'static, Option<RemotingCommand>> {
        if let Some(refused) = self.refusal(conn.peer.ip(), &req) {
            return Box::pin(futures::future::ready(
                (!req.is_oneway()).then_some(refused),
            ));
        }
        // A registration may carry tens of thousands of topics to inflate
        // and apply: off the async threads. Lookups are answered in place.
        if req.code == RequestCode::RegisterBroker.code() {
            return Box::pin(async move {
                let oneway = req.is_oneway();
                let (opaque, serialize_type) = (req.opaque, req.serialize_type);
                let channel = (!conn.is_detached()).then_some(conn.id);
                let resp = tokio::task::spawn_blocking(move || self.process_on(channel, &req))
                    .await
                    .unwrap_or_else(|e| {
                        let mut resp = RemotingCommand::response(
                            ResponseCode::SystemError,
                            Some(format!("REGISTER_BROKER handling failed: {e}")),
                        );
                        resp.opaque = opaque;
                        resp.serialize_type = serialize_type;
                        resp
                    });
                (!oneway).then_some(resp)
            });
        }
        let resp = self.process(&req);
        // A oneway request (a broker may register that way) gets no answer.
        let resp = (!req.is_oneway()).then_some(resp);
        Box::pin(futures::future::ready(resp))
    }

    fn connection_closed(&self, conn: &Arc<Connection>) {
        self.channel_closed(conn.id, conn.peer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use rmq_common::remoting::body::{
        DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper,
    };
    use rmq_common::remoting::{SerializeType, MAX_FRAME_BYTES};
    use rmq_common::time::ManualClock;

    const TYPES: [SerializeType; 2] = [SerializeType::Json, SerializeType::RocketMq];

    fn handler() -> (NameServerHandler, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new(1_000));
        let h = NameServerHandler::new(Arc::new(RouteInfoManager::new()), clock.clone());
        (h, clock)
    }

    fn request(code: RequestCode, st: SerializeType, ext: &[(&str, &str)]) -> RemotingCommand {
        let mut req = RemotingCommand::request(code).with_serialize_type(st);
        req.opaque = 4242;
        for (k, v) in ext {
            req.put_ext(*k, *v);
        }
        req
    }

    fn body(topics: &[&str], counter: i64) -> Vec<u8> {
        let b = RegisterBrokerBody {
            topic_config_serialize_wrapper: TopicConfigSerializeWrapper {
                topic_config_table: topics
                    .iter()
                    .map(|t| ((*t).to_owned(), TopicConfig::new(t, 4)))
                    .collect(),
                data_version: DataVersion {
                    timestamp: 1,
                    counter,
                    state_version: 0,
                },
            },
            filter_server_list: Vec::new(),
        };
        serde_json::to_vec(&b).unwrap()
    }

    fn register(name: &str, addr: &str, id: &str, st: SerializeType) -> RemotingCommand {
        request(
            RequestCode::RegisterBroker,
            st,
            &[
                ("brokerName", name),
                ("brokerAddr", addr),
                ("clusterName", "DefaultCluster"),
                ("brokerId", id),
                ("haServerAddr", ""),
            ],
        )
    }

    /// Encodes and decodes `resp`, as the wire would, and checks it kept
    /// the request's opaque and serialize type.
    fn wire(req: &RemotingCommand, resp: RemotingCommand) -> RemotingCommand {
        assert!(resp.is_response());
        assert_eq!(resp.opaque, req.opaque);
        assert_eq!(resp.serialize_type, req.serialize_type);
        let mut buf = BytesMut::new();
        resp.encode(&mut buf).unwrap();
        let back = RemotingCommand::decode(&mut buf, MAX_FRAME_BYTES)
            .unwrap()
            .unwrap();
        assert_eq!(back.serialize_type, req.serialize_type);
        back
    }

    fn route_json(h: &NameServerHandler, topic: &str, st: SerializeType) -> serde_json::Value {
        let req = request(RequestCode::GetRouteInfoByTopic, st, &[("topic", topic)]);
        let resp = wire(&req, h.process(&req));
        assert_eq!(resp.code, 0, "{:?}", resp.remark);
        serde_json::from_slice(resp.body.as_deref().unwrap()).unwrap()
    }

    #[test]
    fn register_then_route_in_both_serialize_types() {
        for st in TYPES {
            let (h, _) = handler();
            let req = register("broker-a", "127.0.0.1:10911", "0", st).with_body(body(&["T"], 1));
            let resp = wire(&req, h.process(&req));
            assert_eq!(resp.code, ResponseCode::Success.code(), "{:?}", resp.remark);
            // A master gets no masterAddr/haServerAddr, as in Java (null).
            assert!(!resp.ext_fields.contains_key("masterAddr"));
            let json = route_json(&h, "T", st);
            assert_eq!(
                json,
                serde_json::json!({
                    "brokerDatas": [{"brokerAddrs": {"0": "127.0.0.1:10911"}, "brokerName": "broker-a",
                        "cluster": "DefaultCluster", "enableActingMaster": false}],
                    "filterServerTable": {},
                    "queueDatas": [{"brokerName": "broker-a", "perm": 6, "readQueueNums": 4,
                        "topicSysFlag": 0, "writeQueueNums": 4}]
                })
            );
        }
    }

    #[test]
    fn slave_registration_is_told_its_master() {
        let (h, _) = handler();
        let mut master = register("b", "127.0.0.1:10911", "0", SerializeType::Json);
        master.put_ext("haServerAddr", "127.0.0.1:10912");
        assert_eq!(h.process(&master).code, 0);
        let slave = register("b", "127.0.0.1:20911", "1", SerializeType::RocketMq);
        let resp = wire(&slave, h.process(&slave));
        assert_eq!(resp.code, 0);
        assert_eq!(resp.ext().get_str("masterAddr"), Some("127.0.0.1:10911"));
        assert_eq!(resp.ext().get_str("haServerAddr"), Some("127.0.0.1:10912"));
    }

    #[test]
    fn absent_body_registers_no_topics_and_numbers_may_be_padded() {
        let (h, _) = handler();
        let req = register("a", "127.0.0.1:1", " 0 ", SerializeType::Json);
        assert_eq!(h.process(&req).code, 0);
        assert_eq!(h.routes().topic_count(), 0);
        let info = h.routes().cluster_info();
        assert_eq!(info.broker_addr_table["a"].broker_addrs[&0], "127.0.0.1:1");
    }

    #[test]
    fn register_checks_body_crc_reads_compressed_and_refuses_bad_bodies() {
        let (h, _) = handler();
        let b = body(&["T"], 1);
        let mut ok = register("a", "127.0.0.1:1", "0", SerializeType::Json).with_body(b.clone());
        ok.put_ext("bodyCrc32", body_crc(&b));
        assert_eq!(h.process(&ok).code, 0);

        let mut bad = register("a", "127.0.0.1:1", "0", SerializeType::Json).with_body(b.clone());
        bad.put_ext("bodyCrc32", body_crc(&b) ^ 1);
        let resp = h.process(&bad);
        assert_eq!(resp.code, ResponseCode::SystemError.code());
        assert!(resp.remark.unwrap().contains("crc32"));

        // JSON sent with compressed=true is not zlib: refused, named.
        let mut mislabelled =
            register("a", "127.0.0.1:1", "0", SerializeType::Json).with_body(b.clone());
        mislabelled.put_ext("compressed", "true");
        let resp = h.process(&mislabelled);
        assert_eq!(resp.code, ResponseCode::SystemError.code());
        assert!(resp.remark.unwrap().contains("compressed"));

        // The compressed form registers its topics.
        let parsed: RegisterBrokerBody = serde_json::from_slice(&body(&["T", "Z"], 2)).unwrap();
        let z = rmq_common::remoting::body::register::encode_compressed(&parsed).unwrap();
        let mut zipped =
            register("a", "127.0.0.1:1", "0", SerializeType::Json).with_body(z.clone());
        zipped.put_ext("compressed", "true");
        zipped.put_ext("bodyCrc32", body_crc(&z));
        assert_eq!(h.process(&zipped).code, 0);
        assert!(h.routes().route("Z").is_some());

        let junk = register("a", "127.0.0.1:1", "0", SerializeType::Json).with_body(&b"{nope"[..]);
        let resp = h.process(&junk);
        assert_eq!(resp.code, ResponseCode::SystemError.code());
        assert!(resp.remark.unwrap().contains("RegisterBrokerBody"));
    }

    #[test]
    fn missing_or_bad_fields_are_named() {
        let (h, _) = handler();
        for (field, value) in [
            ("brokerName", ""),
            ("brokerAddr", " "),
            ("clusterName", ""),
            ("brokerId", "x1"),
        ] {
            for st in TYPES {
                let mut req = register("a", "127.0.0.1:1", "0", st);
                req.put_ext(field, value);
                let resp = wire(&req, h.process(&req));
                assert_eq!(resp.code, ResponseCode::SystemError.code());
                let remark = resp.remark.unwrap();
                assert!(remark.contains(field), "{remark}");
            }
        }
        let mut req = register("a", "127.0.0.1:1", "0", SerializeType::Json);
        req.ext_fields.remove("haServerAddr");
        let resp = h.process(&req);
        assert_eq!(resp.code, ResponseCode::SystemError.code());
        assert!(resp.remark.unwrap().contains("haServerAddr"));

        let req = request(RequestCode::GetRouteInfoByTopic, SerializeType::Json, &[]);
        let resp = h.process(&req);
        assert_eq!(resp.code, ResponseCode::SystemError.code());
        assert!(resp.remark.unwrap().contains("topic"));

        let req = request(RequestCode::UnregisterBroker, SerializeType::Json, &[]);
        assert_eq!(h.process(&req).code, ResponseCode::SystemError.code());
        assert!(h.routes().cluster_info().broker_addr_table.is_empty());
    }

    #[test]
    fn unknown_topic_unknown_code_and_kv_config() {
        let (h, _) = handler();
        for st in TYPES {
            let req = request(RequestCode::GetRouteInfoByTopic, st, &[("topic", "Nope")]);
            let resp = wire(&req, h.process(&req));
            assert_eq!(resp.code, 17);
            assert_eq!(
                resp.remark.as_deref(),
                Some("No topic route info in name server for the topic: Nope")
            );

            let mut req = request(RequestCode::GetRouteInfoByTopic, st, &[]);
            req.code = 9999;
            let resp = wire(&req, h.process(&req));
            assert_eq!(resp.code, 3);
            assert!(resp.remark.unwrap().contains("9999"));

            let req = request(
                RequestCode::GetKvConfig,
                st,
                &[("namespace", "ORDER_TOPIC_CONFIG"), ("key", "T")],
            );
            let resp = wire(&req, h.process(&req));
            assert_eq!(resp.code, 22);
            let remark = resp.remark.unwrap();
            assert!(
                remark.contains("ORDER_TOPIC_CONFIG") && remark.contains('T'),
                "{remark}"
            );
        }
        // A broker-side code the NameServer does not serve.
        let req = request(RequestCode::SendMessage, SerializeType::Json, &[]);
        assert_eq!(h.process(&req).code, 3);
    }

    #[test]
    fn cluster_info_and_unregister() {
        let (h, clock) = handler();
        let a = register("a", "127.0.0.1:1", "0", SerializeType::Json).with_body(body(&["T"], 1));
        let b =
            register("b", "127.0.0.1:2", "0", SerializeType::RocketMq).with_body(body(&["T"], 1));
        assert_eq!(h.process(&a).code, 0);
        clock.advance(5);
        assert_eq!(h.process(&b).code, 0);

        let req = request(
            RequestCode::GetBrokerClusterInfo,
            SerializeType::RocketMq,
            &[],
        );
        let resp = wire(&req, h.process(&req));
        assert_eq!(resp.code, 0);
        let json: serde_json::Value =
            serde_json::from_slice(resp.body.as_deref().unwrap()).unwrap();
        assert_eq!(
            json["clusterAddrTable"]["DefaultCluster"],
            serde_json::json!(["a", "b"])
        );
        assert_eq!(
            json["brokerAddrTable"]["b"]["brokerAddrs"]["0"],
            "127.0.0.1:2"
        );

        let req = request(
            RequestCode::UnregisterBroker,
            SerializeType::Json,
            &[
                ("brokerName", "a"),
                ("brokerAddr", "127.0.0.1:1"),
                ("clusterName", "DefaultCluster"),
                ("brokerId", "0"),
            ],
        );
        assert_eq!(wire(&req, h.process(&req)).code, 0);
        let route = route_json(&h, "T", SerializeType::Json);
        assert_eq!(route["brokerDatas"].as_array().unwrap().len(), 1);
        assert_eq!(route["brokerDatas"][0]["brokerName"], "b");
    }

    #[test]
    fn with_an_acl_only_admin_signed_writes_are_taken() {
        assert!(GUARDED_CODES
            .iter()
            .all(|c| rmq_remoting::acl::resources::is_admin(c.code())));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plain_acl.yml");
        std::fs::write(
            &file,
            "accounts:\n  - {accessKey: adminKey1, secretKey: adminSecret, admin: true}\n  - {accessKey: userKey1, secretKey: userSecret}\n",
        )
        .unwrap();
        let acl = Arc::new(rmq_remoting::acl::Acl::open(&file).unwrap());
        let (h, _) = handler();
        let h = h.with_acl(Some(acl));
        let peer = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
        let register = || {
            let mut r = request(
                RequestCode::RegisterBroker,
                SerializeType::Json,
                &[
                    ("brokerName", "b"),
                    ("brokerAddr", "127.0.0.1:10911"),
                    ("clusterName", "c"),
                    ("haServerAddr", ""),
                    ("brokerId", "0"),
                ],
            );
            r.body = Some(body(&["T"], 1).into());
            r
        };
        let refused = h
            .refusal(peer, &register())
            .expect("unsigned register refused");
        assert_eq!(refused.code, ResponseCode::NoPermission.code());
        assert_eq!(refused.opaque, 4242);
        let mut by_user = register();
        rmq_common::acl::Credentials::new("userKey1", "userSecret")
            .sign(&mut by_user.ext_fields, by_user.body.as_deref());
        let remark = h.refusal(peer, &by_user).unwrap().remark.unwrap();
        assert!(
            remark.contains("admin") && remark.contains("userKey1"),
            "{remark}"
        );
        assert!(!remark.contains("userSecret"), "{remark}");
        let mut by_admin = register();
        rmq_common::acl::Credentials::new("adminKey1", "adminSecret")
            .sign(&mut by_admin.ext_fields, by_admin.body.as_deref());
        assert!(h.refusal(peer, &by_admin).is_none());
        let route = request(
            RequestCode::GetRouteInfoByTopic,
            SerializeType::Json,
            &[("topic", "T")],
        );
        assert!(h.refusal(peer, &route).is_none(), "reads stay open");
        let mut kv = request(
            RequestCode::PutKvConfig,
            SerializeType::Json,
            &[("namespace", "n"), ("key", "k"), ("value", "v")],
        );
        assert!(h.refusal(peer, &kv).is_some());
        rmq_common::acl::Credentials::new("adminKey1", "adminSecret")
            .sign(&mut kv.ext_fields, None);
        kv.put_ext("value", "changed after signing");
        assert!(
            h.refusal(peer, &kv).is_some(),
            "a changed value breaks the signature"
        );
    }
}
