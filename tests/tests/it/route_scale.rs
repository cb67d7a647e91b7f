//! Routes at scale: a standalone NameServer with three brokers, each on its
//! own port with its own store (two file, one RocksDB), 50,000 topics
//! spread across them (20,000 on one). The 20,000-topic registration goes
//! out compressed, far below the frame limit; every sampled topic routes to
//! its broker. Then one broker is killed (no UNREGISTER): the NameServer
//! drops it from every route at once (the connection it registered over
//! closed; the manual clock has not moved), a route-aware producer still
//! holding the old route fails over to the other two for new sends at
//! once, and the 120 s expiry then leaves the live brokers in place.
//!
//! Every wait is bounded; registrations are explicit (`register_now`), the
//! background heartbeat period is an hour.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_client::RemotingClient;
use rmq_client::{OutMessage, Producer, ProducerOptions};
use rmq_common::config::CqBackend;
use rmq_common::remoting::body::TopicRouteData;
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode, MAX_FRAME_BYTES};
use rmq_common::time::ManualClock;
use rmq_namesrv::AUTO_COMPRESS_BYTES;
use rmq_tests::fixtures::TestNameServer;
use rmq_tools::admin;

const T0: i64 = 1_700_000_000_000;
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// Topics per broker: 50,000 in all.
const SPREAD: [(&str, usize, CqBackend); 3] = [
    ("scale-a", 20_000, CqBackend::File),
    ("scale-b", 15_000, CqBackend::Rocksdb),
    ("scale-c", 15_000, CqBackend::File),
];
/// Served by all three brokers, 4 queues each.
const SHARED: &str = "RouteScaleShared";

fn prefix(broker: &str) -> String {
    format!("{broker}-t")
}

async fn route(client: &RemotingClient, topic: &str) -> RemotingCommand {
    let mut req = RemotingCommand::request(RequestCode::GetRouteInfoByTopic);
    req.put_ext("topic", topic);
    client.invoke(req, CALL_TIMEOUT).await.unwrap()
}

fn brokers_of(resp: &RemotingCommand) -> Vec<String> {
    let r: TopicRouteData = serde_json::from_slice(resp.body.as_deref().unwrap()).unwrap();
    r.broker_datas.into_iter().map(|b| b.broker_name).collect()
}

fn p99(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[(v.len() * 99 / 100).min(v.len() - 1)]
}

/// RocketMQ's defaults but a generous answer time: a send slowed by a busy
/// CI machine must not count as a failover.
fn options() -> ProducerOptions {
    ProducerOptions {
        timeout: Duration::from_secs(30),
        ..ProducerOptions::default()
    }
}

async fn send_many(producer: &Producer, n: usize) -> (BTreeMap<String, usize>, u32) {
    let mut by_broker = BTreeMap::new();
    let mut extra_attempts = 0;
    for i in 0..n {
        let msg = OutMessage {
            body: format!("m{i}").into_bytes(),
            ..OutMessage::default()
        };
        let sent = producer
            .send(SHARED, msg)
            .await
            .unwrap_or_else(|e| panic!("send {i}: {e}"));
        *by_broker.entry(sent.broker_name).or_insert(0) += 1;
        extra_attempts += sent.attempts - 1;
    }
    (by_broker, extra_attempts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_brokers_fifty_thousand_topics_expiry_and_failover() {
    let cluster = TestNameServer::start(T0).await;
    let (ns, clock) = (&cluster.ns, &cluster.clock);

    let dirs: Vec<_> = SPREAD
        .iter()
        .map(|_| tempfile::tempdir().unwrap())
        .collect();
    let mut brokers = Vec::new();
    for ((name, count, backend), dir) in SPREAD.iter().zip(&dirs) {
        let b = cluster.broker(dir.path(), name, *backend).await;
        let started = Instant::now();
        admin::topic_create_many(
            &rmq_client::Connector::new(),
            b.addr(),
            &prefix(name),
            *count,
            4,
        )
        .await
        .unwrap();
        admin::topic_create(&rmq_client::Connector::new(), b.addr(), SHARED, 4, 6)
            .await
            .unwrap();
        b.registrar().unwrap().register_now().await.unwrap();
        eprintln!(
            "{name}: {count} topics created and registered in {:?}; body {:?}",
            started.elapsed(),
            b.registrar().unwrap().last_body()
        );
        brokers.push(b);
    }

    // The 20,000-topic registration went out compressed, far below the
    // frame limit, and the NameServer holds every topic.
    let body = brokers[0].registrar().unwrap().last_body().unwrap();
    assert!(body.topics > 20_000, "{body:?}");
    assert!(
        body.compressed && body.json_bytes > AUTO_COMPRESS_BYTES,
        "{body:?}"
    );
    assert!(body.sent_bytes < MAX_FRAME_BYTES / 16, "{body:?}");
    let topics_before = ns.routes().topic_count();
    assert!(topics_before > 50_000, "{topics_before}");

    // Sampled topics of every broker route to that broker alone.
    let client = RemotingClient::connect(ns.addr).await.unwrap();
    let mut latencies = Vec::new();
    for (name, count, _) in SPREAD {
        for n in (0..count).step_by(17) {
            let topic = format!("{}{n}", prefix(name));
            let started = Instant::now();
            let resp = route(&client, &topic).await;
            latencies.push(started.elapsed());
            assert_eq!(resp.code, 0, "{topic}: {:?}", resp.remark);
            assert_eq!(brokers_of(&resp), vec![name.to_owned()], "{topic}");
        }
    }
    eprintln!(
        "{} route lookups, p99 {:?} (one client, debug output on)",
        latencies.len(),
        p99(latencies)
    );
    let mut shared = brokers_of(&route(&client, SHARED).await);
    shared.sort();
    assert_eq!(shared, ["scale-a", "scale-b", "scale-c"]);

    // A producer spreads over all three.
    let producer = Producer::new(ns.addr, options(), clock.clone());
    let (by_broker, extra) = send_many(&producer, 60).await;
    assert_eq!(by_broker.len(), 3, "{by_broker:?}");
    assert_eq!(extra, 0);

    // Kill scale-c: no UNREGISTER, its connections close. The NameServer
    // drops it at once, as RocketMQ's does when the connection a broker
    // registered over closes (the clock has not moved: no expiry).
    let dead = brokers.pop().unwrap();
    let dead_addr = dead.addr().to_string();
    dead.halt().await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut still = brokers_of(&route(&client, SHARED).await);
        still.sort();
        if still == ["scale-a", "scale-b"] {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the NameServer still lists the killed broker: {still:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // New sends fail over at once: every one succeeds, none lands on the
    // dead broker, and only the sends that tried it took a retry.
    let (by_broker, extra) = send_many(&producer, 60).await;
    assert!(!by_broker.contains_key("scale-c"), "{by_broker:?}");
    assert_eq!(by_broker.values().sum::<usize>(), 60);
    assert!(extra >= 1, "no send tried the dead broker: {by_broker:?}");
    assert!(
        extra <= 2,
        "the dead broker was not avoided: {extra} retries"
    );

    // The expiry passes: the live brokers heartbeat half way and stay; the
    // dead one is gone (already, with its connection).
    cluster.expire(&brokers, "scale-c", &dead_addr).await;
    let mut left = brokers_of(&route(&client, SHARED).await);
    left.sort();
    assert_eq!(left, ["scale-a", "scale-b"]);
    let gone = route(&client, &format!("{}0", prefix("scale-c"))).await;
    assert_eq!(gone.code, ResponseCode::TopicNotExist.code());
    let kept = route(&client, &format!("{}19999", prefix("scale-a"))).await;
    assert_eq!(brokers_of(&kept), ["scale-a"]);
    // Its own topics went (with the one named after it, which every
    // broker makes); the ones it shared with the others stayed.
    assert_eq!(ns.routes().topic_count(), topics_before - 15_000 - 1);

    // A new producer sees the two brokers only and never retries.
    let fresh = Producer::new(ns.addr, options(), Arc::new(ManualClock::new(T0)));
    let mut names = fresh.route_brokers(SHARED).await.unwrap();
    names.sort();
    assert_eq!(names, ["scale-a", "scale-b"]);
    let (by_broker, extra) = send_many(&fresh, 30).await;
    assert_eq!(by_broker.len(), 2, "{by_broker:?}");
    assert_eq!(extra, 0);

    client.close().await;
    for b in brokers {
        b.shutdown().await;
    }
    cluster.stop().await;
}
