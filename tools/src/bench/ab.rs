//! `rmq-bench ab`: the same load against a fresh broker per backend (and
//! flush mode, and queue count), printed side by side with ratios.

use std::path::PathBuf;

use rmq_common::config::CqBackend;
use rmq_common::{FlushDiskType, StoreConfig};

use super::load::{self, LoadReport};
use super::plot;
use super::report::secs_text;
use super::spec::LoadSpec;
use rmq_broker::broker::Broker;
use rmq_broker::config::{BrokerConfig, Settings};

/// What to compare.
#[derive(Debug, Clone)]
pub struct AbPlan {
    /// The load (its topics/queues are replaced by each queue count).
    pub spec: LoadSpec,
    /// Backends, in order; the first is the ratio base.
    pub backends: Vec<CqBackend>,
    /// Flush modes.
    pub flushes: Vec<FlushDiskType>,
    /// Total queue counts (split into topics of at most 1,000 queues);
    /// empty: the spec's own.
    pub queue_counts: Vec<usize>,
    /// After each run, run again open loop at this fraction of its send
    /// rate (e.g. 0.8) to read dispatch lag below saturation.
    pub rate_fraction: Option<f64>,
    /// Parent of the temporary store folders.
    pub dir: Option<PathBuf>,
    /// Draw throughput and p99 against queue count here.
    pub plot: Option<PathBuf>,
}

impl AbPlan {
    /// The queue counts to run: the given ones, or the spec's own.
    pub(crate) fn queue_counts(&self) -> Vec<usize> {
        if self.queue_counts.is_empty() {
            vec![self.spec.total_queues()]
        } else {
            self.queue_counts.clone()
        }
    }

    /// A fresh store folder under `--dir` (or the system's temp folder).
    pub(crate) fn temp_dir(&self) -> std::io::Result<tempfile::TempDir> {
        match &self.dir {
            Some(parent) => tempfile::tempdir_in(parent),
            None => tempfile::tempdir(),
        }
    }
}

/// A bench broker named `name` on free ports, without a NameServer, with
/// `store`.
pub(crate) fn settings(name: &str, store: StoreConfig) -> Settings {
    Settings {
        broker: BrokerConfig {
            broker_name: name.into(),
            listen_port: 0,
            grpc_server_port: -1,
            namesrv_listen_port: -1,
            metrics_port: 0,
            ..BrokerConfig::default()
        },
        store,
        ..Settings::default()
    }
}

/// One run in the comparison.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AbRow {
    /// "ASYNC_FLUSH" or "SYNC_FLUSH".
    pub flush: &'static str,
    /// Backend.
    pub backend: &'static str,
    /// "max" (as fast as answers come, or the given rate) or "80%" etc.
    pub phase: String,
    /// Send rate over the base backend's in the same cell and phase.
    pub ratio_to_base: f64,
    /// The run.
    pub report: LoadReport,
}

pub(crate) fn flush_name(f: FlushDiskType) -> &'static str {
    match f {
        FlushDiskType::AsyncFlush => "ASYNC_FLUSH",
        FlushDiskType::SyncFlush => "SYNC_FLUSH",
    }
}

/// Starts a broker on a fresh store, runs `spec`, stops it.
async fn one(
    plan: &AbPlan,
    backend: CqBackend,
    flush: FlushDiskType,
    spec: &LoadSpec,
) -> anyhow::Result<LoadReport> {
    let dir = plan.temp_dir()?;
    let broker = Broker::start(settings(
        &format!("bench-{}", backend.as_str()),
        StoreConfig {
            consume_queue_store: backend,
            flush_disk_type: flush,
            ..StoreConfig::with_root(dir.path())
        },
    ))
    .await?;
    eprintln!(
        "== {} {} {} queues{}",
        backend.as_str(),
        flush_name(flush),
        spec.total_queues(),
        spec.rate.map_or(String::new(), |r| format!(", {r} msgs/s"))
    );
    let result = load::run(broker.addr(), broker.metrics_addr(), spec).await;
    broker.shutdown().await;
    result
}

/// Runs the plan and prints the table; returns every row.
pub async fn run(plan: &AbPlan) -> anyhow::Result<Vec<AbRow>> {
    let counts = plan.queue_counts();
    let mut rows: Vec<AbRow> = Vec::new();
    for &flush in &plan.flushes {
        for &count in &counts {
            let spec = plan.spec.with_total_queues(count);
            let mut cell: Vec<AbRow> = Vec::new();
            for &backend in &plan.backends {
                let max = one(plan, backend, flush, &spec).await?;
                let rate = max.send_rate;
                cell.push(row(flush, backend, "max".into(), max));
                if let Some(f) = plan.rate_fraction {
                    let paced = LoadSpec {
                        rate: Some(((rate * f) as u64).max(1)),
                        ..spec.clone()
                    };
                    let r = one(plan, backend, flush, &paced).await?;
                    cell.push(row(flush, backend, format!("{:.0}%", f * 100.0), r));
                }
            }
            for i in 0..cell.len() {
                let base = cell
                    .iter()
                    .find(|r| r.phase == cell[i].phase)
                    .map_or(1.0, |r| r.report.send_rate);
                cell[i].ratio_to_base = cell[i].report.send_rate / base.max(f64::MIN_POSITIVE);
            }
            rows.extend(cell);
        }
    }
    print_table(&plan.spec, &rows);
    if let Some(path) = &plan.plot {
        let points: Vec<plot::Point> = rows
            .iter()
            .filter(|r| r.phase == "max")
            .map(|r| plot::Point {
                series: format!("{} {}", r.backend, r.flush),
                queues: r.report.total_queues,
                rate: r.report.send_rate,
                p99_ms: r.report.send_latency.p99_us as f64 / 1000.0,
            })
            .collect();
        let s = &plan.spec;
        let title = format!(
            "{} producers {:?} batch {}, {} B, {} consumers",
            s.producers, s.mode, s.batch, s.size, s.consumers
        );
        plot::draw(path, &title, &points)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(rows)
}

fn row(flush: FlushDiskType, backend: CqBackend, phase: String, report: LoadReport) -> AbRow {
    AbRow {
        flush: flush_name(flush),
        backend: backend.as_str(),
        phase,
        ratio_to_base: 1.0,
        report,
    }
}

fn print_table(spec: &LoadSpec, rows: &[AbRow]) {
    println!(
        "{} producers ({:?}, batch {}, inflight {}), {} consumers, {} B bodies",
        spec.producers, spec.mode, spec.batch, spec.inflight, spec.consumers, spec.size
    );
    println!(
        "{:<11} {:>7} {:<8} {:>5} {:>10} {:>6} {:>9} {:>9} {:>9} {:>8} {:>9} {:>9}",
        "flush",
        "queues",
        "backend",
        "phase",
        "sent/s",
        "ratio",
        "p99 ms",
        "p999 ms",
        "e2e p99",
        "catchup",
        "lag max",
        "disp p99"
    );
    for r in rows {
        let p = &r.report;
        let d = p.dispatch.as_ref();
        println!(
            "{:<11} {:>7} {:<8} {:>5} {:>10.0} {:>6.2} {:>9.2} {:>9.2} {:>9.0} {:>8.2} {:>9.3} {:>9}",
            r.flush,
            p.total_queues,
            r.backend,
            r.phase,
            p.send_rate,
            r.ratio_to_base,
            p.send_latency.p99_us as f64 / 1000.0,
            p.send_latency.p999_us as f64 / 1000.0,
            p.e2e_latency.p99_us as f64 / 1000.0,
            p.catch_up_seconds.unwrap_or(0.0),
            d.map_or(0.0, |d| d.lag_max_s),
            secs_text(d.and_then(|d| d.delay_p99_s)),
        );
        if let Some(e) = &p.first_error {
            println!("    first error: {e}");
        }
    }
}
