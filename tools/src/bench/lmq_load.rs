//! The two timed phases of `rmq-bench lmq`: the sends (synchronous, one in
//! flight per connection), then the wait until the broker has dispatched
//! every unit into its LMQs.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use rmq_client::{self as sdk, OutMessage, SendCode};
use rmq_common::constants::property;
use rmq_common::message::decode_offset_msg_id;
use rmq_common::remoting::{RemotingCommand, RequestCode};

use super::latency::{Latencies, LatencySummary};
use super::lmq_plan::{self, Plan};
use super::scrape;

/// The producer group the sends name.
const PRODUCER_GROUP: &str = "LmqBenchProducer";
/// Queues of the parent topic (message `i` goes to queue `i` mod this).
pub const PARENT_QUEUES: i32 = 8;
/// How often dispatch progress is looked at.
const DISPATCH_POLL: Duration = Duration::from_millis(20);
/// Connections that read the sampled LMQs' max offsets.
const OFFSET_READERS: usize = 4;

/// What the sends gave.
#[derive(Debug)]
pub struct Sent {
    /// Seconds from the first send to the last answer.
    pub secs: f64,
    /// Send round trips.
    pub latency: LatencySummary,
    /// The CommitLog offset of each message (from its offsetMsgId), by
    /// index: the order each LMQ must hold its messages in.
    pub phys: Vec<i64>,
}

/// Sends message `0..N` over `producers` connections, each waiting for an
/// answer before its next send; stops at the first failed send.
pub async fn send_all(
    addr: SocketAddr,
    plan: Plan,
    prefix: &str,
    producers: usize,
    size: usize,
) -> anyhow::Result<Sent> {
    let next = Arc::new(AtomicU64::new(0));
    let phys: Arc<Vec<AtomicI64>> =
        Arc::new((0..plan.messages).map(|_| AtomicI64::new(-1)).collect());
    let started = Instant::now();
    let senders = (0..producers).map(|_| {
        let (next, phys) = (Arc::clone(&next), Arc::clone(&phys));
        async move {
            let client = sdk::connect(addr)
                .await
                .with_context(|| format!("connecting a producer to {addr}"))?;
            let mut lat = Latencies::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= plan.messages {
                    return anyhow::Ok(lat);
                }
                let msg = OutMessage {
                    body: lmq_plan::body(i, size),
                    properties: vec![(
                        property::INNER_MULTI_DISPATCH.into(),
                        lmq_plan::dispatch_value(&plan, prefix, i),
                    )],
                    ..OutMessage::default()
                };
                let queue = (i % PARENT_QUEUES as u64) as i32;
                let t = Instant::now();
                let r = sdk::send(&client, SendCode::V2, PRODUCER_GROUP, prefix, queue, &[msg])
                    .await
                    .with_context(|| format!("sending message {i}"))?;
                lat.record(t.elapsed().as_micros() as u64);
                let (_, offset) = decode_offset_msg_id(&r.msg_id)
                    .with_context(|| format!("message {i}'s msgId {:?}", r.msg_id))?;
                if let Some(slot) = phys.get(i as usize) {
                    slot.store(offset, Ordering::Relaxed);
                }
            }
        }
    });
    let mut lat = Latencies::new();
    for l in futures::future::try_join_all(senders).await? {
        lat.merge(&l);
    }
    let secs = started.elapsed().as_secs_f64();
    let phys = phys.iter().map(|a| a.load(Ordering::Relaxed)).collect();
    Ok(Sent {
        secs,
        latency: lat.summary(),
        phys,
    })
}

/// How the end of dispatch is seen.
#[derive(Debug, Clone, Copy)]
pub enum DispatchProbe {
    /// `rmq_cq_lmq_entries_total` at `/metrics` has grown by N*K past
    /// `baseline`.
    Metrics {
        /// The broker's metrics endpoint.
        addr: SocketAddr,
        /// The counter before the first send.
        baseline: f64,
    },
    /// GET_BROKER_RUNTIME_INFO says nothing is left to dispatch.
    RuntimeInfo,
}

impl DispatchProbe {
    /// The probe for a broker: metrics when an endpoint is given.
    pub async fn new(metrics: Option<SocketAddr>) -> anyhow::Result<Self> {
        Ok(match metrics {
            Some(addr) => Self::Metrics {
                addr,
                baseline: lmq_entries(addr).await?,
            },
            None => Self::RuntimeInfo,
        })
    }

    /// A name for the report.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Metrics { .. } => "rmq_cq_lmq_entries_total",
            Self::RuntimeInfo => "dispatchBehindBytes",
        }
    }
}

/// The broker's `rmq_cq_lmq_entries_total`, summed over its labels.
async fn lmq_entries(addr: SocketAddr) -> anyhow::Result<f64> {
    let e = scrape::scrape(addr)
        .await
        .with_context(|| format!("scraping {addr}/metrics"))?;
    Ok(e.sum_where(rmq_store::metrics::names::CQ_LMQ_ENTRIES_TOTAL, &[]))
}

/// A number from the broker's GET_BROKER_RUNTIME_INFO table
/// (`dispatchBehindBytes`, `commitLogMaxOffset` ...).
pub async fn runtime_value(client: &rmq_client::RemotingClient, key: &str) -> anyhow::Result<i64> {
    let resp = sdk::call(
        client,
        RemotingCommand::request(RequestCode::GetBrokerRuntimeInfo),
    )
    .await?;
    let body: serde_json::Value = serde_json::from_slice(resp.body.as_deref().unwrap_or_default())
        .context("runtime info body")?;
    let v = &body["table"][key];
    v.as_str()
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("runtime info without a {key} number: {v}"))
}

/// Waits until every unit is dispatched (by `probe`) and every sampled LMQ
/// reports its expected max offset; bounded by `timeout`. Returns when
/// that was seen.
pub async fn wait_dispatched(
    addr: SocketAddr,
    probe: DispatchProbe,
    plan: Plan,
    prefix: &str,
    sample: &[u64],
    timeout: Duration,
) -> anyhow::Result<Instant> {
    let deadline = Instant::now() + timeout;
    loop {
        let seen = match probe {
            DispatchProbe::Metrics { addr, baseline } => lmq_entries(addr)
                .await
                .map(|n| n - baseline >= plan.units() as f64),
            // A connection per probe: one idle for 120 s is closed by the
            // broker, and a dispatch wait can be longer.
            DispatchProbe::RuntimeInfo => match sdk::connect(addr).await {
                Ok(admin) => {
                    let behind = runtime_value(&admin, "dispatchBehindBytes").await;
                    admin.close().await;
                    behind.map(|n| n == 0)
                }
                Err(e) => Err(anyhow::Error::from(e)),
            },
        };
        // A broker busy dispatching may answer a probe late: that is no
        // reason to give up before the deadline.
        let done = match seen {
            Ok(done) => done,
            Err(e) if Instant::now() <= deadline => {
                eprintln!("  dispatch probe failed, trying again: {e:#}");
                false
            }
            Err(e) => return Err(e),
        };
        if done {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "the broker had not dispatched {} LMQ units within {timeout:?} ({})",
                plan.units(),
                probe.name()
            );
        }
        tokio::time::sleep(DISPATCH_POLL).await;
    }
    let mut pending: Vec<u64> = sample.to_vec();
    while !pending.is_empty() {
        pending = behind(addr, plan, prefix, pending).await?;
        if pending.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            let j = pending[0];
            bail!(
                "{} sampled LMQs (first {}) had not reached their max offset ({}) within {timeout:?}",
                pending.len(),
                lmq_plan::lmq_name(prefix, j),
                plan.count(j)
            );
        }
        tokio::time::sleep(DISPATCH_POLL).await;
    }
    Ok(Instant::now())
}

/// The LMQs of `lmqs` whose max offset is still below their count (an LMQ
/// above it is an error: it holds more than was sent to it).
async fn behind(
    addr: SocketAddr,
    plan: Plan,
    prefix: &str,
    lmqs: Vec<u64>,
) -> anyhow::Result<Vec<u64>> {
    let chunk = lmqs.len().div_ceil(OFFSET_READERS).max(1);
    let readers = lmqs.chunks(chunk).map(|part| async move {
        let client = sdk::connect(addr).await?;
        let mut left = Vec::new();
        for &j in part {
            let name = lmq_plan::lmq_name(prefix, j);
            let max = sdk::queue_offset(&client, RequestCode::GetMaxOffset, &name, 0)
                .await
                .with_context(|| format!("max offset of {name}"))?;
            let want = plan.count(j) as i64;
            if max > want {
                bail!("{name} has max offset {max}, but only {want} messages were sent to it");
            }
            if max < want {
                left.push(j);
            }
        }
        anyhow::Ok(left)
    });
    Ok(futures::future::try_join_all(readers)
        .await?
        .into_iter()
        .flatten()
        .collect())
}
