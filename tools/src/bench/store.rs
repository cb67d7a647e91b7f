//! `rmq-bench store`: append + dispatch without the network, for a matrix
//! of queue counts and both backends. Each cell runs in a child process
//! (`rmq-bench store-cell`) so its descriptors, maps and RSS are its own.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmq_common::config::CqBackend;
use rmq_common::message::MessageToStore;
use rmq_common::StoreConfig;

use super::reput::rebuild;
use rmq_broker::metrics::process::ProcessStats;
use rmq_store::disk_use;
use rmq_store::MessageStore;

/// Longest wait for reput to catch up after the last put.
const CATCH_UP: Duration = Duration::from_secs(1800);
/// Queues per topic in the cell's layout (as `rmq-bench ab` splits them).
const QUEUES_PER_TOPIC: usize = 1000;
/// Gap between the cell's progress lines.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// One cell: a backend at a queue count.
#[derive(Debug, Clone, clap::Args, serde::Serialize)]
pub struct CellSpec {
    /// Backend.
    #[arg(long, value_parser = parse_backend)]
    #[serde(serialize_with = "backend_name")]
    pub backend: CqBackend,
    /// Queues in all (topics of at most 1,000 queues).
    #[arg(long)]
    pub queues: usize,
    /// Messages appended (round-robin over the queues).
    #[arg(long)]
    pub messages: u64,
    /// Body size, bytes.
    #[arg(long, default_value_t = 32)]
    pub size: usize,
    /// Store folder (created; left in place).
    #[arg(long)]
    pub dir: PathBuf,
}

fn backend_name<S: serde::Serializer>(b: &CqBackend, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(b.as_str())
}

/// Parses "file" or "rocksdb".
pub fn parse_backend(s: &str) -> Result<CqBackend, String> {
    match s {
        "file" => Ok(CqBackend::File),
        "rocksdb" => Ok(CqBackend::Rocksdb),
        other => Err(format!("unknown backend {other:?} (file or rocksdb)")),
    }
}

/// What one cell measured.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct CellReport {
    /// Backend.
    pub backend: String,
    /// Queues.
    pub queues: usize,
    /// Messages appended.
    pub messages: u64,
    /// Appended and dispatched per second (puts from one thread, live
    /// reput, until reput reached the CommitLog end).
    pub append_rate: f64,
    /// Whole CommitLog re-dispatched into an empty consume queue by the
    /// concurrent reput at start-up, entries/s (the dispatch alone).
    pub dispatch_rate: f64,
    /// Clean restart: opening the filled store, seconds.
    pub restart_seconds: f64,
    /// Open files after the fill, store open.
    pub open_files: Option<u64>,
    /// Memory maps after the fill.
    pub memory_maps: Option<u64>,
    /// Resident memory after the fill, bytes.
    pub resident_bytes: Option<u64>,
    /// Open files right after a restart.
    pub restart_open_files: Option<u64>,
    /// Files under the consume-queue folder.
    pub cq_files: u64,
    /// Bytes the consume-queue folder holds on disk (allocated blocks).
    pub cq_disk_bytes: u64,
}

fn config(spec: &CellSpec, concurrent: bool) -> StoreConfig {
    StoreConfig {
        consume_queue_store: spec.backend,
        message_index_enable: false,
        enable_build_consume_queue_concurrently: concurrent,
        ..StoreConfig::with_root(&spec.dir)
    }
}

/// Runs one cell in this process.
pub fn run_cell(spec: &CellSpec) -> anyhow::Result<CellReport> {
    anyhow::ensure!(spec.queues > 0, "--queues must be at least 1");
    std::fs::create_dir_all(&spec.dir)?;
    let store = MessageStore::open(config(spec, true))?;
    let topics = spec.queues.div_ceil(QUEUES_PER_TOPIC);
    let per_topic = spec.queues.div_ceil(topics);
    let body = vec![b's'; spec.size];
    let started = Instant::now();
    let mut last_line = started;
    for i in 0..spec.messages {
        let target = (i % spec.queues as u64) as usize;
        let (topic, queue) = (target % topics, target / topics);
        debug_assert!(queue < per_topic);
        let mut m = MessageToStore::new(format!("StoreBench-{topic}"), queue as i32, body.clone());
        m.properties.insert("TAGS", "TagA");
        store.put_message(&m)?;
        if last_line.elapsed() >= PROGRESS_EVERY {
            last_line = Instant::now();
            let p = ProcessStats::sample();
            eprintln!(
                "  [{} {} queues] put {i}/{}, reput behind {} B, open files {:?}, maps {:?}, rss {:?}",
                spec.backend.as_str(),
                spec.queues,
                spec.messages,
                store.dispatch_behind_bytes(),
                p.open_files,
                p.memory_maps,
                p.resident_bytes
            );
        }
    }
    anyhow::ensure!(
        store.wait_dispatched_to(store.max_phy_offset(), CATCH_UP),
        "reput did not reach the CommitLog end within {CATCH_UP:?}"
    );
    let append_rate = spec.messages as f64 / started.elapsed().as_secs_f64();
    let filled = ProcessStats::sample();
    store.shutdown()?;
    let (cq_files, cq_disk_bytes) = disk_use(&match spec.backend {
        CqBackend::File => config(spec, true).consume_queue_dir(),
        _ => config(spec, true).rocksdb_consume_queue_dir(),
    });
    let store = MessageStore::open(config(spec, true))?;
    let restart_seconds = store.startup_report().elapsed.as_secs_f64();
    let restarted = ProcessStats::sample();
    store.shutdown()?;
    let (n, secs) = rebuild(&spec.dir, spec.backend, true)?;
    anyhow::ensure!(
        n == spec.messages,
        "rebuild dispatched {n} of {}",
        spec.messages
    );
    Ok(CellReport {
        backend: spec.backend.as_str().to_owned(),
        queues: spec.queues,
        messages: spec.messages,
        append_rate,
        dispatch_rate: n as f64 / secs,
        restart_seconds,
        open_files: filled.open_files,
        memory_maps: filled.memory_maps,
        resident_bytes: filled.resident_bytes,
        restart_open_files: restarted.open_files,
        cq_files,
        cq_disk_bytes,
    })
}

/// The matrix.
#[derive(Debug, Clone)]
pub struct StorePlan {
    /// Queue counts.
    pub queue_counts: Vec<usize>,
    /// Backends.
    pub backends: Vec<CqBackend>,
    /// Messages per cell.
    pub messages: u64,
    /// Body size.
    pub size: usize,
    /// Parent of the cells' store folders.
    pub dir: Option<PathBuf>,
    /// A cell still running after this is killed and marked.
    pub cell_timeout: Duration,
}

/// One row of the matrix: a report, or why there is none.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StoreRow {
    /// Backend.
    pub backend: &'static str,
    /// Queues.
    pub queues: usize,
    /// The cell's figures when it finished.
    pub report: Option<CellReport>,
    /// Why it did not (timeout, exit status).
    pub failure: Option<String>,
}

/// Runs every cell in a child process (`exe store-cell ...`) and prints
/// the table.
pub fn run(exe: &Path, plan: &StorePlan) -> anyhow::Result<Vec<StoreRow>> {
    let mut rows = Vec::new();
    for &queues in &plan.queue_counts {
        for &backend in &plan.backends {
            let parent = match &plan.dir {
                Some(p) => tempfile::tempdir_in(p)?,
                None => tempfile::tempdir()?,
            };
            let out = parent.path().join("cell.json");
            eprintln!("== store {} at {queues} queues", backend.as_str());
            let mut child = std::process::Command::new(exe)
                .args(["store-cell", "--backend", backend.as_str()])
                .args(["--queues", &queues.to_string()])
                .args(["--messages", &plan.messages.to_string()])
                .args(["--size", &plan.size.to_string()])
                .arg("--dir")
                .arg(parent.path().join("store"))
                .arg("--out")
                .arg(&out)
                .spawn()?;
            let deadline = Instant::now() + plan.cell_timeout;
            let status = loop {
                if let Some(s) = child.try_wait()? {
                    break Some(s);
                }
                if Instant::now() >= deadline {
                    child.kill()?;
                    child.wait()?;
                    break None;
                }
                std::thread::sleep(Duration::from_millis(200));
            };
            let (report, failure) = match status {
                None => (
                    None,
                    Some(format!("did not finish in {:?}", plan.cell_timeout)),
                ),
                Some(s) if !s.success() => (None, Some(format!("cell exited with {s}"))),
                Some(_) => match std::fs::read(&out) {
                    Ok(b) => (Some(serde_json::from_slice(&b)?), None),
                    Err(e) => (None, Some(format!("no report: {e}"))),
                },
            };
            rows.push(StoreRow {
                backend: backend.as_str(),
                queues,
                report,
                failure,
            });
        }
    }
    print_table(plan, &rows);
    Ok(rows)
}

fn print_table(plan: &StorePlan, rows: &[StoreRow]) {
    println!(
        "{} messages of {} B per cell, one put thread, concurrent reput, index off",
        plan.messages, plan.size
    );
    println!(
        "{:>8} {:<8} {:>12} {:>12} {:>6} {:>10} {:>9} {:>8} {:>9} {:>9} {:>10}",
        "queues",
        "backend",
        "append/s",
        "dispatch/s",
        "ratio",
        "restart s",
        "open fds",
        "maps",
        "rss MiB",
        "cq files",
        "cq MiB"
    );
    for r in rows {
        let Some(c) = &r.report else {
            println!(
                "{:>8} {:<8} {}",
                r.queues,
                r.backend,
                r.failure.as_deref().unwrap_or("no report")
            );
            continue;
        };
        let base = rows
            .iter()
            .find(|b| b.queues == r.queues)
            .and_then(|b| b.report.as_ref())
            .map_or(c.dispatch_rate, |b| b.dispatch_rate);
        let opt = |v: Option<u64>| v.map_or("-".to_owned(), |v| v.to_string());
        println!(
            "{:>8} {:<8} {:>12.0} {:>12.0} {:>6.2} {:>10.3} {:>9} {:>8} {:>9.0} {:>9} {:>10.1}",
            c.queues,
            c.backend,
            c.append_rate,
            c.dispatch_rate,
            c.dispatch_rate / base,
            c.restart_seconds,
            opt(c.open_files),
            opt(c.memory_maps),
            c.resident_bytes.unwrap_or(0) as f64 / 1_048_576.0,
            c.cq_files,
            c.cq_disk_bytes as f64 / 1_048_576.0
        );
    }
}
