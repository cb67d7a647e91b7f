//! Child process for the crash tests: opens a store and appends under
//! SYNC_FLUSH until killed, printing one `ACK` line per acknowledged message.
//!
//! Usage: `crash-writer write <root> <file|memory> <threads>`
//!        `crash-writer open-only <root> <file|memory>`

use std::io::Write;
use std::sync::Arc;

use anyhow::{bail, Context};
use rmq_broker::store::PutStatus;
use rmq_common::config::CqBackend;
use rmq_common::FlushDiskType;
use rmq_tests::{crash_body, message, open_store, small_config};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (mode, root, backend) = match args.as_slice() {
        [_, mode, root, backend, ..] => (mode.as_str(), root, backend.as_str()),
        _ => bail!("usage: crash-writer write|open-only <root> <file|memory> [threads]"),
    };
    let backend = match backend {
        "file" => CqBackend::File,
        "rocksdb" => CqBackend::Rocksdb,
        "memory" => CqBackend::Memory,
        other => bail!("unknown backend {other}"),
    };
    let mut config = small_config(std::path::Path::new(root), backend);
    config.mapped_file_size_commit_log_bytes = 256 * 1024;
    config.flush_disk_type = FlushDiskType::SyncFlush;
    let store = match open_store(&config) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            eprintln!("crash-writer: cannot open store: {e}");
            std::process::exit(1);
        }
    };
    if mode == "open-only" {
        return Ok(());
    }
    let threads: usize = args.get(4).map(|t| t.parse()).transpose()?.unwrap_or(4);
    let pid = std::process::id();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || -> anyhow::Result<()> {
                let q = t as i32;
                for n in 0u64.. {
                    let token = format!("p{pid}-t{t}-n{n}");
                    let len = 64 + (n as usize * 131) % 900;
                    let r = store.put_message(&message("Crash", q, crash_body(&token, len)))?;
                    if r.status != PutStatus::PutOk {
                        // Not acknowledged: the parent expects nothing of it.
                        eprintln!("crash-writer: {token} not acknowledged: {:?}", r.status);
                        continue;
                    }
                    let a = &r.appended[0];
                    let mut out = std::io::stdout().lock();
                    writeln!(
                        out,
                        "ACK {q} {} {} {token} {len}",
                        a.queue_offset, a.phy_offset
                    )?;
                    out.flush()?;
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join()
            .map_err(|_| anyhow::anyhow!("writer thread panicked"))?
            .context("writer")?;
    }
    Ok(())
}
