//! The soak's clients: producers that send numbered bodies (closed loop
//! while the maximum rate is measured, then on a schedule) and consumers
//! that pull every queue from its start. Both outlive broker restarts: a
//! failed call is counted, the connection is opened again, and a consumer
//! keeps its offsets.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use rmq_client::{self as sdk, OutMessage, PullRequest, RemotingClient, SendCode};
use rmq_common::remoting::ResponseCode;
use tokio::time::Instant;

use super::soak_ledger::{self, Ledger};

/// The soak's topic.
pub const TOPIC: &str = "SoakTopic";
const PRODUCER_GROUP: &str = "soak_producer";
/// The consumers' group (its committed offsets feed the broker's
/// consumer-lag gauge).
pub const CONSUMER_GROUP: &str = "soak_consumer";
/// Wait before a failed connection is opened again.
const RECONNECT: Duration = Duration::from_millis(100);
/// Messages per pull.
const PULL_BATCH: i32 = 64;
/// A consumer whose queues all had nothing waits this long.
const IDLE: Duration = Duration::from_millis(5);

/// What the clients share.
#[derive(Debug)]
pub struct Clients {
    /// The broker (its port stays across restarts).
    pub addr: SocketAddr,
    /// Queues of [`TOPIC`].
    pub queues: i32,
    /// Body size.
    pub size: usize,
    /// Sends outstanding per producer.
    pub inflight: usize,
    /// Acknowledged and received.
    pub ledger: Ledger,
    /// Send calls that failed or were refused.
    pub send_errors: AtomicU64,
    /// Pull calls that failed.
    pub pull_errors: AtomicU64,
    /// Pulls answered with an offset other than the one asked for (a queue
    /// that lost messages, or moved).
    pub offsets_moved: AtomicU64,
    /// The first send error, for the report.
    pub first_send_error: parking_lot::Mutex<Option<String>>,
    /// Set to end the consumers.
    pub stop_consumers: AtomicBool,
}

async fn connect(addr: SocketAddr, errors: &AtomicU64) -> RemotingClient {
    loop {
        match sdk::connect(addr).await {
            Ok(c) => return c,
            Err(_) => {
                errors.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(RECONNECT).await;
            }
        }
    }
}

/// One producer's state across phases.
#[derive(Debug)]
pub struct Producer {
    /// Its number (in every body).
    pub id: u32,
    next_seq: u64,
}

impl Producer {
    /// Producer `id`, from sequence number 0.
    pub fn new(id: u32) -> Self {
        Self { id, next_seq: 0 }
    }

    /// Sends until `until`: closed loop (`rate` None, `inflight` outstanding)
    /// or `rate` per second on a fixed schedule (late sends go at once).
    pub async fn run(mut self, c: Arc<Clients>, until: Instant, rate: Option<f64>) -> Self {
        let started = Instant::now();
        let mut sent_here = 0u64;
        while Instant::now() < until {
            let client = connect(c.addr, &c.send_errors).await;
            let mut window = FuturesUnordered::new();
            let mut broken = false;
            loop {
                let now = Instant::now();
                let open = !broken && now < until && window.len() < c.inflight;
                let due = rate.map(|r| started + Duration::from_secs_f64(sent_here as f64 / r));
                if open && due.is_none_or(|d| d <= now) {
                    let seq = self.next_seq;
                    self.next_seq += 1;
                    sent_here += 1;
                    let queue = (seq % c.queues as u64) as i32;
                    let msg = OutMessage {
                        body: soak_ledger::body(self.id, seq, c.size),
                        tags: None,
                        keys: Vec::new(),
                        properties: Vec::new(),
                    };
                    let client = &client;
                    window.push(async move {
                        let r =
                            sdk::send(client, SendCode::V2, PRODUCER_GROUP, TOPIC, queue, &[msg])
                                .await;
                        (seq, r)
                    });
                    continue;
                }
                if window.is_empty() {
                    if broken || now >= until {
                        break;
                    }
                    if let Some(d) = due {
                        tokio::time::sleep_until(d.min(until)).await;
                    }
                    continue;
                }
                let wake = due.filter(|_| open).unwrap_or(until).max(now);
                let done = tokio::select! {
                    d = window.next() => d,
                    () = tokio::time::sleep_until(wake) => continue,
                };
                let Some((seq, r)) = done else { continue };
                match r {
                    Ok(r) if r.code == i32::from(ResponseCode::Success) => {
                        c.ledger.acked(self.id, seq)
                    }
                    Ok(r) => c.send_failed(format!("send answered code {}", r.code)),
                    Err(e) => {
                        c.send_failed(e.to_string());
                        broken = true;
                    }
                }
            }
            if broken {
                tokio::time::sleep(RECONNECT).await;
            }
        }
        self
    }
}

impl Clients {
    fn send_failed(&self, why: String) {
        self.send_errors.fetch_add(1, Ordering::Relaxed);
        self.first_send_error.lock().get_or_insert(why);
    }
}

/// Consumer `index` of `count`: pulls its share of the queues from offset 0
/// until told to stop, committing what it has read with every pull.
pub async fn consume(c: Arc<Clients>, index: i32, count: i32) {
    let queues: Vec<i32> = (0..c.queues).filter(|q| q % count == index).collect();
    let mut offsets = vec![0i64; queues.len()];
    while !c.stop_consumers.load(Ordering::Relaxed) {
        let client = connect(c.addr, &c.pull_errors).await;
        'session: while !c.stop_consumers.load(Ordering::Relaxed) {
            let mut got_any = false;
            for (i, q) in queues.iter().enumerate() {
                let req = PullRequest {
                    commit_offset: Some(offsets[i]),
                    ..PullRequest::new(CONSUMER_GROUP, TOPIC, *q, offsets[i], PULL_BATCH)
                };
                match sdk::pull(&client, &req).await {
                    Ok(r) if r.code == i32::from(ResponseCode::Success) => {
                        got_any |= !r.messages.is_empty();
                        for m in &r.messages {
                            c.ledger.received(&m.body);
                        }
                        offsets[i] = r.next_begin_offset;
                    }
                    Ok(r) => {
                        // Nothing new is answered with the offset asked
                        // for; any other offset means the queue moved.
                        if r.next_begin_offset != offsets[i] && r.next_begin_offset >= 0 {
                            c.offsets_moved.fetch_add(1, Ordering::Relaxed);
                            offsets[i] = r.next_begin_offset;
                        }
                    }
                    Err(_) => {
                        c.pull_errors.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(RECONNECT).await;
                        break 'session;
                    }
                }
            }
            if !got_any {
                tokio::time::sleep(IDLE).await;
            }
        }
    }
}
