//! `rmq-broker`: runs a broker with its embedded NameServer, or a NameServer
//! alone (`--namesrv-only`).

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use rmq_broker::broker::Broker;
use rmq_broker::config::{Settings, Sources};

// Every request allocates its header map, strings and buffers on one
// tokio worker and frees them on another; glibc's allocator spent ~20 % of
// the broker's CPU there (arena locks, consolidation) under unbatched sends.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A RocketMQ-compatible broker.
#[derive(Debug, Parser)]
#[command(name = "rmq-broker", version)]
struct Args {
    /// broker.conf (properties) or .toml file.
    #[arg(long, short = 'c')]
    config: Option<PathBuf>,
    /// Override one key, e.g. `--set listenPort=10912` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Run only a NameServer on `namesrvListenPort`.
    #[arg(long)]
    namesrv_only: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let loaded = Settings::load(&Sources {
        file: args.config.as_deref(),
        env: std::env::vars().collect(),
        overrides: args.set.clone(),
    });
    let level = loaded
        .as_ref()
        .map_or("info", |s| s.broker.log_level.as_str())
        .to_owned();
    let directive = rmq_broker::logging::init_with(&level);
    let settings = loaded.context("invalid configuration")?;
    tracing::info!(log = %directive, "logging configured");
    settings.warn_unused();
    if args.namesrv_only {
        let ns = rmq_broker::broker::run_namesrv_only(&settings).await?;
        println!("rmq NameServer listening on {}", ns.addr());
        wait_for_signal().await;
        ns.shutdown().await;
        return Ok(());
    }
    let broker = Broker::start(settings)
        .await
        .context("broker failed to start")?;
    println!(
        "rmq broker {} listening on {} (NameServer {}), consume queue backend: {}, store: {}",
        broker.context().settings.broker.broker_name,
        broker.addr(),
        broker
            .namesrv_addr()
            .map_or_else(|| "external".to_owned(), |a| a.to_string()),
        broker.context().store.consume_queue().backend(),
        broker
            .context()
            .settings
            .store
            .store_path_root_dir
            .display(),
    );
    wait_for_signal().await;
    println!("shutting down");
    broker.shutdown().await;
    Ok(())
}

async fn wait_for_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "no SIGTERM handler; only Ctrl-C stops the broker");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
