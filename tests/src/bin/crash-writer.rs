//! Child process for the crash tests: opens a store and appends under
//! SYNC_FLUSH until killed, printing one `ACK` line per acknowledged message.
//!
//! Usage: `crash-writer write <root> <file|memory> <threads>`
//!        `crash-writer lmq <root> <backend> <threads>`: as `write`, with
//!        light message queues on; each message is also dispatched into
//!        three of [`LMQS`] LMQs, named at the end of its `ACK` line
//!        `crash-writer open-only <root> <file|memory>`
//!        `crash-writer flip <root> <serving> <shadow> <step>`: writes with
//!        4 threads, adds `<shadow>`, lets it catch up, then flips to it and
//!        kills itself with SIGKILL at flip step
//!        `<step>` (paused, flushed, persisted, swapped), after printing
//!        `AT <step>`.

use std::io::Write;
use std::sync::Arc;

use anyhow::{bail, Context};
use std::time::{Duration, Instant};

use rmq_common::config::CqBackend;
use rmq_common::constants::property;
use rmq_common::FlushDiskType;
use rmq_store::{FlipStep, MessageStore, PutStatus};
use rmq_tests::{crash_body, message, open_store, small_config};

/// A backend named on the command line.
fn backend_arg(name: &str) -> anyhow::Result<CqBackend> {
    Ok(match name {
        "file" => CqBackend::File,
        "rocksdb" => CqBackend::Rocksdb,
        "memory" => CqBackend::Memory,
        other => bail!("unknown backend {other}"),
    })
}

/// Adds the shadow once writes are flowing, waits for it, and flips,
/// aborting at `step`.
fn flip_and_crash(store: &MessageStore, shadow: CqBackend, step: FlipStep) -> Result<(), String> {
    // Some records first, so the shadow has a log to build from.
    let deadline = Instant::now() + Duration::from_secs(30);
    while store.max_phy_offset() < 64 * 1024 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    store.add_shadow(shadow).map_err(|e| e.to_string())?;
    if !store.wait_shadow_caught_up(Duration::from_secs(60)) {
        return Err("the shadow did not catch up".into());
    }
    store
        .serve_observed(shadow, &|at| {
            if at == step {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "AT {}", at.as_str());
                let _ = out.flush();
                // kill -9 of ourselves, at this very point of the flip.
                let pid = std::process::id().to_string();
                let _ = std::process::Command::new("kill")
                    .args(["-KILL", &pid])
                    .status();
                // The signal may take a moment to land; never go on.
                loop {
                    std::thread::park();
                }
            }
        })
        .map_err(|e| e.to_string())
}

/// LMQs the `lmq` mode spreads its messages over.
const LMQS: u64 = 50;

/// The three LMQs message `n` of writer `t` is dispatched into.
fn lmq_names(t: usize, n: u64) -> String {
    let a = n % LMQS;
    let b = (n + 17 + t as u64) % LMQS;
    let c = (n + 34 + 2 * t as u64) % LMQS;
    let mut names = vec![a, b, c];
    names.dedup();
    names
        .iter()
        .map(|q| format!("%LMQ%crash{q}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (mode, root, backend) = match args.as_slice() {
        [_, mode, root, backend, ..] => (mode.as_str(), root, backend.as_str()),
        _ => bail!("usage: crash-writer write|open-only <root> <file|memory> [threads]"),
    };
    let backend = backend_arg(backend)?;
    let mut config = small_config(std::path::Path::new(root), backend);
    config.mapped_file_size_commit_log_bytes = 256 * 1024;
    config.flush_disk_type = FlushDiskType::SyncFlush;
    let lmq = mode == "lmq";
    config.enable_lmq = lmq;
    config.enable_multi_dispatch = lmq;
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
    let threads: usize = if mode == "flip" {
        4
    } else {
        args.get(4).map(|t| t.parse()).transpose()?.unwrap_or(4)
    };
    if mode == "flip" {
        let (Some(shadow), Some(step)) = (args.get(4), args.get(5)) else {
            bail!("usage: crash-writer flip <root> <serving> <shadow> <step>");
        };
        let shadow = backend_arg(shadow)?;
        let Some(step) = FlipStep::ALL.into_iter().find(|s| s.as_str() == step) else {
            bail!("unknown flip step {step}");
        };
        let store = Arc::clone(&store);
        std::thread::spawn(move || {
            let outcome = flip_and_crash(&store, shadow, step);
            eprintln!("crash-writer: the flip ended without the crash: {outcome:?}");
            std::process::exit(2);
        });
    }
    let pid = std::process::id();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || -> anyhow::Result<()> {
                let q = t as i32;
                for n in 0u64.. {
                    let token = format!("p{pid}-t{t}-n{n}");
                    let len = 64 + (n as usize * 131) % 900;
                    let mut m = message("Crash", q, crash_body(&token, len));
                    let lmqs = if lmq { lmq_names(t, n) } else { String::new() };
                    if lmq {
                        m.properties
                            .insert(property::INNER_MULTI_DISPATCH, lmqs.clone());
                    }
                    let r = store.put_message(&m)?;
                    if r.status != PutStatus::PutOk {
                        // Not acknowledged: the parent expects nothing of it.
                        eprintln!("crash-writer: {token} not acknowledged: {:?}", r.status);
                        continue;
                    }
                    let a = &r.appended[0];
                    let mut out = std::io::stdout().lock();
                    writeln!(
                        out,
                        "ACK {q} {} {} {token} {len} {lmqs}",
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
