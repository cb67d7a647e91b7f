//! `rmq-bench reput`: one CommitLog of small messages, rebuilt into each
//! backend's consume queue by the serial and the concurrent reput.

use std::path::Path;

use rmq_common::config::CqBackend;
use rmq_common::message::MessageToStore;
use rmq_common::StoreConfig;

use rmq_store::MessageStore;

/// Deletes `root`'s consume queues (both backends) so the next open
/// dispatches the whole CommitLog again.
pub fn drop_consume_queues(config: &StoreConfig) -> std::io::Result<()> {
    for dir in [
        config.consume_queue_dir(),
        config.rocksdb_consume_queue_dir(),
    ] {
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
    }
    Ok(())
}

/// Rebuilds `root`'s consume queue for `backend` with the chosen reput and
/// returns (records dispatched, seconds the dispatch took, without the
/// CommitLog recovery before it).
pub fn rebuild(root: &Path, backend: CqBackend, concurrent: bool) -> anyhow::Result<(u64, f64)> {
    let config = StoreConfig {
        consume_queue_store: backend,
        enable_build_consume_queue_concurrently: concurrent,
        message_index_enable: false,
        ..StoreConfig::with_root(root)
    };
    drop_consume_queues(&config)?;
    let store = MessageStore::open(config)?;
    let report = store.startup_report().clone();
    store.shutdown()?;
    Ok((
        report.redispatched_records,
        report.redispatch_elapsed.as_secs_f64(),
    ))
}

/// One backend's serial and concurrent rebuild.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReputRow {
    /// Backend.
    pub backend: &'static str,
    /// Serial reput, entries/s.
    pub serial_rate: f64,
    /// Concurrent reput, entries/s.
    pub concurrent_rate: f64,
    /// concurrent / serial.
    pub ratio: f64,
}

/// Writes the log, rebuilds it per backend both ways and prints the table.
pub fn run(messages: usize, size: usize, queues: i32) -> anyhow::Result<Vec<ReputRow>> {
    anyhow::ensure!(queues > 0, "--queues must be at least 1");
    let dir = tempfile::tempdir()?;
    let config = StoreConfig {
        message_index_enable: false,
        ..StoreConfig::with_root(dir.path())
    };
    let store = MessageStore::open(config)?;
    let body = vec![b'r'; size];
    for i in 0..messages {
        let mut m = MessageToStore::new("ReputBench", i as i32 % queues, body.clone());
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
    let mut rows = Vec::new();
    for backend in [CqBackend::File, CqBackend::Rocksdb] {
        let (n, serial) = rebuild(dir.path(), backend, false)?;
        let (m, concurrent) = rebuild(dir.path(), backend, true)?;
        anyhow::ensure!(
            n == m && n == messages as u64,
            "dispatched {n} and {m} of {messages}"
        );
        let row = ReputRow {
            backend: backend.as_str(),
            serial_rate: n as f64 / serial,
            concurrent_rate: m as f64 / concurrent,
            ratio: serial / concurrent,
        };
        println!(
            "{:<8} {:<11} {:>12.0} {:>9.3} {:>7}",
            row.backend, "serial", row.serial_rate, serial, "1.00"
        );
        println!(
            "{:<8} {:<11} {:>12.0} {:>9.3} {:>7.2}",
            row.backend, "concurrent", row.concurrent_rate, concurrent, row.ratio
        );
        rows.push(row);
    }
    Ok(rows)
}
