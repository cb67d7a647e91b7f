//! Issue 15: a hostile or broken client cannot hurt anyone else (this file: hostile_stall).
//!
//! Two connections each send one HEART_BEAT naming 3,000 new consumer
//! groups. Every group gets a retry topic, which must reach topics.json and
//! the NameServer; none of that may stall other clients. While the storm
//! runs, a normal client sends to the broker and asks the embedded
//! NameServer for a route, and each answer must come within
//! [`PROBE_BOUND`]. Then a clean stop and a restart must find all 6,000
//! retry topics (the durability contract checked: a clean stop persists
//! every topic created before it, even those no request waited for).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use rmq_broker::broker::Broker;
use rmq_client::{self as sdk, OutMessage, RemotingClient, SendCode};
use rmq_common::config::CqBackend;
use rmq_common::constants::RETRY_GROUP_TOPIC_PREFIX;
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode, MAX_FRAME_BYTES};
use rmq_tests::broker_settings;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

/// New consumer groups named by each heartbeat.
const GROUPS_PER_HEARTBEAT: usize = 3_000;

/// Longest any probe may wait for its answer during the storm.
const PROBE_BOUND: Duration = Duration::from_millis(100);

/// Fewest probe rounds (a send and a route query each) the test takes.
const MIN_PROBE_ROUNDS: usize = 10;

/// Longest the whole storm (heartbeats answered, the NameServer told of
/// the new topics) may take before the test gives up; a bound on the loop,
/// not a latency target.
const STORM_DEADLINE: Duration = Duration::from_secs(120);

/// Longest one probe may take before it counts as lost (it has then far
/// exceeded [`PROBE_BOUND`] already).
const PROBE_GIVE_UP: Duration = Duration::from_secs(60);

/// The topic the probing client sends to.
const PROBE_TOPIC: &str = "StallProbe";

fn group(storm: char, i: usize) -> String {
    format!("stall-{storm}-{i}")
}

fn retry(storm: char, i: usize) -> String {
    format!("{RETRY_GROUP_TOPIC_PREFIX}{}", group(storm, i))
}

/// One HEART_BEAT naming [`GROUPS_PER_HEARTBEAT`] consumer groups.
fn storm_heartbeat(storm: char) -> RemotingCommand {
    let consumers: Vec<serde_json::Value> = (0..GROUPS_PER_HEARTBEAT)
        .map(|i| {
            serde_json::json!({
                "groupName": group(storm, i),
                "consumeType": "CONSUME_PASSIVELY",
                "messageModel": "CLUSTERING",
                "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
                "subscriptionDataSet": [{"topic": PROBE_TOPIC, "subString": "*", "subVersion": 1}],
                "unitMode": false
            })
        })
        .collect();
    let body = serde_json::json!({
        "clientID": format!("storm-{storm}"),
        "producerDataSet": [],
        "consumerDataSet": consumers,
    });
    let mut req =
        RemotingCommand::request(RequestCode::HeartBeat).with_body(body.to_string().into_bytes());
    req.opaque = 7;
    req
}

/// Sends one storm heartbeat over a raw connection, reports on `sent` once
/// its bytes are written, and returns the code of its answer (skipping the
/// NOTIFY_CONSUMER_IDS_CHANGED requests the broker sends meanwhile).
async fn storm(addr: SocketAddr, which: char, sent: mpsc::Sender<()>) -> i32 {
    let req = storm_heartbeat(which);
    let mut frame = BytesMut::new();
    req.encode(&mut frame).unwrap();
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(&frame).await.unwrap();
    let _ = sent.send(()).await;
    let mut buf = BytesMut::with_capacity(64 * 1024);
    loop {
        while let Some(cmd) = RemotingCommand::decode(&mut buf, MAX_FRAME_BYTES).unwrap() {
            if cmd.is_response() && cmd.opaque == req.opaque {
                return cmd.code;
            }
        }
        let n = stream.read_buf(&mut buf).await.unwrap();
        assert!(n > 0, "the broker closed the storm connection {which}");
    }
}

fn probe_msg(i: usize) -> OutMessage {
    OutMessage {
        body: format!("probe-{i}").into_bytes(),
        tags: None,
        keys: Vec::new(),
        properties: Vec::new(),
    }
}

/// Asks the NameServer for `topic`'s route; the answer's code.
async fn route(ns: &RemotingClient, topic: &str) -> i32 {
    let req = sdk::request(RequestCode::GetRouteInfoByTopic, &[("topic", topic.into())]);
    tokio::time::timeout(PROBE_GIVE_UP, ns.invoke(req, PROBE_GIVE_UP))
        .await
        .expect("the NameServer answers a route query")
        .expect("the route query gets an answer")
        .code
}

/// Latencies the probing client saw.
#[derive(Debug, Default)]
struct Probes {
    send: Vec<Duration>,
    route: Vec<Duration>,
    /// Rounds begun while a storm heartbeat was unanswered.
    during_heartbeats: usize,
}

impl Probes {
    /// Rounds, the probes over [`PROBE_BOUND`] and the slowest of each kind.
    fn summary(&self) -> String {
        let over = |v: &[Duration]| v.iter().filter(|d| **d > PROBE_BOUND).count();
        format!(
            "{} rounds ({} while heartbeats were unanswered); sends over the bound {}, max \
             {:?}; route queries over the bound {}, max {:?}",
            self.send.len(),
            self.during_heartbeats,
            over(&self.send),
            self.send.iter().max(),
            over(&self.route),
            self.route.iter().max(),
        )
    }

    fn max(&self) -> Duration {
        self.send
            .iter()
            .chain(&self.route)
            .copied()
            .max()
            .unwrap_or_default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_naming_thousands_of_new_groups_stall_no_other_client() {
    let dir = tempfile::tempdir().unwrap();
    let settings = broker_settings(dir.path(), CqBackend::File);
    let broker = Broker::start(settings.clone()).await.unwrap();
    let ns_addr = broker.namesrv_addr().expect("an embedded NameServer");
    let client = sdk::connect(broker.addr()).await.unwrap();
    let ns = sdk::connect(ns_addr).await.unwrap();

    // The probe topic exists and the NameServer routes it before the storm.
    sdk::send(&client, SendCode::V2, "pg", PROBE_TOPIC, 0, &[probe_msg(0)])
        .await
        .unwrap();
    let give_up = Instant::now() + STORM_DEADLINE;
    let mut passes = broker.registrar().expect("a registrar").passes();
    while route(&ns, PROBE_TOPIC).await != ResponseCode::Success.code() {
        assert!(
            Instant::now() < give_up,
            "the NameServer never learnt {PROBE_TOPIC}"
        );
        tokio::time::timeout(STORM_DEADLINE, passes.changed())
            .await
            .expect("a registration pass within the deadline")
            .unwrap();
    }

    let (sent_tx, mut sent_rx) = mpsc::channel(2);
    let (done_tx, done_rx) = watch::channel(0usize);
    let heartbeats_out = Arc::new(AtomicBool::new(true));
    let mut storms = Vec::new();
    for which in ['a', 'b'] {
        let (addr, sent, done) = (broker.addr(), sent_tx.clone(), done_tx.clone());
        storms.push(tokio::spawn(async move {
            let code = storm(addr, which, sent).await;
            done.send_modify(|n| *n += 1);
            code
        }));
    }
    tokio::time::timeout(STORM_DEADLINE, sent_rx.recv())
        .await
        .expect("a storm heartbeat is written")
        .unwrap();

    // Probe until both heartbeats are answered and the NameServer routes
    // the last retry topic of each storm (the registration of ~6,000
    // topics has run), and for at least MIN_PROBE_ROUNDS rounds.
    let mut probes = Probes::default();
    let last = [
        retry('a', GROUPS_PER_HEARTBEAT - 1),
        retry('b', GROUPS_PER_HEARTBEAT - 1),
    ];
    let mut routed = [false, false];
    let mut round = 0;
    loop {
        let answered = *done_rx.borrow();
        if answered == 2 {
            heartbeats_out.store(false, Ordering::Relaxed);
        }
        if answered == 2 && routed == [true, true] && round >= MIN_PROBE_ROUNDS {
            break;
        }
        assert!(
            Instant::now() < give_up,
            "the storm did not settle within {STORM_DEADLINE:?}: {answered} heartbeats \
             answered, retry topics routed {routed:?}, probes {}",
            probes.summary()
        );
        if heartbeats_out.load(Ordering::Relaxed) {
            probes.during_heartbeats += 1;
        }
        round += 1;
        let started = Instant::now();
        let sent = tokio::time::timeout(
            PROBE_GIVE_UP,
            sdk::send(
                &client,
                SendCode::V2,
                "pg",
                PROBE_TOPIC,
                0,
                &[probe_msg(round)],
            ),
        )
        .await
        .expect("the probe send is answered");
        probes.send.push(started.elapsed());
        sent.expect("the probe send succeeds");
        let which = round % 2;
        let started = Instant::now();
        let code = route(&ns, &last[which]).await;
        probes.route.push(started.elapsed());
        routed[which] |= code == ResponseCode::Success.code();
    }
    for s in storms {
        assert_eq!(
            s.await.unwrap(),
            ResponseCode::Success.code(),
            "the storm heartbeat succeeds"
        );
    }
    eprintln!("hostile_stall: {}", probes.summary());
    assert!(
        probes.max() <= PROBE_BOUND,
        "a probe waited {:?} (bound {PROBE_BOUND:?}) during the storm: {}",
        probes.max(),
        probes.summary()
    );

    // Every retry topic is in the table, on disk after a clean stop, and
    // back after a restart.
    for which in ['a', 'b'] {
        for i in 0..GROUPS_PER_HEARTBEAT {
            assert!(
                broker.context().topics.get(&retry(which, i)).is_some(),
                "{} is missing from the running broker",
                retry(which, i)
            );
        }
    }
    client.close().await;
    ns.close().await;
    broker.shutdown().await;
    let raw = std::fs::read(dir.path().join("config").join("topics.json")).unwrap();
    let file: serde_json::Value = serde_json::from_slice(&raw).unwrap();
    let table = file["topicConfigTable"]
        .as_object()
        .expect("topics.json has a topicConfigTable");
    for which in ['a', 'b'] {
        for i in 0..GROUPS_PER_HEARTBEAT {
            assert!(
                table.contains_key(&retry(which, i)),
                "{} is missing from topics.json after a clean stop",
                retry(which, i)
            );
        }
    }
    let broker = Broker::start(settings).await.unwrap();
    for which in ['a', 'b'] {
        for i in 0..GROUPS_PER_HEARTBEAT {
            assert!(
                broker.context().topics.get(&retry(which, i)).is_some(),
                "{} is missing after a restart",
                retry(which, i)
            );
        }
    }
    broker.shutdown().await;
}
