#![allow(clippy::expect_used, clippy::unwrap_used)]
//! Consume-queue scaling run (a program, not a criterion bench): how each
//! backend copes as the number of queues grows.
//!
//! For every queue count and backend, in a fresh temp folder: dispatch the
//! entries as the reput would (`put` batches of 4,096 units round-robin over
//! the queues, CommitLog offsets increasing), flush, and report entries/s;
//! sample this process's open descriptors, memory maps and RSS; close, then
//! time a restart: open again and read every queue's max offset.
//!
//! Both backends run with the default config: 300,000-unit files and
//! `maxMappedConsumeQueueFiles` = 16,384 for the file backend (under the
//! default `vm.max_map_count` of 65,530), so past 16,384 queues it unmaps and
//! remaps files as the round-robin moves on.
//!
//! Run: `cargo bench -p rmq-store --bench cq_scale [-- QUEUES...]`.
//! Environment: `CQ_SCALE_QUEUES` (comma list, default 1,1000,10000,100000),
//! `CQ_SCALE_ENTRIES` (default 2,000,000), `CQ_SCALE_BACKENDS` (default
//! file,rocksdb), `CQ_SCALE_FILL_CAP_SECS` (default 600: a fill still running
//! then stops, and its row is marked capped), `CQ_SCALE_DIR` (parent of the
//! temp folders), `CQ_SCALE_JSON` (output path, default
//! `<target>/cq_scale.json`). Without `--bench` (under `cargo test`) only a
//! smoke configuration runs and nothing is written outside the temp folder.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmq_common::config::CqBackend;
use rmq_common::cq::{ConsumeQueueStore, CqPut, CqStats};
use rmq_common::StoreConfig;
use rmq_store_file::FileConsumeQueueStore;
use rmq_store_rocks::RocksConsumeQueueStore;
use serde_json::json;

/// Units per `put`, as one reput dispatch batch.
const DISPATCH_BATCH: usize = 4_096;
/// Record size the fake CommitLog offsets advance by, bytes.
const MSG_SIZE: i32 = 1_024;
/// Queues per topic, RocketMQ's usual write/read queue count.
const QUEUES_PER_TOPIC: usize = 8;
const DEFAULT_QUEUES: [usize; 4] = [1, 1_000, 10_000, 100_000];
const DEFAULT_ENTRIES: u64 = 2_000_000;
const DEFAULT_FILL_CAP: Duration = Duration::from_secs(600);
const SMOKE_QUEUES: [usize; 2] = [1, 100];
const SMOKE_ENTRIES: u64 = 20_000;

/// What one run does.
struct Plan {
    queues: Vec<usize>,
    backends: Vec<CqBackend>,
    entries: u64,
    fill_cap: Duration,
    temp_parent: PathBuf,
    json: Option<PathBuf>,
}

fn env_list(name: &str) -> Option<Vec<String>> {
    let v = std::env::var(name).ok()?;
    Some(
        v.split(',')
            .map(|s| s.trim().replace('_', ""))
            .filter(|s| !s.is_empty())
            .collect(),
    )
}

fn plan() -> Plan {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench");
    let arg_queues: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let queues = if !bench {
        SMOKE_QUEUES.to_vec()
    } else if !arg_queues.is_empty() {
        arg_queues
    } else if let Some(list) = env_list("CQ_SCALE_QUEUES") {
        list.iter()
            .map(|s| s.parse().expect("CQ_SCALE_QUEUES: comma-separated counts"))
            .collect()
    } else {
        DEFAULT_QUEUES.to_vec()
    };
    let entries = if bench {
        std::env::var("CQ_SCALE_ENTRIES")
            .ok()
            .map(|v| {
                v.replace('_', "")
                    .parse()
                    .expect("CQ_SCALE_ENTRIES: a count")
            })
            .unwrap_or(DEFAULT_ENTRIES)
    } else {
        SMOKE_ENTRIES
    };
    let backends = env_list("CQ_SCALE_BACKENDS")
        .map(|l| {
            l.iter()
                .map(|b| match b.as_str() {
                    "file" => CqBackend::File,
                    "rocksdb" => CqBackend::Rocksdb,
                    other => panic!("CQ_SCALE_BACKENDS: unknown backend {other}"),
                })
                .collect()
        })
        .unwrap_or_else(|| vec![CqBackend::File, CqBackend::Rocksdb]);
    let fill_cap = std::env::var("CQ_SCALE_FILL_CAP_SECS")
        .ok()
        .map(|v| Duration::from_secs(v.parse().expect("CQ_SCALE_FILL_CAP_SECS: seconds")))
        .unwrap_or(DEFAULT_FILL_CAP);
    let temp_parent = std::env::var_os("CQ_SCALE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let json = bench.then(|| {
        std::env::var_os("CQ_SCALE_JSON")
            .map(PathBuf::from)
            .unwrap_or_else(default_json_path)
    });
    Plan {
        queues,
        backends,
        entries,
        fill_cap,
        temp_parent,
        json,
    }
}

/// `<target>/cq_scale.json`: the bench binary is `<target>/release/deps/cq_scale-*`.
fn default_json_path() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.parent()?.to_path_buf()))
        .unwrap_or_else(|| PathBuf::from("target"))
        .join("cq_scale.json")
}

fn open(backend: CqBackend, root: &Path) -> Box<dyn ConsumeQueueStore> {
    let config = StoreConfig {
        consume_queue_store: backend,
        ..StoreConfig::with_root(root)
    };
    match backend {
        CqBackend::File => Box::new(FileConsumeQueueStore::open(&config).expect("open file cq")),
        CqBackend::Rocksdb => {
            Box::new(RocksConsumeQueueStore::open(&config).expect("open rocksdb cq"))
        }
        CqBackend::Memory => unreachable!("the scaling run measures durable backends"),
    }
}

/// This process, as the kernel sees it.
#[derive(Debug, Clone, Copy, Default)]
struct Proc {
    fds: u64,
    maps: u64,
    rss_kib: u64,
}

fn proc_sample() -> Proc {
    let fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64);
    let maps = std::fs::read_to_string("/proc/self/maps").map_or(0, |m| m.lines().count() as u64);
    let rss_kib = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0);
    Proc { fds, maps, rss_kib }
}

/// Bytes the folder occupies on disk (allocated blocks, so sparse files
/// count for what they hold).
fn disk_bytes(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => m.blocks() * 512 + disk_bytes(&e.path()),
            Ok(m) => m.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}

/// Units as the reput makes them: entry `i` goes to queue `i % queues` at
/// queue offset `i / queues`, CommitLog offset `i * MSG_SIZE`.
struct Dispatch {
    topics: Vec<String>,
    queues: u64,
}

impl Dispatch {
    fn new(queues: usize) -> Self {
        Self {
            topics: (0..queues.div_ceil(QUEUES_PER_TOPIC))
                .map(|t| format!("ScaleTopic{t}"))
                .collect(),
            queues: queues as u64,
        }
    }

    fn key(&self, q: u64) -> (&str, i32) {
        let q = q as usize;
        (
            &self.topics[q / QUEUES_PER_TOPIC],
            (q % QUEUES_PER_TOPIC) as i32,
        )
    }

    fn batch(&self, from: u64, to: u64) -> Vec<CqPut> {
        (from..to)
            .map(|i| {
                let (topic, queue_id) = self.key(i % self.queues);
                let phy = i as i64 * i64::from(MSG_SIZE);
                CqPut {
                    topic: topic.to_owned(),
                    queue_id,
                    queue_offset: (i / self.queues) as i64,
                    phy_offset: phy,
                    size: MSG_SIZE,
                    tags_code: (i % 97) as i64,
                    store_timestamp: 1_700_000_000_000 + phy / 1_000_000,
                }
            })
            .collect()
    }

    /// Units queue `q` holds after `n` entries.
    fn expected_max(&self, q: u64, n: u64) -> i64 {
        (n / self.queues + u64::from(q < n % self.queues)) as i64
    }
}

/// One (queues, backend) row.
#[derive(Debug)]
struct Row {
    queues: usize,
    backend: CqBackend,
    /// Entries written (fewer than planned if the fill was capped).
    entries: u64,
    capped: bool,
    put: Duration,
    flush: Duration,
    close: Duration,
    reopen: Duration,
    scan_max: Duration,
    before: Proc,
    after_fill: Proc,
    after_reopen: Proc,
    stats: CqStats,
    disk_bytes: u64,
}

impl Row {
    fn entries_per_sec(&self) -> f64 {
        self.entries as f64 / (self.put + self.flush).as_secs_f64()
    }

    /// Open plus reading every queue's max offset.
    fn restart(&self) -> Duration {
        self.reopen + self.scan_max
    }
}

fn run_one(plan: &Plan, queues: usize, backend: CqBackend) -> Row {
    let dir = tempfile::Builder::new()
        .prefix("cq_scale")
        .tempdir_in(&plan.temp_parent)
        .expect("tempdir");
    let gen = Dispatch::new(queues);
    let before = proc_sample();
    let store = open(backend, dir.path());

    let deadline = Instant::now() + plan.fill_cap;
    let mut put = Duration::ZERO;
    let mut done = 0u64;
    let mut capped = false;
    while done < plan.entries {
        if Instant::now() >= deadline {
            capped = true;
            break;
        }
        let end = (done + DISPATCH_BATCH as u64).min(plan.entries);
        // Building the batch is the reput's work, not the store's.
        let batch = gen.batch(done, end);
        let dispatched_to = end as i64 * i64::from(MSG_SIZE);
        let start = Instant::now();
        store.put(&batch, dispatched_to).expect("put");
        put += start.elapsed();
        done = end;
    }
    let start = Instant::now();
    store.flush().expect("flush");
    let flush = start.elapsed();
    let after_fill = proc_sample();
    let stats = store.stats();

    let start = Instant::now();
    store.close().expect("close");
    drop(store);
    let close = start.elapsed();
    let disk = disk_bytes(dir.path());

    let start = Instant::now();
    let store = open(backend, dir.path());
    let reopen = start.elapsed();
    let start = Instant::now();
    for q in 0..queues as u64 {
        let (topic, queue_id) = gen.key(q);
        let max = store.max_offset(topic, queue_id).expect("max offset");
        assert_eq!(
            max,
            gen.expected_max(q, done),
            "{backend} max offset of {topic}/{queue_id} after restart"
        );
    }
    let scan_max = start.elapsed();
    let after_reopen = proc_sample();
    store.close().expect("close");
    drop(store);

    Row {
        queues,
        backend,
        entries: done,
        capped,
        put,
        flush,
        close,
        reopen,
        scan_max,
        before,
        after_fill,
        after_reopen,
        stats,
        disk_bytes: disk,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn ratio(num: f64, den: f64) -> String {
    if den > 0.0 {
        format!("{:.3}", num / den)
    } else {
        "-".into()
    }
}

fn table(rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:>7} {:<8} {:>9} {:>11} {:>9} {:>10} {:>9} {:>7} {:>7} {:>8} {:>8} {:>8} {:>11}",
        "queues",
        "backend",
        "entries",
        "entries/s",
        "flush_ms",
        "restart_ms",
        "close_ms",
        "fds",
        "maps",
        "rss_MiB",
        "disk_MiB",
        "r/f e/s",
        "r/f restart"
    );
    for r in rows {
        // The ratio sits on the rocksdb row, against the file row of the
        // same queue count.
        let file = rows
            .iter()
            .find(|f| f.queues == r.queues && f.backend == CqBackend::File);
        let (eps_ratio, restart_ratio) = match (r.backend, file) {
            (CqBackend::Rocksdb, Some(f)) => (
                ratio(r.entries_per_sec(), f.entries_per_sec()),
                ratio(ms(r.restart()), ms(f.restart())),
            ),
            _ => (String::new(), String::new()),
        };
        let _ = writeln!(
            s,
            "{:>7} {:<8} {:>9} {:>11.0} {:>9.1} {:>10.1} {:>9.1} {:>7} {:>7} {:>8.0} {:>8.1} {:>8} {:>11}",
            r.queues,
            r.backend.as_str(),
            format!("{}{}", r.entries, if r.capped { "*" } else { "" }),
            r.entries_per_sec(),
            ms(r.flush),
            ms(r.restart()),
            ms(r.close),
            r.after_fill.fds,
            r.after_fill.maps,
            r.after_fill.rss_kib as f64 / 1024.0,
            r.disk_bytes as f64 / (1024.0 * 1024.0),
            eps_ratio,
            restart_ratio
        );
    }
    if rows.iter().any(|r| r.capped) {
        let _ = writeln!(
            s,
            "* fill capped by CQ_SCALE_FILL_CAP_SECS; rate is over the entries written"
        );
    }
    s
}

fn to_json(plan: &Plan, rows: &[Row]) -> serde_json::Value {
    let proc = |p: &Proc| json!({"fds": p.fds, "maps": p.maps, "rss_kib": p.rss_kib});
    let rows: Vec<_> = rows
        .iter()
        .map(|r| {
            let file = rows
                .iter()
                .find(|f| f.queues == r.queues && f.backend == CqBackend::File);
            let (eps_ratio, restart_ratio) = match (r.backend, file) {
                (CqBackend::Rocksdb, Some(f)) => (
                    json!(r.entries_per_sec() / f.entries_per_sec()),
                    json!(ms(r.restart()) / ms(f.restart())),
                ),
                _ => (json!(null), json!(null)),
            };
            json!({
                "queues": r.queues,
                "backend": r.backend.as_str(),
                "entries": r.entries,
                "capped": r.capped,
                "entries_per_sec": r.entries_per_sec(),
                "put_ms": ms(r.put),
                "flush_ms": ms(r.flush),
                "close_ms": ms(r.close),
                "reopen_ms": ms(r.reopen),
                "scan_max_offset_ms": ms(r.scan_max),
                "restart_ms": ms(r.restart()),
                "proc_before": proc(&r.before),
                "proc_after_fill": proc(&r.after_fill),
                "proc_after_reopen": proc(&r.after_reopen),
                "store_stats": {
                    "queues": r.stats.queues,
                    "open_files": r.stats.open_files,
                    "mapped_files": r.stats.mapped_files,
                    "mapped_bytes": r.stats.mapped_bytes,
                    "memtable_bytes": r.stats.memtable_bytes,
                    "pending_compaction_bytes": r.stats.pending_compaction_bytes,
                    "block_cache_usage_bytes": r.stats.block_cache_usage_bytes,
                    "write_stall_micros": r.stats.write_stall_micros,
                },
                "disk_bytes": r.disk_bytes,
                "ratio_rocksdb_over_file_entries_per_sec": eps_ratio,
                "ratio_rocksdb_over_file_restart": restart_ratio,
            })
        })
        .collect();
    json!({
        "entries_planned": plan.entries,
        "dispatch_batch": DISPATCH_BATCH,
        "fill_cap_secs": plan.fill_cap.as_secs(),
        "max_mapped_consume_queue_files": StoreConfig::default().max_mapped_consume_queue_files,
        "mapped_file_size_consume_queue_bytes": StoreConfig::default().mapped_file_size_consume_queue_bytes,
        "vm_max_map_count": std::fs::read_to_string("/proc/sys/vm/max_map_count")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok()),
        "rows": rows,
    })
}

fn main() {
    let plan = plan();
    println!(
        "cq_scale: {} entries, queues {:?}, backends {:?}, batches of {DISPATCH_BATCH}, fill cap {:?}",
        plan.entries, plan.queues, plan.backends, plan.fill_cap
    );
    let mut rows = Vec::new();
    for &queues in &plan.queues {
        for &backend in &plan.backends {
            let row = run_one(&plan, queues, backend);
            println!(
                "  {queues:>7} {:<8} {:>10.0} entries/s, restart {:.1} ms{}",
                backend.as_str(),
                row.entries_per_sec(),
                ms(row.restart()),
                if row.capped { " (capped)" } else { "" }
            );
            rows.push(row);
        }
    }
    print!("\n{}", table(&rows));
    if let Some(path) = &plan.json {
        let text = serde_json::to_string_pretty(&to_json(&plan, &rows)).expect("json");
        std::fs::write(path, text).expect("write json");
        println!("wrote {}", path.display());
    }
}
