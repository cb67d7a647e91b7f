//! The `/metrics` endpoint after real traffic: the catalog's series exist
//! with sane values and the right labels, dispatch lag returns to 0, every
//! metric the Grafana dashboard uses is served, and a scrape under load
//! answers within a bound. File and RocksDB backends.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_broker::config::Settings;
use rmq_client::{self as sdk, OutMessage, PullRequest, SendCode};
use rmq_common::config::CqBackend;
use rmq_tests::metered_settings;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Longest a scrape may take, under load included.
const SCRAPE_BOUND: Duration = Duration::from_secs(2);
/// Longest the test waits for a value to settle (lag back to 0, a flush).
const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);
const MESSAGES: usize = 200;
const TOPIC: &str = "MetricsTopic";
const GROUP: &str = "MetricsGroup";

fn settings(root: &std::path::Path, backend: CqBackend, test: &str) -> Settings {
    metered_settings(root, backend, &format!("metrics-{test}"))
}

pub(crate) async fn scrape(addr: SocketAddr) -> String {
    let started = Instant::now();
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(SCRAPE_BOUND, s.read_to_end(&mut out))
        .await
        .expect("scrape answered within the bound")
        .unwrap();
    assert!(
        started.elapsed() < SCRAPE_BOUND,
        "scrape took {:?}",
        started.elapsed()
    );
    let text = String::from_utf8(out).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    body.to_owned()
}

/// One parsed sample: name, labels, value.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    pub(crate) name: String,
    pub(crate) labels: Vec<(String, String)>,
    pub(crate) value: f64,
}

impl Sample {
    pub(crate) fn label(&self, k: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses the Prometheus text format (the subset the exporter writes).
pub(crate) fn parse(text: &str) -> Vec<Sample> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("name and value");
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("value in {line}"));
        let (name, labels) = match series.split_once('{') {
            Some((n, rest)) => {
                let body = rest.strip_suffix('}').expect("closing brace");
                let labels = body
                    .split("\",")
                    .filter(|p| !p.is_empty())
                    .map(|p| {
                        let (k, v) = p.split_once("=\"").expect("k=\"v\"");
                        (k.to_owned(), v.trim_end_matches('"').to_owned())
                    })
                    .collect();
                (n.to_owned(), labels)
            }
            None => (series.to_owned(), Vec::new()),
        };
        out.push(Sample {
            name,
            labels,
            value,
        });
    }
    out
}

pub(crate) fn value(samples: &[Sample], name: &str, extra: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| s.name == name && extra.iter().all(|(k, v)| s.label(k) == Some(v)))
        .map(|s| s.value)
}

/// Scrapes until `ok` holds for the parsed samples (bounded).
pub(crate) async fn scrape_until(
    addr: SocketAddr,
    what: &str,
    ok: impl Fn(&[Sample]) -> bool,
) -> Vec<Sample> {
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    loop {
        let samples = parse(&scrape(addr).await);
        if ok(&samples) {
            return samples;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {SETTLE_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every query expression of the Grafana dashboard.
pub(crate) fn dashboard_exprs() -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../grafana/dashboards/rmq-broker.json");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut exprs = Vec::new();
    collect_exprs(&json, &mut exprs);
    assert!(
        exprs.len() > 20,
        "only {} expressions in {}",
        exprs.len(),
        path.display()
    );
    exprs
}

/// The metric names the dashboard's expressions use.
pub(crate) fn dashboard_metrics() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for e in dashboard_exprs() {
        let mut i = 0;
        while let Some(at) = e[i..].find("rmq_") {
            let start = i + at;
            let end = start
                + e[start..]
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(e.len() - start);
            names.insert(e[start..end].to_owned());
            i = end;
        }
    }
    names
}

fn collect_exprs(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("expr" | "query", serde_json::Value::String(s)) => out.push(s.clone()),
                    ("query", serde_json::Value::Object(q)) => {
                        if let Some(serde_json::Value::String(s)) = q.get("query") {
                            out.push(s.clone());
                        }
                    }
                    _ => collect_exprs(v, out),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| collect_exprs(v, out)),
        _ => {}
    }
}

async fn catalog_after_traffic(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let settings = settings(dir.path(), backend, "catalog");
    let broker_name = settings.broker.broker_name.clone();
    let broker = Broker::start(settings).await.unwrap();
    let addr = broker.metrics_addr().expect("metrics endpoint");
    assert!(addr.ip().is_loopback());
    let c = sdk::connect(broker.addr()).await.unwrap();
    for i in 0..MESSAGES {
        let m = OutMessage {
            body: vec![b'x'; 512],
            keys: vec![format!("k{i}")],
            ..OutMessage::default()
        };
        sdk::send(&c, SendCode::V2, "p", TOPIC, (i % 4) as i32, &[m])
            .await
            .unwrap();
    }
    // A consumer takes 30 from queue 0 (which holds MESSAGES / 4) and
    // commits them: lag = MESSAGES / 4 - 30 (lag counts committed queues).
    let mut got = 0;
    let mut offset = 0;
    while got < 30 {
        let r = sdk::pull(
            &c,
            &PullRequest {
                group: GROUP.into(),
                topic: TOPIC.into(),
                queue_id: 0,
                offset,
                max_msgs: (30 - got) as i32,
                subscription: Some("*".into()),
                suspend: Some(Duration::from_secs(1)),
                commit_offset: None,
            },
        )
        .await
        .unwrap();
        got += r.messages.len();
        offset = r.next_begin_offset;
    }
    sdk::commit_offset(&c, GROUP, TOPIC, 0, offset)
        .await
        .unwrap();

    // Take the stats items' next minute sample now (10 s on), so the
    // per-topic rates have a span.
    broker
        .context()
        .items
        .sample(rmq_common::time::now_ms() + 10_000);
    let samples = scrape_until(addr, "dispatch caught up and a flush recorded", |s| {
        value(s, "rmq_dispatch_behind_bytes", &[]) == Some(0.0)
            && value(s, "rmq_flush_latency_seconds_count", &[]).unwrap_or(0.0) > 0.0
            && value(s, "rmq_consumer_lag_messages", &[("group", GROUP)]).is_some()
            && value(s, "rmq_topic_put_tps", &[("topic", TOPIC)]).is_some()
    })
    .await;
    // Every series is this broker's: its own with the configured backend,
    // RocketMQ 5.x's with RocketMQ's common labels instead.
    for s in &samples {
        assert_eq!(s.label("broker"), Some(broker_name.as_str()), "{s:?}");
        if s.name.starts_with("rocketmq_") {
            assert_eq!(s.label("node_type"), Some("broker"), "{s:?}");
            assert_eq!(s.label("node_id"), Some(broker_name.as_str()), "{s:?}");
            assert_eq!(s.label("cluster"), Some("DefaultCluster"), "{s:?}");
        } else {
            assert_eq!(s.label("backend"), Some(backend.as_str()), "{s:?}");
        }
    }
    let v = |name: &str, extra: &[(&str, &str)]| {
        value(&samples, name, extra).unwrap_or_else(|| panic!("{name} {extra:?} missing"))
    };
    assert_eq!(
        v("rmq_put_messages_total", &[("topic_class", "user")]),
        MESSAGES as f64
    );
    assert_eq!(v("rmq_put_latency_seconds_count", &[]), MESSAGES as f64);
    assert!(v("rmq_topic_put_tps", &[("topic", TOPIC)]) > 0.0);
    assert!(v("rmq_group_get_tps", &[("group", GROUP), ("topic", TOPIC)]) > 0.0);
    assert_eq!(v("rmq_put_messages_today", &[]), MESSAGES as f64);
    assert!(v("rmq_get_messages_today", &[]) >= 30.0);
    assert_eq!(v("rmq_put_messages_yesterday", &[]), 0.0);
    assert!(v("rmq_dispatch_delay_seconds_count", &[]) >= MESSAGES as f64);
    assert_eq!(v("rmq_dispatch_behind_seconds", &[]), 0.0);
    assert!(v("rmq_cq_write_latency_seconds_count", &[]) > 0.0);
    assert!(v("rmq_cq_write_batch_size_sum", &[]) >= MESSAGES as f64);
    assert!(v("rmq_cq_read_latency_seconds_count", &[]) > 0.0);
    assert!(v("rmq_get_messages_total", &[]) >= 30.0);
    assert_eq!(
        v(
            "rmq_consumer_lag_messages",
            &[("group", GROUP), ("topic", TOPIC)]
        ),
        (MESSAGES / 4 - 30) as f64
    );
    let max = v("rmq_commitlog_max_offset", &[]);
    assert!(max > (MESSAGES * 512) as f64);
    assert_eq!(v("rmq_reput_from_offset", &[]), max);
    assert_eq!(v("rmq_schedule_pending", &[("level", "1")]), 0.0);
    assert_eq!(v("rmq_schedule_pending", &[("level", "18")]), 0.0);
    assert_eq!(v("rmq_transaction_half_pending", &[]), 0.0);
    assert!(v("rmq_connections", &[]) >= 1.0);
    let ratio = v("rmq_store_disk_used_ratio", &[]);
    assert!(ratio > 0.0 && ratio <= 1.0, "{ratio}");
    assert!(v("rmq_open_files", &[]) > 0.0);
    assert!(v("rmq_memory_maps", &[]) > 0.0);
    assert!(v("rmq_process_resident_bytes", &[]) > 1e6);
    // The broker handled the traffic above: some CPU time was spent.
    assert!(v("process_cpu_seconds_total", &[]) > 0.0);
    // RocketMQ 5.x's names for the same things.
    let topic = [("topic", TOPIC)];
    assert_eq!(
        v(
            "rocketmq_messages_in_total",
            &[
                ("topic", TOPIC),
                ("message_type", "normal"),
                ("is_system", "false")
            ]
        ),
        MESSAGES as f64
    );
    assert!(v("rocketmq_throughput_in_total", &topic) > (MESSAGES * 512) as f64);
    let out = [("topic", TOPIC), ("consumer_group", GROUP)];
    assert!(v("rocketmq_messages_out_total", &out) >= 30.0);
    assert!(v("rocketmq_throughput_out_total", &out) >= (30 * 512) as f64);
    assert_eq!(
        v(
            "rocketmq_consumer_lag_messages",
            &[
                ("consumer_group", GROUP),
                ("topic", TOPIC),
                ("is_retry", "false")
            ]
        ),
        (MESSAGES / 4 - 30) as f64
    );
    let storage = [("storage_type", "local"), ("storage_medium", "disk")];
    assert_eq!(v("rocketmq_storage_dispatch_behind_bytes", &storage), 0.0);
    assert!(v("rocketmq_storage_flush_behind_bytes", &storage) >= 0.0);
    assert!(v("rocketmq_storage_size_bytes", &storage) > 0.0);
    assert!(
        v(
            "rocketmq_storage_message_reserve_time_milliseconds",
            &storage
        ) >= 0.0
    );
    assert!(v("rocketmq_topic_number", &[]) >= 1.0);
    assert!(v("rocketmq_consumer_group_number", &[]) >= 1.0);
    // Per-backend consume-queue series, labelled with the serving role.
    let lane = [("backend", backend.as_str()), ("role", "serving")];
    assert!(v("rmq_cq_entries_total", &lane) >= MESSAGES as f64);
    assert!(v("rmq_cq_queues", &lane) >= 4.0);
    assert!(v("rmq_cq_disk_bytes", &lane) > 0.0);
    assert_eq!(v("rmq_cq_behind_bytes", &lane), 0.0);
    assert_eq!(v("rmq_cq_dispatched_offset", &lane), max);
    let rocks = value(&samples, "rmq_rocksdb_memtable_bytes", &[]);
    assert_eq!(rocks.is_some(), backend == CqBackend::Rocksdb, "{rocks:?}");

    if backend == CqBackend::Rocksdb {
        // Every metric the dashboard reads is served (the replication row's
        // by a master with a slave: `replication::master_metrics_show_the_slave`).
        let served: BTreeSet<&str> = samples.iter().map(|s| s.name.as_str()).collect();
        let missing: Vec<String> = dashboard_metrics()
            .into_iter()
            .filter(|n| {
                // Replication needs a slave, the shadow series a shadow
                // (`prometheus::a_real_prometheus_scrapes_an_ab_broker`).
                !n.starts_with("rmq_ha_")
                    && !n.starts_with("rmq_cq_shadow_")
                    && !served.contains(n.as_str())
            })
            .collect();
        assert!(
            missing.is_empty(),
            "dashboard metrics not served: {missing:?}"
        );
    }
    broker.shutdown().await;
}

/// Scrapes while producers send: each answer comes within the bound.
async fn scrape_under_load(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(settings(dir.path(), backend, "load"))
        .await
        .unwrap();
    let addr = broker.metrics_addr().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut producers = Vec::new();
    for p in 0..4 {
        let (b, stop) = (broker.addr(), std::sync::Arc::clone(&stop));
        producers.push(tokio::spawn(async move {
            let c = sdk::connect(b).await.unwrap();
            let mut sent = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let m = OutMessage {
                    body: vec![b'y'; 1024],
                    ..OutMessage::default()
                };
                sdk::send(&c, SendCode::V2, "p", "LoadTopic", p, &[m])
                    .await
                    .unwrap();
                sent += 1;
            }
            sent
        }));
    }
    for _ in 0..10 {
        let body = scrape(addr).await;
        assert!(body.contains("rmq_put_messages_total"));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut sent = 0;
    for p in producers {
        sent += p.await.unwrap();
    }
    assert!(sent > 0);
    broker.shutdown().await;
}

macro_rules! backends {
    ($($body:ident),* $(,)?) => {
        mod file { $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $body() { super::$body(rmq_common::config::CqBackend::File).await; } )* }
        mod rocksdb { $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $body() { super::$body(rmq_common::config::CqBackend::Rocksdb).await; } )* }
    };
}

backends!(catalog_after_traffic, scrape_under_load);

/// POP's families after a pop and an ack: RocketMQ 5.3.3's
/// `rocketmq_pop_*` with its label names, and this broker's own per
/// POP-state form.
async fn pop_families(kv: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = settings(
        dir.path(),
        CqBackend::File,
        if kv { "pop-kv" } else { "pop" },
    );
    settings.broker.pop.pop_kv_store = kv;
    let broker_name = settings.broker.broker_name.clone();
    let broker = Broker::start(settings).await.unwrap();
    let addr = broker.metrics_addr().expect("metrics endpoint");
    let c = sdk::connect(broker.addr()).await.unwrap();
    for i in 0..10 {
        let m = OutMessage {
            body: vec![b'x'; 64],
            keys: vec![format!("k{i}")],
            ..OutMessage::default()
        };
        sdk::send(&c, SendCode::V2, "p", TOPIC, 0, &[m])
            .await
            .unwrap();
    }
    let req = sdk::pop::PopRequest {
        group: GROUP.into(),
        topic: TOPIC.into(),
        queue_id: -1,
        max_msgs: 32,
        invisible_time_ms: 60_000,
        poll_time_ms: 1_000,
        init_mode: 0,
        exp_type: None,
        exp: None,
        order: false,
        broker_name: broker_name.clone(),
    };
    // Reput may not have dispatched all ten yet: pop until all came.
    let mut popped = Vec::new();
    let mut pops = 0;
    while popped.len() < 10 {
        pops += 1;
        assert!(pops <= 20, "{} of 10 popped", popped.len());
        popped.extend(sdk::pop::pop(&c, &req).await.unwrap().messages);
    }
    assert_eq!(popped.len(), 10);
    let first = &popped[0];
    let target = sdk::pop::AckTarget::of(&first.extra_info, TOPIC, GROUP).unwrap();
    sdk::pop::ack(&c, GROUP, &target).await.unwrap();
    let form = if kv { "rocksdb" } else { "revive-topic" };
    // The revive records reach their queues through reput: the revive lag
    // shows once they are dispatched.
    let samples = scrape_until(addr, "POP families", |s| {
        value(s, "rmq_pop_acks_total", &[("pop_state", form)]) == Some(1.0)
            && (kv
                || s.iter()
                    .any(|x| x.name == "rocketmq_pop_revive_lag_milliseconds" && x.value >= 1.0))
    })
    .await;
    assert_eq!(
        value(&samples, "rmq_pop_messages_total", &[("pop_state", form)]),
        Some(10.0)
    );
    assert_eq!(
        value(&samples, "rmq_pop_in_flight", &[("pop_state", form)]).map(|v| v > 0.0),
        Some(true),
        "{form}: nine popped messages are in flight"
    );
    let ck = value(
        &samples,
        "rocketmq_pop_revive_in_message_total",
        &[
            ("revive_message_type", "CK"),
            ("node_type", "broker"),
            ("consumer_group", GROUP),
            ("topic", TOPIC),
            ("put_status", "PUT_OK"),
        ],
    );
    assert_eq!(
        ck,
        Some(pops as f64),
        "{form}: each pop wrote one checkpoint"
    );
    let ack = value(
        &samples,
        "rocketmq_pop_revive_in_message_total",
        &[("revive_message_type", "ACK")],
    );
    assert_eq!(ack, Some(1.0), "{form}: one ack record");
    assert!(value(
        &samples,
        "rocketmq_pop_revive_retry_messages_total",
        &[("put_status", "PUT_OK")]
    )
    .is_some());
    let lag = samples
        .iter()
        .filter(|s| s.name == "rocketmq_pop_revive_lag_milliseconds")
        .map(|s| s.value)
        .sum::<f64>();
    if kv {
        assert_eq!(lag, 0.0, "no revive topic with RocksDB POP state");
    } else {
        // The checkpoint is unsettled: one record behind in its queue.
        assert!(lag >= 1.0, "revive lag {lag}");
        assert!(samples
            .iter()
            .any(|s| s.name == "rocketmq_pop_revive_latency_milliseconds"
                && s.label("queue_id").is_some()));
    }
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pop_families_revive_topic() {
    pop_families(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pop_families_rocksdb() {
    pop_families(true).await;
}
