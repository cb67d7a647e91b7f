//! `rmq-bench ab --live`: one broker whose reput feeds both consume-queue
//! backends (the first serving, the second its shadow), one load, and each
//! backend's figures from that one run side by side: the same bytes at the
//! same moment on the same machine, where `ab` compares two brokers that
//! saw two runs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_broker::config::{BrokerConfig, Settings};
use rmq_broker::metrics::names;
use rmq_common::config::CqBackend;
use rmq_common::{FlushDiskType, StoreConfig};

use super::ab::{flush_name, AbPlan};
use super::load::{self, LoadReport};
use super::scrape::{quantile_between, scrape, Exposition};
use super::spec::LoadSpec;

/// How often the shadow's lag is read during the run.
const LAG_EVERY: Duration = Duration::from_millis(250);
/// Longest wait for the shadow to finish after the load.
const CATCH_UP_WAIT: Duration = Duration::from_secs(600);

/// One backend's figures from a live run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LiveLane {
    /// Engine.
    pub backend: &'static str,
    /// serving or shadow.
    pub role: &'static str,
    /// Units written per second of the load.
    pub entries_per_s: f64,
    /// Consume-queue write latency (hand-over to written), p50 and p99, s.
    pub write_p50_s: Option<f64>,
    /// Same, p99.
    pub write_p99_s: Option<f64>,
    /// Store time to readable in this backend, p99, s.
    pub dispatch_p99_s: Option<f64>,
    /// Bytes its folder occupies at the end.
    pub disk_bytes: f64,
    /// Memory it holds at the end (maps, memtables, block cache).
    pub memory_bytes: f64,
    /// Files it holds open at the end.
    pub open_files: f64,
    /// Memory maps it holds at the end.
    pub mapped_files: f64,
    /// Largest lag behind the serving backend seen during the run (shadow).
    pub lag_max_bytes: f64,
    /// Batches its queue dropped and it read from the CommitLog (shadow).
    pub dropped_batches: f64,
    /// How long after the load it took to have written everything.
    pub settle_s: f64,
}

/// One cell: the load's report and both backends.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LiveRow {
    /// "ASYNC_FLUSH" or "SYNC_FLUSH".
    pub flush: &'static str,
    /// The load, as the clients saw it.
    pub report: LoadReport,
    /// Serving, then shadow.
    pub lanes: Vec<LiveLane>,
}

impl Exposition {
    /// The value of `name` on the series with `backend` (any role).
    fn lane_value(&self, name: &str, backend: &str) -> f64 {
        self.sum_where(name, &[("backend", backend)])
    }
}

async fn run_cell(
    plan: &AbPlan,
    serving: CqBackend,
    shadow: CqBackend,
    flush: FlushDiskType,
    spec: &LoadSpec,
) -> anyhow::Result<LiveRow> {
    let dir = match &plan.dir {
        Some(parent) => tempfile::tempdir_in(parent)?,
        None => tempfile::tempdir()?,
    };
    let settings = Settings {
        broker: BrokerConfig {
            broker_name: "bench-live".into(),
            listen_port: 0,
            namesrv_listen_port: -1,
            metrics_port: 0,
            ..BrokerConfig::default()
        },
        store: StoreConfig {
            consume_queue_store: serving,
            shadow_consume_queue_store: Some(shadow),
            flush_disk_type: flush,
            ..StoreConfig::with_root(dir.path())
        },
    };
    let broker = Broker::start(settings).await?;
    let metrics = broker
        .metrics_addr()
        .ok_or_else(|| anyhow::anyhow!("the broker has no metrics endpoint"))?;
    eprintln!(
        "== live: {serving} serving, {shadow} shadow, {} {} queues",
        flush_name(flush),
        spec.total_queues()
    );
    let before = scrape(metrics).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let stop = Arc::clone(&stop);
        tokio::spawn(async move {
            let mut max: f64 = 0.0;
            while !stop.load(Ordering::Acquire) {
                if let Ok(e) = scrape(metrics).await {
                    max = max.max(e.max(names::CQ_SHADOW_LAG_BYTES).unwrap_or(0.0));
                }
                tokio::time::sleep(LAG_EVERY).await;
            }
            max
        })
    };
    let report = load::run(broker.addr(), Some(metrics), spec).await;
    stop.store(true, Ordering::Release);
    let lag_max = watcher.await.unwrap_or(0.0);
    let report = report?;
    // Time each backend needs after the load to have written it all.
    let store = Arc::clone(&broker.context().store);
    let settle = tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let serving = store.wait_dispatched_to(store.max_phy_offset(), CATCH_UP_WAIT);
        let serving_s = started.elapsed().as_secs_f64();
        let shadow = store.wait_shadow_caught_up(CATCH_UP_WAIT);
        (
            serving && shadow,
            serving_s,
            started.elapsed().as_secs_f64(),
        )
    })
    .await?;
    anyhow::ensure!(
        settle.0,
        "a backend did not finish within {CATCH_UP_WAIT:?}"
    );
    // Let the sampler publish the final gauges.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let after = scrape(metrics).await?;
    broker.shutdown().await;
    let seconds = report.send_seconds.max(f64::MIN_POSITIVE);
    let lane = |backend: CqBackend, role: &'static str, settle_s: f64, lag: f64| {
        let b = backend.as_str();
        let sel = [("backend", b)];
        let q = |name: &str, p: f64| {
            quantile_between(
                &before.buckets_where(name, &sel),
                &after.buckets_where(name, &sel),
                p,
            )
        };
        LiveLane {
            backend: b,
            role,
            entries_per_s: (after.lane_value(names::CQ_ENTRIES_TOTAL, b)
                - before.lane_value(names::CQ_ENTRIES_TOTAL, b))
                / seconds,
            write_p50_s: q(names::CQ_WRITE_LATENCY_SECONDS, 0.50),
            write_p99_s: q(names::CQ_WRITE_LATENCY_SECONDS, 0.99),
            dispatch_p99_s: q(names::DISPATCH_DELAY_SECONDS, 0.99),
            disk_bytes: after.lane_value(names::CQ_DISK_BYTES, b),
            memory_bytes: after.lane_value(names::CQ_MEMORY_BYTES, b),
            open_files: after.lane_value(names::CQ_OPEN_FILES, b),
            mapped_files: after.lane_value(names::CQ_MAPPED_FILES, b),
            lag_max_bytes: lag,
            dropped_batches: after.lane_value(names::CQ_SHADOW_DROPPED_BATCHES_TOTAL, b),
            settle_s,
        }
    };
    Ok(LiveRow {
        flush: flush_name(flush),
        lanes: vec![
            lane(serving, "serving", settle.1, 0.0),
            lane(shadow, "shadow", settle.2, lag_max),
        ],
        report,
    })
}

/// Runs the plan live (its first two backends: serving, shadow) and prints
/// the table; returns every row.
pub async fn run(plan: &AbPlan) -> anyhow::Result<Vec<LiveRow>> {
    let [serving, shadow] = plan.backends[..] else {
        anyhow::bail!("--live takes two backends: the serving one, then the shadow");
    };
    anyhow::ensure!(serving != shadow, "--live needs two different backends");
    let counts = if plan.queue_counts.is_empty() {
        vec![plan.spec.total_queues()]
    } else {
        plan.queue_counts.clone()
    };
    let mut rows = Vec::new();
    for &flush in &plan.flushes {
        for &count in &counts {
            let spec = plan.spec.with_total_queues(count);
            rows.push(run_cell(plan, serving, shadow, flush, &spec).await?);
        }
    }
    print_table(&plan.spec, &rows);
    Ok(rows)
}

fn ms(s: Option<f64>) -> String {
    s.map_or("-".into(), |s| format!("{:.2}", s * 1000.0))
}

fn print_table(spec: &LoadSpec, rows: &[LiveRow]) {
    println!(
        "live A/B, one broker, one reput feeding both backends: {} producers ({:?}, batch {}), {} consumers, {} B bodies",
        spec.producers, spec.mode, spec.batch, spec.consumers, spec.size
    );
    println!(
        "{:<11} {:>7} {:>9} {:<8} {:<7} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6} {:>6} {:>11} {:>7} {:>8}",
        "flush", "queues", "sent/s", "backend", "role", "entries/s", "wr p50ms", "wr p99ms",
        "disp p99", "disk MiB", "mem MiB", "files", "maps", "lag max KiB", "dropped", "settle s"
    );
    for r in rows {
        for l in &r.lanes {
            println!(
                "{:<11} {:>7} {:>9.0} {:<8} {:<7} {:>10.0} {:>9} {:>9} {:>9} {:>9.1} {:>9.1} {:>6.0} {:>6.0} {:>11.1} {:>7.0} {:>8.2}",
                r.flush,
                r.report.total_queues,
                r.report.send_rate,
                l.backend,
                l.role,
                l.entries_per_s,
                ms(l.write_p50_s),
                ms(l.write_p99_s),
                ms(l.dispatch_p99_s),
                l.disk_bytes / 1048576.0,
                l.memory_bytes / 1048576.0,
                l.open_files,
                l.mapped_files,
                l.lag_max_bytes / 1024.0,
                l.dropped_batches,
                l.settle_s,
            );
        }
        if let Some(e) = &r.report.first_error {
            println!("    first error: {e}");
        }
    }
}
