//! `rmq-bench timer`: timer messages end to end through a broker, one timer
//! store (`timerStoreType`) after the other, each on a fresh broker child
//! process. Per store: `--timers` messages carrying `TIMER_DELIVER_MS` are
//! sent (acknowledged sends per second is the insert rate), due over
//! `--spread` starting `--due-after` after the first send; then the broker
//! is killed (SIGKILL) and started again on its store (the restart time is
//! from the new process's launch to its "listening" line); then consumers
//! pull the real topic until every message has arrived.
//!
//! Reported per store: insert rate, the timer store's disk after the
//! inserts, the broker's RSS, the restart time, and the due-delivery lag of
//! every message: its store time in the real topic (when the broker put it
//! there) minus its due time, and its receipt by the consumer minus its due
//! time. A message delivered more than `timerPrecisionMs` early is counted
//! as early; one never delivered as missing; one delivered twice as a
//! duplicate (RocketMQ allows that after a crash: at-least-once).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use rmq_client::{self as sdk, OutMessage, PullRequest, SendCode};
use rmq_common::constants::property;
use rmq_common::time::now_ms;
use rmq_common::TimerStoreType;

use super::broker_proc::{self, BrokerProcess};
use super::latency::{Latencies, LatencySummary};

/// The real topic the timers are for.
const TOPIC: &str = "TimerBench";
/// The producer group the sends name.
const PRODUCER_GROUP: &str = "TimerBenchProducer";
/// The consumer group the pulls name.
const CONSUMER_GROUP: &str = "TimerBenchConsumer";
/// The broker's timer precision (its default), ms: deliveries earlier than
/// this before their due time count as early.
const PRECISION_MS: i64 = 1_000;
/// Messages per pull.
const PULL_BATCH: i32 = 32;
/// Long polling of a pull that finds nothing.
const PULL_SUSPEND: Duration = Duration::from_millis(500);
/// How often the consumers' progress is looked at.
const PROGRESS_POLL: Duration = Duration::from_millis(100);

fn parse_store(s: &str) -> Result<TimerStoreType, String> {
    match s {
        "wheel" => Ok(TimerStoreType::Wheel),
        "rocksdb" => Ok(TimerStoreType::Rocksdb),
        other => Err(format!("unknown timer store {other:?} (wheel or rocksdb)")),
    }
}

fn store_names<S: serde::Serializer>(v: &[TimerStoreType], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(TimerStoreType::as_str))
}

/// What to run.
#[derive(Debug, Clone, clap::Args, serde::Serialize)]
pub struct TimerSpec {
    /// Timer messages sent (all pending at once before the first is due).
    #[arg(long, default_value_t = 1_000_000)]
    pub timers: u64,
    /// Queues of the real topic.
    #[arg(long, default_value_t = 8)]
    pub queues: i32,
    /// Body size, bytes (at least 16: sequence number and due time).
    #[arg(long, default_value_t = 64)]
    pub size: usize,
    /// Sending connections.
    #[arg(long, default_value_t = 4)]
    pub senders: usize,
    /// Sends outstanding per connection.
    #[arg(long, default_value_t = 32)]
    pub inflight: usize,
    /// The first message is due this long after the first send.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "45s")]
    #[serde(serialize_with = "super::report::duration_ms")]
    pub due_after: Duration,
    /// Due times spread evenly over this long.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30s")]
    #[serde(serialize_with = "super::report::duration_ms")]
    pub spread: Duration,
    /// Longest wait past the last due time for everything to arrive.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "2m")]
    #[serde(serialize_with = "super::report::duration_ms")]
    pub grace: Duration,
    /// Timer stores, in order.
    #[arg(long, value_delimiter = ',', value_parser = parse_store, default_value = "wheel,rocksdb")]
    #[serde(serialize_with = "store_names")]
    pub stores: Vec<TimerStoreType>,
    /// The broker binary (default: `rmq-broker` next to this executable).
    #[arg(long)]
    pub broker_bin: Option<PathBuf>,
    /// Parent folder of the temporary stores.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// One store's figures.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TimerRow {
    /// `wheel` or `rocksdb`.
    pub store: &'static str,
    /// Acknowledged timer sends per second.
    pub inserts_per_s: f64,
    /// Send round trips, µs.
    pub send_latency: LatencySummary,
    /// Bytes of the timer store's files after the inserts.
    pub disk_bytes: u64,
    /// Broker RSS right after it started, KiB.
    pub rss_start_kib: u64,
    /// Broker RSS after the inserts, KiB.
    pub rss_inserted_kib: u64,
    /// SIGKILL after the inserts, then launch to "listening", ms.
    pub restart_ms: f64,
    /// Store time in the real topic minus due time, µs (early deliveries
    /// count as 0 here; see `earliest_ms`).
    pub deliver_lag: LatencySummary,
    /// Receipt by the consumer minus due time, µs.
    pub receive_lag: LatencySummary,
    /// Most negative store time minus due time, ms.
    pub earliest_ms: i64,
    /// Distinct messages delivered.
    pub delivered: u64,
    /// Deliveries of a message already delivered.
    pub duplicates: u64,
    /// Messages never delivered within the grace time.
    pub missing: u64,
    /// Deliveries more than the precision before their due time.
    pub early: u64,
}

/// The whole run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TimerReport {
    /// What ran.
    pub spec: TimerSpec,
    /// One row per store, in order.
    pub rows: Vec<TimerRow>,
}

/// Runs every store in turn and prints the table.
pub async fn run(spec: &TimerSpec) -> anyhow::Result<TimerReport> {
    if spec.size < 16 || spec.timers == 0 || spec.queues < 1 {
        bail!("--size must be at least 16, --timers and --queues at least 1");
    }
    if spec.senders == 0 || spec.inflight == 0 {
        bail!("--senders and --inflight must be at least 1");
    }
    let bin = match &spec.broker_bin {
        Some(b) => b.clone(),
        None => broker_proc::default_binary()?,
    };
    let mut rows = Vec::new();
    for &store in &spec.stores {
        eprintln!("== {store}: {} timers", spec.timers);
        rows.push(one(spec, &bin, store).await?);
    }
    let report = TimerReport {
        spec: spec.clone(),
        rows,
    };
    print(&report);
    Ok(report)
}

async fn one(spec: &TimerSpec, bin: &Path, store: TimerStoreType) -> anyhow::Result<TimerRow> {
    let dir = match &spec.dir {
        Some(parent) => tempfile::tempdir_in(parent)?,
        None => tempfile::tempdir()?,
    };
    let root = dir.path().join("store");
    let sets = [
        "listenPort=0".to_owned(),
        "namesrvListenPort=-1".to_owned(),
        "metricsPort=-1".to_owned(),
        "grpcServerPort=-1".to_owned(),
        "brokerName=bench-timer".to_owned(),
        format!("storePathRootDir={}", root.display()),
        "mappedFileSizeCommitLog=268435456".to_owned(),
        format!("timerStoreType={store}"),
    ];
    let broker = BrokerProcess::start(bin, dir.path(), &sets).await?;
    let rss_start_kib = rss_kib(broker.pid());
    let admin = sdk::connect(broker.addr()).await?;
    sdk::call(
        &admin,
        crate::admin::topic_create_request(TOPIC, spec.queues, 6),
    )
    .await
    .context("creating the bench topic")?;
    let due_base = now_ms() + spec.due_after.as_millis() as i64;
    let (inserts_per_s, send_latency) = insert(spec, broker.addr(), due_base).await?;
    eprintln!("   {inserts_per_s:.0} timer sends/s");
    let rss_inserted_kib = rss_kib(broker.pid());
    let disk_bytes = timer_disk(&root);
    broker.kill();
    let t0 = Instant::now();
    let broker = BrokerProcess::start(bin, dir.path(), &sets).await?;
    let restart_ms = t0.elapsed().as_secs_f64() * 1e3;
    eprintln!("   restarted after kill -9 in {restart_ms:.0} ms");
    let deadline = due_base + (spec.spread + spec.grace).as_millis() as i64;
    let seen = consume(spec, broker.addr(), deadline).await?;
    broker.stop().await?;
    let s = seen
        .lock()
        .map_err(|_| anyhow::anyhow!("a consumer panicked"))?;
    let delivered = s
        .seen
        .iter()
        .map(|w| u64::from(w.count_ones()))
        .sum::<u64>();
    Ok(TimerRow {
        store: store.as_str(),
        inserts_per_s,
        send_latency,
        disk_bytes,
        rss_start_kib,
        rss_inserted_kib,
        restart_ms,
        deliver_lag: s.deliver_lag.summary(),
        receive_lag: s.receive_lag.summary(),
        earliest_ms: s.earliest_ms,
        delivered,
        duplicates: s.duplicates,
        missing: spec.timers - delivered,
        early: s.early,
    })
}

/// Body of message `seq` due at `due_ms`: both big-endian, then padding.
fn body(seq: u64, due_ms: i64, size: usize) -> Vec<u8> {
    let mut b = Vec::with_capacity(size);
    b.extend_from_slice(&seq.to_be_bytes());
    b.extend_from_slice(&due_ms.to_be_bytes());
    b.resize(size, b'x');
    b
}

/// The due time of message `seq`.
fn due_of(spec: &TimerSpec, due_base: i64, seq: u64) -> i64 {
    let spread = spec.spread.as_millis() as u64;
    due_base + (u128::from(seq) * u128::from(spread) / u128::from(spec.timers)) as i64
}

/// Sends every timer message; the acknowledged sends per second and the
/// send round trips.
async fn insert(
    spec: &TimerSpec,
    addr: std::net::SocketAddr,
    due_base: i64,
) -> anyhow::Result<(f64, LatencySummary)> {
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let senders = (0..spec.senders).map(|_| {
        let next = Arc::clone(&next);
        async move {
            let client = sdk::connect(addr).await?;
            let lanes = (0..spec.inflight).map(|_| {
                let (client, next) = (&client, &next);
                async move {
                    let mut lat = Latencies::new();
                    loop {
                        let seq = next.fetch_add(1, Ordering::Relaxed);
                        if seq >= spec.timers {
                            return anyhow::Ok(lat);
                        }
                        let due = due_of(spec, due_base, seq);
                        let msg = OutMessage {
                            body: body(seq, due, spec.size),
                            properties: vec![(property::TIMER_DELIVER_MS.into(), due.to_string())],
                            ..OutMessage::default()
                        };
                        let queue = (seq % spec.queues as u64) as i32;
                        let t = Instant::now();
                        sdk::send(client, SendCode::V2, PRODUCER_GROUP, TOPIC, queue, &[msg])
                            .await
                            .with_context(|| format!("sending timer {seq}"))?;
                        lat.record(t.elapsed().as_micros() as u64);
                    }
                }
            });
            let mut all = Latencies::new();
            for l in futures::future::try_join_all(lanes).await? {
                all.merge(&l);
            }
            anyhow::Ok(all)
        }
    });
    let mut lat = Latencies::new();
    for l in futures::future::try_join_all(senders).await? {
        lat.merge(&l);
    }
    let secs = started.elapsed().as_secs_f64();
    Ok((spec.timers as f64 / secs.max(1e-9), lat.summary()))
}

/// What the consumers saw.
#[derive(Debug)]
struct Seen {
    /// One bit per sequence number.
    seen: Vec<u64>,
    deliver_lag: Latencies,
    receive_lag: Latencies,
    earliest_ms: i64,
    duplicates: u64,
    early: u64,
    distinct: u64,
}

impl Seen {
    fn note(&mut self, seq: u64, due_ms: i64, stored_ms: i64, received_ms: i64) {
        let (word, bit) = ((seq / 64) as usize, 1u64 << (seq % 64));
        let Some(w) = self.seen.get_mut(word) else {
            return;
        };
        if *w & bit != 0 {
            self.duplicates += 1;
            return;
        }
        *w |= bit;
        self.distinct += 1;
        let late = stored_ms - due_ms;
        self.earliest_ms = self.earliest_ms.min(late);
        if late < -PRECISION_MS {
            self.early += 1;
        }
        self.deliver_lag.record(late.max(0) as u64 * 1_000);
        self.receive_lag
            .record((received_ms - due_ms).max(0) as u64 * 1_000);
    }
}

/// Pulls every queue of the real topic from offset 0 until every message
/// arrived or `deadline_ms` (wall clock) passed.
async fn consume(
    spec: &TimerSpec,
    addr: std::net::SocketAddr,
    deadline_ms: i64,
) -> anyhow::Result<Arc<Mutex<Seen>>> {
    let seen = Arc::new(Mutex::new(Seen {
        seen: vec![0; spec.timers.div_ceil(64) as usize],
        deliver_lag: Latencies::new(),
        receive_lag: Latencies::new(),
        earliest_ms: i64::MAX,
        duplicates: 0,
        early: 0,
        distinct: 0,
    }));
    let done = Arc::new(tokio::sync::Notify::new());
    let tasks: Vec<_> = (0..spec.queues)
        .map(|queue_id| {
            let (seen, done) = (Arc::clone(&seen), Arc::clone(&done));
            let timers = spec.timers;
            tokio::spawn(async move {
                let client = sdk::connect(addr).await?;
                let mut offset = 0;
                while now_ms() < deadline_ms {
                    let p = PullRequest {
                        group: CONSUMER_GROUP.into(),
                        topic: TOPIC.into(),
                        queue_id,
                        offset,
                        max_msgs: PULL_BATCH,
                        subscription: Some("*".into()),
                        suspend: Some(PULL_SUSPEND),
                        commit_offset: None,
                    };
                    let r = sdk::pull(&client, &p).await?;
                    let received = now_ms();
                    offset = r.next_begin_offset.max(offset);
                    let mut s = seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
                    for (m, stored) in r.messages.iter().zip(&r.store_timestamps) {
                        if m.body.len() < 16 {
                            continue;
                        }
                        let seq = u64::from_be_bytes(m.body[0..8].try_into()?);
                        let due = i64::from_be_bytes(m.body[8..16].try_into()?);
                        s.note(seq, due, *stored, received);
                    }
                    if s.distinct >= timers {
                        done.notify_waiters();
                        return anyhow::Ok(());
                    }
                }
                anyhow::Ok(())
            })
        })
        .collect();
    let mut last = 0;
    loop {
        let distinct = seen
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?
            .distinct;
        if distinct >= spec.timers || now_ms() >= deadline_ms {
            break;
        }
        if distinct / 100_000 != last / 100_000 {
            eprintln!("   {distinct} delivered");
        }
        last = distinct;
        tokio::select! {
            () = done.notified() => {}
            () = tokio::time::sleep(PROGRESS_POLL) => {}
        }
    }
    for t in tasks {
        t.abort();
        match t.await {
            Ok(r) => r?,
            Err(e) if e.is_cancelled() => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(seen)
}

/// Bytes of the timer store's files under the store root.
fn timer_disk(root: &Path) -> u64 {
    ["timerwheel", "timerlog", "timer_rocksdb"]
        .iter()
        .map(|n| dir_bytes(&root.join(n)))
        .sum()
}

fn dir_bytes(p: &Path) -> u64 {
    match std::fs::metadata(p) {
        Ok(m) if m.is_file() => m.len(),
        Ok(m) if m.is_dir() => std::fs::read_dir(p)
            .map(|rd| rd.flatten().map(|e| dir_bytes(&e.path())).sum())
            .unwrap_or(0),
        _ => 0,
    }
}

/// VmRSS of `pid`, KiB (0 when unreadable).
fn rss_kib(pid: u32) -> u64 {
    super::proc_stats::rss_kib(pid).unwrap_or(0)
}

fn print(r: &TimerReport) {
    println!(
        "timers {} over {} queues, {} B bodies, due {} s after the first send over {} s",
        r.spec.timers,
        r.spec.queues,
        r.spec.size,
        r.spec.due_after.as_secs(),
        r.spec.spread.as_secs()
    );
    println!(
        "{:<8} {:>10} {:>9} {:>11} {:>11} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6} {:>6} {:>6}",
        "store",
        "insert/s",
        "disk MiB",
        "RSS0 MiB",
        "RSS1 MiB",
        "restart",
        "lag p50",
        "lag p99",
        "lag max",
        "recv p99",
        "earliest",
        "miss",
        "dup",
        "early"
    );
    let ms = |us: u64| format!("{} ms", us / 1_000);
    for row in &r.rows {
        println!(
            "{:<8} {:>10.0} {:>9.1} {:>11.1} {:>11.1} {:>7.0} ms {:>9} {:>9} {:>9} {:>9} {:>6} ms {:>6} {:>6} {:>6}",
            row.store,
            row.inserts_per_s,
            row.disk_bytes as f64 / 1_048_576.0,
            row.rss_start_kib as f64 / 1024.0,
            row.rss_inserted_kib as f64 / 1024.0,
            row.restart_ms,
            ms(row.deliver_lag.p50_us),
            ms(row.deliver_lag.p99_us),
            ms(row.deliver_lag.max_us),
            ms(row.receive_lag.p99_us),
            row.earliest_ms,
            row.missing,
            row.duplicates,
            row.early
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(timers: u64) -> TimerSpec {
        TimerSpec {
            timers,
            queues: 8,
            size: 16,
            senders: 1,
            inflight: 1,
            due_after: Duration::from_secs(45),
            spread: Duration::from_secs(30),
            grace: Duration::from_secs(60),
            stores: vec![TimerStoreType::Wheel],
            broker_bin: None,
            dir: None,
        }
    }

    #[test]
    fn due_times_spread_evenly_from_the_base() {
        let s = spec(1_000);
        assert_eq!(due_of(&s, 10_000, 0), 10_000);
        assert_eq!(due_of(&s, 10_000, 500), 25_000);
        assert_eq!(due_of(&s, 10_000, 999), 39_970);
    }

    #[test]
    fn a_second_delivery_is_a_duplicate_and_early_ones_are_counted() {
        let mut s = Seen {
            seen: vec![0; 1],
            deliver_lag: Latencies::new(),
            receive_lag: Latencies::new(),
            earliest_ms: i64::MAX,
            duplicates: 0,
            early: 0,
            distinct: 0,
        };
        s.note(3, 5_000, 5_200, 5_300);
        s.note(3, 5_000, 5_900, 6_000);
        s.note(4, 5_000, 3_000, 3_100);
        s.note(99, 5_000, 5_000, 5_000);
        assert_eq!(
            (s.distinct, s.duplicates, s.early, s.earliest_ms),
            (2, 1, 1, -2_000)
        );
        let b = body(7, 123, 20);
        assert_eq!(
            (b.len(), &b[0..8], &b[8..16]),
            (20, &7u64.to_be_bytes()[..], &123i64.to_be_bytes()[..])
        );
    }
}
