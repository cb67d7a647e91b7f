//! Topic creates under kill -9: a broker child (`ha-master`, registered with
//! a NameServer running here) takes UPDATE_AND_CREATE_TOPIC from four
//! connections and is SIGKILLed at a random moment, several rounds on one
//! store. After each restart:
//! - every create it answered SUCCESS is there with its queue counts;
//! - every create it did not answer is there, whole, or absent;
//! - the NameServer routes exactly the broker's topics (no route left for a
//!   topic the crash took away), with the config's queue counts;
//! - every topic of the earlier rounds is still there.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::Rng;
use rmq_client as sdk;
use rmq_common::config::CqBackend;
use rmq_common::remoting::body::TopicConfigSerializeWrapper;
use rmq_common::remoting::RequestCode;
use rmq_tests::apache::free_port;
use rmq_tests::fixtures::TestNameServer;

use crate::ha_crash::spawn_master;

const ROUNDS: usize = 6;
const CREATORS: usize = 4;
/// Creates to see answered in a round before the kill is armed.
const ACKS_BEFORE_KILL: usize = 40;
/// The kill lands at a random moment up to this long after that.
const MAX_EXTRA_RUN: Duration = Duration::from_millis(400);
/// Longest any one step may take.
const STEP: Duration = Duration::from_secs(60);
const PREFIX: &str = "MetaCrash";

/// Kills the broker child when dropped, so a failed check leaves no
/// process behind (holding the test's output open).
struct Killed(std::process::Child);

impl Killed {
    fn kill(mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn queues_of(n: usize) -> i32 {
    1 + (n % 8) as i32
}

/// What the creators did in one round: topic -> queue count.
#[derive(Debug, Default)]
struct Round {
    acked: BTreeMap<String, i32>,
    unanswered: BTreeMap<String, i32>,
}

async fn create_until_dead(addr: std::net::SocketAddr, round: usize, out: Arc<Mutex<Round>>) {
    let mut creators = tokio::task::JoinSet::new();
    for c in 0..CREATORS {
        let out = Arc::clone(&out);
        creators.spawn(async move {
            let Ok(client) = sdk::connect(addr).await else {
                return;
            };
            for n in 0usize.. {
                let topic = format!("{PREFIX}-r{round}-c{c}-n{n}");
                let queues = queues_of(n);
                out.lock().unanswered.insert(topic.clone(), queues);
                let req = sdk::request(
                    RequestCode::UpdateAndCreateTopic,
                    &[
                        ("topic", topic.clone()),
                        ("readQueueNums", queues.to_string()),
                        ("writeQueueNums", queues.to_string()),
                        ("perm", "6".into()),
                        ("topicFilterType", "SINGLE_TAG".into()),
                    ],
                );
                match sdk::call(&client, req).await {
                    Ok(_) => {
                        let mut r = out.lock();
                        r.unanswered.remove(&topic);
                        r.acked.insert(topic, queues);
                    }
                    // The broker died under it: unanswered stays.
                    Err(_) => return,
                }
            }
        });
    }
    while creators.join_next().await.is_some() {}
}

async fn topic_table(addr: std::net::SocketAddr) -> TopicConfigSerializeWrapper {
    let client = sdk::connect(addr).await.unwrap();
    let resp = sdk::call(&client, sdk::request(RequestCode::GetAllTopicConfig, &[]))
        .await
        .unwrap();
    serde_json::from_slice(resp.body.as_deref().unwrap()).unwrap()
}

fn check_round(
    ns: &TestNameServer,
    table: &TopicConfigSerializeWrapper,
    all_acked: &BTreeMap<String, i32>,
    unanswered: &BTreeMap<String, i32>,
) {
    let configs = &table.topic_config_table;
    for (topic, queues) in all_acked {
        let c = configs
            .get(topic)
            .unwrap_or_else(|| panic!("acknowledged topic {topic} is gone"));
        assert_eq!(
            (c.read_queue_nums, c.write_queue_nums),
            (*queues, *queues),
            "{topic}"
        );
    }
    for (topic, queues) in unanswered {
        if let Some(c) = configs.get(topic) {
            assert_eq!(
                (c.read_queue_nums, c.write_queue_nums),
                (*queues, *queues),
                "unanswered {topic} is there but not whole"
            );
        }
    }
    let routes = ns.ns.routes();
    let routed: Vec<String> = routes
        .topic_names()
        .into_iter()
        .filter(|t| t.starts_with(PREFIX))
        .collect();
    for topic in &routed {
        assert!(
            configs.contains_key(topic),
            "the NameServer routes {topic}, which the broker does not have"
        );
    }
    for (topic, c) in configs.iter().filter(|(t, _)| t.starts_with(PREFIX)) {
        let route = routes
            .route(topic)
            .unwrap_or_else(|| panic!("{topic} has no route"));
        let q = &route.queue_datas[0];
        assert_eq!(
            (q.read_queue_nums, q.write_queue_nums),
            (c.read_queue_nums, c.write_queue_nums),
            "{topic}"
        );
    }
}

async fn run(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let root: &Path = dir.path();
    let ns = TestNameServer::start(rmq_common::time::now_ms()).await;
    let ns_addr = ns.ns.addr.to_string();
    let mut all_acked = BTreeMap::new();
    for round in 0..ROUNDS {
        let (port, ha) = (free_port(), free_port());
        let child = Killed(spawn_master(root, backend, port, ha, &ns_addr));
        let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let out = Arc::new(Mutex::new(Round::default()));
        let load = tokio::spawn(create_until_dead(addr, round, Arc::clone(&out)));
        let deadline = Instant::now() + STEP;
        while out.lock().acked.len() < ACKS_BEFORE_KILL {
            assert!(
                Instant::now() < deadline,
                "round {round}: too few creates answered"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let extra = rand::thread_rng().gen_range(Duration::ZERO..MAX_EXTRA_RUN);
        tokio::time::sleep(extra).await;
        child.kill();
        tokio::time::timeout(STEP, load).await.unwrap().unwrap();
        let Round { acked, unanswered } = std::mem::take(&mut *out.lock());
        all_acked.extend(acked);

        // Restart on the same store and check what it holds.
        let (port, ha) = (free_port(), free_port());
        let child = Killed(spawn_master(root, backend, port, ha, &ns_addr));
        let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let table = topic_table(addr).await;
        check_round(&ns, &table, &all_acked, &unanswered);
        for (topic, c) in &table.topic_config_table {
            if unanswered.contains_key(topic) {
                all_acked.insert(topic.clone(), c.read_queue_nums);
            }
        }
        child.kill();
    }
    ns.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_during_creates_file() {
    run(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_during_creates_rocksdb() {
    run(CqBackend::Rocksdb).await;
}
