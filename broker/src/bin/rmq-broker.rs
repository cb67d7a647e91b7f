//! `rmq-broker`: runs a broker with its embedded NameServer, a NameServer
//! alone (`--namesrv-only`, with a controller beside it when the file says
//! `enableControllerInNamesrv=true`), or a controller replica alone
//! (`--controller-only`, Apache's `mqcontroller -c controller.conf`).

use std::net::SocketAddr;
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
    /// Run only a NameServer on `namesrvListenPort`; the file may be
    /// Apache RocketMQ's namesrv.conf as it is (`listenPort`,
    /// `kvConfigPath`, `enableControllerInNamesrv`...).
    #[arg(long, conflicts_with = "controller_only")]
    namesrv_only: bool,
    /// Run only a controller replica, configured by Apache RocketMQ's
    /// controller keys (`controllerDLegerPeers`, `controllerDLegerSelfId`,
    /// ...; other keys are ignored, as Apache's `mqcontroller` does).
    #[arg(long)]
    controller_only: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.controller_only {
        return run_controller(&args).await;
    }
    let sources = Sources {
        file: args.config.as_deref(),
        env: std::env::vars().collect(),
        overrides: args.set.clone(),
    };
    let loaded = if args.namesrv_only {
        Settings::load_namesrv(&sources)
    } else {
        Settings::load(&sources)
    };
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
        if let Some(c) = ns.controller() {
            print_controller(c, ns.controller_metrics_addr());
        }
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

/// `--controller-only`: the replica the file and `--set` describe, until
/// SIGTERM or Ctrl-C.
async fn run_controller(args: &Args) -> anyhow::Result<()> {
    let loaded = rmq_broker::controller::load(args.config.as_deref(), &args.set);
    let directive = rmq_broker::logging::init_with("info");
    let config = loaded.context("invalid controller configuration")?;
    tracing::info!(log = %directive, "logging configured");
    let controller = rmq_broker::controller::StandaloneController::start(&config)
        .await
        .context("controller failed to start")?;
    print_controller(controller.handle(), controller.metrics_addr());
    wait_for_signal().await;
    println!("shutting down");
    controller.shutdown().await;
    Ok(())
}

fn print_controller(c: &rmq_controller::server::ControllerHandle, metrics: Option<SocketAddr>) {
    if let Some(m) = metrics {
        println!("rmq controller metrics at http://{m}/metrics");
    }
    let s = c.service().settings();
    println!(
        "rmq controller {} listening on {} (group {}, peers {})",
        s.name_of(s.id),
        c.addr,
        s.group,
        s.peers
            .iter()
            .map(|(id, addr)| format!("{}-{addr}", s.name_of(*id)))
            .collect::<Vec<_>>()
            .join(";"),
    );
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
