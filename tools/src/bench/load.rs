//! Runs a [`LoadSpec`] against a broker: topics, producers, consumers, a
//! progress line each second, dispatch figures from `/metrics`, the
//! broker's CPU from /proc, and the final [`LoadReport`]. The clients speak
//! remoting or gRPC ([`Wire`]); the orchestration is the same.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use parking_lot::Mutex;
use rmq_common::remoting::RequestCode;
use tokio::time::Instant;

use super::grpc_consumer::{self, Seen};
use super::latency::{Latencies, LatencySummary};
use super::scrape::{scrape, DispatchProbe, DispatchReport};
use super::spec::LoadSpec;
use super::wire::{Protocol, Wire};
use super::{consumer, producer};
use rmq_client as sdk;

/// Gap between progress lines and between scrapes.
const TICK: Duration = Duration::from_secs(1);

/// One progress sample.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Tick {
    /// Seconds since the start.
    pub t: u64,
    /// Messages acknowledged so far.
    pub sent: u64,
    /// Messages received so far.
    pub received: u64,
    /// Dispatch lag the broker reported at this tick, seconds.
    pub dispatch_lag_s: Option<f64>,
}

/// How a load is run besides its [`LoadSpec`].
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// The protocol of the producers and consumers.
    pub wire: Wire,
    /// The broker's process id, to charge it the CPU of the run.
    pub pid: Option<u32>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            wire: Wire::Remoting,
            pid: None,
        }
    }
}

/// The broker's CPU over the measured run (from the first send to the
/// consumers' catch-up), from /proc/PID/stat.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct BrokerCpu {
    /// The process.
    pub pid: u32,
    /// utime + stime over the run, seconds.
    pub seconds: f64,
    /// That per message sent and received, µs.
    pub us_per_message: f64,
}

/// Everything one run measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LoadReport {
    /// The load.
    pub spec: LoadSpec,
    /// What the clients spoke.
    pub protocol: Protocol,
    /// Queues in all.
    pub total_queues: usize,
    /// Messages acknowledged with SUCCESS.
    pub sent: u64,
    /// Send requests that failed.
    pub send_errors: u64,
    /// Seconds from the first send to the last answer.
    pub send_seconds: f64,
    /// Acknowledged messages per second.
    pub send_rate: f64,
    /// Per request (one batch), from its start (or scheduled start in open
    /// loop) to its answer.
    pub send_latency: LatencySummary,
    /// Messages the consumers received (each once).
    pub received: u64,
    /// Receipts of messages already received (POP redelivery).
    pub received_again: u64,
    /// Pulls that failed.
    pub consume_errors: u64,
    /// Received messages per second, from the first send to the last
    /// message received.
    pub consume_rate: f64,
    /// Store time to receipt.
    pub e2e_latency: LatencySummary,
    /// Seconds from the last send answer until the consumers had every
    /// acknowledged message (`None` without consumers).
    pub catch_up_seconds: Option<f64>,
    /// Whether the consumers got everything before `--catch-up-timeout`.
    pub caught_up: bool,
    /// The first error anyone saw.
    pub first_error: Option<String>,
    /// What the broker's `/metrics` said (`None` without an endpoint).
    pub dispatch: Option<DispatchReport>,
    /// The broker's CPU over the run (`None` without `--pid`).
    pub broker_cpu: Option<BrokerCpu>,
    /// One sample a second.
    pub timeline: Vec<Tick>,
}

/// An error when any of `reports` had a send or consume error: a run
/// with errors measured something other than the broker's speed, so the
/// smoke runs and the benches fail on it (after writing what they
/// measured).
pub fn refuse_errors<'a>(reports: impl IntoIterator<Item = &'a LoadReport>) -> anyhow::Result<()> {
    refuse_counted(
        reports
            .into_iter()
            .map(|r| (r.send_errors, r.consume_errors, r.first_error.as_deref())),
    )
}

/// [`refuse_errors`] over (send errors, consume errors, first error).
fn refuse_counted<'a>(
    counts: impl IntoIterator<Item = (u64, u64, Option<&'a str>)>,
) -> anyhow::Result<()> {
    let (mut sends, mut consumes, mut first) = (0, 0, None);
    for (s, c, f) in counts {
        sends += s;
        consumes += c;
        first = first.or(f);
    }
    if sends + consumes > 0 || first.is_some() {
        anyhow::bail!(
            "{sends} send errors and {consumes} consume errors in the run (first: {}); its figures are not a clean measurement",
            first.unwrap_or_default()
        );
    }
    Ok(())
}

/// Runs `spec` against the broker at `addr` over remoting; reads dispatch
/// figures from `metrics` when given.
pub async fn run(
    addr: SocketAddr,
    metrics: Option<SocketAddr>,
    spec: &LoadSpec,
) -> anyhow::Result<LoadReport> {
    run_with(addr, metrics, spec, &LoadOptions::default()).await
}

/// Runs `spec` against the broker at `addr` (topics, warm-up and offsets
/// over remoting there), its clients speaking `opts.wire`.
pub async fn run_with(
    addr: SocketAddr,
    metrics: Option<SocketAddr>,
    spec: &LoadSpec,
    opts: &LoadOptions,
) -> anyhow::Result<LoadReport> {
    spec.validate().map_err(anyhow::Error::msg)?;
    let cpu = super::proc_stats::cpu_seconds;
    if let Some(pid) = opts.pid {
        anyhow::ensure!(
            cpu(pid).is_some(),
            "--pid {pid}: cannot read /proc/{pid}/stat (no such process?)"
        );
    }
    for topic in spec.topic_names() {
        crate::admin::topic_create(&rmq_client::Connector::new(), addr, &topic, spec.queues, 6)
            .await?;
    }
    let targets = spec.targets();
    // Where each queue ends: its max offset, and past the warm-up message
    // even when reput has not dispatched it yet.
    let mut starts = if spec.consumers > 0 {
        end_offsets(addr, &targets).await?
    } else {
        vec![0; targets.len()]
    };
    if spec.warmup {
        let started = Instant::now();
        let after = warm_up(addr, &targets).await?;
        for (s, a) in starts.iter_mut().zip(&after) {
            *s = (*s).max(*a);
        }
        // A pull past a queue's dispatched end is answered OFFSET_MOVED
        // back to it: wait until reput has dispatched the warm-up.
        let deadline = Instant::now() + WARMUP_DISPATCH_TIMEOUT;
        loop {
            let now = end_offsets(addr, &targets).await?;
            if now.iter().zip(&after).all(|(n, a)| n >= a) {
                break;
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "warm-up messages not dispatched within {WARMUP_DISPATCH_TIMEOUT:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        eprintln!(
            "warm-up: {} messages, one per queue, in {:.2?}",
            targets.len(),
            started.elapsed()
        );
    }
    if let (Wire::Grpc(_), true) = (&opts.wire, spec.consumers > 0) {
        // The gRPC consumers' group starts where the queues end now, as
        // the remoting consumers do (a POP group without an offset would
        // start at a queue's last message).
        commit_starts(addr, grpc_consumer::GROUP, &targets, &starts).await?;
    }
    let probe = Arc::new(Mutex::new(DispatchProbe::default()));
    if let Some(m) = metrics {
        let first = scrape(m).await?;
        probe.lock().observe(&first);
    }
    let cpu_start = opts.pid.and_then(cpu);
    let started = Instant::now();
    let psh = Arc::new(producer::Shared {
        spec: spec.clone(),
        targets: targets.clone(),
        reserved: AtomicU64::new(0),
        acked: AtomicU64::new(0),
        stop: Default::default(),
        started,
    });
    let csh = Arc::new(consumer::Shared {
        expected: AtomicU64::new(u64::MAX),
        ..Default::default()
    });
    let timeline = Arc::new(Mutex::new(Vec::new()));
    let ticker = tokio::spawn(progress(
        Arc::clone(&psh),
        Arc::clone(&csh),
        metrics,
        Arc::clone(&probe),
        Arc::clone(&timeline),
    ));
    let mut consumers = Vec::new();
    let seen = Arc::new(Seen::default());
    for c in 0..spec.consumers {
        let task = match &opts.wire {
            Wire::Remoting => {
                let mine: Vec<_> = targets
                    .iter()
                    .zip(&starts)
                    .enumerate()
                    .filter(|(i, _)| i % spec.consumers == c)
                    .map(|(_, ((t, q), start))| (t.clone(), *q, *start))
                    .collect();
                tokio::spawn(consumer::run(addr, Arc::clone(&csh), mine, spec.pull_batch))
            }
            // Simple consumers of one group share every queue.
            Wire::Grpc(target) => tokio::spawn(grpc_consumer::run(
                target.clone(),
                c,
                spec.topic_names(),
                Arc::clone(&csh),
                Arc::clone(&seen),
                spec.pull_batch,
            )),
        };
        consumers.push(task);
    }
    let mut producers = Vec::new();
    for p in 0..spec.producers {
        producers.push(tokio::spawn(producer::run(
            addr,
            opts.wire.clone(),
            Arc::clone(&psh),
            p,
        )));
    }
    let mut send_latency = Latencies::new();
    let (mut sent, mut send_errors, mut first_error) = (0, 0, None);
    for p in producers {
        let r = p.await?;
        send_latency.merge(&r.latency);
        sent += r.acked;
        send_errors += r.errors;
        first_error = first_error.or(r.first_error);
    }
    let send_seconds = started.elapsed().as_secs_f64();
    csh.expected.store(sent, Ordering::Relaxed);
    let send_end = Instant::now();
    let mut e2e = Latencies::new();
    let (mut received, mut consume_errors) = (0, 0);
    let all = futures::future::join_all(consumers);
    tokio::pin!(all);
    let joined = match tokio::time::timeout(spec.catch_up_timeout, &mut all).await {
        Ok(j) => j,
        Err(_) => {
            csh.stop.store(true, Ordering::Relaxed);
            all.await
        }
    };
    let consume_end = Instant::now();
    let cpu_end = opts.pid.and_then(cpu);
    let mut received_again = 0;
    for c in joined {
        let r = c?;
        e2e.merge(&r.e2e);
        received += r.received;
        received_again += r.duplicates;
        consume_errors += r.errors;
        first_error = first_error.or(r.first_error);
    }
    ticker.abort();
    let _ = ticker.await;
    if let Some(m) = metrics {
        let last = scrape(m).await?;
        probe.lock().observe(&last);
    }
    let consumed = spec.consumers > 0;
    let broker_cpu = match (opts.pid, cpu_start, cpu_end) {
        (Some(pid), Some(a), Some(b)) => Some(BrokerCpu {
            pid,
            seconds: b - a,
            us_per_message: (b - a) * 1e6 / (sent + received).max(1) as f64,
        }),
        _ => None,
    };
    let report = LoadReport {
        spec: spec.clone(),
        protocol: opts.wire.protocol(),
        total_queues: targets.len(),
        sent,
        send_errors,
        send_seconds,
        send_rate: sent as f64 / send_seconds,
        send_latency: send_latency.summary(),
        received,
        received_again,
        consume_errors,
        consume_rate: if consumed {
            received as f64 / (consume_end - started).as_secs_f64()
        } else {
            0.0
        },
        e2e_latency: e2e.summary(),
        catch_up_seconds: consumed.then(|| (consume_end - send_end).as_secs_f64()),
        caught_up: consumed && received >= sent,
        first_error,
        dispatch: metrics.map(|_| probe.lock().report()),
        broker_cpu,
        timeline: std::mem::take(&mut *timeline.lock()),
    };
    Ok(report)
}

/// Longest wait for the warm-up messages to become readable.
const WARMUP_DISPATCH_TIMEOUT: Duration = Duration::from_secs(60);

/// Requests outstanding during warm-up and offset queries.
const SETUP_WINDOW: usize = 64;

/// Sends one small message to every target; returns, per target, the
/// offset after the one it got.
async fn warm_up(addr: SocketAddr, targets: &[(String, i32)]) -> anyhow::Result<Vec<i64>> {
    let c = sdk::connect(addr).await?;
    let c = &c;
    let msg = [sdk::OutMessage {
        body: b"warm-up".to_vec(),
        ..Default::default()
    }];
    let msg = &msg;
    let answers = futures::stream::iter(targets.iter().map(|(t, q)| async move {
        sdk::send(c, sdk::SendCode::V2, producer::PRODUCER_GROUP, t, *q, msg).await
    }))
    .buffered(SETUP_WINDOW)
    .collect::<Vec<_>>()
    .await;
    let mut after = Vec::with_capacity(answers.len());
    for r in answers {
        let r = r?;
        anyhow::ensure!(r.code == 0, "warm-up send answered code {}", r.code);
        after.push(r.queue_offset + 1);
    }
    Ok(after)
}

/// Stores `starts` as `group`'s consume offsets of `targets`.
async fn commit_starts(
    addr: SocketAddr,
    group: &str,
    targets: &[(String, i32)],
    starts: &[i64],
) -> anyhow::Result<()> {
    let c = sdk::connect(addr).await?;
    let c = &c;
    let done = futures::stream::iter(
        targets
            .iter()
            .zip(starts)
            .map(|((t, q), s)| async move { sdk::commit_offset(c, group, t, *q, *s).await }),
    )
    .buffered(SETUP_WINDOW)
    .collect::<Vec<_>>()
    .await;
    for r in done {
        r.map_err(|e| anyhow::anyhow!("setting {group}'s start offsets: {e}"))?;
    }
    Ok(())
}

/// Each target's max offset now, in target order.
async fn end_offsets(addr: SocketAddr, targets: &[(String, i32)]) -> anyhow::Result<Vec<i64>> {
    let c = sdk::connect(addr).await?;
    let c = &c;
    let offsets =
        futures::stream::iter(targets.iter().map(|(t, q)| async move {
            sdk::queue_offset(c, RequestCode::GetMaxOffset, t, *q).await
        }))
        .buffered(SETUP_WINDOW)
        .collect::<Vec<_>>()
        .await;
    Ok(offsets.into_iter().collect::<Result<Vec<_>, _>>()?)
}

/// Prints a line each second and records it in `timeline`.
async fn progress(
    producers: Arc<producer::Shared>,
    consumers: Arc<consumer::Shared>,
    metrics: Option<SocketAddr>,
    probe: Arc<Mutex<DispatchProbe>>,
    timeline: Arc<Mutex<Vec<Tick>>>,
) {
    let mut tick = tokio::time::interval_at(producers.started + TICK, TICK);
    let (mut last_sent, mut last_received) = (0, 0);
    loop {
        tick.tick().await;
        let lag = match metrics {
            Some(m) => match scrape(m).await {
                Ok(e) => Some(probe.lock().observe(&e)),
                Err(e) => {
                    tracing::warn!("scrape failed: {e}");
                    None
                }
            },
            None => None,
        };
        let t = producers.started.elapsed().as_secs();
        let sent = producers.acked.load(Ordering::Relaxed);
        let received = consumers.received.load(Ordering::Relaxed);
        let lag_text = lag.map_or(String::new(), |l| format!(", dispatch lag {:.3} s", l));
        eprintln!(
            "[{t:>4}s] sent {sent} ({}/s), received {received} ({}/s){lag_text}",
            sent - last_sent,
            received - last_received,
        );
        (last_sent, last_received) = (sent, received);
        timeline.lock().push(Tick {
            t,
            sent,
            received,
            dispatch_lag_s: lag,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::refuse_counted;

    #[test]
    fn a_run_with_any_error_is_refused_with_the_counts() {
        assert!(refuse_counted([(0, 0, None), (0, 0, None)]).is_ok());
        let e = refuse_counted([(0, 0, None), (2, 1, Some("timed out"))]).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("2 send errors and 1 consume errors"),
            "{text}"
        );
        assert!(text.contains("timed out"), "{text}");
        assert!(refuse_counted([(0, 0, Some("connect refused"))]).is_err());
    }
}
