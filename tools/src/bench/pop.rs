//! `rmq-bench pop`: the broker's two forms of POP state under one load, in
//! one run: the revive topic (`popConsumerKVServiceEnable=false`) and
//! RocksDB (`true`). For each form in turn a fresh broker runs as a child
//! process (so its CPU is its own), `--messages` are preloaded into one
//! topic of `--queues` queues, and `--consumers` POP consumers drain it,
//! acking every message except `--unacked-fraction` of first deliveries,
//! which come back through the retry topic once their invisible time ends.
//!
//! Reported per form: pops/s and acks/s until every message had been
//! delivered once (the drain), broker CPU per message handed out over the
//! whole consume phase (drain, then revive until every message is acked;
//! the preload is not counted), redelivery lag (receipt of a redelivery
//! minus popTime + invisibleTime of the delivery left unacked, as the
//! consumer sees it: it includes the broker's revive interval and the
//! consumers' choice of reading the retry topic), and each figure's ratio
//! to the first form's.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use rmq_client::{self as sdk, OutMessage, SendCode};
use rmq_common::remoting::RequestCode;

use super::broker_proc::{self, BrokerProcess};
use super::latency::LatencySummary;
use super::pop_consumer::{self, ConsumeSpec, Tracker};

/// The topic the bench pops from.
const TOPIC: &str = "PopBench";
/// Its consumer group.
const GROUP: &str = "PopBenchGroup";
/// The bench broker's name.
const BROKER_NAME: &str = "bench-pop";
/// Messages per preload request.
const PRELOAD_BATCH: u64 = 64;
/// Connections preloading at once.
const PRELOADERS: u64 = 4;
/// Longest wait for the preload to be dispatched to the consume queues.
const DISPATCH_BOUND: Duration = Duration::from_secs(120);
/// Longest wait for the consumers to return once told to stop (one poll).
const STOP_GRACE: Duration = Duration::from_secs(30);

/// A form of POP state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum PopForm {
    /// Checkpoints and acks as messages of `rmq_sys_REVIVE_LOG_<cluster>`.
    #[serde(rename = "revive-topic")]
    ReviveTopic,
    /// One RocksDB record per popped message (`<store>/kvStore`).
    #[serde(rename = "rocksdb")]
    Rocksdb,
}

impl PopForm {
    /// Its name in the report.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReviveTopic => "revive-topic",
            Self::Rocksdb => "rocksdb",
        }
    }

    /// From `revive` / `revive-topic` or `rocksdb` / `kv`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "revive" | "revive-topic" => Ok(Self::ReviveTopic),
            "rocksdb" | "kv" => Ok(Self::Rocksdb),
            other => Err(format!(
                "unknown POP state form {other:?} (revive-topic or rocksdb)"
            )),
        }
    }
}

/// What to run.
#[derive(Debug, Clone, clap::Args, serde::Serialize)]
pub struct PopSpec {
    /// Messages preloaded (and consumed).
    #[arg(long, default_value_t = 200_000)]
    pub messages: u64,
    /// Queues of the topic.
    #[arg(long, default_value_t = 8)]
    pub queues: i32,
    /// POP consumers, one connection each, every one reading all queues.
    #[arg(long, default_value_t = 4)]
    pub consumers: usize,
    /// Body size, bytes (at least 8: the sequence number).
    #[arg(long, default_value_t = 128)]
    pub size: usize,
    /// maxMsgNums of each pop (at most 32).
    #[arg(long, default_value_t = 32)]
    pub batch: i32,
    /// First deliveries left unacked, so the broker revives them.
    #[arg(long, default_value_t = 0.01)]
    pub unacked_fraction: f64,
    /// invisibleTime of each pop.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5s")]
    #[serde(serialize_with = "super::report::duration_ms")]
    pub invisible_time: Duration,
    /// pollTime of each pop (long polling when nothing is there).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "1s")]
    #[serde(serialize_with = "super::report::duration_ms")]
    pub poll_time: Duration,
    /// Ack with one BATCH_ACK_MESSAGE per pop instead of one ACK_MESSAGE
    /// per message.
    #[arg(long)]
    pub batch_ack: bool,
    /// Longest consume phase per form; a form still unfinished is reported
    /// as incomplete.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10m")]
    #[serde(serialize_with = "super::report::duration_ms")]
    pub timeout: Duration,
    /// Forms, in order; the first is the ratio base.
    #[arg(long, value_delimiter = ',', value_parser = PopForm::parse, default_value = "revive-topic,rocksdb")]
    pub forms: Vec<PopForm>,
    /// The broker binary (default: `rmq-broker` next to this executable).
    #[arg(long)]
    pub broker_bin: Option<PathBuf>,
    /// Parent folder of the temporary stores.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// One form's figures.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PopRow {
    /// The form.
    pub form: PopForm,
    /// Every message was acked before `--timeout`.
    pub complete: bool,
    /// Seconds until every message had been delivered once.
    pub drain_seconds: f64,
    /// Seconds until every message was acked (or the timeout).
    pub total_seconds: f64,
    /// Messages handed out during the drain, per second.
    pub pops_per_s: f64,
    /// Messages acked during the drain, per second.
    pub acks_per_s: f64,
    /// Broker CPU over the consume phase per message handed out, µs.
    pub cpu_us_per_msg: Option<f64>,
    /// Broker CPU over the drain per message handed out in it, µs.
    pub drain_cpu_us_per_msg: Option<f64>,
    /// Redelivery lag, µs.
    pub revive_lag: LatencySummary,
    /// POP_MESSAGE round trips that found messages during the drain, µs.
    pub pop_latency: LatencySummary,
    /// Messages handed out, every delivery.
    pub popped: u64,
    /// Deliveries left unacked on purpose.
    pub left_unacked: u64,
    /// Redeliveries of those.
    pub redelivered: u64,
    /// Redeliveries of acked messages.
    pub duplicates: u64,
    /// Redeliveries received before their deadline.
    pub early: u64,
    /// Messages acked (successful acks).
    pub acks: u64,
    /// POP_MESSAGE answers with messages / without.
    pub pops_found: u64,
    /// POP_MESSAGE answers without messages.
    pub pops_empty: u64,
    /// Failed pops and acks.
    pub errors: u64,
    /// The first failure.
    pub first_error: Option<String>,
}

/// Each figure of a form over the base form's.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PopRatio {
    /// `<form>/<base>`.
    pub forms: String,
    /// pops/s.
    pub pops_per_s: f64,
    /// acks/s.
    pub acks_per_s: f64,
    /// CPU per message.
    pub cpu_us_per_msg: Option<f64>,
    /// Redelivery lag p50.
    pub revive_lag_p50: f64,
    /// Redelivery lag p99.
    pub revive_lag_p99: f64,
}

/// The whole run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PopReport {
    /// What ran.
    pub spec: PopSpec,
    /// One row per form, in order.
    pub rows: Vec<PopRow>,
    /// Every form after the first over the first.
    pub ratios: Vec<PopRatio>,
}

/// Runs every form in turn and prints the table.
pub async fn run(spec: &PopSpec) -> anyhow::Result<PopReport> {
    if spec.size < 8 || spec.messages == 0 || spec.queues < 1 || spec.consumers == 0 {
        bail!("--size must be at least 8, --messages, --queues and --consumers at least 1");
    }
    if !(0.0..1.0).contains(&spec.unacked_fraction) {
        bail!("--unacked-fraction must be in [0, 1)");
    }
    let bin = match &spec.broker_bin {
        Some(b) => b.clone(),
        None => broker_proc::default_binary()?,
    };
    let mut rows = Vec::new();
    for &form in &spec.forms {
        eprintln!(
            "== {}: {} messages, {} queues, {} consumers",
            form.as_str(),
            spec.messages,
            spec.queues,
            spec.consumers
        );
        rows.push(one(spec, &bin, form).await?);
    }
    let ratios = rows
        .iter()
        .skip(1)
        .map(|r| ratio(r, &rows[0]))
        .collect::<Vec<_>>();
    let report = PopReport {
        spec: spec.clone(),
        rows,
        ratios,
    };
    super::pop_report::print(&report);
    Ok(report)
}

/// One form: a fresh broker, the preload, the consume phase.
async fn one(spec: &PopSpec, bin: &std::path::Path, form: PopForm) -> anyhow::Result<PopRow> {
    let dir = match &spec.dir {
        Some(parent) => tempfile::tempdir_in(parent)?,
        None => tempfile::tempdir()?,
    };
    let sets = [
        "listenPort=0".to_owned(),
        "namesrvListenPort=-1".to_owned(),
        "metricsPort=-1".to_owned(),
        "grpcServerPort=-1".to_owned(),
        format!("brokerName={BROKER_NAME}"),
        format!("storePathRootDir={}", dir.path().join("store").display()),
        // A small run does not need Java's 1 GiB segments on disk.
        "mappedFileSizeCommitLog=268435456".to_owned(),
        format!("popConsumerKVServiceEnable={}", form == PopForm::Rocksdb),
    ];
    let broker = BrokerProcess::start(bin, dir.path(), &sets).await?;
    let result = measure(spec, &broker, form).await;
    broker.stop().await?;
    result
}

async fn measure(spec: &PopSpec, broker: &BrokerProcess, form: PopForm) -> anyhow::Result<PopRow> {
    preload(spec, broker.addr()).await?;
    let consume = Arc::new(ConsumeSpec {
        addr: broker.addr(),
        broker_name: BROKER_NAME.into(),
        topic: TOPIC.into(),
        group: GROUP.into(),
        batch: spec.batch,
        invisible: spec.invisible_time,
        poll: spec.poll_time,
        unacked_fraction: spec.unacked_fraction,
        batch_ack: spec.batch_ack,
    });
    let tracker = Arc::new(Tracker::new(spec.messages));
    let (t0, cpu0) = (Instant::now(), broker.cpu_seconds());
    let tasks: Vec<_> = (0..spec.consumers)
        .map(|_| {
            tokio::spawn(pop_consumer::consume(
                Arc::clone(&consume),
                Arc::clone(&tracker),
            ))
        })
        .collect();
    let deadline = tokio::time::Instant::from_std(t0 + spec.timeout);
    let drain_cpu = tokio::select! {
        () = tracker.drained.notified() => broker.cpu_seconds(),
        () = tokio::time::sleep_until(deadline) => None,
    };
    let complete = tokio::select! {
        () = tracker.done.notified() => true,
        () = tokio::time::sleep_until(deadline) => false,
    };
    let (t_end, cpu_end) = (Instant::now(), broker.cpu_seconds());
    tracker.stop();
    for t in tasks {
        tokio::time::timeout(STOP_GRACE, t)
            .await
            .context("a consumer did not stop")??;
    }
    let c = tracker.take_counts();
    let drain = tracker
        .drained_at()
        .map_or(t_end, |d| d)
        .duration_since(t0)
        .as_secs_f64();
    let per = |cpu: Option<f64>, n: u64| match (cpu0, cpu) {
        (Some(a), Some(b)) if n > 0 => Some((b - a) * 1e6 / n as f64),
        _ => None,
    };
    Ok(PopRow {
        form,
        complete,
        drain_seconds: drain,
        total_seconds: t_end.duration_since(t0).as_secs_f64(),
        pops_per_s: c.popped_in_drain as f64 / drain.max(1e-9),
        acks_per_s: c.acks_in_drain as f64 / drain.max(1e-9),
        cpu_us_per_msg: per(cpu_end, c.popped),
        drain_cpu_us_per_msg: per(drain_cpu, c.popped_in_drain),
        revive_lag: c.revive_lag.summary(),
        pop_latency: c.pop_latency.summary(),
        popped: c.popped,
        left_unacked: c.left_unacked,
        redelivered: c.redelivered,
        duplicates: c.duplicates,
        early: c.early,
        acks: c.acks,
        pops_found: c.pops_found,
        pops_empty: c.pops_empty,
        errors: c.errors,
        first_error: c.first_error,
    })
}

/// Creates the topic, sends messages 0..n in batches spread over the
/// queues, and waits until the consume queues hold them all.
pub async fn preload(spec: &PopSpec, addr: std::net::SocketAddr) -> anyhow::Result<()> {
    let admin = sdk::connect(addr).await?;
    sdk::call(
        &admin,
        crate::admin::topic_create_request(TOPIC, spec.queues, 6),
    )
    .await
    .context("creating the bench topic")?;
    let started = Instant::now();
    let senders = (0..PRELOADERS).map(|k| {
        let size = spec.size;
        let (n, queues) = (spec.messages, spec.queues as u64);
        async move {
            let client = sdk::connect(addr).await?;
            let mut chunk = k;
            while chunk * PRELOAD_BATCH < n {
                let first = chunk * PRELOAD_BATCH;
                let msgs: Vec<OutMessage> = (first..(first + PRELOAD_BATCH).min(n))
                    .map(|seq| OutMessage {
                        body: pop_consumer::body(seq, size),
                        ..OutMessage::default()
                    })
                    .collect();
                let queue = (chunk % queues) as i32;
                sdk::send(
                    &client,
                    SendCode::V2,
                    "PopBenchProducer",
                    TOPIC,
                    queue,
                    &msgs,
                )
                .await
                .with_context(|| format!("preloading messages {first}.."))?;
                chunk += PRELOADERS;
            }
            anyhow::Ok(())
        }
    });
    for r in futures::future::join_all(senders).await {
        r?;
    }
    loop {
        let mut stored = 0;
        for q in 0..spec.queues {
            stored += sdk::queue_offset(&admin, RequestCode::GetMaxOffset, TOPIC, q).await?;
        }
        if stored >= spec.messages as i64 {
            break;
        }
        if started.elapsed() > DISPATCH_BOUND {
            bail!(
                "only {stored} of {} preloaded messages dispatched after {DISPATCH_BOUND:?}",
                spec.messages
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!(
        "   preloaded {} messages in {:.1} s",
        spec.messages,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn ratio(r: &PopRow, base: &PopRow) -> PopRatio {
    let div = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
    PopRatio {
        forms: format!("{}/{}", r.form.as_str(), base.form.as_str()),
        pops_per_s: div(r.pops_per_s, base.pops_per_s),
        acks_per_s: div(r.acks_per_s, base.acks_per_s),
        cpu_us_per_msg: r
            .cpu_us_per_msg
            .zip(base.cpu_us_per_msg)
            .map(|(a, b)| div(a, b)),
        revive_lag_p50: div(r.revive_lag.p50_us as f64, base.revive_lag.p50_us as f64),
        revive_lag_p99: div(r.revive_lag.p99_us as f64, base.revive_lag.p99_us as f64),
    }
}
