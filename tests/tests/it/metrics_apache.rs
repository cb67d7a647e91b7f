//! The `rocketmq_*` series side by side with Apache RocketMQ 5.3.3's: its
//! broker (`metricsExporterType=PROM`, the 5.3.3 proxy's jars) and this one
//! take the same small load from `rmq-bench` (a topic created, sends, a
//! consumer pulling them all), then both are scraped. Every `rocketmq_*`
//! family Apache serves must be served here under the same name with the
//! same label names (values differ), except the few listed in
//! [`NOT_EXPORTED`] with the reason.
//! (Apache started through `rmq_tests::apache`.)

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

use rmq_broker::broker::Broker;
use rmq_common::config::CqBackend;
use rmq_tests::apache::{self, Jvm};
use rmq_tests::metered_settings;
use rmq_tools::bench::{load, LoadSpec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Apache's families this broker deliberately does not serve, and why.
const NOT_EXPORTED: &[(&str, &str)] = &[(
    "rocketmq_pop_buffer_scan_time_consume_milliseconds",
    "no POP buffer-merge service here: each checkpoint is written when its pop is \
     answered, so there is no buffer scan to time",
)];

/// Labels only one side has by construction: `le` (a histogram bucket's
/// bound, on both) and this broker's own `broker` label, on every series
/// so brokers in one process are told apart.
const IGNORED_LABELS: [&str; 2] = ["le", "broker"];

/// Longest one scrape may take.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(10);

/// Family name -> the label-name sets its series carry.
type Families = BTreeMap<String, BTreeSet<BTreeSet<String>>>;

/// The `rocketmq_*` families of a Prometheus text scrape: a histogram's
/// `_bucket`, `_sum` and `_count` series are one family.
fn families(text: &str) -> Families {
    let series: Vec<(String, BTreeSet<String>)> = text
        .lines()
        .filter(|l| l.starts_with("rocketmq_"))
        .map(|l| {
            let name_end = l.find(['{', ' ']).unwrap_or(l.len());
            let name = l[..name_end].to_owned();
            let labels = match (l.find('{'), l.rfind('}')) {
                (Some(a), Some(b)) if a == name_end && b > a => label_names(&l[a + 1..b]),
                _ => BTreeSet::new(),
            };
            (name, labels)
        })
        .collect();
    let histograms: BTreeSet<&str> = series
        .iter()
        .filter_map(|(n, _)| n.strip_suffix("_bucket"))
        .collect();
    let mut out = Families::new();
    for (name, labels) in &series {
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s).filter(|b| histograms.contains(b)))
            .unwrap_or(name);
        out.entry(family.to_owned())
            .or_default()
            .insert(labels.clone());
    }
    out
}

/// The names in `a="x",b="y"` (values may hold escaped quotes and commas).
fn label_names(body: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = body;
    while let Some(eq) = rest.find("=\"") {
        let name = rest[..eq].trim_start_matches(',').trim();
        if !IGNORED_LABELS.contains(&name) {
            names.insert(name.to_owned());
        }
        // Skip the value: up to the next unescaped quote.
        let value = &rest[eq + 2..];
        let mut end = 0;
        let mut escaped = false;
        for (i, c) in value.char_indices() {
            match c {
                '\\' if !escaped => escaped = true,
                '"' if !escaped => {
                    end = i;
                    break;
                }
                _ => escaped = false,
            }
        }
        rest = &value[end + 1..];
    }
    names
}

/// GET /metrics over HTTP/1.1 with `Connection: close`; the body, de-chunked
/// when the server chunks it (Apache's exporter does).
async fn scrape(addr: SocketAddr) -> String {
    let get = async {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.unwrap();
        out
    };
    let raw = tokio::time::timeout(SCRAPE_TIMEOUT, get)
        .await
        .expect("scrape answered in time");
    let text = String::from_utf8(raw).expect("a text scrape");
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).expect("a chunk size");
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}

/// The same load for both brokers: a topic of 4 queues created, 400 sends
/// of 256 bytes, one consumer pulling every message.
async fn load(broker: SocketAddr) {
    let spec = LoadSpec::from_args(
        [
            "--producers",
            "1",
            "--consumers",
            "1",
            "--topics",
            "1",
            "--queues",
            "4",
            "--size",
            "256",
            "--messages",
            "400",
            "--topic-prefix",
            "MetricsApache",
        ]
        .iter()
        .copied(),
    )
    .unwrap();
    let r = load::run(broker, None, &spec).await.unwrap();
    assert_eq!(r.first_error, None);
    assert_eq!((r.sent, r.send_errors), (400, 0));
    assert_eq!((r.received, r.consume_errors), (400, 0));
}

fn show(f: &Families) -> String {
    f.iter()
        .map(|(name, sets)| {
            let sets: Vec<String> = sets
                .iter()
                .map(|s| s.iter().cloned().collect::<Vec<_>>().join(","))
                .collect();
            format!("  {name} {{{}}}\n", sets.join(" | "))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rocketmq_family_apache_5_3_3_serves_is_served_with_its_labels() {
    rmq_tests::grpc_proxy::require_jars();
    let dir = tempfile::tempdir().unwrap();

    // Apache RocketMQ 5.3.3 under the load.
    let prom = apache::free_port();
    let (java, port) = Jvm::broker_5_3_3_on_free_ports(
        &dir.path().join("apache"),
        &format!(
            "metricsExporterType=PROM\nmetricsPromExporterHost=127.0.0.1\n\
             metricsPromExporterPort={prom}\n"
        ),
    );
    load(apache::local(port)).await;
    let theirs = families(&scrape(apache::local(prom)).await);
    drop(java);

    // This broker under the same load.
    let settings = metered_settings(&dir.path().join("ours"), CqBackend::File, "metrics-apache");
    let broker = Broker::start(settings).await.unwrap();
    load(broker.addr()).await;
    let ours = families(&scrape(broker.metrics_addr().expect("metrics endpoint")).await);
    broker.shutdown().await;

    eprintln!(
        "Apache RocketMQ 5.3.3:\n{}this broker:\n{}",
        show(&theirs),
        show(&ours)
    );
    assert!(
        theirs.len() >= 20,
        "Apache served few rocketmq_* families: {theirs:?}"
    );
    let mut wrong = Vec::new();
    for (name, sets) in &theirs {
        if NOT_EXPORTED.iter().any(|(n, _)| n == name) {
            continue;
        }
        match ours.get(name) {
            None => wrong.push(format!("{name}: missing")),
            Some(mine) if mine != sets => {
                wrong.push(format!("{name}: labels {mine:?}, Apache {sets:?}"));
            }
            Some(_) => {}
        }
    }
    for (name, why) in NOT_EXPORTED {
        assert!(
            !ours.contains_key(*name),
            "{name} is listed as not exported ({why}) but is served"
        );
    }
    assert!(
        wrong.is_empty(),
        "families differing from Apache's:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn families_join_histogram_series_and_read_label_names() {
    let text = "# TYPE x histogram\n\
        rocketmq_rpc_latency_milliseconds_bucket{a=\"1\",le=\"1.0\"} 0\n\
        rocketmq_rpc_latency_milliseconds_count{a=\"1\"} 0\n\
        rocketmq_rpc_latency_milliseconds_sum{a=\"1\"} 0\n\
        rocketmq_consumer_lag_messages{broker=\"b\",topic=\"x,\\\"y=\\\"\",group=\"g\"} 1\n\
        rocketmq_topic_number 3\n\
        rocketmq_sent_count{q=\"1\"} 2\n\
        rmq_other 1\n";
    let f = families(text);
    let names = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<BTreeSet<_>>();
    assert_eq!(
        f.keys().collect::<Vec<_>>(),
        [
            "rocketmq_consumer_lag_messages",
            "rocketmq_rpc_latency_milliseconds",
            "rocketmq_sent_count",
            "rocketmq_topic_number"
        ]
    );
    assert_eq!(
        f["rocketmq_rpc_latency_milliseconds"],
        BTreeSet::from([names(&["a"])])
    );
    assert_eq!(
        f["rocketmq_consumer_lag_messages"],
        BTreeSet::from([names(&["topic", "group"])])
    );
    assert_eq!(f["rocketmq_topic_number"], BTreeSet::from([names(&[])]));
    assert_eq!(dechunk("5\r\nabcde\r\n3\r\nfgh\r\n0\r\n\r\n"), "abcdefgh");
}
