//! The embedded NameServer over the wire: brokers register through
//! `BrokerRegistrar` and through raw requests; clients read routes and
//! cluster info; silent brokers expire (driven by a manual clock); cancel
//! stops everything.
//!
//! Every wait is bounded; nothing sleeps to synchronise (registrations are
//! awaited with `register_now` or the registrar's pass counter).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmq_client::RemotingClient;
use rmq_common::remoting::body::{
    DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper,
};
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode, SerializeType};
use rmq_namesrv::{
    BrokerIdentity, BrokerRegistrar, RegisterError, RegistrationProvider, BROKER_EXPIRY_MS,
};
use rmq_tests::fixtures::TestNameServer;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Bound for a request expected to be answered.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// Bound for a condition expected to become true (a triggered registration,
/// tasks ending after cancel).
const WAIT: Duration = Duration::from_secs(10);
/// A background period no test reaches: registrations happen only at
/// start, on `trigger` and on `register_now`.
const NEVER: Duration = Duration::from_secs(3600);
/// The manual clock's start, ms.
const T0: i64 = 1_700_000_000_000;

const CLUSTER: &str = "DefaultCluster";

/// Cancels and waits, bounded, for every tracked task to end.
async fn stop(cancel: &CancellationToken, tracker: &TaskTracker) {
    cancel.cancel();
    tracker.close();
    tokio::time::timeout(WAIT, tracker.wait())
        .await
        .expect("tracked tasks did not end after cancel");
}

/// A fake broker: the identity and topics its registrar's provider reads.
#[derive(Clone)]
struct FakeBroker {
    state: Arc<Mutex<(BrokerIdentity, RegisterBrokerBody)>>,
}

impl FakeBroker {
    fn new(name: &str, addr: &str, topics: &[&str]) -> Self {
        let id = BrokerIdentity {
            cluster: CLUSTER.into(),
            broker_name: name.into(),
            broker_id: 0,
            broker_addr: addr.into(),
            ha_server_addr: String::new(),
        };
        let b = Self {
            state: Arc::new(Mutex::new((id, RegisterBrokerBody::default()))),
        };
        b.set_topics(topics, 1);
        b
    }

    /// Replaces the topic table under a new data version.
    fn set_topics(&self, topics: &[&str], counter: i64) {
        self.state.lock().unwrap().1 = body(topics, counter);
    }

    fn provider(&self) -> RegistrationProvider {
        let state = Arc::clone(&self.state);
        Arc::new(move || state.lock().unwrap().clone())
    }
}

/// A registrar for `broker` with `namesrvs`, its own heartbeat an hour
/// apart (tests register with `register_now`); stopped with [`stop`].
fn start_registrar(
    namesrvs: Vec<std::net::SocketAddr>,
    broker: &FakeBroker,
) -> (BrokerRegistrar, CancellationToken, TaskTracker) {
    let (cancel, tracker) = (CancellationToken::new(), TaskTracker::new());
    let registrar =
        BrokerRegistrar::start(namesrvs, broker.provider(), NEVER, cancel.clone(), &tracker);
    (registrar, cancel, tracker)
}

fn body(topics: &[&str], counter: i64) -> RegisterBrokerBody {
    RegisterBrokerBody {
        topic_config_serialize_wrapper: TopicConfigSerializeWrapper {
            topic_config_table: topics
                .iter()
                .map(|t| ((*t).to_owned(), TopicConfig::new(t, 4)))
                .collect(),
            data_version: DataVersion {
                timestamp: T0,
                counter,
                state_version: 0,
            },
        },
        filter_server_list: Vec::new(),
    }
}

/// A REGISTER_BROKER as a Java broker sends it.
fn raw_register(name: &str, addr: &str, topics: &[&str], st: SerializeType) -> RemotingCommand {
    let mut req = RemotingCommand::request(RequestCode::RegisterBroker).with_serialize_type(st);
    req.put_ext("brokerName", name);
    req.put_ext("brokerAddr", addr);
    req.put_ext("clusterName", CLUSTER);
    req.put_ext("brokerId", 0);
    req.put_ext("haServerAddr", "");
    req.put_ext("compressed", false);
    req.put_ext("bodyCrc32", 0);
    req.with_body(serde_json::to_vec(&body(topics, 1)).unwrap())
}

fn route_request(topic: &str, st: SerializeType) -> RemotingCommand {
    let mut req =
        RemotingCommand::request(RequestCode::GetRouteInfoByTopic).with_serialize_type(st);
    req.put_ext("topic", topic);
    req
}

async fn call(client: &RemotingClient, req: RemotingCommand) -> RemotingCommand {
    let st = req.serialize_type;
    let resp = client.invoke(req, CALL_TIMEOUT).await.unwrap();
    assert_eq!(
        resp.serialize_type, st,
        "reply in the request's serialize type"
    );
    resp
}

fn json_body(resp: &RemotingCommand) -> Value {
    assert_eq!(resp.code, ResponseCode::Success.code(), "{:?}", resp.remark);
    serde_json::from_slice(resp.body.as_deref().expect("a body")).unwrap()
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

#[tokio::test]
async fn namesrv_routes_cluster_info_and_errors_over_the_wire() {
    let fx = TestNameServer::start(T0).await;
    let a = FakeBroker::new("broker-a", "127.0.0.1:10911", &["OnlyA", "Shared"]);
    let (registrar, cancel, tracker) = start_registrar(vec![fx.ns.addr], &a);
    registrar.register_now().await.unwrap();

    let client = RemotingClient::connect(fx.ns.addr).await.unwrap();
    let resp = call(
        &client,
        raw_register(
            "broker-b",
            "127.0.0.1:10921",
            &["Shared"],
            SerializeType::RocketMq,
        ),
    )
    .await;
    assert_eq!(resp.code, ResponseCode::Success.code(), "{:?}", resp.remark);

    for st in [SerializeType::Json, SerializeType::RocketMq] {
        let route = json_body(&call(&client, route_request("Shared", st)).await);
        assert_eq!(
            keys(&route),
            ["brokerDatas", "filterServerTable", "queueDatas"]
        );
        assert_eq!(route["filterServerTable"], json!({}));
        let brokers = route["brokerDatas"].as_array().unwrap();
        assert_eq!(brokers.len(), 2);
        for b in brokers {
            assert_eq!(
                keys(b),
                ["brokerAddrs", "brokerName", "cluster", "enableActingMaster"]
            );
            assert_eq!(b["enableActingMaster"], json!(false));
            assert_eq!(b["cluster"], CLUSTER);
        }
        assert_eq!(brokers[0]["brokerName"], "broker-a");
        assert_eq!(brokers[0]["brokerAddrs"], json!({"0": "127.0.0.1:10911"}));
        assert_eq!(brokers[1]["brokerAddrs"], json!({"0": "127.0.0.1:10921"}));
        let queues = route["queueDatas"].as_array().unwrap();
        assert_eq!(queues.len(), 2);
        for q in queues {
            assert_eq!(
                keys(q),
                [
                    "brokerName",
                    "perm",
                    "readQueueNums",
                    "topicSysFlag",
                    "writeQueueNums"
                ]
            );
            assert_eq!(q["perm"], 6);
            assert_eq!(q["readQueueNums"], 4);
            assert_eq!(q["writeQueueNums"], 4);
        }
    }
    let only_a = json_body(&call(&client, route_request("OnlyA", SerializeType::Json)).await);
    assert_eq!(only_a["brokerDatas"].as_array().unwrap().len(), 1);

    let info = json_body(
        &call(
            &client,
            RemotingCommand::request(RequestCode::GetBrokerClusterInfo),
        )
        .await,
    );
    assert_eq!(keys(&info), ["brokerAddrTable", "clusterAddrTable"]);
    assert_eq!(
        info["clusterAddrTable"],
        json!({CLUSTER: ["broker-a", "broker-b"]})
    );
    assert_eq!(
        info["brokerAddrTable"]["broker-b"]["brokerAddrs"],
        json!({"0": "127.0.0.1:10921"})
    );

    for st in [SerializeType::Json, SerializeType::RocketMq] {
        let resp = call(&client, route_request("NoSuchTopic", st)).await;
        assert_eq!(resp.code, ResponseCode::TopicNotExist.code());
        assert_eq!(resp.code, 17);
        assert_eq!(
            resp.remark.as_deref(),
            Some("No topic route info in name server for the topic: NoSuchTopic")
        );

        let resp = call(
            &client,
            RemotingCommand::request(12345).with_serialize_type(st),
        )
        .await;
        assert_eq!(resp.code, 3);
        assert!(resp.remark.unwrap().contains("12345"));
    }

    let mut kv = RemotingCommand::request(RequestCode::GetKvConfig);
    kv.put_ext("namespace", "ORDER_TOPIC_CONFIG");
    kv.put_ext("key", "Shared");
    let resp = call(&client, kv).await;
    assert_eq!(resp.code, ResponseCode::QueryNotFound.code());
    assert!(resp.remark.unwrap().contains("ORDER_TOPIC_CONFIG"));

    // A REGISTER_BROKER without brokerAddr is refused, naming the field.
    let mut bad = raw_register("broker-c", "x", &[], SerializeType::Json);
    bad.ext_fields.remove("brokerAddr");
    let resp = call(&client, bad).await;
    assert_eq!(resp.code, ResponseCode::SystemError.code());
    assert!(resp.remark.unwrap().contains("brokerAddr"));

    client.close().await;
    stop(&cancel, &tracker).await;
    fx.stop().await;
}

#[tokio::test]
async fn namesrv_trigger_publishes_a_topic_change() {
    let fx = TestNameServer::start(T0).await;
    let a = FakeBroker::new("broker-a", "127.0.0.1:10911", &["Old"]);
    let (registrar, cancel, tracker) = start_registrar(vec![fx.ns.addr], &a);
    registrar.register_now().await.unwrap();
    assert!(fx.ns.routes().route("Old").is_some());
    assert!(fx.ns.routes().route("New").is_none());

    let mut passes = registrar.passes();
    a.set_topics(&["Old", "New"], 2);
    registrar.trigger();
    // A pass already under way may finish without the change; the trigger
    // guarantees one more pass after it.
    tokio::time::timeout(WAIT, async {
        while fx.ns.routes().route("New").is_none() {
            passes.changed().await.unwrap();
        }
    })
    .await
    .expect("the triggered registration did not publish the new topic");

    let client = RemotingClient::connect(fx.ns.addr).await.unwrap();
    let route = json_body(&call(&client, route_request("New", SerializeType::Json)).await);
    assert_eq!(route["queueDatas"][0]["brokerName"], "broker-a");

    // A registration only adds and updates, as Java's NameServer by
    // default: a topic missing from it (new version) keeps its route.
    a.set_topics(&["New"], 3);
    registrar.register_now().await.unwrap();
    let resp = call(&client, route_request("Old", SerializeType::Json)).await;
    assert_eq!(resp.code, ResponseCode::Success.code());
    // With deleteTopicWithBrokerRegistration, a new version replaces the
    // broker's topics.
    let update = RemotingCommand::request(RequestCode::UpdateNamesrvConfig)
        .with_body(b"deleteTopicWithBrokerRegistration=true\n".to_vec());
    assert_eq!(
        call(&client, update).await.code,
        ResponseCode::Success.code()
    );
    a.set_topics(&["New"], 4);
    registrar.register_now().await.unwrap();
    let resp = call(&client, route_request("Old", SerializeType::Json)).await;
    assert_eq!(resp.code, ResponseCode::TopicNotExist.code());

    client.close().await;
    stop(&cancel, &tracker).await;
    fx.stop().await;
}

#[tokio::test]
async fn namesrv_expiry_drops_brokers_silent_for_120s() {
    expiry_drops_silent_brokers(BROKER_EXPIRY_MS).await;
}

#[tokio::test]
async fn namesrv_expiry_is_configurable() {
    expiry_drops_silent_brokers(5_000).await;
}

async fn expiry_drops_silent_brokers(expiry_ms: i64) {
    let fx = TestNameServer::start_with("127.0.0.1:0".parse().unwrap(), T0, expiry_ms).await;
    let client = RemotingClient::connect(fx.ns.addr).await.unwrap();
    let reg_a = || {
        raw_register(
            "broker-a",
            "127.0.0.1:10911",
            &["TA", "Both"],
            SerializeType::Json,
        )
    };
    let reg_b = raw_register(
        "broker-b",
        "127.0.0.1:10921",
        &["TB", "Both"],
        SerializeType::Json,
    );
    assert_eq!(call(&client, reg_a()).await.code, 0);
    assert_eq!(call(&client, reg_b).await.code, 0);

    fx.clock.advance(expiry_ms / 2);
    assert!(fx.ns.scan_once().is_empty());
    // a heartbeats; b stays silent.
    assert_eq!(call(&client, reg_a()).await.code, 0);
    fx.clock.advance(expiry_ms - expiry_ms / 2);
    assert!(
        fx.ns.scan_once().is_empty(),
        "exactly the expiry of silence is not yet expiry"
    );
    fx.clock.advance(1);
    assert_eq!(fx.ns.scan_once(), vec!["127.0.0.1:10921".to_owned()]);

    let resp = call(&client, route_request("TB", SerializeType::Json)).await;
    assert_eq!(resp.code, ResponseCode::TopicNotExist.code());
    let both = json_body(&call(&client, route_request("Both", SerializeType::RocketMq)).await);
    assert_eq!(both["brokerDatas"].as_array().unwrap().len(), 1);
    assert_eq!(both["brokerDatas"][0]["brokerName"], "broker-a");
    let info = json_body(
        &call(
            &client,
            RemotingCommand::request(RequestCode::GetBrokerClusterInfo),
        )
        .await,
    );
    assert_eq!(info["clusterAddrTable"], json!({CLUSTER: ["broker-a"]}));

    // b comes back with its next heartbeat.
    let reg_b = raw_register("broker-b", "127.0.0.1:10921", &["TB"], SerializeType::Json);
    assert_eq!(call(&client, reg_b).await.code, 0);
    assert!(fx.ns.routes().route("TB").is_some());

    client.close().await;
    fx.stop().await;
}

#[tokio::test]
async fn namesrv_registrar_reports_failures_and_reconnects() {
    // An address nobody listens on: bind, note the port, close.
    let dead_addr = {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap()
    };
    let fx = TestNameServer::start(T0).await;
    let a = FakeBroker::new("broker-a", "127.0.0.1:10911", &["T"]);
    let (registrar, cancel, tracker) = start_registrar(vec![dead_addr, fx.ns.addr], &a);
    match registrar.register_now().await {
        Err(RegisterError::Failed { failures, total }) => {
            assert_eq!(total, 2);
            assert_eq!(failures.len(), 1);
            assert!(failures[0].to_string().contains(&dead_addr.to_string()));
        }
        other => panic!("expected one failed NameServer, got {other:?}"),
    }
    // The live NameServer took the registration all the same.
    assert!(fx.ns.routes().route("T").is_some());

    // Restart the live NameServer on the same port: the registrar's old
    // connection is dead, and the next registration reconnects.
    let addr = fx.ns.addr;
    fx.stop().await;
    let fx = TestNameServer::start_with(addr, T0, BROKER_EXPIRY_MS).await;
    assert!(fx.ns.routes().route("T").is_none());
    let mut ok = false;
    // The first call may still meet the dead connection; it is dropped and
    // the next call reconnects.
    for _ in 0..2 {
        let result = registrar.register_now().await;
        if fx.ns.routes().route("T").is_some() {
            ok = true;
            break;
        }
        assert!(result.is_err());
    }
    assert!(
        ok,
        "the registrar did not reconnect to the restarted NameServer"
    );

    stop(&cancel, &tracker).await;
    fx.stop().await;
}

#[tokio::test]
async fn namesrv_cancel_unregisters_and_stops_everything() {
    let fx = TestNameServer::start(T0).await;
    let a = FakeBroker::new("broker-a", "127.0.0.1:10911", &["T"]);
    let (registrar, cancel, tracker) = start_registrar(vec![fx.ns.addr], &a);
    registrar.register_now().await.unwrap();
    assert!(fx.ns.routes().route("T").is_some());

    // The registrar's task unregisters on its way out.
    stop(&cancel, &tracker).await;
    assert!(fx.ns.routes().route("T").is_none());
    assert!(fx.ns.routes().cluster_info().broker_addr_table.is_empty());
    assert!(matches!(
        registrar.register_now().await,
        Err(RegisterError::Stopped)
    ));

    // The NameServer closes its connections and its listener.
    let client = RemotingClient::connect(fx.ns.addr).await.unwrap();
    let addr = fx.ns.addr;
    fx.stop().await;
    let resp = client
        .invoke(route_request("T", SerializeType::Json), CALL_TIMEOUT)
        .await;
    assert!(resp.is_err(), "a stopped NameServer answered: {resp:?}");
    assert!(RemotingClient::connect(addr).await.is_err());
}

/// Waits (bounded by [`WAIT`]) until `ok`.
async fn wait_until(what: &str, ok: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !ok() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} within {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// As RocketMQ's NameServer (BrokerHousekeepingService): a broker leaves
/// the routes as soon as the connection of its latest registration closes,
/// not at the expiry (the clock never moves here). The registrar keeps one
/// connection across its registrations, and a halted one (a killed broker)
/// closes it without unregistering.
#[tokio::test]
async fn namesrv_drops_a_broker_when_its_registration_connection_closes() {
    let fx = TestNameServer::start(T0).await;
    let routes = Arc::clone(fx.ns.routes());

    // A raw client registers two brokers, then closes: both go.
    let client = RemotingClient::connect(fx.ns.addr).await.unwrap();
    for (name, addr) in [
        ("broker-x", "127.0.0.1:10931"),
        ("broker-y", "127.0.0.1:10941"),
    ] {
        let reg = raw_register(name, addr, &["TX"], SerializeType::Json);
        assert_eq!(call(&client, reg).await.code, 0);
    }
    assert_eq!(routes.route("TX").unwrap().broker_datas.len(), 2);
    client.close().await;
    wait_until("both brokers of the closed connection dropped", || {
        routes.route("TX").is_none()
    })
    .await;
    assert!(routes.cluster_info().broker_addr_table.is_empty());

    // The registrar: one connection kept across registrations.
    let a = FakeBroker::new("broker-a", "127.0.0.1:10911", &["T"]);
    let (registrar, cancel, tracker) = start_registrar(vec![fx.ns.addr], &a);
    registrar.register_now().await.unwrap();
    let first = routes.channel_of("127.0.0.1:10911").unwrap();
    registrar.register_now().await.unwrap();
    assert_eq!(routes.channel_of("127.0.0.1:10911"), Some(first));

    // Halted as a killed broker: no UNREGISTER_BROKER, the connection
    // closes, the broker leaves the routes with it.
    registrar.halt();
    stop(&cancel, &tracker).await;
    wait_until("the halted broker dropped", || routes.route("T").is_none()).await;
    assert!(routes.cluster_info().broker_addr_table.is_empty());
    fx.stop().await;
}
