//! `rmq-bench meta`: topic and group metadata at scale, against a running
//! broker (this one, or Apache RocketMQ's). Three phases:
//!
//! 1. single creates: UPDATE_AND_CREATE_TOPIC one at a time (from
//!    `--concurrency` connections) up to the largest of `--topics`; at each
//!    checkpoint it prints the rate and the broker's CPU per create over the
//!    last `--window` creates before it, so the cost at 1,000 topics and at
//!    100,000 compare within one run;
//! 2. batch creates: `--batch-topics` more in UPDATE_AND_CREATE_TOPIC_LIST
//!    requests of `--batch`, and `--batch-groups` groups in
//!    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST ones (RocketMQ 5.x's codes; a
//!    broker without them is reported, not failed);
//! 3. first heartbeats: `--clients` clients each send one HEART_BEAT naming
//!    their share of `--groups` new consumer groups (the broker creates each
//!    group and its retry topic), while a probe asks GET_MAX_OFFSET every
//!    5 ms: how long each heartbeat took to answer and the probe's worst
//!    latency meanwhile.
//!
//! Broker CPU is utime + stime of `--pid` from /proc (the broker process;
//! ours has its NameServer inside).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use rmq_client::{self as sdk, RemotingClient};
use rmq_common::remoting::body::{
    ConsumerData, CreateTopicList, HeartbeatData, SubscriptionData, TopicConfig,
};
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};

use crate::admin::topic_create_request;

/// What to run.
#[derive(Debug, Clone, clap::Args)]
pub struct MetaSpec {
    /// Broker address.
    #[arg(long, default_value = "127.0.0.1:10911")]
    pub broker: SocketAddr,
    /// The broker's process id, for its CPU time.
    #[arg(long)]
    pub pid: Option<u32>,
    /// Checkpoints of the single creates; they go on up to the largest.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
    pub topics: Vec<usize>,
    /// Creates measured before each checkpoint.
    #[arg(long, default_value_t = 1000)]
    pub window: usize,
    /// Queues of each topic (read and write).
    #[arg(long, default_value_t = 8)]
    pub queues: i32,
    /// Connections creating at once.
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
    /// The single creates stop after this long (a broker whose creates
    /// slow down with the table may not reach the last checkpoint): the
    /// report says how far they got.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "20m")]
    pub single_budget: Duration,
    /// Topics per UPDATE_AND_CREATE_TOPIC_LIST (0: no batch phase).
    #[arg(long, default_value_t = 1000)]
    pub batch: usize,
    /// Topics created in batches.
    #[arg(long, default_value_t = 100_000)]
    pub batch_topics: usize,
    /// Subscription groups created in batches of `--batch`
    /// (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, RocketMQ 5.x's code).
    #[arg(long, default_value_t = 100_000)]
    pub batch_groups: usize,
    /// New consumer groups in the first heartbeats (0: no heartbeat phase).
    #[arg(long, default_value_t = 3000)]
    pub groups: usize,
    /// Clients the groups are shared between, one heartbeat each.
    #[arg(long, default_value_t = 2)]
    pub clients: usize,
    /// Prefix of every name this run creates (a fresh one per run keeps
    /// runs apart on one broker).
    #[arg(long, default_value = "MetaBench")]
    pub prefix: String,
}

/// The rate and CPU over the creates just before a checkpoint.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Checkpoint {
    /// Topics this run had created at the checkpoint.
    pub topics: usize,
    /// Creates measured.
    pub window: usize,
    /// Their wall time, s.
    pub seconds: f64,
    /// Creates per second.
    pub creates_per_s: f64,
    /// Broker CPU per create, µs (when `--pid` is given).
    pub cpu_us_per_create: Option<f64>,
}

/// A phase's totals.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Phase {
    /// Entries created.
    pub created: usize,
    /// Wall time, s.
    pub seconds: f64,
    /// Creates per second.
    pub creates_per_s: f64,
    /// Broker CPU per create, µs.
    pub cpu_us_per_create: Option<f64>,
    /// Why the phase stopped early, if it did.
    pub refused: Option<String>,
}

/// The first heartbeats and the probe beside them.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Heartbeats {
    /// New groups in all.
    pub groups: usize,
    /// Answer time of each client's heartbeat, ms (`None`: it failed).
    pub answer_ms: Vec<Option<f64>>,
    /// Why heartbeats failed.
    pub failures: Vec<String>,
    /// The probe's worst latency while they ran, ms.
    pub probe_max_ms: f64,
    /// Probe requests answered meanwhile.
    pub probes: usize,
    /// Broker CPU over the phase, ms.
    pub cpu_ms: Option<f64>,
}

/// The run's result.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MetaReport {
    /// Single creates at each checkpoint.
    pub checkpoints: Vec<Checkpoint>,
    /// All single creates.
    pub single: Phase,
    /// Batch creates.
    pub batch: Option<Phase>,
    /// Batch group creates.
    pub batch_groups: Option<Phase>,
    /// First heartbeats.
    pub heartbeats: Option<Heartbeats>,
}

/// utime + stime of `pid`, seconds.
fn cpu_seconds(pid: Option<u32>) -> Option<f64> {
    rmq_broker::metrics::process::cpu_seconds_of(pid?)
}

fn cpu_us_per(before: Option<f64>, after: Option<f64>, n: usize) -> Option<f64> {
    Some((after? - before?) * 1e6 / n.max(1) as f64)
}

/// How long one request may take before the run counts it as failed.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a first heartbeat may take (a broker that writes its whole
/// tables per new group takes long with thousands of them).
const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(300);

async fn invoke(client: &RemotingClient, req: RemotingCommand) -> anyhow::Result<RemotingCommand> {
    invoke_within(client, req, REQUEST_TIMEOUT).await
}

async fn invoke_within(
    client: &RemotingClient,
    req: RemotingCommand,
    timeout: Duration,
) -> anyhow::Result<RemotingCommand> {
    let resp = client.invoke(req, timeout).await?;
    if resp.code != i32::from(ResponseCode::Success) {
        anyhow::bail!("code {}: {}", resp.code, resp.remark.unwrap_or_default());
    }
    Ok(resp)
}

/// Creates topics `from..to` one by one from `concurrency` connections,
/// none started after `deadline`; returns how many were created.
async fn create_range(
    clients: &[RemotingClient],
    spec: &MetaSpec,
    from: usize,
    to: usize,
    deadline: Instant,
) -> anyhow::Result<usize> {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(from));
    let created = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let work = clients.iter().map(|client| {
        let (next, created) = (Arc::clone(&next), Arc::clone(&created));
        async move {
            loop {
                if Instant::now() >= deadline {
                    return anyhow::Ok(());
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= to {
                    return anyhow::Ok(());
                }
                let name = format!("{}-t{i}", spec.prefix);
                invoke(client, topic_create_request(&name, spec.queues, 6))
                    .await
                    .with_context(|| format!("create {name}"))?;
                created.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    for r in futures::future::join_all(work).await {
        r?;
    }
    Ok(created.load(Ordering::Relaxed))
}

async fn single_phase(
    spec: &MetaSpec,
    clients: &[RemotingClient],
) -> anyhow::Result<(Vec<Checkpoint>, Phase)> {
    let mut checkpoints: Vec<usize> = spec.topics.clone();
    checkpoints.sort_unstable();
    checkpoints.dedup();
    let (start, cpu_start) = (Instant::now(), cpu_seconds(spec.pid));
    let deadline = start + spec.single_budget;
    let mut done = 0;
    let mut rows = Vec::new();
    let mut refused = None;
    for at in checkpoints {
        let window_from = at.saturating_sub(spec.window).max(done);
        done += create_range(clients, spec, done, window_from, deadline).await?;
        let (t0, c0) = (Instant::now(), cpu_seconds(spec.pid));
        let n = create_range(clients, spec, done, at, deadline).await?;
        let secs = t0.elapsed().as_secs_f64();
        done += n;
        if done < at {
            refused = Some(format!(
                "stopped at {done} topics: --single-budget {:?} spent",
                spec.single_budget
            ));
            println!("single creates: {}", refused.as_deref().unwrap_or_default());
            break;
        }
        let row = Checkpoint {
            topics: at,
            window: n,
            seconds: secs,
            creates_per_s: n as f64 / secs.max(1e-9),
            cpu_us_per_create: cpu_us_per(c0, cpu_seconds(spec.pid), n),
        };
        println!(
            "single creates at {at:>7} topics: {:>8.0}/s, broker CPU {} per create (last {n})",
            row.creates_per_s,
            row.cpu_us_per_create
                .map_or("-".into(), |us| format!("{us:.0} us"))
        );
        rows.push(row);
    }
    let secs = start.elapsed().as_secs_f64();
    let phase = Phase {
        created: done,
        seconds: secs,
        creates_per_s: done as f64 / secs.max(1e-9),
        cpu_us_per_create: cpu_us_per(cpu_start, cpu_seconds(spec.pid), done),
        refused,
    };
    println!(
        "single creates: {done} in {secs:.1} s ({:.0}/s)",
        phase.creates_per_s
    );
    Ok((rows, phase))
}

/// What a batch phase creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Batch {
    Topics,
    Groups,
}

impl Batch {
    fn total(self, spec: &MetaSpec) -> usize {
        match self {
            Batch::Topics => spec.batch_topics,
            Batch::Groups => spec.batch_groups,
        }
    }

    /// The request creating entries `from..from + n`.
    fn request(
        self,
        spec: &MetaSpec,
        from: usize,
        n: usize,
    ) -> serde_json::Result<RemotingCommand> {
        let (code, body) = match self {
            Batch::Topics => (
                RequestCode::UpdateAndCreateTopicList,
                serde_json::to_vec(&CreateTopicList {
                    topic_config_list: (from..from + n)
                        .map(|i| TopicConfig::new(&format!("{}-b{i}", spec.prefix), spec.queues))
                        .collect(),
                })?,
            ),
            Batch::Groups => (
                RequestCode::UpdateAndCreateSubscriptionGroupList,
                serde_json::to_vec(&serde_json::json!({
                    "groupConfigList": (from..from + n)
                        .map(|i| serde_json::json!({ "groupName": format!("{}-bg{i}", spec.prefix) }))
                        .collect::<Vec<_>>()
                }))?,
            ),
        };
        Ok(RemotingCommand::request(code).with_body(body))
    }
}

async fn batch_phase(spec: &MetaSpec, client: &RemotingClient, what: Batch) -> Phase {
    let (start, cpu_start) = (Instant::now(), cpu_seconds(spec.pid));
    let mut created = 0;
    let mut refused = None;
    let total = what.total(spec);
    while created < total {
        let n = spec.batch.min(total - created);
        let req = match what.request(spec, created, n) {
            Ok(r) => r,
            Err(e) => {
                refused = Some(e.to_string());
                break;
            }
        };
        if let Err(e) = invoke(client, req).await {
            refused = Some(e.to_string());
            break;
        }
        created += n;
    }
    let secs = start.elapsed().as_secs_f64();
    let phase = Phase {
        created,
        seconds: secs,
        creates_per_s: created as f64 / secs.max(1e-9),
        cpu_us_per_create: cpu_us_per(cpu_start, cpu_seconds(spec.pid), created),
        refused,
    };
    let what = match what {
        Batch::Topics => "topic",
        Batch::Groups => "group",
    };
    match &phase.refused {
        Some(why) => println!("batch {what} creates: stopped after {created}: {why}"),
        None => println!(
            "batch {what} creates: {created} in batches of {} in {secs:.1} s ({:.0}/s, broker CPU {} per create)",
            spec.batch,
            phase.creates_per_s,
            phase
                .cpu_us_per_create
                .map_or("-".into(), |us| format!("{us:.0} us"))
        ),
    }
    phase
}

fn heartbeat(
    spec: &MetaSpec,
    client: usize,
    groups: std::ops::Range<usize>,
    topic: &str,
) -> RemotingCommand {
    let data = HeartbeatData {
        client_id: format!("127.0.0.1@meta-bench-{}-{client}", std::process::id()),
        producer_data_set: Vec::new(),
        consumer_data_set: groups
            .map(|g| ConsumerData {
                group_name: format!("{}-g{g}", spec.prefix),
                consume_type: "CONSUME_PASSIVELY".into(),
                message_model: "CLUSTERING".into(),
                consume_from_where: "CONSUME_FROM_LAST_OFFSET".into(),
                subscription_data_set: vec![SubscriptionData {
                    topic: topic.to_owned(),
                    sub_string: "*".into(),
                    code_set: Vec::new(),
                    sub_version: rmq_common::time::now_ms(),
                    expression_type: Some("TAG".into()),
                }],
            })
            .collect(),
        ..HeartbeatData::default()
    };
    RemotingCommand::request(RequestCode::HeartBeat)
        .with_body(serde_json::to_vec(&data).unwrap_or_default())
}

async fn heartbeat_phase(spec: &MetaSpec, topic: &str) -> anyhow::Result<Heartbeats> {
    let probe_client = sdk::connect(spec.broker).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let probe = {
        let (stop, topic) = (Arc::clone(&stop), topic.to_owned());
        tokio::spawn(async move {
            let (mut worst, mut n) = (Duration::ZERO, 0usize);
            while !stop.load(Ordering::Acquire) {
                let req = sdk::request(
                    RequestCode::GetMaxOffset,
                    &[("topic", topic.clone()), ("queueId", "0".into())],
                );
                let t = Instant::now();
                if invoke(&probe_client, req).await.is_ok() {
                    worst = worst.max(t.elapsed());
                    n += 1;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            (worst, n)
        })
    };
    // The probe's first answers come before the heartbeats.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let clients = spec.clients.max(1);
    let share = spec.groups.div_ceil(clients);
    let cpu0 = cpu_seconds(spec.pid);
    let mut sends = Vec::new();
    for c in 0..clients {
        let from = (c * share).min(spec.groups);
        let to = ((c + 1) * share).min(spec.groups);
        let req = heartbeat(spec, c, from..to, topic);
        let client = sdk::connect(spec.broker).await?;
        sends.push(async move {
            let t = Instant::now();
            invoke_within(&client, req, HEARTBEAT_TIMEOUT)
                .await
                .map(|_| t.elapsed())
        });
    }
    let answers = futures::future::join_all(sends).await;
    let cpu = cpu_us_per(cpu0, cpu_seconds(spec.pid), 1).map(|us| us / 1000.0);
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.store(true, Ordering::Release);
    let (worst, probes) = probe.await?;
    let (mut answer_ms, mut failures) = (Vec::new(), Vec::new());
    for a in answers {
        match a {
            Ok(t) => answer_ms.push(Some(t.as_secs_f64() * 1000.0)),
            Err(e) => {
                answer_ms.push(None);
                failures.push(e.to_string());
            }
        }
    }
    let r = Heartbeats {
        groups: spec.groups,
        answer_ms,
        failures,
        probe_max_ms: worst.as_secs_f64() * 1000.0,
        probes,
        cpu_ms: cpu,
    };
    println!(
        "first heartbeats of {} groups from {clients} clients: answered in {:?} ms; probe worst {:.1} ms over {} probes",
        r.groups,
        r.answer_ms
            .iter()
            .map(|ms| ms.map(|ms| (ms * 10.0).round() / 10.0))
            .collect::<Vec<_>>(),
        r.probe_max_ms,
        r.probes
    );
    Ok(r)
}

/// Runs the three phases.
pub async fn run(spec: &MetaSpec) -> anyhow::Result<MetaReport> {
    let mut clients = Vec::new();
    for _ in 0..spec.concurrency.max(1) {
        clients.push(sdk::connect(spec.broker).await?);
    }
    let (checkpoints, single) = single_phase(spec, &clients).await?;
    let batch = if spec.batch > 0 && spec.batch_topics > 0 {
        Some(batch_phase(spec, &clients[0], Batch::Topics).await)
    } else {
        None
    };
    let batch_groups = if spec.batch > 0 && spec.batch_groups > 0 {
        Some(batch_phase(spec, &clients[0], Batch::Groups).await)
    } else {
        None
    };
    let heartbeats = if spec.groups > 0 {
        let topic = format!("{}-t0", spec.prefix);
        Some(heartbeat_phase(spec, &topic).await?)
    } else {
        None
    };
    Ok(MetaReport {
        checkpoints,
        single,
        batch,
        batch_groups,
        heartbeats,
    })
}
