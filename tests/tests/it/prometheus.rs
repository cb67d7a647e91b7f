//! A real Prometheus (Debian's `prometheus` package; scripts/setup.sh
//! installs it) against a broker running both consume-queue backends:
//! `promtool check metrics` accepts the exposition, Prometheus scrapes it,
//! and every expression of the Grafana dashboard, plus queries written for
//! RocketMQ 5.x's metric names, evaluates to data (the A/B row's with a
//! series for each backend).

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_client::{self as sdk, OutMessage, PullRequest, SendCode};
use rmq_common::config::CqBackend;
use rmq_tests::metered_settings;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::metrics::{dashboard_exprs, scrape};

const TOPIC: &str = "PromTopic";
const GROUP: &str = "PromGroup";
/// Longest wait for Prometheus to start and to hold what is asked of it.
const WAIT: Duration = Duration::from_secs(60);

/// Queries a dashboard written for RocketMQ 5.x's exporter would run.
const ROCKETMQ_QUERIES: &[&str] = &[
    "sum by (topic) (rate(rocketmq_messages_in_total[1m]))",
    "sum by (topic) (rate(rocketmq_throughput_in_total[1m]))",
    "sum by (consumer_group, topic) (rate(rocketmq_messages_out_total[1m]))",
    "sum by (consumer_group, topic) (rocketmq_consumer_lag_messages)",
    "max by (node_id) (rocketmq_storage_dispatch_behind_bytes)",
    "rocketmq_storage_size_bytes",
    "rocketmq_topic_number",
];

/// RocketMQ 5.x names promtool lints for their unit (milliseconds rather
/// than seconds): served under RocketMQ's own name on purpose.
const ROCKETMQ_UNIT_LINT: &[&str] = &[
    "rocketmq_storage_message_reserve_time_milliseconds ",
    "rocketmq_timer_dequeue_latency_milliseconds ",
    "rocketmq_timer_enqueue_latency_milliseconds ",
    "rocketmq_consumer_lag_latency_milliseconds ",
    "rocketmq_consumer_queueing_latency_milliseconds ",
    "rocketmq_pop_revive_lag_milliseconds ",
    "rocketmq_pop_revive_latency_milliseconds ",
    "rocketmq_rpc_latency_milliseconds ",
    "rocketmq_finish_message_latency_milliseconds ",
    "rocketmq_consumer_group_create_execution_time_milliseconds ",
];

fn tool(name: &str) -> PathBuf {
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(name))
        .find(|p| p.is_file());
    found.unwrap_or_else(|| {
        panic!("{name} not found: install Debian's prometheus package (scripts/setup.sh does)")
    })
}

/// `s` for a URL query value.
fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// GET `path` from `addr`; the body, or `None` if nothing answers yet.
async fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.ok()?;
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out))
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let code = head.split_whitespace().nth(1)?.parse().ok()?;
    // Chunked answers: keep the JSON between the chunk sizes.
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut joined = String::new();
        let mut rest = body;
        while let Some((size, after)) = rest.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).ok()?;
            if n == 0 {
                break;
            }
            joined.push_str(after.get(..n)?);
            rest = after.get(n + 2..)?;
        }
        joined
    } else {
        body.to_owned()
    };
    Some((code, body))
}

/// A Prometheus server scraping one target every second.
struct Prometheus {
    child: Child,
    addr: SocketAddr,
}

impl Prometheus {
    /// Starts on a free port (another if the probed one was taken before
    /// Prometheus bound it, up to 3 times).
    async fn start(dir: &Path, target: SocketAddr) -> Self {
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: rmq\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        for attempt in 0..3 {
            let addr = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap();
            let log = std::fs::File::create(dir.join(format!("prometheus-{attempt}.log"))).unwrap();
            let child = Command::new(tool("prometheus"))
                .arg(format!("--config.file={}", config.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.join("tsdb").display()
                ))
                .arg(format!("--web.listen-address={addr}"))
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap();
            let mut p = Self { child, addr };
            let deadline = Instant::now() + WAIT;
            while Instant::now() < deadline {
                if let Some((200, _)) = get(addr, "/-/ready").await {
                    return p;
                }
                if p.child.try_wait().unwrap().is_some() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let _ = p.child.kill();
            let _ = p.child.wait();
        }
        let log = std::fs::read_to_string(dir.join("prometheus-2.log")).unwrap_or_default();
        panic!("Prometheus did not start:\n{log}");
    }

    /// Evaluates `expr` now; the result vector.
    async fn query(&self, expr: &str) -> Vec<Value> {
        let (code, body) = get(self.addr, &format!("/api/v1/query?query={}", encode(expr)))
            .await
            .unwrap_or_else(|| panic!("no answer to {expr}"));
        let v: Value =
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("{expr}: {e}: {body}"));
        assert_eq!(
            (code, v["status"].as_str()),
            (200, Some("success")),
            "{expr}: {body}"
        );
        v["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// Waits until `expr` has at least `n` series.
    async fn until(&self, expr: &str, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + WAIT;
        loop {
            let r = self.query(expr).await;
            if r.len() >= n || Instant::now() > deadline {
                return r;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn traffic(broker: &Broker) {
    let c = sdk::connect(broker.addr()).await.unwrap();
    for i in 0..200 {
        let m = OutMessage {
            body: vec![b'p'; 256],
            ..OutMessage::default()
        };
        sdk::send(&c, SendCode::V2, "pp", TOPIC, i % 4, &[m])
            .await
            .unwrap();
    }
    let r = sdk::pull(
        &c,
        &PullRequest {
            group: GROUP.into(),
            topic: TOPIC.into(),
            queue_id: 0,
            offset: 0,
            max_msgs: 10,
            subscription: Some("*".into()),
            suspend: Some(Duration::from_secs(1)),
            commit_offset: None,
        },
    )
    .await
    .unwrap();
    sdk::commit_offset(&c, GROUP, TOPIC, 0, r.next_begin_offset)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_prometheus_scrapes_an_ab_broker() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = metered_settings(&dir.path().join("store"), CqBackend::File, "prometheus");
    settings.store.shadow_consume_queue_store = Some(CqBackend::Rocksdb);
    let broker = Broker::start(settings).await.unwrap();
    let metrics = broker.metrics_addr().expect("metrics endpoint");
    traffic(&broker).await;
    assert!(broker
        .context()
        .store
        .wait_shadow_caught_up(Duration::from_secs(30)));

    // promtool reads the exposition as Prometheus would, and lints it.
    let text = scrape(metrics).await;
    assert!(text.contains("rmq_cq_shadow_lag_bytes"), "{text}");
    let exposition = dir.path().join("metrics.txt");
    std::fs::write(&exposition, &text).unwrap();
    let out = Command::new(tool("promtool"))
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(&exposition).unwrap())
        .output()
        .unwrap();
    // Exit 3 is lint problems (1 a parse error): the only one allowed is
    // the unit of RocketMQ 5.x's own name, kept as RocketMQ exports it.
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let problems: Vec<&str> = report
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter(|l| !ROCKETMQ_UNIT_LINT.iter().any(|n| l.starts_with(n)))
        .collect();
    assert!(
        out.status.success() || out.status.code() == Some(3) && problems.is_empty(),
        "promtool check metrics: {}\n{report}",
        out.status
    );
    assert!(problems.is_empty(), "promtool check metrics: {problems:?}");

    let prom = Prometheus::start(dir.path(), metrics).await;
    let up = prom.until("up == 1", 1).await;
    assert_eq!(up.len(), 1, "the broker is not an up target");
    // Both backends scraped at least twice, so rates have two points.
    let lanes = prom
        .until("count_over_time(rmq_cq_entries_total[1m]) >= 3", 2)
        .await;
    assert_eq!(lanes.len(), 2, "{lanes:?}");

    for expr in dashboard_exprs() {
        // Variable queries: `label_values(series, label)` needs the series.
        let expr = match expr.strip_prefix("label_values(") {
            Some(rest) => rest.split(',').next().unwrap_or_default().to_owned(),
            None => expr,
        };
        if !expr.contains("rmq_") {
            continue; // the data source variable's type name
        }
        let expr = expr.replace("$broker", ".*").replace("$backend", ".*");
        let result = prom.query(&expr).await;
        // Replication series need a slave.
        if !expr.contains("rmq_ha_") {
            assert!(!result.is_empty(), "no data for the dashboard's {expr}");
        }
        if expr.contains("rmq_cq_") && !expr.contains("shadow") {
            let backends: std::collections::BTreeSet<&str> = result
                .iter()
                .filter_map(|r| r["metric"]["backend"].as_str())
                .collect();
            if expr.contains("rmq_cq_read_latency") {
                continue; // reads use the serving backend only
            }
            assert!(
                backends.contains("file") && backends.contains("rocksdb"),
                "{expr}: {backends:?}"
            );
        }
    }
    for expr in ROCKETMQ_QUERIES {
        assert!(
            !prom.query(expr).await.is_empty(),
            "no data for the RocketMQ 5.x query {expr}"
        );
    }
    drop(prom);
    broker.shutdown().await;
}
