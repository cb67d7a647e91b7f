//! `rmq-bench ha`: the same load against a broker alone, an ASYNC_MASTER
//! with a slave and a SYNC_MASTER with a slave (per backend and flush mode),
//! each pair fresh and in this process: send rate and latency side by side,
//! and how fast the slave holds everything (replication throughput, and its
//! catch-up after the last send).

use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_broker::config::{BrokerConfig, Settings};
use rmq_broker::ha::BrokerRole;
use rmq_common::config::CqBackend;
use rmq_common::{FlushDiskType, StoreConfig};

use super::load::{self, LoadReport};
use super::spec::LoadSpec;

/// Longest a slave may take to connect, or to catch up after the load.
const SLAVE_WAIT: Duration = Duration::from_secs(120);

/// A master's setup in the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// No slave (ASYNC_MASTER, nothing replicates).
    Alone,
    /// ASYNC_MASTER with a slave.
    Async,
    /// SYNC_MASTER with a slave.
    Sync,
}

impl Setup {
    /// `alone`, `async` or `sync`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "alone" => Ok(Self::Alone),
            "async" => Ok(Self::Async),
            "sync" => Ok(Self::Sync),
            other => Err(format!("{other}: expected alone, async or sync")),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Alone => "alone",
            Self::Async => "ASYNC_MASTER",
            Self::Sync => "SYNC_MASTER",
        }
    }
}

/// What to compare.
#[derive(Debug, Clone)]
pub struct HaPlan {
    /// The load.
    pub spec: LoadSpec,
    /// Backends (master and slave alike).
    pub backends: Vec<CqBackend>,
    /// Flush modes.
    pub flushes: Vec<FlushDiskType>,
    /// Setups, in order; the first is the ratio base.
    pub setups: Vec<Setup>,
}

/// One run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HaRow {
    /// Flush mode.
    pub flush: &'static str,
    /// Backend.
    pub backend: &'static str,
    /// "alone", "ASYNC_MASTER" or "SYNC_MASTER".
    pub setup: &'static str,
    /// Send rate over the first setup's in the same flush and backend.
    pub ratio_to_base: f64,
    /// CommitLog bytes the slave holds per second, from the first send to
    /// the moment it held the master's end (None alone).
    pub replicated_mib_s: Option<f64>,
    /// From the last answer to the slave holding the master's end.
    pub slave_catch_up_s: Option<f64>,
    /// After the load, a second slave on an empty store copies the whole
    /// log (one segment here): CommitLog MiB/s from its start to holding the
    /// master's end, replication alone.
    pub backlog_mib_s: Option<f64>,
    /// Sends answered other than SUCCESS (SLAVE_NOT_AVAILABLE, ...).
    pub send_errors: u64,
    /// The load run.
    pub report: LoadReport,
}

fn settings(dir: &std::path::Path, backend: CqBackend, flush: FlushDiskType) -> Settings {
    Settings {
        broker: BrokerConfig {
            broker_name: format!("bench-ha-{}", backend.as_str()),
            listen_port: 0,
            grpc_server_port: -1,
            metrics_port: -1,
            ..BrokerConfig::default()
        },
        store: StoreConfig {
            consume_queue_store: backend,
            flush_disk_type: flush,
            ..StoreConfig::with_root(dir)
        },
        ..Settings::default()
    }
}

async fn wait_until(what: &str, mut ok: impl FnMut() -> bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + SLAVE_WAIT;
    while !ok() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "{what}: not within {SLAVE_WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Ok(())
}

/// A slave (`id`) of `master` on a fresh store under `root`.
async fn start_slave(
    master: &Broker,
    root: &std::path::Path,
    backend: CqBackend,
    flush: FlushDiskType,
    id: i64,
) -> anyhow::Result<Broker> {
    let mut ss = settings(root, backend, flush);
    ss.broker.broker_role = BrokerRole::Slave;
    ss.broker.broker_id = id;
    ss.broker.namesrv_listen_port = -1;
    ss.broker.namesrv_addr = master
        .namesrv_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let ha = master
        .context()
        .ha_addr
        .get()
        .ok_or_else(|| anyhow::anyhow!("the master takes no slaves"))?;
    ss.broker.ha_master_address = ha.to_string();
    Ok(Broker::start(ss).await?)
}

async fn one(
    spec: &LoadSpec,
    backend: CqBackend,
    flush: FlushDiskType,
    setup: Setup,
) -> anyhow::Result<HaRow> {
    let dir = tempfile::tempdir()?;
    let mut ms = settings(&dir.path().join("master"), backend, flush);
    ms.broker.broker_role = match setup {
        Setup::Sync => BrokerRole::SyncMaster,
        Setup::Alone | Setup::Async => BrokerRole::AsyncMaster,
    };
    ms.broker.namesrv_listen_port = 0;
    let master = Broker::start(ms).await?;
    let slave = if setup == Setup::Alone {
        None
    } else {
        let slave = start_slave(&master, &dir.path().join("slave"), backend, flush, 1).await?;
        let acks = std::sync::Arc::clone(&master.context().ha_acks);
        wait_until("the slave connects", || acks.slaves() == 1).await?;
        Some(slave)
    };
    eprintln!(
        "== {} {} {}",
        backend.as_str(),
        flush_name(flush),
        setup.name()
    );
    let started = Instant::now();
    let report = load::run(master.addr(), None, spec).await?;
    let answered = Instant::now();
    let (mut replicated_mib_s, mut slave_catch_up_s, mut backlog_mib_s) = (None, None, None);
    if let Some(slave) = &slave {
        let (m, s) = (&master.context().store, &slave.context().store);
        let end = m.max_phy_offset();
        wait_until("the slave holds the master's end", || {
            s.max_phy_offset() >= end
        })
        .await?;
        let held = Instant::now();
        slave_catch_up_s = Some(held.duration_since(answered).as_secs_f64());
        replicated_mib_s =
            Some(end as f64 / (1u64 << 20) as f64 / held.duration_since(started).as_secs_f64());
        let late = start_slave(&master, &dir.path().join("late"), backend, flush, 2).await?;
        let copied = Instant::now();
        let l = &late.context().store;
        wait_until("a new slave copies the log", || l.max_phy_offset() >= end).await?;
        let from = l.min_phy_offset();
        backlog_mib_s =
            Some((end - from) as f64 / (1u64 << 20) as f64 / copied.elapsed().as_secs_f64());
        late.shutdown().await;
    }
    if let Some(slave) = slave {
        slave.shutdown().await;
    }
    master.shutdown().await;
    Ok(HaRow {
        flush: flush_name(flush),
        backend: backend.as_str(),
        setup: setup.name(),
        ratio_to_base: 1.0,
        replicated_mib_s,
        slave_catch_up_s,
        backlog_mib_s,
        send_errors: report.send_errors,
        report,
    })
}

fn flush_name(f: FlushDiskType) -> &'static str {
    match f {
        FlushDiskType::AsyncFlush => "ASYNC_FLUSH",
        FlushDiskType::SyncFlush => "SYNC_FLUSH",
    }
}

/// Runs the plan and prints the table; returns every row.
pub async fn run(plan: &HaPlan) -> anyhow::Result<Vec<HaRow>> {
    let mut rows = Vec::new();
    for &flush in &plan.flushes {
        for &backend in &plan.backends {
            let mut cell: Vec<HaRow> = Vec::new();
            for &setup in &plan.setups {
                cell.push(one(&plan.spec, backend, flush, setup).await?);
            }
            let base = cell.first().map_or(1.0, |r| r.report.send_rate);
            for r in &mut cell {
                r.ratio_to_base = r.report.send_rate / base.max(f64::MIN_POSITIVE);
            }
            rows.extend(cell);
        }
    }
    print_table(&plan.spec, &rows);
    Ok(rows)
}

fn print_table(spec: &LoadSpec, rows: &[HaRow]) {
    println!(
        "{} producers ({:?}, batch {}, inflight {}), {} B bodies",
        spec.producers, spec.mode, spec.batch, spec.inflight, spec.size
    );
    println!(
        "{:<11} {:<8} {:<12} {:>10} {:>6} {:>8} {:>8} {:>9} {:>7} {:>10} {:>8} {:>13}",
        "flush",
        "backend",
        "setup",
        "sent/s",
        "ratio",
        "p50 ms",
        "p99 ms",
        "p999 ms",
        "errors",
        "repl MiB/s",
        "catchup",
        "backlog MiB/s"
    );
    let opt = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
    for r in rows {
        let l = &r.report.send_latency;
        println!(
            "{:<11} {:<8} {:<12} {:>10.0} {:>6.2} {:>8.3} {:>8.3} {:>9.3} {:>7} {:>10} {:>8} {:>13}",
            r.flush,
            r.backend,
            r.setup,
            r.report.send_rate,
            r.ratio_to_base,
            l.p50_us as f64 / 1000.0,
            l.p99_us as f64 / 1000.0,
            l.p999_us as f64 / 1000.0,
            r.send_errors,
            opt(r.replicated_mib_s, 1),
            opt(r.slave_catch_up_s, 3),
            opt(r.backlog_mib_s, 0),
        );
        if let Some(e) = &r.report.first_error {
            println!("    first error: {e}");
        }
    }
}
