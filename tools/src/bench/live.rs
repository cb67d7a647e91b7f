//! `rmq-bench ab --live`: one broker whose reput feeds both consume-queue
//! backends (the first serving, the second its shadow), one load, and each
//! backend's figures from that one run side by side: the same bytes at the
//! same moment on the same machine, where `ab` compares two brokers that
//! saw two runs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_broker::metrics::names;
use rmq_common::config::CqBackend;
use rmq_common::{FlushDiskType, StoreConfig};

use super::ab::{flush_name, settings, AbPlan};
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
    let dir = plan.temp_dir()?;
    let broker = Broker::start(settings(
        "bench-live",
        StoreConfig {
            consume_queue_store: serving,
            shadow_consume_queue_store: Some(shadow),
            flush_disk_type: flush,
            ..StoreConfig::with_root(dir.path())
        },
    ))
    .await?;
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
    let counts = plan.queue_counts();
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

/// What adding a shadow to a running broker cost its serving backend.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CatchUpRow {
    /// "ASYNC_FLUSH" or "SYNC_FLUSH".
    pub flush: &'static str,
    /// Serving engine.
    pub serving: &'static str,
    /// The shadow added.
    pub shadow: &'static str,
    /// CommitLog bytes the shadow had to build from when it was added.
    pub log_bytes: i64,
    /// Open-loop rate of both paced runs, messages/s.
    pub rate: u64,
    /// The paced run with nothing else going on.
    pub baseline: LoadReport,
    /// The same run with the shadow added at its start.
    pub with_catch_up: LoadReport,
    /// From the add to the shadow having written everything, seconds.
    pub catch_up_s: f64,
}

/// Fills a broker's log with `spec`, then runs the same load open loop at
/// 80 % of that rate twice: alone, and with `shadow` added at its start;
/// prints the serving backend's dispatch figures of both.
pub async fn catch_up(plan: &AbPlan) -> anyhow::Result<Vec<CatchUpRow>> {
    let [serving, shadow] = plan.backends[..] else {
        anyhow::bail!("--catch-up takes two backends: the serving one, then the shadow to add");
    };
    let mut rows = Vec::new();
    for &flush in &plan.flushes {
        let dir = plan.temp_dir()?;
        let broker = Broker::start(settings(
            "bench-catch-up",
            StoreConfig {
                consume_queue_store: serving,
                flush_disk_type: flush,
                // Keep the whole log the shadow is to build from, however
                // full the machine's disk already is.
                disk_max_used_space_ratio_pct: 95,
                disk_space_clean_forcibly_ratio_pct: 99,
                disk_space_warning_level_ratio_pct: 99,
                ..StoreConfig::with_root(dir.path())
            },
        ))
        .await?;
        let metrics = broker.metrics_addr();
        eprintln!("== catch-up: fill the log ({serving} serving)");
        let fill = load::run(broker.addr(), metrics, &plan.spec).await?;
        let rate = ((fill.send_rate * 0.8) as u64).max(1);
        let paced = LoadSpec {
            rate: Some(rate),
            warmup: false,
            ..plan.spec.clone()
        };
        eprintln!("== catch-up: paced at {rate} msgs/s, alone");
        let baseline = load::run(broker.addr(), metrics, &paced).await?;
        let store = Arc::clone(&broker.context().store);
        let log_bytes = store.max_phy_offset() - store.min_phy_offset();
        eprintln!("== catch-up: paced at {rate} msgs/s, {shadow} added at the start ({log_bytes} bytes of log)");
        let added = Instant::now();
        let add = {
            let store = Arc::clone(&store);
            tokio::task::spawn_blocking(move || -> anyhow::Result<f64> {
                store.add_shadow(shadow)?;
                anyhow::ensure!(
                    store.wait_shadow_caught_up(CATCH_UP_WAIT),
                    "the shadow did not catch up within {CATCH_UP_WAIT:?}"
                );
                Ok(added.elapsed().as_secs_f64())
            })
        };
        let with_catch_up = load::run(broker.addr(), metrics, &paced).await?;
        let catch_up_s = add.await??;
        broker.shutdown().await;
        rows.push(CatchUpRow {
            flush: flush_name(flush),
            serving: serving.as_str(),
            shadow: shadow.as_str(),
            log_bytes,
            rate,
            baseline,
            with_catch_up,
            catch_up_s,
        });
    }
    println!("a shadow added to a running broker: the serving backend's dispatch, paced run alone vs the same run while the shadow builds");
    println!(
        "{:<11} {:<8} {:<8} {:>9} {:>8} {:<13} {:>9} {:>13} {:>11} {:>9} {:>10}",
        "flush",
        "serving",
        "shadow",
        "log MiB",
        "rate",
        "run",
        "sent/s",
        "behind max KiB",
        "lag max s",
        "disp p99",
        "catch-up s"
    );
    for r in &rows {
        for (name, rep, c) in [
            ("alone", &r.baseline, None),
            ("with catch-up", &r.with_catch_up, Some(r.catch_up_s)),
        ] {
            let d = rep.dispatch.as_ref();
            println!(
                "{:<11} {:<8} {:<8} {:>9.0} {:>8} {:<13} {:>9.0} {:>13.1} {:>11.3} {:>9} {:>10}",
                r.flush,
                r.serving,
                r.shadow,
                r.log_bytes as f64 / 1048576.0,
                r.rate,
                name,
                rep.send_rate,
                d.map_or(0.0, |d| d.behind_max_bytes) / 1024.0,
                d.map_or(0.0, |d| d.lag_max_s),
                super::report::secs_text(d.and_then(|d| d.delay_p99_s)),
                c.map_or("-".into(), |c| format!("{c:.1}")),
            );
        }
    }
    Ok(rows)
}
