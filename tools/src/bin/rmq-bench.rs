//! `rmq-bench`: load over the real protocol with the broker's own client.
//!
//! * `rmq-bench produce --broker ADDR [--metrics ADDR] [--pid PID]`:
//!   producers and consumers against a running broker; a progress line each
//!   second and a final report (send rate and latency, end-to-end latency,
//!   consumer catch-up, dispatch lag from `/metrics`, the broker's CPU per
//!   message from `/proc/PID/stat`). `--protocol grpc --grpc ADDR` runs the
//!   same load over the 5.x gRPC API as the stock SDKs speak it (a
//!   connection, client id and Telemetry settings per client; SendMessage;
//!   simple consumers of `BenchGroup` doing ReceiveMessage + AckMessage);
//!   topics and offsets are still set up over remoting at `--broker`.
//! * `rmq-bench grpc-idle --grpc ADDR --pid PID --clients N`: N idle gRPC
//!   clients (connection, settings, one Heartbeat) held open: the broker's
//!   RSS and CPU per client, then how long each step of a new client takes.
//! * `rmq-bench ab`: the same load against a fresh broker per backend (and
//!   flush mode and queue count) in turn, side by side with ratios;
//!   `--plot FILE.svg` draws throughput and p99 against queue count.
//! * `rmq-bench ha`: the same load against a broker alone, an ASYNC_MASTER
//!   with a slave and a SYNC_MASTER with a slave: rate and latency side by
//!   side, replication throughput and the slave's catch-up.
//! * `rmq-bench store`: append + dispatch without the network for a matrix
//!   of queue counts: entries/s, restart time, open files, maps, RSS.
//! * `rmq-bench reput`: serial vs concurrent reput rebuilding one log.
//! * `rmq-bench meta --broker ADDR --pid PID`: topic creates one by one and
//!   in batches, then first heartbeats of many groups, against a running
//!   broker: creates/s and broker CPU per create at each checkpoint.
//! * `rmq-bench pop`: POP consumers against a fresh broker child per form
//!   of POP state (revive topic, RocksDB) in turn: pops/s, acks/s, broker
//!   CPU per message, redelivery lag, and the ratios.
//! * `rmq-bench timer`: timer messages through a fresh broker child per
//!   timer store (wheel, RocksDB) in turn: insert rate, disk, RSS, restart
//!   after kill -9, and due-delivery lag p50/p99/max.
//! * `rmq-bench lmq (--broker ADDR | --spawn file|rocksdb)`: light message
//!   queues: N messages each multi-dispatched into K of L LMQs
//!   (`INNER_MULTI_DISPATCH`); send rate and p99, dispatch rate (units/s),
//!   broker CPU per unit, RSS, open files, consume-queue and CommitLog
//!   disk, then `--sample` LMQs pulled back and compared exactly; with
//!   `--spawn ... --restart`, SIGTERM and start again on the same store:
//!   time to the port and to the first LMQ pull, idle RSS per LMQ.
//!   `rmq-bench lmq-table A.json B.json ...` makes the markdown table of
//!   several runs (`scripts/bench-lmq.sh` runs the A/B).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use rmq_common::config::CqBackend;
use rmq_common::FlushDiskType;
use rmq_tools::bench::wire::{Protocol, Wire};
use rmq_tools::bench::{
    ab, grpc_idle, ha, live, lmq, lmq_report, load, meta, pop, report, reput, routes, soak, store,
    timer, LoadOptions, LoadSpec,
};

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
        /// Broker address (remoting: topics, warm-up and offsets are set up
        /// here whatever the protocol).
        #[arg(long, default_value = "127.0.0.1:10911")]
        broker: SocketAddr,
        /// The broker's metrics endpoint, for dispatch lag.
        #[arg(long)]
        metrics: Option<SocketAddr>,
        /// What the producers and consumers speak.
        #[arg(long, value_enum, default_value_t = Protocol::Remoting)]
        protocol: Protocol,
        /// The broker's gRPC address (grpcServerPort), for --protocol grpc.
        #[arg(long)]
        grpc: Option<SocketAddr>,
        /// The broker's process id: its CPU over the run, per message.
        #[arg(long)]
        pid: Option<u32>,
        #[command(flatten)]
        load: LoadSpec,
        /// Also write the report as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Start a broker per backend in turn and compare them under one load.
    Ab {
        #[command(flatten)]
        load: LoadSpec,
        /// Backends, the first is the ratio base.
        #[arg(long, value_delimiter = ',', value_parser = store::parse_backend, default_value = "file,rocksdb")]
        backends: Vec<CqBackend>,
        /// Flush modes: async, sync.
        #[arg(long, value_delimiter = ',', value_parser = parse_flush, default_value = "async")]
        flush: Vec<FlushDiskType>,
        /// Total queue counts to run (topics of at most 1,000 queues);
        /// default: --topics x --queues.
        #[arg(long, value_delimiter = ',')]
        queue_counts: Vec<usize>,
        /// Also run each again open loop at this fraction of its rate.
        #[arg(long)]
        rate_fraction: Option<f64>,
        /// Parent folder of the temporary stores.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Draw throughput and p99 against queue count (SVG).
        #[arg(long)]
        plot: Option<PathBuf>,
        /// Also write every row as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// One broker whose reput feeds both backends (the first serving,
        /// the second its shadow), each backend's figures from that one run.
        #[arg(long)]
        live: bool,
        /// Fill one broker's log, then run the load open loop at 80 % of its
        /// rate alone and again while the second backend is added as a
        /// shadow and built from that log: what catching up costs the
        /// serving backend's dispatch.
        #[arg(long, conflicts_with = "live")]
        catch_up: bool,
    },
    /// A broker alone, an ASYNC_MASTER and a SYNC_MASTER with a slave each
    /// (in this process, fresh stores) under one load, side by side.
    Ha {
        #[command(flatten)]
        load: LoadSpec,
        /// Backends (master and slave alike).
        #[arg(long, value_delimiter = ',', value_parser = store::parse_backend, default_value = "file,rocksdb")]
        backends: Vec<CqBackend>,
        /// Flush modes: async, sync.
        #[arg(long, value_delimiter = ',', value_parser = parse_flush, default_value = "async")]
        flush: Vec<FlushDiskType>,
        /// Setups: alone, async, sync; the first is the ratio base.
        #[arg(long, value_delimiter = ',', value_parser = ha::Setup::parse, default_value = "alone,async,sync")]
        setups: Vec<ha::Setup>,
        /// Also write every row as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Append + dispatch without the network, per backend and queue count.
    Store {
        /// Queue counts.
        #[arg(long, value_delimiter = ',', default_value = "1,1000,10000,100000")]
        queue_counts: Vec<usize>,
        /// Backends.
        #[arg(long, value_delimiter = ',', value_parser = store::parse_backend, default_value = "file,rocksdb")]
        backends: Vec<CqBackend>,
        /// Messages per cell.
        #[arg(long, default_value_t = 2_000_000)]
        messages: u64,
        /// Body size, bytes.
        #[arg(long, default_value_t = 32)]
        size: usize,
        /// Parent folder of the temporary stores.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// A cell still running after this is stopped and marked.
        #[arg(long, value_parser = humantime::parse_duration, default_value = "30m")]
        cell_timeout: Duration,
        /// Also write every row as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// One store cell (run by `store` in a child process).
    #[command(hide = true)]
    StoreCell {
        #[command(flatten)]
        cell: store::CellSpec,
        /// Where to write the report.
        #[arg(long)]
        out: PathBuf,
    },
    /// Route lookups against a NameServer that knows tens of thousands of
    /// topics on several brokers, with re-registrations going on.
    Routes {
        #[command(flatten)]
        spec: routes::RoutesSpec,
        /// Also write the report as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Topic and group metadata at scale against a running broker.
    Meta {
        #[command(flatten)]
        spec: meta::MetaSpec,
        /// Also write the report as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// POP consumption with each form of POP state (a broker child
    /// process per form), side by side with ratios.
    Pop {
        #[command(flatten)]
        spec: pop::PopSpec,
        /// Also write the report as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Timer messages end to end, one timer store after the other (a
    /// broker child process each): insert rate, disk, memory, restart after
    /// kill -9 and due-delivery lag.
    Timer {
        #[command(flatten)]
        spec: timer::TimerSpec,
        /// Also write the report as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// A long run (an hour by default) at half the measured maximum rate
    /// with consumers, a broker restart every 10 minutes and a flip of the
    /// serving backend every 15: memory, open files, dispatch and consumer
    /// lag must stay flat and nothing acknowledged may be lost.
    Soak {
        #[command(flatten)]
        spec: soak::SoakSpec,
        /// Also write the report (with every sample) as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Idle 5.x gRPC clients against a running broker: its RSS and CPU per
    /// client, and how fast a new client is served meanwhile.
    GrpcIdle {
        #[command(flatten)]
        spec: grpc_idle::IdleSpec,
        /// Also write the report as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Light message queues: multi-dispatch load, dispatch rate, the
    /// broker's cost, an exact check of sampled LMQs, and (with --spawn
    /// --restart) a restart on the same store.
    Lmq {
        #[command(flatten)]
        spec: lmq::LmqSpec,
        /// Also write the report as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// The markdown table of `lmq --json` reports, one row each.
    LmqTable {
        /// The JSON files, in row order.
        #[arg(required = true)]
        files: Vec<PathBuf>,
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
        /// Also write the rows as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
}

fn parse_flush(s: &str) -> Result<FlushDiskType, String> {
    match s.to_ascii_lowercase().as_str() {
        "async" | "async_flush" => Ok(FlushDiskType::AsyncFlush),
        "sync" | "sync_flush" => Ok(FlushDiskType::SyncFlush),
        other => Err(format!("unknown flush mode {other:?} (async or sync)")),
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match cli.cmd {
        Cmd::Store {
            queue_counts,
            backends,
            messages,
            size,
            dir,
            cell_timeout,
            json,
        } => {
            let plan = store::StorePlan {
                queue_counts,
                backends,
                messages,
                size,
                dir,
                cell_timeout,
            };
            let rows = store::run(&std::env::current_exe()?, &plan)?;
            report::write_json_to(json.as_deref(), &rows)?;
            Ok(())
        }
        Cmd::StoreCell { cell, out } => {
            let r = store::run_cell(&cell)?;
            report::write_json(&out, &r)
        }
        Cmd::LmqTable { files } => {
            let mut rows = Vec::new();
            for f in &files {
                let text = std::fs::read_to_string(f)
                    .with_context(|| format!("reading {}", f.display()))?;
                let row: lmq_report::LmqReport = serde_json::from_str(&text)
                    .with_context(|| format!("{} is not an `lmq --json` report", f.display()))?;
                rows.push(row);
            }
            print!("{}", lmq_report::markdown(&rows));
            Ok(())
        }
        Cmd::Reput {
            messages,
            size,
            queues,
            json,
        } => {
            let rows = reput::run(messages, size, queues)?;
            report::write_json_to(json.as_deref(), &rows)?;
            Ok(())
        }
        cmd => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            rt.block_on(network(cmd))
        }
    }
}

async fn network(cmd: Cmd) -> anyhow::Result<()> {
    match cmd {
        Cmd::Produce {
            broker,
            metrics,
            protocol,
            grpc,
            pid,
            load: spec,
            json,
        } => {
            let opts = LoadOptions {
                wire: Wire::new(protocol, grpc).map_err(anyhow::Error::msg)?,
                pid,
            };
            let r = load::run_with(broker, metrics, &spec, &opts).await?;
            report::print(&r);
            report::write_json_to(json.as_deref(), &r)?;
            load::refuse_errors([&r])?;
        }
        Cmd::Ab {
            load: spec,
            backends,
            flush,
            queue_counts,
            rate_fraction,
            dir,
            plot,
            json,
            live,
            catch_up,
        } => {
            let plan = ab::AbPlan {
                spec,
                backends,
                flushes: flush,
                queue_counts,
                rate_fraction,
                dir,
                plot,
            };
            if catch_up {
                let rows = live::catch_up(&plan).await?;
                report::write_json_to(json.as_deref(), &rows)?;
            } else if live {
                let rows = live::run(&plan).await?;
                report::write_json_to(json.as_deref(), &rows)?;
                load::refuse_errors(rows.iter().map(|r| &r.report))?;
            } else {
                let rows = ab::run(&plan).await?;
                report::write_json_to(json.as_deref(), &rows)?;
                load::refuse_errors(rows.iter().map(|r| &r.report))?;
            }
        }
        Cmd::Ha {
            load: spec,
            backends,
            flush,
            setups,
            json,
        } => {
            let plan = ha::HaPlan {
                spec,
                backends,
                flushes: flush,
                setups,
            };
            let rows = ha::run(&plan).await?;
            report::write_json_to(json.as_deref(), &rows)?;
        }
        Cmd::Routes { spec, json } => {
            let r = routes::run(&spec).await?;
            report::write_json_to(json.as_deref(), &r)?;
        }
        Cmd::Meta { spec, json } => {
            let r = meta::run(&spec).await?;
            report::write_json_to(json.as_deref(), &r)?;
        }
        Cmd::Pop { spec, json } => {
            let r = pop::run(&spec).await?;
            report::write_json_to(json.as_deref(), &r)?;
        }
        Cmd::Timer { spec, json } => {
            let r = timer::run(&spec).await?;
            report::write_json_to(json.as_deref(), &r)?;
        }
        Cmd::Soak { spec, json } => {
            let r = soak::run(&spec).await?;
            soak::print(&r);
            report::write_json_to(json.as_deref(), &r)?;
            soak::require_sound(&r)?;
        }
        Cmd::Lmq { spec, json } => {
            let r = lmq::run(&spec).await?;
            report::write_json_to(json.as_deref(), &r)?;
            lmq::require_exact(&r.sample)?;
        }
        Cmd::GrpcIdle { spec, json } => {
            let r = grpc_idle::run(&spec).await?;
            grpc_idle::print(&r);
            report::write_json_to(json.as_deref(), &r)?;
        }
        _ => anyhow::bail!("not a network command"),
    }
    Ok(())
}
