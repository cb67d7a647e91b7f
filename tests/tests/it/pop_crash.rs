//! POP under `kill -9`: a consumer pops and acks while the broker process
//! is killed at random moments, 20 rounds per POP-state form. Nothing whose
//! ack was answered is ever handed out again, and every message is handed
//! out at least once (RocketMQ's at-least-once).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rmq_client::{self as sdk, OutMessage, SendCode};
use rmq_common::constants::property;
use rmq_tests::fixtures::TestNameServer;

use crate::broker_process::{hermetic, BrokerProcess};

const ROUNDS: usize = 20;
const MESSAGES: usize = 300;
const TOPIC: &str = "PopCrash";
const GROUP: &str = "PopCrashGroup";
/// Short, so unacked messages come back within a round or two.
const INVISIBLE_MS: i64 = 2_000;
/// How long the consumer works before the kill, at most.
const ROUND_WORK: Duration = Duration::from_millis(1_500);
/// The drain at the end stops after this long without a message.
const QUIET: Duration = Duration::from_secs(6);
const DRAIN_BOUND: Duration = Duration::from_secs(120);

/// What the consumer saw, in one order: deliveries and answered acks.
#[derive(Debug, Default)]
struct Log {
    seq: u64,
    delivered: BTreeMap<String, Vec<u64>>,
    acked: BTreeMap<String, u64>,
}

impl Log {
    fn delivered(&mut self, key: &str) {
        self.seq += 1;
        self.delivered
            .entry(key.to_owned())
            .or_default()
            .push(self.seq);
    }

    fn acked(&mut self, key: &str) {
        self.seq += 1;
        self.acked.entry(key.to_owned()).or_insert(self.seq);
    }
}

/// One popped message: its key and where its ack goes.
struct Popped {
    key: String,
    target: sdk::pop::AckTarget,
}

async fn pop(c: &sdk::RemotingClient, max: i32) -> Result<Vec<Popped>, String> {
    let req = sdk::pop::PopRequest {
        group: GROUP.into(),
        topic: TOPIC.into(),
        queue_id: -1,
        max_msgs: max,
        invisible_time_ms: INVISIBLE_MS,
        poll_time_ms: 300,
        init_mode: 0,
        exp_type: None,
        exp: None,
        order: false,
        broker_name: "broker-a".into(),
    };
    let r = sdk::pop::pop(c, &req).await.map_err(|e| e.to_string())?;
    r.messages
        .into_iter()
        .map(|m| {
            let key = m
                .message
                .properties
                .get(property::KEYS)
                .unwrap_or_default()
                .to_owned();
            let target =
                sdk::pop::AckTarget::of(&m.extra_info, TOPIC, GROUP).map_err(|e| e.to_string())?;
            Ok(Popped { key, target })
        })
        .collect()
}

async fn ack(c: &sdk::RemotingClient, m: &Popped) -> Result<bool, String> {
    match sdk::pop::ack(c, GROUP, &m.target).await {
        Ok(()) => Ok(true),
        Err(sdk::SdkError::Refused { .. }) => Ok(false),
        Err(e) => Err(e.to_string()),
    }
}

/// Pops and acks until `until`; every third message is left unacked (it
/// comes back later). Stops quietly at the first connection error (the
/// broker was killed).
async fn consume(addr: SocketAddr, log: Arc<Mutex<Log>>, until: Instant, ack_all: bool) -> usize {
    let Ok(c) = sdk::connect(addr).await else {
        return 0;
    };
    let mut n = 0usize;
    let mut last = Instant::now();
    while Instant::now() < until {
        let Ok(batch) = pop(&c, 8).await else {
            return n;
        };
        if batch.is_empty() {
            if ack_all && last.elapsed() > QUIET {
                return n;
            }
            continue;
        }
        last = Instant::now();
        for m in batch {
            n += 1;
            log.lock().delivered(&m.key);
            let leave = !ack_all && n.is_multiple_of(3);
            if leave {
                continue;
            }
            match ack(&c, &m).await {
                Ok(true) => log.lock().acked(&m.key),
                Ok(false) => {}
                Err(_) => return n,
            }
        }
    }
    n
}

async fn crash_loop(kv: bool) {
    let dir = tempfile::tempdir().unwrap();
    let now = rmq_common::time::Clock::now_ms(&rmq_common::time::SystemClock);
    let ns = TestNameServer::start(now).await;
    let mut args = hermetic(ns.ns.addr);
    args.extend([
        "--set".to_owned(),
        format!("popConsumerKVServiceEnable={kv}"),
    ]);
    let form = if kv { "rocksdb" } else { "revive-topic" };
    // The messages.
    let b = BrokerProcess::start(dir.path(), "load", &args)
        .await
        .unwrap();
    let c = sdk::connect(b.addr).await.unwrap();
    let mut keys = BTreeSet::new();
    for i in 0..MESSAGES {
        let key = format!("k{i}");
        let m = OutMessage {
            body: key.clone().into_bytes(),
            keys: vec![key.clone()],
            ..OutMessage::default()
        };
        sdk::send(
            &c,
            SendCode::V2,
            "PopCrashProducer",
            TOPIC,
            (i % 4) as i32,
            &[m],
        )
        .await
        .unwrap();
        keys.insert(key);
    }
    drop(c);
    b.kill9();
    let log = Arc::new(Mutex::new(Log::default()));
    let mut rng: u64 = 0x2545_f491_4f6c_dd1d ^ u64::from(kv);
    for round in 0..ROUNDS {
        let b = BrokerProcess::start(dir.path(), &format!("r{round}"), &args)
            .await
            .unwrap_or_else(|e| panic!("{form}: restart {round}: {e}"));
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let work = ROUND_WORK.mul_f64((rng % 1000) as f64 / 1000.0);
        let worker = tokio::spawn(consume(
            b.addr,
            Arc::clone(&log),
            Instant::now() + ROUND_WORK,
            false,
        ));
        tokio::time::sleep(work).await;
        // Killed with requests in flight: an ack whose answer did not
        // arrive is not counted as acked.
        b.kill9();
        let _ = tokio::time::timeout(Duration::from_secs(10), worker).await;
    }
    let b = BrokerProcess::start(dir.path(), "drain", &args)
        .await
        .unwrap();
    consume(b.addr, Arc::clone(&log), Instant::now() + DRAIN_BOUND, true).await;
    b.stop().await;
    ns.stop().await;

    let log = log.lock();
    let mut again = Vec::new();
    for (key, at) in &log.acked {
        if let Some(d) = log
            .delivered
            .get(key)
            .and_then(|d| d.iter().find(|s| *s > at))
        {
            again.push(format!("{key} (acked at {at}, delivered at {d})"));
        }
    }
    assert!(
        again.is_empty(),
        "{form}: acked messages handed out again: {again:?}"
    );
    let missing: Vec<_> = keys
        .iter()
        .filter(|k| !log.delivered.contains_key(*k))
        .collect();
    assert!(missing.is_empty(), "{form}: never handed out: {missing:?}");
    // (An ack in flight at a kill may have been applied without its answer
    // arriving: such a message is rightly never handed out again, and is
    // not in `acked`.)
    let redelivered = log.delivered.values().filter(|d| d.len() > 1).count();
    eprintln!(
        "{form}: {ROUNDS} kill -9 rounds, {} deliveries of {MESSAGES} messages ({redelivered} handed out more than once), no acked one again",
        log.delivered.values().map(Vec::len).sum::<usize>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pop_kill9_loop_revive_topic() {
    crash_loop(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pop_kill9_loop_rocksdb() {
    crash_loop(true).await;
}
