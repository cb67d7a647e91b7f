//! One consumer: a connection pulling its share of the queues from where
//! they ended when the run started, a window of pulls outstanding, until
//! it has seen what was sent.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use rmq_common::remoting::ResponseCode;
use tokio::time::Instant;

use super::latency::Latencies;
use rmq_client::{self as sdk, PullRequest};

/// Consumer group the bench pulls as.
pub const CONSUMER_GROUP: &str = "rmq_bench_consumer";
/// Pulls outstanding per consumer.
const PULL_WINDOW: usize = 16;
/// How long a queue that had nothing waits before it is pulled again.
const EMPTY_BACKOFF: Duration = Duration::from_millis(2);

/// What every consumer shares.
#[derive(Debug, Default)]
pub struct Shared {
    /// Messages received by all consumers.
    pub received: AtomicU64,
    /// Messages the consumers must see in all; `u64::MAX` until sending ends.
    pub expected: AtomicU64,
    /// Set to give up (catch-up timeout).
    pub stop: AtomicBool,
}

/// One consumer's outcome.
#[derive(Debug, Default)]
pub struct ConsumerResult {
    /// Store time to receipt, µs (store time has millisecond precision).
    pub e2e: Latencies,
    /// Messages received (each once).
    pub received: u64,
    /// Receipts of a message already received (POP redelivery; 0 for
    /// pulls, which never repeat).
    pub duplicates: u64,
    /// Pulls that failed.
    pub errors: u64,
    /// The first error, for the report.
    pub first_error: Option<String>,
}

/// Pulls `queues` (topic, queue, first offset) until everyone together has
/// received `expected`.
pub async fn run(
    addr: SocketAddr,
    shared: Arc<Shared>,
    queues: Vec<(String, i32, i64)>,
    pull_batch: i32,
) -> ConsumerResult {
    let mut out = ConsumerResult::default();
    let Some(client) = super::connect_counted(addr, &mut out.errors, &mut out.first_error).await
    else {
        return out;
    };
    let mut offsets: Vec<i64> = queues.iter().map(|q| q.2).collect();
    let mut ready: VecDeque<usize> = (0..queues.len()).collect();
    let mut parked: VecDeque<(Instant, usize)> = VecDeque::new();
    let mut inflight = FuturesUnordered::new();
    let client = &client;
    loop {
        if shared.stop.load(Ordering::Relaxed)
            || shared.received.load(Ordering::Relaxed) >= shared.expected.load(Ordering::Relaxed)
        {
            break;
        }
        let now = Instant::now();
        while parked.front().is_some_and(|(at, _)| *at <= now) {
            if let Some((_, q)) = parked.pop_front() {
                ready.push_back(q);
            }
        }
        while inflight.len() < PULL_WINDOW {
            let Some(q) = ready.pop_front() else { break };
            let req = PullRequest {
                group: CONSUMER_GROUP.to_owned(),
                topic: queues[q].0.clone(),
                queue_id: queues[q].1,
                offset: offsets[q],
                max_msgs: pull_batch,
                subscription: Some("*".into()),
                suspend: None,
                commit_offset: None,
            };
            inflight.push(async move { (q, sdk::pull(client, &req).await) });
        }
        let next = if inflight.is_empty() {
            match parked.front() {
                Some((at, _)) => {
                    tokio::time::sleep_until(*at).await;
                    continue;
                }
                None => break,
            }
        } else {
            match tokio::time::timeout(EMPTY_BACKOFF, inflight.next()).await {
                Ok(Some(n)) => n,
                Ok(None) | Err(_) => continue,
            }
        };
        let (q, result) = next;
        match result {
            Ok(r) if r.code == i32::from(ResponseCode::Success) => {
                let now_ms = rmq_common::time::now_ms();
                for ts in &r.store_timestamps {
                    out.e2e.record((now_ms - ts).max(0) as u64 * 1000);
                }
                let n = r.messages.len() as u64;
                out.received += n;
                shared.received.fetch_add(n, Ordering::Relaxed);
                offsets[q] = r.next_begin_offset;
                ready.push_back(q);
            }
            Ok(r) => {
                if r.code == i32::from(ResponseCode::PullOffsetMoved) {
                    offsets[q] = r.next_begin_offset;
                }
                parked.push_back((Instant::now() + EMPTY_BACKOFF, q));
            }
            Err(e) => {
                out.errors += 1;
                out.first_error.get_or_insert_with(|| e.to_string());
                parked.push_back((Instant::now() + EMPTY_BACKOFF, q));
            }
        }
    }
    // Pulls still outstanding are dropped with the connection.
    drop(inflight);
    client.close().await;
    out
}
