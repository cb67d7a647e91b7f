//! One producer: a connection that sends batches round-robin over the
//! load's queues, closed loop or on an open-loop schedule. The loop is the
//! same for both protocols; only the connection ([`Conn`]) differs.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::time::Instant;

use super::grpc_producer::GrpcProducer;
use super::latency::Latencies;
use super::spec::{LoadSpec, SendMode};
use super::wire::Wire;
use rmq_client::{self as sdk, OutMessage, RemotingClient, SendCode};

/// Producer group the bench sends as.
pub const PRODUCER_GROUP: &str = "rmq_bench_producer";

/// What every producer shares.
#[derive(Debug)]
pub struct Shared {
    /// The load.
    pub spec: LoadSpec,
    /// (topic, queue) targets.
    pub targets: Vec<(String, i32)>,
    /// Messages reserved for sending so far (the budget counter).
    pub reserved: AtomicU64,
    /// Messages acknowledged so far.
    pub acked: AtomicU64,
    /// Set when sending must end (duration over or an error).
    pub stop: AtomicBool,
    /// When sending started.
    pub started: Instant,
}

/// One producer's outcome.
#[derive(Debug, Default)]
pub struct ProducerResult {
    /// Latency per request (one per batch), µs.
    pub latency: Latencies,
    /// Messages acknowledged with SUCCESS.
    pub acked: u64,
    /// Requests that failed or were refused.
    pub errors: u64,
    /// The first error, for the report.
    pub first_error: Option<String>,
}

/// What one send request came back with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sent {
    /// Messages acknowledged.
    pub acked: u64,
    /// Why the request (or one of its messages) failed.
    pub error: Option<String>,
}

impl Sent {
    /// A request that stored nothing.
    pub fn failed(why: String) -> Self {
        Self {
            acked: 0,
            error: Some(why),
        }
    }
}

/// A producer's connection.
enum Conn {
    Remoting(RemotingClient),
    Grpc(Box<GrpcProducer>),
}

impl Conn {
    /// Connects producer `index`; a failure is counted in `out`.
    async fn open(
        addr: SocketAddr,
        wire: &Wire,
        shared: &Shared,
        index: usize,
        out: &mut ProducerResult,
    ) -> Option<Self> {
        match wire {
            Wire::Remoting => super::connect_counted(addr, &mut out.errors, &mut out.first_error)
                .await
                .map(Self::Remoting),
            Wire::Grpc(target) => {
                match GrpcProducer::open(target, index, &shared.spec.topic_names()).await {
                    Ok(p) => Some(Self::Grpc(Box::new(p))),
                    Err(e) => {
                        out.errors += 1;
                        out.first_error.get_or_insert_with(|| e.to_string());
                        None
                    }
                }
            }
        }
    }

    /// Sends `batch` messages of `body` to (`topic`, `queue`); over gRPC the
    /// broker picks the queue.
    async fn send(&self, topic: &str, queue: i32, batch: usize, body: &[u8]) -> Sent {
        match self {
            Self::Remoting(client) => {
                let msgs: Vec<OutMessage> = (0..batch)
                    .map(|_| OutMessage {
                        body: body.to_vec(),
                        tags: Some("TagA".into()),
                        ..OutMessage::default()
                    })
                    .collect();
                match sdk::send(client, SendCode::V2, PRODUCER_GROUP, topic, queue, &msgs).await {
                    Ok(r) if r.code == 0 => Sent {
                        acked: batch as u64,
                        error: None,
                    },
                    Ok(r) => Sent::failed(format!("send answered code {}", r.code)),
                    Err(e) => Sent::failed(e.to_string()),
                }
            }
            Self::Grpc(p) => p.send(topic, batch, body).await,
        }
    }

    async fn close(self) {
        match self {
            Self::Remoting(client) => client.close().await,
            Self::Grpc(p) => p.close().await,
        }
    }
}

/// Runs producer `index` until the budget or the duration is spent.
pub async fn run(
    addr: SocketAddr,
    wire: Wire,
    shared: Arc<Shared>,
    index: usize,
) -> ProducerResult {
    let mut out = ProducerResult::default();
    let Some(conn) = Conn::open(addr, &wire, &shared, index, &mut out).await else {
        return out;
    };
    let spec = &shared.spec;
    let batch = spec.batch as u64;
    let window = match spec.mode {
        SendMode::Sync => 1,
        SendMode::Async => spec.inflight,
    };
    // Open loop: this producer's share of the rate, as a gap between sends.
    let gap = spec.rate.map(|r| {
        let per_producer = r as f64 / spec.producers as f64;
        Duration::from_secs_f64(batch as f64 / per_producer)
    });
    let deadline = spec.duration.map(|d| shared.started + d);
    let body = vec![b'b'; spec.size];
    let mut inflight = FuturesUnordered::new();
    let mut sent_requests: u64 = 0;
    let mut done = false;
    loop {
        if !done && inflight.len() < window {
            let due = gap.map(|g| shared.started + g.mul_f64(sent_requests as f64));
            if let Some(due) = due.filter(|d| *d > Instant::now()) {
                if inflight.is_empty() {
                    tokio::time::sleep_until(due).await;
                } else {
                    tokio::select! {
                        _ = tokio::time::sleep_until(due) => {}
                        Some(r) = inflight.next() => { settle(&shared, &mut out, r); continue; }
                    }
                }
            }
            if shared.stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d)
            {
                done = true;
                continue;
            }
            if let Some(budget) = spec.budget() {
                let before = shared.reserved.fetch_add(batch, Ordering::Relaxed);
                if before >= budget {
                    done = true;
                    continue;
                }
            }
            let n = (index as u64 + sent_requests * spec.producers as u64) as usize;
            let (topic, queue) = &shared.targets[n % shared.targets.len()];
            let from = due.unwrap_or_else(Instant::now);
            let (conn, body) = (&conn, &body);
            inflight.push(async move {
                let r = conn.send(topic, *queue, batch as usize, body).await;
                (from.elapsed(), r)
            });
            sent_requests += 1;
            continue;
        }
        match inflight.next().await {
            Some(r) => settle(&shared, &mut out, r),
            None => break,
        }
    }
    drop(inflight);
    conn.close().await;
    out
}

/// Counts one answered request: its messages acknowledged, its latency if
/// it failed nowhere, an error if it failed anywhere (a gRPC batch's
/// messages are answered one by one).
fn settle(shared: &Shared, out: &mut ProducerResult, (took, r): (Duration, Sent)) {
    out.acked += r.acked;
    shared.acked.fetch_add(r.acked, Ordering::Relaxed);
    match r.error {
        None => out.latency.record(took.as_micros() as u64),
        Some(e) => {
            out.errors += 1;
            out.first_error.get_or_insert(e);
        }
    }
}
