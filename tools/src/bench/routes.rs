//! `rmq-bench routes`: route lookups at cluster scale. An in-process
//! NameServer (or `--namesrv ADDR`) learns `--brokers` brokers that hold
//! `--topics` topics between them, the first `--largest` of them on one
//! broker, through real REGISTER_BROKER requests in the form a broker sends
//! (compressed past 1 MiB of JSON). Then `--clients` connections ask for the
//! routes of random topics for `--seconds`, while (`--churn-ms`) the
//! largest broker re-registers a changed topic table, as a broker does
//! after a topic is created. Reports registration sizes and times, and
//! lookups/s with p50/p99/p99.9.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};
use rmq_common::time::SystemClock;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::latency::{Latencies, LatencySummary};
use rmq_client::RemotingClient;
use rmq_common::remoting::body::{
    DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper,
};
use rmq_namesrv::register::{encode_body, register_request, BodyForm, BodyStats};
use rmq_namesrv::BrokerIdentity;
use rmq_namesrv::{NameServer, BROKER_EXPIRY_MS};

/// What to run.
#[derive(Debug, Clone, clap::Args)]
pub struct RoutesSpec {
    /// NameServer to use; an in-process one when absent.
    #[arg(long)]
    pub namesrv: Option<SocketAddr>,
    /// Brokers to register.
    #[arg(long, default_value_t = 3)]
    pub brokers: usize,
    /// Topics in all.
    #[arg(long, default_value_t = 50_000)]
    pub topics: usize,
    /// Topics of the first broker (the rest are spread evenly).
    #[arg(long, default_value_t = 20_000)]
    pub largest: usize,
    /// Connections asking for routes at once.
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// How long to ask.
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// Re-register the largest broker with a changed table this often, ms
    /// (0: never).
    #[arg(long, default_value_t = 1000)]
    pub churn_ms: u64,
}

/// What one broker's registration took.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Registration {
    /// Broker name.
    pub broker: String,
    /// Topics sent.
    pub topics: usize,
    /// JSON size, bytes.
    pub json_bytes: usize,
    /// Bytes sent.
    pub sent_bytes: usize,
    /// Sent compressed.
    pub compressed: bool,
    /// Encoding, ms.
    pub encode_ms: f64,
    /// Request to answer, ms (the NameServer decoding and applying it).
    pub register_ms: f64,
}

/// The run's result.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RoutesReport {
    /// Registrations, one per broker.
    pub registrations: Vec<Registration>,
    /// Lookups answered per second.
    pub lookups_per_sec: f64,
    /// Lookup latency.
    pub lookup: LatencySummary,
    /// Re-registrations during the lookups.
    pub churn_registrations: u64,
    /// Lookups that did not answer SUCCESS with the expected broker.
    pub wrong_answers: u64,
}

fn topic_name(broker: usize, n: usize) -> String {
    format!("route-bench-b{broker}-t{n}")
}

fn body(topics: usize, broker: usize, counter: i64) -> RegisterBrokerBody {
    RegisterBrokerBody {
        topic_config_serialize_wrapper: TopicConfigSerializeWrapper {
            topic_config_table: (0..topics)
                .map(|n| {
                    let name = topic_name(broker, n);
                    let c = TopicConfig::new(&name, 8);
                    (name, c)
                })
                .collect(),
            data_version: DataVersion {
                timestamp: rmq_common::time::now_ms(),
                counter,
                state_version: 0,
            },
        },
        filter_server_list: Vec::new(),
    }
}

fn identity(broker: usize) -> BrokerIdentity {
    BrokerIdentity {
        cluster: "RouteBenchCluster".into(),
        broker_name: format!("route-bench-{broker}"),
        broker_id: 0,
        // Never connected to: the routes only name it.
        broker_addr: format!("127.0.0.1:{}", 20_000 + broker),
        ha_server_addr: String::new(),
    }
}

async fn register(
    client: &RemotingClient,
    broker: usize,
    body: &RegisterBrokerBody,
) -> anyhow::Result<(BodyStats, f64, f64)> {
    let started = Instant::now();
    let (bytes, stats) = encode_body(body, BodyForm::Auto)?;
    let encode_ms = started.elapsed().as_secs_f64() * 1e3;
    let id = identity(broker);
    let req = register_request(&id, bytes, stats.compressed);
    let started = Instant::now();
    let resp = client.invoke(req, Duration::from_secs(30)).await?;
    let register_ms = started.elapsed().as_secs_f64() * 1e3;
    anyhow::ensure!(
        resp.code == ResponseCode::Success.code(),
        "registration of {} refused: {:?}",
        id.broker_name,
        resp.remark
    );
    Ok((stats, encode_ms, register_ms))
}

/// Topics of each broker under `spec`.
fn spread(spec: &RoutesSpec) -> Vec<usize> {
    let rest = spec.topics.saturating_sub(spec.largest);
    let others = spec.brokers.saturating_sub(1).max(1);
    (0..spec.brokers)
        .map(|b| {
            if b == 0 {
                spec.largest.min(spec.topics)
            } else {
                rest / others + usize::from(b - 1 < rest % others)
            }
        })
        .collect()
}

/// Runs the registrations and the lookups and prints the report.
pub async fn run(spec: &RoutesSpec) -> anyhow::Result<RoutesReport> {
    anyhow::ensure!(spec.brokers >= 1, "--brokers must be at least 1");
    anyhow::ensure!(spec.clients >= 1, "--clients must be at least 1");
    let (cancel, tracker) = (CancellationToken::new(), TaskTracker::new());
    let addr = match spec.namesrv {
        Some(a) => a,
        None => {
            let listener = TcpListener::bind("127.0.0.1:0").await?;
            NameServer::start(
                listener,
                Arc::new(SystemClock),
                &rmq_namesrv::NamesrvOptions::in_memory(BROKER_EXPIRY_MS),
                cancel.clone(),
                tracker.clone(),
            )
            .await?
            .addr
        }
    };
    let counts = spread(spec);
    let admin = RemotingClient::connect(addr).await?;
    let mut registrations = Vec::new();
    for (b, &count) in counts.iter().enumerate() {
        let (stats, encode_ms, register_ms) = register(&admin, b, &body(count, b, 1)).await?;
        registrations.push(Registration {
            broker: identity(b).broker_name,
            topics: stats.topics,
            json_bytes: stats.json_bytes,
            sent_bytes: stats.sent_bytes,
            compressed: stats.compressed,
            encode_ms,
            register_ms,
        });
    }
    let stop = Arc::new(AtomicBool::new(false));
    let churn = {
        let (stop, largest, churn_ms) = (Arc::clone(&stop), counts[0], spec.churn_ms);
        let admin = RemotingClient::connect(addr).await?;
        // Only the data version changes, which makes the NameServer apply
        // the whole table again, as after a topic creation.
        let mut table = body(largest, 0, 1);
        tokio::spawn(async move {
            let mut done = 0u64;
            if churn_ms == 0 {
                return Ok::<u64, anyhow::Error>(0);
            }
            while !stop.load(Ordering::Acquire) {
                tokio::time::sleep(Duration::from_millis(churn_ms)).await;
                table.topic_config_serialize_wrapper.data_version.counter += 1;
                register(&admin, 0, &table).await?;
                done += 1;
            }
            Ok(done)
        })
    };
    let started = Instant::now();
    let deadline = started + Duration::from_secs(spec.seconds);
    let mut tasks = Vec::new();
    for _ in 0..spec.clients {
        let counts = counts.clone();
        let client = RemotingClient::connect(addr).await?;
        tasks.push(tokio::spawn(async move {
            let mut lat = Latencies::new();
            let mut wrong = 0u64;
            while Instant::now() < deadline {
                let (b, n) = {
                    let mut rng = rand::thread_rng();
                    let b = rng.gen_range(0..counts.len());
                    (b, rng.gen_range(0..counts[b].max(1)))
                };
                let mut req = RemotingCommand::request(RequestCode::GetRouteInfoByTopic);
                req.put_ext("topic", topic_name(b, n));
                let t = Instant::now();
                let resp = client.invoke(req, Duration::from_secs(10)).await?;
                lat.record(u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX));
                let expected = identity(b).broker_name;
                let ok = resp.code == ResponseCode::Success.code()
                    && resp
                        .body
                        .as_deref()
                        .is_some_and(|body| contains(body, expected.as_bytes()));
                wrong += u64::from(!ok);
            }
            Ok::<_, anyhow::Error>((lat, wrong))
        }));
    }
    let mut lookup = Latencies::new();
    let mut wrong_answers = 0;
    for t in tasks {
        let (lat, wrong) = t.await??;
        lookup.merge(&lat);
        wrong_answers += wrong;
    }
    let elapsed = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Release);
    let churn_registrations = churn.await??;
    cancel.cancel();
    tracker.close();
    let _ = tokio::time::timeout(Duration::from_secs(5), tracker.wait()).await;
    let report = RoutesReport {
        registrations,
        lookups_per_sec: lookup.count() as f64 / elapsed,
        lookup: lookup.summary(),
        churn_registrations,
        wrong_answers,
    };
    print(spec, &report);
    Ok(report)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn print(spec: &RoutesSpec, r: &RoutesReport) {
    println!(
        "{} topics on {} brokers; {} clients for {} s; re-registration every {} ms",
        spec.topics, spec.brokers, spec.clients, spec.seconds, spec.churn_ms
    );
    println!(
        "{:<16} {:>8} {:>12} {:>10} {:>5} {:>10} {:>12}",
        "broker", "topics", "json bytes", "sent", "zlib", "encode ms", "register ms"
    );
    for g in &r.registrations {
        println!(
            "{:<16} {:>8} {:>12} {:>10} {:>5} {:>10.1} {:>12.1}",
            g.broker,
            g.topics,
            g.json_bytes,
            g.sent_bytes,
            if g.compressed { "yes" } else { "no" },
            g.encode_ms,
            g.register_ms
        );
    }
    let l = &r.lookup;
    println!(
        "lookups: {:.0}/s  p50 {} us  p99 {} us  p99.9 {} us  max {} us  ({} lookups, {} wrong, {} re-registrations meanwhile)",
        r.lookups_per_sec,
        l.p50_us,
        l.p99_us,
        l.p999_us,
        l.max_us,
        l.count,
        r.wrong_answers,
        r.churn_registrations
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_gives_the_largest_first_and_the_rest_evenly() {
        let spec = RoutesSpec {
            namesrv: None,
            brokers: 3,
            topics: 50_000,
            largest: 20_000,
            clients: 1,
            seconds: 1,
            churn_ms: 0,
        };
        assert_eq!(spread(&spec), vec![20_000, 15_000, 15_000]);
        let spec = RoutesSpec {
            topics: 10,
            largest: 3,
            brokers: 4,
            ..spec
        };
        assert_eq!(spread(&spec), vec![3, 3, 2, 2]);
    }
}
