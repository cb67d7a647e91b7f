//! `rmq-bench lmq`: light message queues under load. N messages are sent
//! to a parent topic, each naming K of L LMQs in `INNER_MULTI_DISPATCH`
//! (see [`super::lmq_plan`] for which), over P connections with one
//! synchronous send in flight each. Measured: send rate and latency; the
//! dispatch rate (N*K units over the time from the first send until every
//! unit is dispatched and every sampled LMQ reports its expected max
//! offset); the broker's CPU per unit, RSS, peak RSS and open files; the
//! consume queues' and CommitLog's disk. Then `--sample` LMQs are pulled
//! back from offset 0 and compared exactly with what was sent (a mismatch
//! names its LMQ and fails the command after the report).
//!
//! Against a running broker (`--broker ADDR`, with `--pid` and `--store`
//! for its process and disk figures), or a fresh `rmq-broker` child
//! (`--spawn file|rocksdb`) on a new store under `--dir`, which also allows
//! `--restart`: SIGTERM, start again on the same store, and measure the
//! time until the port answers and until a sampled LMQ's pull is served,
//! and the idle RSS then, per LMQ against the idle RSS of the empty store
//! started again (the broker is stopped and started once before the load
//! for that baseline: a restart costs memory of its own, LMQs or not: it
//! reads the 38.7 MB `timerwheel` file into the heap, which a first start
//! only creates).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use rmq_client as sdk;
use rmq_common::CqBackend;
use rmq_store::disk_use;

use super::broker_proc::{self, BrokerProcess, Stopped};
use super::lmq_check::{self, SampleCheck};
use super::lmq_load::{self, DispatchProbe, PARENT_QUEUES};
use super::lmq_plan::{self, Plan};
use super::lmq_report::{Disk, LmqReport, LmqRun, Restart};
use super::proc_stats;

/// Longest wait, once a restarted broker listens, for it to serve the
/// first LMQ pull.
const FIRST_PULL_BOUND: Duration = Duration::from_secs(120);
/// Pause between attempts of that first pull.
const FIRST_PULL_RETRY: Duration = Duration::from_millis(5);

fn parse_backend(s: &str) -> Result<CqBackend, String> {
    super::store::parse_backend(s)
}

/// What to run.
#[derive(Debug, Clone, clap::Args)]
pub struct LmqSpec {
    /// A running broker's remoting address.
    #[arg(long, required_unless_present = "spawn", conflicts_with = "spawn")]
    pub broker: Option<SocketAddr>,
    /// Start a fresh `rmq-broker` child with this consume-queue backend
    /// (file or rocksdb) on a new store under --dir instead.
    #[arg(long, value_parser = parse_backend)]
    pub spawn: Option<CqBackend>,
    /// Messages sent (N).
    #[arg(long, default_value_t = 100_000)]
    pub messages: u64,
    /// LMQs each message is dispatched into (K).
    #[arg(long, default_value_t = 10)]
    pub fan_out: u64,
    /// Distinct LMQs (L); N*K must reach it.
    #[arg(long, default_value_t = 1_000_000)]
    pub lmqs: u64,
    /// Sending connections, one synchronous send in flight each.
    #[arg(long, default_value_t = 16)]
    pub producers: usize,
    /// Body size, bytes (`m<i>` padded with '.').
    #[arg(long, default_value_t = 256)]
    pub size: usize,
    /// The parent topic; the LMQs are `%LMQ%<prefix>-<index>`.
    #[arg(long, default_value = "LmqBench")]
    pub topic_prefix: String,
    /// LMQs pulled back and checked exactly (spread over all L).
    #[arg(long, default_value_t = 1000)]
    pub sample: u64,
    /// The broker's process id (CPU, RSS, open files); known with --spawn.
    #[arg(long, conflicts_with = "spawn")]
    pub pid: Option<u32>,
    /// The broker's store root (disk figures); known with --spawn.
    #[arg(long, conflicts_with = "spawn")]
    pub store: Option<PathBuf>,
    /// The broker's Prometheus endpoint: dispatch is then seen by
    /// `rmq_cq_lmq_entries_total` (with --spawn, its port becomes the
    /// child's `metricsPort`).
    #[arg(long)]
    pub metrics: Option<SocketAddr>,
    /// With --spawn: stop the broker (SIGTERM) after the check, start it
    /// again on the same store and measure that.
    #[arg(long)]
    pub restart: bool,
    /// With --spawn: the child's `listenPort` (0: any; a fixed port keeps
    /// it across the restart).
    #[arg(long, default_value_t = 0)]
    pub listen_port: u16,
    /// With --spawn: another `KEY=VALUE` for the child (repeatable), e.g.
    /// `maxLmqConsumeQueueNum=2000000`.
    #[arg(long = "broker-set", value_name = "KEY=VALUE")]
    pub broker_sets: Vec<String>,
    /// With --spawn: the broker binary (default: next to this one).
    #[arg(long)]
    pub broker_bin: Option<PathBuf>,
    /// With --spawn: parent folder of the temporary store.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Longest wait for dispatch after the sends.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10m")]
    pub dispatch_timeout: Duration,
    /// Longest a start (after the stop, on the full store) may take until
    /// the broker listens.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10m")]
    pub start_timeout: Duration,
    /// Longest an orderly stop (SIGTERM) may take before the broker is
    /// killed (the report says which it was).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5m")]
    pub stop_timeout: Duration,
    /// Pause before an idle RSS is read (fresh broker, after restart).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "2s")]
    pub idle_settle: Duration,
}

/// The broker under load: one the bench started, or one it was pointed at.
enum Target {
    Spawned {
        child: BrokerProcess,
        bin: PathBuf,
        sets: Vec<String>,
        root: PathBuf,
        /// The child's folder (its output and the store); removed on drop.
        dir: tempfile::TempDir,
        /// Idle memory right after the first start.
        fresh: Idle,
        /// Idle memory of the empty store started again (with --restart;
        /// else `fresh`).
        empty: Idle,
    },
    Running {
        addr: SocketAddr,
        pid: Option<u32>,
        store: Option<PathBuf>,
    },
}

impl Target {
    fn addr(&self) -> SocketAddr {
        match self {
            Self::Spawned { child, .. } => child.addr(),
            Self::Running { addr, .. } => *addr,
        }
    }

    fn pid(&self) -> Option<u32> {
        match self {
            Self::Spawned { child, .. } => Some(child.pid()),
            Self::Running { pid, .. } => *pid,
        }
    }

    fn store(&self) -> Option<&Path> {
        match self {
            Self::Spawned { root, .. } => Some(root),
            Self::Running { store, .. } => store.as_deref(),
        }
    }
}

/// The child's settings: the bench's own, then `--broker-set`.
fn child_sets(spec: &LmqSpec, backend: CqBackend, root: &Path) -> Vec<String> {
    let metrics_port = spec.metrics.map_or(-1, |m| i32::from(m.port()));
    let mut sets = vec![
        format!("listenPort={}", spec.listen_port),
        "namesrvListenPort=-1".to_owned(),
        format!("metricsPort={metrics_port}"),
        "grpcServerPort=-1".to_owned(),
        "brokerName=bench-lmq".to_owned(),
        format!("storePathRootDir={}", root.display()),
        format!("consumeQueueStore={backend}"),
        "enableLmq=true".to_owned(),
        "enableMultiDispatch=true".to_owned(),
    ];
    sets.extend(spec.broker_sets.iter().cloned());
    sets
}

async fn start_target(spec: &LmqSpec) -> anyhow::Result<Target> {
    let Some(backend) = spec.spawn else {
        let addr = spec
            .broker
            .context("give --broker ADDR or --spawn BACKEND")?;
        return Ok(Target::Running {
            addr,
            pid: spec.pid,
            store: spec.store.clone(),
        });
    };
    let bin = match &spec.broker_bin {
        Some(b) => b.clone(),
        None => broker_proc::default_binary()?,
    };
    let dir = match &spec.dir {
        Some(parent) => tempfile::tempdir_in(parent)?,
        None => tempfile::tempdir()?,
    };
    let root = dir.path().join("store");
    let sets = child_sets(spec, backend, &root);
    let mut child = BrokerProcess::start(&bin, dir.path(), &sets).await?;
    tokio::time::sleep(spec.idle_settle).await;
    let fresh = Idle::of(child.pid());
    let mut empty = fresh;
    if spec.restart {
        // A restart costs memory of its own whatever the store holds (the
        // timer wheel file is read into the heap), so the baseline of the
        // per-LMQ figure is the empty store restarted.
        child.stop().await?;
        child = BrokerProcess::start(&bin, dir.path(), &sets).await?;
        tokio::time::sleep(spec.idle_settle).await;
        empty = Idle::of(child.pid());
    }
    Ok(Target::Spawned {
        child,
        bin,
        sets,
        root,
        dir,
        fresh,
        empty,
    })
}

/// An idle broker's memory, KiB (0 when unreadable).
#[derive(Debug, Clone, Copy)]
struct Idle {
    rss_kib: u64,
    anon_kib: u64,
}

impl Idle {
    fn of(pid: u32) -> Self {
        Self {
            rss_kib: proc_stats::rss_kib(pid).unwrap_or(0),
            anon_kib: proc_stats::anon_kib(pid).unwrap_or(0),
        }
    }
}

/// Runs the whole thing and prints the report; an inexact sample is in the
/// report (the caller fails after writing it).
pub async fn run(spec: &LmqSpec) -> anyhow::Result<LmqReport> {
    let plan = Plan::new(spec.messages, spec.fan_out, spec.lmqs)?;
    lmq_plan::check_prefix(&spec.topic_prefix, spec.lmqs)?;
    if spec.producers == 0 {
        bail!("--producers must be at least 1");
    }
    let child_only = spec.restart
        || spec.listen_port != 0
        || !spec.broker_sets.is_empty()
        || spec.broker_bin.is_some()
        || spec.dir.is_some();
    if spec.spawn.is_none() && child_only {
        bail!("--restart, --listen-port, --broker-set, --broker-bin and --dir are for a broker the bench starts: add --spawn file|rocksdb (and drop --broker)");
    }
    let prefix = spec.topic_prefix.as_str();
    let sample = plan.sample(spec.sample);
    let target = start_target(spec).await?;
    let addr = target.addr();
    let admin = sdk::connect(addr).await?;
    sdk::call(
        &admin,
        crate::admin::topic_create_request(prefix, PARENT_QUEUES, 6),
    )
    .await
    .with_context(|| format!("creating the parent topic {prefix}"))?;
    let probe = DispatchProbe::new(spec.metrics).await?;
    let pid = target.pid();
    let cpu0 = pid.and_then(proc_stats::cpu_seconds);
    eprintln!(
        "sending {} messages x {} LMQs over {} LMQs to {addr} ...",
        plan.messages, plan.fan_out, plan.lmqs
    );
    let started = Instant::now();
    let sent = lmq_load::send_all(addr, plan, prefix, spec.producers, spec.size).await?;
    eprintln!(
        "  sent in {:.2} s; waiting for dispatch ({})",
        sent.secs,
        probe.name()
    );
    let done = lmq_load::wait_dispatched(addr, probe, plan, prefix, &sample, spec.dispatch_timeout)
        .await?;
    let dispatch_secs = done.duration_since(started).as_secs_f64();
    let cpu1 = pid.and_then(proc_stats::cpu_seconds);
    let cpu_us_per_unit = cpu0
        .zip(cpu1)
        .map(|(a, b)| (b - a) * 1e6 / plan.units() as f64);
    let rss_kib = pid.and_then(proc_stats::rss_kib);
    let hwm_kib = pid.and_then(proc_stats::hwm_kib);
    let anon_kib = pid.and_then(proc_stats::anon_kib);
    let open_files = pid.and_then(proc_stats::open_fds);
    let disk = target.store().map(store_disk);
    // A fresh connection: the broker closes one idle for 120 s
    // (serverChannelMaxIdleTimeSeconds), as a long dispatch wait leaves it.
    admin.close().await;
    let admin = sdk::connect(addr).await?;
    let commitlog_data_bytes = commitlog_data(&admin).await?;
    eprintln!(
        "  dispatched in {dispatch_secs:.2} s; pulling {} sampled LMQs",
        sample.len()
    );
    let checked = lmq_check::check(addr, plan, prefix, spec.size, &sample, &sent.phys).await?;
    admin.close().await;
    let (disk_at_rest, restart) = match target {
        Target::Spawned {
            child,
            bin,
            sets,
            root,
            dir,
            fresh,
            empty,
        } => {
            let t = Instant::now();
            let stopped = child.stop_within(spec.stop_timeout).await?;
            let stop_ms = t.elapsed().as_secs_f64() * 1e3;
            eprintln!("  stopped in {stop_ms:.0} ms ({stopped:?})");
            let at_rest = store_disk(&root);
            let restart = if spec.restart {
                let again = Again {
                    bin: &bin,
                    dir: dir.path(),
                    sets: &sets,
                    stop_ms,
                    stopped,
                    fresh,
                    empty,
                };
                Some(start_again(spec, &again, &sample).await?)
            } else {
                None
            };
            (Some(at_rest), restart)
        }
        Target::Running { .. } => (None, None),
    };
    let report = LmqReport {
        run: LmqRun {
            backend: spec
                .spawn
                .map_or_else(|| "running".to_owned(), |b| b.as_str().to_owned()),
            messages: plan.messages,
            fan_out: plan.fan_out,
            lmqs: plan.lmqs,
            producers: spec.producers,
            size: spec.size,
        },
        send_per_s: plan.messages as f64 / sent.secs.max(1e-9),
        send_latency: sent.latency,
        dispatch_probe: probe.name().to_owned(),
        dispatch_secs,
        dispatch_units_per_s: plan.units() as f64 / dispatch_secs.max(1e-9),
        cpu_us_per_unit,
        rss_kib,
        hwm_kib,
        anon_kib,
        open_files,
        disk,
        disk_at_rest,
        commitlog_data_bytes,
        sample: checked,
        restart,
    };
    super::lmq_report::print(&report);
    Ok(report)
}

/// Bytes allocated under the store's consume-queue folders and CommitLog.
fn store_disk(root: &Path) -> Disk {
    let (f1, b1) = disk_use(&root.join("consumequeue"));
    let (f2, b2) = disk_use(&root.join("rocksdb_consumequeue"));
    Disk {
        cq_bytes: b1 + b2,
        cq_files: f1 + f2,
        commitlog_bytes: disk_use(&root.join("commitlog")).1,
    }
}

/// CommitLog bytes the broker holds (max - min offset).
async fn commitlog_data(admin: &rmq_client::RemotingClient) -> anyhow::Result<Option<u64>> {
    let max = lmq_load::runtime_value(admin, "commitLogMaxOffset").await?;
    let min = lmq_load::runtime_value(admin, "commitLogMinOffset").await?;
    Ok(u64::try_from(max - min).ok())
}

/// How to start a stopped child again, and what its stop and its fresh
/// start measured.
struct Again<'a> {
    bin: &'a Path,
    dir: &'a Path,
    sets: &'a [String],
    stop_ms: f64,
    stopped: Stopped,
    fresh: Idle,
    empty: Idle,
}

/// Starts the broker again on its store, times the first pull of the
/// first sampled LMQ, reads the idle memory, and stops it.
async fn start_again(spec: &LmqSpec, again: &Again<'_>, sample: &[u64]) -> anyhow::Result<Restart> {
    eprintln!("  starting again on the same store");
    let launched = Instant::now();
    let child =
        BrokerProcess::start_within(again.bin, again.dir, again.sets, spec.start_timeout).await?;
    let port_ms = launched.elapsed().as_secs_f64() * 1e3;
    let lmq = lmq_plan::lmq_name(&spec.topic_prefix, sample.first().copied().unwrap_or(0));
    let client = sdk::connect(child.addr()).await?;
    let deadline = Instant::now() + FIRST_PULL_BOUND;
    loop {
        match lmq_check::pull_once(&client, &lmq, 0, 1).await {
            Ok(r) if !r.messages.is_empty() => break,
            Ok(_) if Instant::now() > deadline => {
                bail!("{lmq} was still empty {FIRST_PULL_BOUND:?} after the restart")
            }
            Err(e) if Instant::now() > deadline => {
                return Err(e.context("first pull after the restart"))
            }
            _ => tokio::time::sleep(FIRST_PULL_RETRY).await,
        }
    }
    let first_pull_ms = launched.elapsed().as_secs_f64() * 1e3;
    client.close().await;
    tokio::time::sleep(spec.idle_settle).await;
    let after = Idle::of(child.pid());
    let open_files_after = proc_stats::open_fds(child.pid());
    child.stop_within(spec.stop_timeout).await?;
    let per_lmq = |a: u64, b: u64| (a as f64 - b as f64) * 1024.0 / spec.lmqs as f64;
    Ok(Restart {
        stop_ms: again.stop_ms,
        stopped: again.stopped,
        port_ms,
        first_pull_ms,
        rss_fresh_kib: again.fresh.rss_kib,
        anon_fresh_kib: again.fresh.anon_kib,
        rss_empty_kib: again.empty.rss_kib,
        rss_after_kib: after.rss_kib,
        rss_per_lmq_bytes: per_lmq(after.rss_kib, again.empty.rss_kib),
        anon_empty_kib: again.empty.anon_kib,
        anon_after_kib: after.anon_kib,
        anon_per_lmq_bytes: per_lmq(after.anon_kib, again.empty.anon_kib),
        open_files_after,
    })
}

/// Fails when the sample was not exact, naming the first LMQs that differ.
pub fn require_exact(sample: &SampleCheck) -> anyhow::Result<()> {
    if sample.exact() {
        return Ok(());
    }
    bail!(
        "{} of {} sampled LMQs did not hold exactly what was sent to them: {}",
        sample.bad_lmqs,
        sample.lmqs,
        sample.mismatches.join("; ")
    )
}
