//! `rmq-bench`: load over the real protocol with the broker's own client.
//!
//! * `rmq-bench produce --broker ADDR`: concurrent producers against a
//!   running broker; prints send rate and latency percentiles.
//! * `rmq-bench local`: starts a broker per (backend, flushDiskType) in
//!   turn on fresh temporary stores, runs the same load against each, and
//!   prints them side by side with ratios to the first row.
//! * `rmq-bench reput`: writes one CommitLog of small messages, then
//!   rebuilds each backend's consume queue from it with the serial and the
//!   concurrent reput (`enableBuildConsumeQueueConcurrently`) and prints
//!   entries/s with the concurrent/serial ratio.

use std::net::SocketAddr;
use std::time::Instant;

use clap::{Args as ClapArgs, Parser, Subcommand};
use rmq_broker::broker::Broker;
use rmq_broker::config::{BrokerConfig, Settings};
use rmq_broker::sdk::{self, OutMessage, SendCode};
use rmq_common::config::CqBackend;
use rmq_common::{FlushDiskType, StoreConfig};

#[derive(Debug, Parser)]
#[command(name = "rmq-bench", version)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Load a running broker.
    Produce {
        /// Broker address.
        #[arg(long, default_value = "127.0.0.1:10911")]
        broker: SocketAddr,
        #[command(flatten)]
        load: Load,
    },
    /// Start brokers locally (file/rocksdb x ASYNC/SYNC) and compare.
    Local {
        #[command(flatten)]
        load: Load,
    },
    /// Rebuild consume queues from one CommitLog: serial vs concurrent reput.
    Reput {
        /// Records in the log.
        #[arg(long, default_value_t = 1_000_000)]
        messages: usize,
        /// Body size in bytes (small bodies make parsing the bottleneck).
        #[arg(long, default_value_t = 32)]
        size: usize,
        /// Queues the records spread over (one topic).
        #[arg(long, default_value_t = 1000)]
        queues: i32,
    },
}

/// Rebuilds `root`'s consume queue for `backend` with the chosen reput and
/// returns (records dispatched, seconds).
fn rebuild(
    root: &std::path::Path,
    backend: CqBackend,
    concurrent: bool,
) -> anyhow::Result<(u64, f64)> {
    let config = StoreConfig {
        consume_queue_store: backend,
        enable_build_consume_queue_concurrently: concurrent,
        message_index_enable: false,
        ..StoreConfig::with_root(root)
    };
    for dir in [
        config.consume_queue_dir(),
        config.rocksdb_consume_queue_dir(),
    ] {
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
    }
    let store = rmq_broker::MessageStore::open(config)?;
    let report = store.startup_report().clone();
    store.shutdown()?;
    Ok((report.redispatched_records, report.elapsed.as_secs_f64()))
}

fn reput(messages: usize, size: usize, queues: i32) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let config = StoreConfig {
        message_index_enable: false,
        ..StoreConfig::with_root(dir.path())
    };
    let store = rmq_broker::MessageStore::open(config)?;
    let body = vec![b'r'; size];
    for i in 0..messages {
        let mut m =
            rmq_common::message::MessageToStore::new("ReputBench", i as i32 % queues, body.clone());
        m.properties
            .insert("TAGS", if i % 2 == 0 { "TagA" } else { "TagB" });
        m.properties.insert("KEYS", format!("key-{i}"));
        store.put_message(&m)?;
    }
    store.shutdown()?;
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("{messages} records of {size}-byte bodies over {queues} queues; {workers} cores");
    println!(
        "{:<8} {:<11} {:>12} {:>9} {:>7}",
        "backend", "reput", "entries/s", "seconds", "ratio"
    );
    for backend in [CqBackend::File, CqBackend::Rocksdb] {
        let (n, serial) = rebuild(dir.path(), backend, false)?;
        let (m, concurrent) = rebuild(dir.path(), backend, true)?;
        anyhow::ensure!(
            n == m && n == messages as u64,
            "dispatched {n} and {m} of {messages}"
        );
        println!(
            "{:<8} {:<11} {:>12.0} {:>9.3} {:>7}",
            backend.as_str(),
            "serial",
            n as f64 / serial,
            serial,
            "1.00"
        );
        println!(
            "{:<8} {:<11} {:>12.0} {:>9.3} {:>7.2}",
            backend.as_str(),
            "concurrent",
            m as f64 / concurrent,
            concurrent,
            serial / concurrent
        );
    }
    Ok(())
}

/// The load shape.
#[derive(Debug, Clone, ClapArgs)]
struct Load {
    /// Concurrent producers (one connection each).
    #[arg(long, default_value_t = 4)]
    producers: usize,
    /// Messages in all.
    #[arg(long, default_value_t = 100_000)]
    messages: usize,
    /// Body size in bytes.
    #[arg(long, default_value_t = 1024)]
    size: usize,
    /// Topic.
    #[arg(long, default_value = "BenchTopic")]
    topic: String,
    /// Queues the producers spread over.
    #[arg(long, default_value_t = 8)]
    queues: i32,
    /// Also write the report(s) as JSON to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, serde::Serialize)]
struct Report {
    rate: f64,
    p50_us: u64,
    p99_us: u64,
    p999_us: u64,
    errors: usize,
}

async fn produce(addr: SocketAddr, load: &Load) -> anyhow::Result<Report> {
    rmq_broker::admin::topic_create(addr, &load.topic, load.queues, 6).await?;
    let per = load.messages.div_ceil(load.producers);
    let body = vec![b'x'; load.size];
    let started = Instant::now();
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let progress = tokio::spawn(print_progress(
        std::sync::Arc::clone(&sent),
        load.messages as u64,
    ));
    let mut tasks = Vec::new();
    for p in 0..load.producers {
        let (load, body, sent) = (load.clone(), body.clone(), std::sync::Arc::clone(&sent));
        tasks.push(tokio::spawn(async move {
            let c = sdk::connect(addr).await?;
            let mut lat = Vec::with_capacity(per);
            let mut errors = 0;
            for i in 0..per {
                let m = OutMessage {
                    body: body.clone(),
                    tags: Some("TagA".into()),
                    ..OutMessage::default()
                };
                let q = ((p + i) % load.queues as usize) as i32;
                let t = Instant::now();
                match sdk::send(&c, SendCode::V2, "bench", &load.topic, q, &[m]).await {
                    Ok(r) if r.code == 0 => lat.push(t.elapsed().as_micros() as u64),
                    _ => errors += 1,
                }
                sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            anyhow::Ok((lat, errors))
        }));
    }
    let mut lat = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (l, e) = t.await??;
        lat.extend(l);
        errors += e;
    }
    let elapsed = started.elapsed();
    progress.abort();
    lat.sort_unstable();
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    Ok(Report {
        rate: lat.len() as f64 / elapsed.as_secs_f64(),
        p50_us: pct(0.50),
        p99_us: pct(0.99),
        p999_us: pct(0.999),
        errors,
    })
}

/// Prints one line a second: messages sent so far and the last second's rate.
async fn print_progress(sent: std::sync::Arc<std::sync::atomic::AtomicU64>, total: u64) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    tick.tick().await;
    let (mut last, started) = (0u64, Instant::now());
    loop {
        tick.tick().await;
        let now = sent.load(std::sync::atomic::Ordering::Relaxed);
        eprintln!(
            "[{:>4}s] sent {now}/{total}, {} msgs/s",
            started.elapsed().as_secs(),
            now - last
        );
        last = now;
    }
}

/// One row of a comparison, as written to `--json`.
#[derive(Debug, serde::Serialize)]
struct Row<'a> {
    flush: String,
    backend: &'a str,
    #[serde(flatten)]
    report: &'a Report,
    ratio_to_file: f64,
}

fn write_json(path: &std::path::Path, load: &Load, rows: &[Row<'_>]) -> anyhow::Result<()> {
    let doc = serde_json::json!({
        "producers": load.producers,
        "messages": load.messages,
        "size": load.size,
        "queues": load.queues,
        "rows": rows,
    });
    std::fs::write(path, serde_json::to_vec_pretty(&doc)?)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

async fn local(load: &Load) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for flush in [FlushDiskType::AsyncFlush, FlushDiskType::SyncFlush] {
        for backend in [CqBackend::File, CqBackend::Rocksdb] {
            let dir = tempfile::tempdir()?;
            let settings = Settings {
                broker: BrokerConfig {
                    listen_port: 0,
                    namesrv_listen_port: -1,
                    metrics_port: -1,
                    ..BrokerConfig::default()
                },
                store: StoreConfig {
                    consume_queue_store: backend,
                    flush_disk_type: flush,
                    ..StoreConfig::with_root(dir.path())
                },
            };
            let broker = Broker::start(settings).await?;
            let report = produce(broker.addr(), load).await?;
            broker.shutdown().await;
            rows.push((flush, backend, report));
        }
    }
    println!(
        "{} producers, {} messages of {} bytes over {} queues",
        load.producers, load.messages, load.size, load.queues
    );
    println!(
        "{:<12} {:<8} {:>12} {:>9} {:>9} {:>9} {:>9} {:>7}",
        "flush", "backend", "msgs/s", "p50 us", "p99 us", "p999 us", "errors", "ratio"
    );
    let mut json_rows = Vec::new();
    for (flush, backend, r) in &rows {
        let base = rows
            .iter()
            .find(|(f, b, _)| f == flush && *b == CqBackend::File)
            .map(|(_, _, r)| r.rate)
            .unwrap_or(r.rate);
        json_rows.push(Row {
            flush: format!("{flush:?}"),
            backend: backend.as_str(),
            report: r,
            ratio_to_file: r.rate / base,
        });
        println!(
            "{:<12} {:<8} {:>12.0} {:>9} {:>9} {:>9} {:>9} {:>7.2}",
            format!("{flush:?}"),
            backend.as_str(),
            r.rate,
            r.p50_us,
            r.p99_us,
            r.p999_us,
            r.errors,
            r.rate / base
        );
    }
    if let Some(path) = &load.json {
        write_json(path, load, &json_rows)?;
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        match cli.cmd {
            Cmd::Produce { broker, load } => {
                let r = produce(broker, &load).await?;
                println!("{r:?}");
                if let Some(path) = &load.json {
                    let row = Row {
                        flush: "broker's".into(),
                        backend: "broker's",
                        report: &r,
                        ratio_to_file: 1.0,
                    };
                    write_json(path, &load, &[row])?;
                }
                Ok(())
            }
            Cmd::Local { load } => local(&load).await,
            Cmd::Reput {
                messages,
                size,
                queues,
            } => tokio::task::spawn_blocking(move || reput(messages, size, queues)).await?,
        }
    })
}
