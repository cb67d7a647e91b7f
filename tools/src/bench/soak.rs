//! `rmq-bench soak`: one broker child process for a long run (an hour by
//! default) with producers and consumers, restarted every `--restart-every`
//! (SIGTERM, then started again on its store) and its serving consume-queue
//! backend flipped with its shadow every `--flip-every`.
//!
//! First the producers send closed loop for `--calibrate`: the acknowledged
//! rate is the maximum. Then they send at `--rate-fraction` of it on a
//! schedule while consumers pull every queue from the start. Every
//! `--sample-every` the broker's RSS, anonymous memory and open files
//! (/proc), its dispatch lag and consumer-lag gauge (Prometheus) and the
//! sends not yet received are sampled. At the end the consumers drain, and
//! every acknowledged send must have been received: bodies carry their
//! producer and sequence number (`soak_ledger`). The run fails when one was
//! lost or a figure did not stay flat (`soak_report`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use parking_lot::Mutex;
use rmq_broker::metrics::{names, rocketmq_names};
use tokio::time::Instant;

use super::broker_proc::{self, BrokerProcess, Stopped};
use super::proc_stats;
use super::scrape::scrape;
use super::soak_ledger::{Ledger, Reckoning};
use super::soak_load::{self, Clients, Producer};
use super::soak_report::{self, Flatness, Period, Sample};

fn parse_pair(s: &str) -> Result<String, String> {
    match s {
        "file,rocksdb" | "rocksdb,file" => Ok(s.to_owned()),
        other => Err(format!(
            "{other:?}: give the serving backend and its shadow, file,rocksdb or rocksdb,file"
        )),
    }
}

/// What to run.
#[derive(Debug, Clone, clap::Args, serde::Serialize)]
pub struct SoakSpec {
    /// Length of the soak after the calibration.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "1h")]
    #[serde(serialize_with = "super::report::duration_ms")]
    pub duration: Duration,
    /// A broker restart (SIGTERM, start on the same store) this often.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10m")]
    #[serde(serialize_with = "super::report::duration_ms")]
    pub restart_every: Duration,
    /// A flip of the serving backend and its shadow this often.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "15m")]
    #[serde(serialize_with = "super::report::duration_ms")]
    pub flip_every: Duration,
    /// Closed-loop sending that measures the maximum rate.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30s")]
    #[serde(serialize_with = "super::report::duration_ms")]
    pub calibrate: Duration,
    /// The soak sends at this fraction of the measured maximum.
    #[arg(long, default_value_t = 0.5)]
    pub rate_fraction: f64,
    /// A sample this often.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    #[serde(serialize_with = "super::report::duration_ms")]
    pub sample_every: Duration,
    /// Samples this soon after a restart or a flip are left out of the lag
    /// verdicts (they are still recorded).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "60s")]
    #[serde(serialize_with = "super::report::duration_ms")]
    pub settle: Duration,
    /// Longest wait after the load for the consumers to receive everything.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5m")]
    #[serde(serialize_with = "super::report::duration_ms")]
    pub drain: Duration,
    /// Queues of the soak's topic.
    #[arg(long, default_value_t = 16)]
    pub queues: i32,
    /// Sending connections.
    #[arg(long, default_value_t = 4)]
    pub producers: usize,
    /// Sends outstanding per connection.
    #[arg(long, default_value_t = 32)]
    pub inflight: usize,
    /// Pulling connections (each takes every n-th queue).
    #[arg(long, default_value_t = 2)]
    pub consumers: usize,
    /// Body size, bytes (at least 12).
    #[arg(long, default_value_t = 256)]
    pub size: usize,
    /// The serving backend, then its shadow.
    #[arg(long, value_parser = parse_pair, default_value = "file,rocksdb")]
    pub backends: String,
    /// More broker settings, `KEY=VALUE` (repeatable).
    #[arg(long = "broker-set")]
    pub broker_sets: Vec<String>,
    /// The broker binary (default: `rmq-broker` next to this executable).
    #[arg(long)]
    pub broker_bin: Option<PathBuf>,
    /// Parent folder of the temporary store.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Judge only losses and flips: for a smoke run too short for the
    /// flatness verdicts to mean anything.
    #[arg(long)]
    pub loss_only: bool,
}

/// One restart.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Restart {
    /// Seconds into the soak.
    pub at_s: f64,
    /// How the old process ended.
    pub stopped: Stopped,
    /// From SIGTERM to the new process listening, s.
    pub down_s: f64,
}

/// One flip.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Flip {
    /// Seconds into the soak.
    pub at_s: f64,
    /// The backend asked to serve.
    pub to: String,
    /// How long the broker took to answer, s.
    pub took_s: f64,
    /// The answer: "serving", or the refusal.
    pub outcome: String,
}

/// The whole run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SoakReport {
    /// What ran.
    pub spec: SoakSpec,
    /// Acknowledged sends per second, closed loop.
    pub max_rate_per_s: f64,
    /// The soak's schedule.
    pub target_rate_per_s: f64,
    /// Acknowledged sends per second over the soak.
    pub achieved_rate_per_s: f64,
    /// Acknowledged, received, lost.
    pub reckoning: Reckoning,
    /// Send calls that failed (restarts make some).
    pub send_errors: u64,
    /// The first of them.
    pub first_send_error: Option<String>,
    /// Pull calls that failed.
    pub pull_errors: u64,
    /// Pulls answered with another offset than asked.
    pub offsets_moved: u64,
    /// The restarts.
    pub restarts: Vec<Restart>,
    /// The flips.
    pub flips: Vec<Flip>,
    /// Figures per period between restarts.
    pub periods: Vec<Period>,
    /// The verdicts.
    pub flat: Flatness,
    /// Every sample.
    pub samples: Vec<Sample>,
}

/// The broker child and how to start it again.
struct Node {
    bin: PathBuf,
    dir: PathBuf,
    sets: Vec<String>,
    child: Option<BrokerProcess>,
    /// Its pid while up, 0 while down (the sampler reads it).
    pid: Arc<AtomicU32>,
}

impl Node {
    async fn start(&mut self) -> anyhow::Result<()> {
        let child = BrokerProcess::start(&self.bin, &self.dir, &self.sets).await?;
        self.pid.store(child.pid(), Ordering::Relaxed);
        self.child = Some(child);
        Ok(())
    }

    async fn restart(&mut self) -> anyhow::Result<(Stopped, Duration)> {
        let t = Instant::now();
        self.pid.store(0, Ordering::Relaxed);
        let stopped = match self.child.take() {
            Some(c) => c.stop().await?,
            None => Stopped::Exited,
        };
        self.start().await?;
        Ok((stopped, t.elapsed()))
    }
}

/// A free port whose neighbours the broker also takes (its fast port two
/// below, its HA port one above) are free too.
fn free_listen_port() -> anyhow::Result<u16> {
    for _ in 0..50 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let all_free = [port.wrapping_sub(2), port + 1]
            .iter()
            .all(|p| *p > 1024 && std::net::TcpListener::bind(("127.0.0.1", *p)).is_ok());
        if all_free {
            return Ok(port);
        }
    }
    bail!("no free port with free neighbours on 127.0.0.1")
}

/// Runs the soak.
pub async fn run(spec: &SoakSpec) -> anyhow::Result<SoakReport> {
    if spec.queues < 1 || spec.producers < 1 || spec.consumers < 1 || spec.inflight < 1 {
        bail!("--queues, --producers, --consumers and --inflight must be at least 1");
    }
    if !(spec.rate_fraction > 0.0 && spec.rate_fraction <= 1.0) {
        bail!("--rate-fraction must be in (0, 1]");
    }
    let (serving, shadow) = spec
        .backends
        .split_once(',')
        .context("--backends is SERVING,SHADOW")?;
    let bin = match &spec.broker_bin {
        Some(b) => b.clone(),
        None => broker_proc::default_binary()?,
    };
    let tmp = match &spec.dir {
        Some(parent) => {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("create --dir {}", parent.display()))?;
            tempfile::tempdir_in(parent)
                .with_context(|| format!("make a run folder in --dir {}", parent.display()))?
        }
        None => tempfile::tempdir()?,
    };
    let port = free_listen_port()?;
    let metrics_port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let mut sets = vec![
        format!("listenPort={port}"),
        "namesrvListenPort=-1".to_owned(),
        format!("metricsPort={metrics_port}"),
        "grpcServerPort=-1".to_owned(),
        "brokerName=soak".to_owned(),
        format!("storePathRootDir={}", tmp.path().join("store").display()),
        format!("consumeQueueStore={serving}"),
        format!("shadowConsumeQueueStore={shadow}"),
    ];
    sets.extend(spec.broker_sets.iter().cloned());
    let mut node = Node {
        bin,
        dir: tmp.path().to_owned(),
        sets,
        child: None,
        pid: Arc::new(AtomicU32::new(0)),
    };
    node.start().await?;
    let addr = node
        .child
        .as_ref()
        .map(BrokerProcess::addr)
        .context("started")?;
    let metrics = SocketAddr::from(([127, 0, 0, 1], metrics_port));
    crate::admin::topic_create(
        &rmq_client::Connector::new(),
        addr,
        soak_load::TOPIC,
        spec.queues,
        6,
    )
    .await
    .context("creating the soak topic")?;

    let clients = Arc::new(Clients {
        addr,
        queues: spec.queues,
        size: spec.size,
        inflight: spec.inflight,
        ledger: Ledger::new(spec.producers),
        send_errors: AtomicU64::new(0),
        pull_errors: AtomicU64::new(0),
        offsets_moved: AtomicU64::new(0),
        first_send_error: Mutex::new(None),
        stop_consumers: AtomicBool::new(false),
    });
    let consumers: Vec<_> = (0..spec.consumers)
        .map(|i| {
            tokio::spawn(soak_load::consume(
                Arc::clone(&clients),
                i as i32,
                spec.consumers as i32,
            ))
        })
        .collect();

    // Calibration: closed loop.
    let t0 = Instant::now();
    let producers = send_phase(
        &clients,
        (0..spec.producers as u32).map(Producer::new).collect(),
        t0 + spec.calibrate,
        None,
    )
    .await;
    let max_rate = clients.ledger.acked_total() as f64 / t0.elapsed().as_secs_f64();
    let target = max_rate * spec.rate_fraction;
    eprintln!("soak: maximum {max_rate:.0} acknowledged sends/s closed loop; soaking at {target:.0}/s for {:?}", spec.duration);

    // The soak.
    let start = Instant::now();
    let end = start + spec.duration;
    let acked_before = clients.ledger.acked_total();
    let per_producer = target / spec.producers as f64;
    let load = tokio::spawn({
        let c = Arc::clone(&clients);
        async move { send_phase(&c, producers, end, Some(per_producer)).await }
    });
    let samples = Arc::new(Mutex::new(Vec::new()));
    let settle_until = Arc::new(Mutex::new(start + spec.settle));
    let sampler = tokio::spawn(sample_loop(
        Arc::clone(&clients),
        tmp.path().join("store"),
        Arc::clone(&node.pid),
        metrics,
        start,
        end,
        spec.sample_every,
        Arc::clone(&settle_until),
        Arc::clone(&samples),
    ));
    let (mut restarts, mut flips) = (Vec::new(), Vec::new());
    let mut serving_now = serving.to_owned();
    let (mut next_restart, mut next_flip) = (start + spec.restart_every, start + spec.flip_every);
    loop {
        let next = next_restart.min(next_flip);
        if next >= end {
            break;
        }
        tokio::time::sleep_until(next).await;
        let at_s = start.elapsed().as_secs_f64();
        if next == next_flip {
            let to = if serving_now == serving {
                shadow
            } else {
                serving
            };
            let t = Instant::now();
            let outcome =
                match crate::cq_admin::serve(&rmq_client::Connector::new(), addr, to).await {
                    Ok(_) => {
                        serving_now = to.to_owned();
                        "serving".to_owned()
                    }
                    Err(e) => e.to_string(),
                };
            eprintln!("soak: {at_s:.0} s: flip to {to}: {outcome}");
            flips.push(Flip {
                at_s,
                to: to.to_owned(),
                took_s: t.elapsed().as_secs_f64(),
                outcome,
            });
            next_flip += spec.flip_every;
        }
        if next == next_restart {
            let (stopped, down) = node.restart().await?;
            eprintln!("soak: {at_s:.0} s: restarted ({stopped:?}), down {down:?}");
            restarts.push(Restart {
                at_s,
                stopped,
                down_s: down.as_secs_f64(),
            });
            next_restart += spec.restart_every;
        }
        *settle_until.lock() = Instant::now() + spec.settle;
    }
    let _ = load.await;
    let soaked = start.elapsed().as_secs_f64();
    let achieved = (clients.ledger.acked_total() - acked_before) as f64 / soaked;
    let _ = sampler.await;

    // Drain.
    let drained_by = Instant::now() + spec.drain;
    while !clients.ledger.all_received() && Instant::now() < drained_by {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    clients.stop_consumers.store(true, Ordering::Relaxed);
    for c in consumers {
        let _ = c.await;
    }
    if let Some(c) = node.child.take() {
        c.stop().await?;
    }
    let samples = std::mem::take(&mut *samples.lock());
    let restart_marks: Vec<f64> = restarts.iter().map(|r: &Restart| r.at_s).collect();
    let periods = soak_report::periods(&samples, &restart_marks);
    let flat = soak_report::flatness(&periods, target);
    let first_send_error = clients.first_send_error.lock().clone();
    Ok(SoakReport {
        spec: spec.clone(),
        max_rate_per_s: max_rate,
        target_rate_per_s: target,
        achieved_rate_per_s: achieved,
        reckoning: clients.ledger.reckon(),
        send_errors: clients.send_errors.load(Ordering::Relaxed),
        first_send_error,
        pull_errors: clients.pull_errors.load(Ordering::Relaxed),
        offsets_moved: clients.offsets_moved.load(Ordering::Relaxed),
        restarts,
        flips,
        periods,
        flat,
        samples,
    })
}

/// Runs `producers` until `until` at `rate` each (None: closed loop).
async fn send_phase(
    c: &Arc<Clients>,
    producers: Vec<Producer>,
    until: Instant,
    rate: Option<f64>,
) -> Vec<Producer> {
    let tasks: Vec<_> = producers
        .into_iter()
        .map(|p| tokio::spawn(p.run(Arc::clone(c), until, rate)))
        .collect();
    let mut back = Vec::new();
    for t in tasks {
        if let Ok(p) = t.await {
            back.push(p);
        }
    }
    back
}

#[allow(clippy::too_many_arguments)]
async fn sample_loop(
    c: Arc<Clients>,
    store: PathBuf,
    pid: Arc<AtomicU32>,
    metrics: SocketAddr,
    start: Instant,
    end: Instant,
    every: Duration,
    settle_until: Arc<Mutex<Instant>>,
    out: Arc<Mutex<Vec<Sample>>>,
) {
    let mut last = (
        Instant::now(),
        c.ledger.acked_total(),
        c.ledger.received_total(),
    );
    let mut tick = tokio::time::interval_at(start + every, every);
    loop {
        let now = tick.tick().await;
        if now > end {
            return;
        }
        let (acked, received) = (c.ledger.acked_total(), c.ledger.received_total());
        let secs = now.duration_since(last.0).as_secs_f64().max(1e-3);
        let mut s = Sample {
            at_s: now.duration_since(start).as_secs_f64(),
            unreceived: acked.saturating_sub(received) as f64,
            acked_per_s: (acked - last.1) as f64 / secs,
            received_per_s: received.saturating_sub(last.2) as f64 / secs,
            settling: now < *settle_until.lock(),
            ..Sample::default()
        };
        last = (now, acked, received);
        let p = pid.load(Ordering::Relaxed);
        if p != 0 {
            if let (Some(rss), Some(anon), Some((stored, other))) = (
                proc_stats::rss_kib(p),
                proc_stats::anon_kib(p),
                proc_stats::fds_under(p, &store),
            ) {
                s.up = true;
                s.rss_mib = rss as f64 / 1024.0;
                s.anon_mib = anon as f64 / 1024.0;
                s.open_files = (stored + other) as f64;
                s.store_files = stored as f64;
            }
        }
        match scrape(metrics).await {
            Ok(e) => {
                s.dispatch_lag_s = e.max(names::DISPATCH_BEHIND_SECONDS).unwrap_or(0.0);
                let cache = e.max(names::ROCKSDB_MEMTABLE_BYTES).unwrap_or(0.0)
                    + e.max(names::ROCKSDB_BLOCK_CACHE_USAGE_BYTES).unwrap_or(0.0);
                s.rocksdb_cache_mib = cache / (1024.0 * 1024.0);
                s.table_readers_mib =
                    e.max(names::ROCKSDB_TABLE_READERS_BYTES).unwrap_or(0.0) / (1024.0 * 1024.0);
                s.running_compactions = e.max(names::ROCKSDB_RUNNING_COMPACTIONS).unwrap_or(0.0);
                s.consumer_lag = e.sum_where(
                    rocketmq_names::CONSUMER_LAG_MESSAGES,
                    &[("consumer_group", soak_load::CONSUMER_GROUP)],
                );
            }
            Err(_) => s.up = false,
        }
        s.heap_mib = (s.anon_mib - s.rocksdb_cache_mib).max(0.0);
        out.lock().push(s);
    }
}

/// The summary: rates, the reckoning, the events, the periods, the
/// verdicts.
pub fn print(r: &SoakReport) {
    let k = &r.reckoning;
    println!(
        "soak {:?} on {} (shadow flips every {:?}, restart every {:?}): maximum {:.0}/s closed loop, target {:.0}/s, achieved {:.0}/s",
        r.spec.duration, r.spec.backends, r.spec.flip_every, r.spec.restart_every,
        r.max_rate_per_s, r.target_rate_per_s, r.achieved_rate_per_s
    );
    println!(
        "acknowledged {}, received {} (repeats {}), lost {}{}; send errors {} ({}), pull errors {}, offsets moved {}",
        k.acked,
        k.received,
        k.repeats,
        k.lost,
        if k.lost_examples.is_empty() { String::new() } else { format!(" e.g. {:?}", k.lost_examples) },
        r.send_errors,
        r.first_send_error.as_deref().unwrap_or("-"),
        r.pull_errors,
        r.offsets_moved
    );
    for x in &r.restarts {
        println!(
            "restart at {:.0} s: {:?}, down {:.2} s",
            x.at_s, x.stopped, x.down_s
        );
    }
    for f in &r.flips {
        println!(
            "flip at {:.0} s to {}: {} in {:.2} s",
            f.at_s, f.to, f.outcome, f.took_s
        );
    }
    print!("{}", soak_report::table(&r.periods));
    println!("flat: {:?}", r.flat);
}

/// An error when something acknowledged was lost, a flip was refused, or
/// a figure did not stay flat.
pub fn require_sound(r: &SoakReport) -> anyhow::Result<()> {
    if r.reckoning.lost > 0 {
        bail!(
            "{} acknowledged sends were never received: {:?}",
            r.reckoning.lost,
            r.reckoning.lost_examples
        );
    }
    if r.offsets_moved > 0 {
        bail!(
            "{} pulls were answered with another offset than asked: a queue lost messages or moved",
            r.offsets_moved
        );
    }
    if let Some(f) = r.flips.iter().find(|f| f.outcome != "serving") {
        bail!(
            "the flip at {:.0} s to {} was refused: {}",
            f.at_s,
            f.to,
            f.outcome
        );
    }
    if !r.spec.loss_only && !r.flat.all() {
        bail!("not flat: {:?}", r.flat);
    }
    Ok(())
}
