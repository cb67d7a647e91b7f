//! `rmq-bench grpc-idle`: what idle 5.x clients cost a broker. Opens
//! `--clients` gRPC clients the way an SDK client sits idle (its own
//! HTTP/2 connection, a Telemetry stream with its producer settings sent
//! and answered, one Heartbeat, nothing else), `--concurrency` at a time;
//! reads the broker's RSS before and after and its CPU while they are held
//! for `--hold`; then times `--probe-rounds` new clients step by step
//! (connect, settings, QueryRoute, Heartbeat, one SendMessage) while the
//! idle ones are still there. A client that fails is counted and its first
//! error reported, never dropped silently.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::StreamExt;
use rmq_grpc::pb;

use super::grpc_client::{self as gc, GrpcError, Session};
use super::grpc_ids::{client_id, client_nonce, MessageIds};
use super::latency::{Latencies, LatencySummary};
use super::proc_stats;

/// Descriptors the bench keeps for itself besides one per client.
const SPARE_FDS: u64 = 64;
/// Clients between progress lines.
const PROGRESS_EVERY: usize = 1000;

/// What to run.
#[derive(Debug, Clone, clap::Args, serde::Serialize)]
pub struct IdleSpec {
    /// The broker's gRPC address (grpcServerPort).
    #[arg(long)]
    pub grpc: SocketAddr,
    /// The broker's remoting address: the probe topic is created there.
    #[arg(long, default_value = "127.0.0.1:10911")]
    pub broker: SocketAddr,
    /// The broker's process id (RSS and CPU from /proc).
    #[arg(long)]
    pub pid: u32,
    /// Idle clients to open.
    #[arg(long, default_value_t = 10_000)]
    pub clients: usize,
    /// Clients being opened at once.
    #[arg(long, default_value_t = 100)]
    pub concurrency: usize,
    /// New clients timed once the idle ones are held.
    #[arg(long, default_value_t = 20)]
    pub probe_rounds: usize,
    /// How long the idle clients are held before the probes (the broker's
    /// CPU meanwhile is reported).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5s")]
    #[serde(serialize_with = "secs")]
    pub hold: Duration,
    /// Topic the clients name in their settings and the probes query and
    /// send to.
    #[arg(long, default_value = "BenchIdleTopic")]
    pub topic: String,
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// One probe's steps, µs each.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ProbeReport {
    /// Probes that went through every step.
    pub ok: usize,
    /// Probes that failed at some step.
    pub failed: usize,
    /// TCP + HTTP/2 handshake.
    pub connect: LatencySummary,
    /// Telemetry opened, settings sent, the broker's settings back.
    pub settings: LatencySummary,
    /// QueryRoute of the topic.
    pub query_route: LatencySummary,
    /// One Heartbeat.
    pub heartbeat: LatencySummary,
    /// One SendMessage of one message.
    pub send: LatencySummary,
    /// Connect to send answered.
    pub total: LatencySummary,
}

/// What one run measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct IdleReport {
    /// The run.
    pub spec: IdleSpec,
    /// Clients that connected, registered and heartbeat.
    pub opened: usize,
    /// Clients that failed.
    pub failed: usize,
    /// The first client error.
    pub first_error: Option<String>,
    /// Seconds to open them all.
    pub open_seconds: f64,
    /// The broker's RSS before, KiB.
    pub rss_before_kib: u64,
    /// The broker's RSS once all were open, KiB.
    pub rss_opened_kib: u64,
    /// The broker's RSS after the hold, KiB.
    pub rss_held_kib: u64,
    /// RSS growth (after the hold less before), MiB.
    pub rss_growth_mib: f64,
    /// That per opened client, KiB.
    pub kib_per_client: f64,
    /// The broker's CPU while opening them, seconds.
    pub open_cpu_seconds: f64,
    /// The broker's CPU while they were held idle, milliseconds per second.
    pub idle_cpu_ms_per_s: f64,
    /// The probes.
    pub probes: ProbeReport,
}

/// Runs `spec`.
pub async fn run(spec: &IdleSpec) -> anyhow::Result<IdleReport> {
    anyhow::ensure!(
        spec.clients > 0 && spec.concurrency > 0,
        "--clients and --concurrency must be at least 1"
    );
    let pid = spec.pid;
    let rss = || proc_stats::rss_kib(pid);
    let cpu = || proc_stats::cpu_seconds(pid);
    let (Some(rss_before_kib), Some(cpu0)) = (rss(), cpu()) else {
        anyhow::bail!("--pid {pid}: cannot read /proc/{pid}/status and stat (no such process?)");
    };
    if let Some(limit) = proc_stats::open_files_limit() {
        let need = spec.clients as u64 + spec.concurrency as u64 + SPARE_FDS;
        anyhow::ensure!(
            need <= limit,
            "{} clients need about {need} open files here but `ulimit -n` is {limit}",
            spec.clients
        );
    }
    crate::admin::topic_create(
        &rmq_client::Connector::new(),
        spec.broker,
        &spec.topic,
        8,
        6,
    )
    .await
    .with_context(|| format!("creating topic {} at {}", spec.topic, spec.broker))?;
    let nonce = client_nonce();
    let settings = gc::producer_settings(spec.grpc, std::slice::from_ref(&spec.topic));

    let started = Instant::now();
    let mut held: Vec<Session> = Vec::with_capacity(spec.clients);
    let (mut failed, mut first_error, mut refused) = (0usize, None, false);
    let mut opens = futures::stream::iter(0..spec.clients)
        .map(|i| {
            let id = client_id(nonce, "idle", i);
            let settings = settings.clone();
            async move { gc::open_session(spec.grpc, &id, settings, None).await }
        })
        .buffer_unordered(spec.concurrency);
    while let Some(r) = opens.next().await {
        match r {
            Ok(s) => held.push(s),
            Err(e) => {
                failed += 1;
                refused |= e.is_connection_failure();
                first_error.get_or_insert_with(|| e.to_string());
            }
        }
        let done = held.len() + failed;
        if done.is_multiple_of(PROGRESS_EVERY) {
            eprintln!(
                "[{:>6.1}s] {done} clients: {} open, {failed} failed, broker RSS {} MiB",
                started.elapsed().as_secs_f64(),
                held.len(),
                rss().unwrap_or(0) / 1024
            );
        }
    }
    drop(opens);
    let open_seconds = started.elapsed().as_secs_f64();
    let rss_opened_kib = rss().unwrap_or(0);
    let cpu_opened = cpu().unwrap_or(cpu0);
    if refused {
        let cap = spec.clients + spec.probe_rounds + 100;
        eprintln!(
            "connections were closed or refused: if the broker is over its caps \
             (maxConnections, default 10000; maxConnectionsPerAddress, default 1000), \
             start it with --set maxConnections={cap} --set maxConnectionsPerAddress={cap}"
        );
    }

    tokio::time::sleep(spec.hold).await;
    let rss_held_kib = rss().unwrap_or(0);
    let cpu_held = cpu().unwrap_or(cpu_opened);

    let probes = probe_all(spec, nonce).await;
    let opened = held.len();
    // Goodbyes as closing SDKs say them, so the broker forgets the clients
    // now rather than when they have been silent for its idle time.
    futures::stream::iter(held)
        .for_each_concurrent(spec.concurrency, |mut s| async move {
            gc::terminate(&mut s.client, None).await;
        })
        .await;
    let growth_kib = rss_held_kib.saturating_sub(rss_before_kib) as f64;
    Ok(IdleReport {
        spec: spec.clone(),
        opened,
        failed,
        first_error,
        open_seconds,
        rss_before_kib,
        rss_opened_kib,
        rss_held_kib,
        rss_growth_mib: growth_kib / 1024.0,
        kib_per_client: growth_kib / opened.max(1) as f64,
        open_cpu_seconds: cpu_opened - cpu0,
        idle_cpu_ms_per_s: (cpu_held - cpu_opened) * 1000.0 / spec.hold.as_secs_f64().max(1e-3),
        probes,
    })
}

/// Per-step latencies of the probes.
#[derive(Default)]
struct Steps {
    connect: Latencies,
    settings: Latencies,
    query_route: Latencies,
    heartbeat: Latencies,
    send: Latencies,
    total: Latencies,
}

async fn probe_all(spec: &IdleSpec, nonce: u64) -> ProbeReport {
    let ids = MessageIds::for_this_process();
    let mut steps = Steps::default();
    let (mut ok, mut failed) = (0, 0);
    for round in 0..spec.probe_rounds {
        match probe(spec, nonce, round, &ids, &mut steps).await {
            Ok(()) => ok += 1,
            Err(e) => {
                failed += 1;
                eprintln!("probe {round} failed: {e}");
            }
        }
    }
    ProbeReport {
        ok,
        failed,
        connect: steps.connect.summary(),
        settings: steps.settings.summary(),
        query_route: steps.query_route.summary(),
        heartbeat: steps.heartbeat.summary(),
        send: steps.send.summary(),
        total: steps.total.summary(),
    }
}

/// One new client, each step timed.
async fn probe(
    spec: &IdleSpec,
    nonce: u64,
    round: usize,
    ids: &MessageIds,
    steps: &mut Steps,
) -> Result<(), GrpcError> {
    let us = |t: Instant| t.elapsed().as_micros() as u64;
    let id = client_id(nonce, "probe", round);
    let t0 = Instant::now();
    let mut client = gc::connect(spec.grpc, &id).await?;
    steps.connect.record(us(t0));

    let t = Instant::now();
    let settings = gc::producer_settings(spec.grpc, std::slice::from_ref(&spec.topic));
    let access_point = settings.access_point.clone();
    let (_telemetry, _) = gc::open_telemetry(&mut client, settings).await?;
    steps.settings.record(us(t));

    let t = Instant::now();
    let route = gc::unary(
        "query_route",
        client.query_route(pb::QueryRouteRequest {
            topic: Some(gc::resource(&spec.topic)),
            endpoints: access_point,
        }),
    )
    .await?;
    gc::check("query_route", route.status.as_ref())?;
    steps.query_route.record(us(t));

    let t = Instant::now();
    gc::heartbeat(&mut client, None, pb::ClientType::Producer).await?;
    steps.heartbeat.record(us(t));

    let t = Instant::now();
    let msg = pb::Message {
        topic: Some(gc::resource(&spec.topic)),
        user_properties: Default::default(),
        system_properties: Some(pb::SystemProperties {
            message_id: ids.next_id(),
            body_encoding: pb::Encoding::Identity as i32,
            message_type: pb::MessageType::Normal as i32,
            ..Default::default()
        }),
        body: b"probe".to_vec().into(),
    };
    let sent = gc::unary(
        "send_message",
        client.send_message(pb::SendMessageRequest {
            messages: vec![msg],
        }),
    )
    .await?;
    match sent.entries.first() {
        Some(e) => gc::check("send_message", e.status.as_ref())?,
        None => gc::check("send_message", sent.status.as_ref())?,
    }
    steps.send.record(us(t));
    steps.total.record(us(t0));
    gc::terminate(&mut client, None).await;
    Ok(())
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Prints a report.
pub fn print(r: &IdleReport) {
    println!(
        "idle gRPC clients: {} opened, {} failed in {:.1} s ({:.0}/s, {} at once)",
        r.opened,
        r.failed,
        r.open_seconds,
        r.opened as f64 / r.open_seconds.max(1e-9),
        r.spec.concurrency
    );
    println!(
        "broker RSS {:.1} MiB before, {:.1} MiB opened, {:.1} MiB after {:.0} s held: +{:.1} MiB = {:.1} KiB per client",
        r.rss_before_kib as f64 / 1024.0,
        r.rss_opened_kib as f64 / 1024.0,
        r.rss_held_kib as f64 / 1024.0,
        r.spec.hold.as_secs_f64(),
        r.rss_growth_mib,
        r.kib_per_client
    );
    println!(
        "broker CPU {:.2} s opening them ({:.0} µs per client); {:.1} ms/s while they sat idle",
        r.open_cpu_seconds,
        r.open_cpu_seconds * 1e6 / r.opened.max(1) as f64,
        r.idle_cpu_ms_per_s
    );
    let p = &r.probes;
    println!(
        "new client with {} idle ones: {} probes ok, {} failed (p50 / max ms)",
        r.opened, p.ok, p.failed
    );
    for (name, s) in [
        ("connect", &p.connect),
        ("settings", &p.settings),
        ("query route", &p.query_route),
        ("heartbeat", &p.heartbeat),
        ("send", &p.send),
        ("total", &p.total),
    ] {
        println!("  {name:<12} {:>8.3} / {:>8.3}", ms(s.p50_us), ms(s.max_us));
    }
    if let Some(e) = &r.first_error {
        println!("first client error: {e}");
    }
}
