//! The scenarios a stock 5.x SDK of another language (Node, Python, Go:
//! `rmq_tests::sdk5`) runs against a gRPC endpoint, the broker's own or
//! Apache's proxy in front of it, each checked here by content: sends and
//! SimpleConsumer receive/ack (exactly what was sent, each once, and a tag
//! filter's share; nothing back past the invisible time), FIFO (each
//! message group in send order), delay by delivery timestamp (never early)
//! and transactions with check-back (exactly the committed set arrives, the
//! checker is asked about exactly the halves left unknown). The check
//! programs check delivery attempts and that nothing of a message group is
//! handed out while an earlier one is unacked.
//! `GRPC_CHECK_VERBOSE=1` puts the client's whole log in each run's stderr
//! (Node) or log folder (Go).

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rmq_broker::broker::Broker;
use rmq_broker::config::Settings;
use rmq_tests::child::ChildRun;
use rmq_tests::sdk5::{Ready, Sdk};

use crate::proxy_grpc::{create_topic, lines, Line};
use crate::proxy_grpc_5x::{
    assert_delivered_on_time, assert_transaction_outcome, DELAYS_MS, TX_CHECK_INTERVAL_MS, TX_EACH,
    TX_TIMEOUT_MS,
};
use crate::proxy_grpc_pop::{assert_send_order_per_group, create_group, received_in_order};

/// The program's own deadline for one scenario (`--timeout-ms`).
const SCENARIO_DEADLINE: Duration = Duration::from_secs(60);
/// Backstop: a run still alive this long is killed.
const RUN_TIMEOUT: Duration = Duration::from_secs(90);
/// Invisible time of the receives whose acks are checked (the proxy's
/// least), and how long after the last ack nothing may come back: past it
/// and the broker's revive scan (1 s), so an ack that did not hold shows.
const ACK_CHECK_INVISIBLE: Duration = Duration::from_secs(10);
const ACK_CHECK_LINGER: Duration = Duration::from_secs(14);

/// Numbers the runs, so that each keeps its own output files.
static RUNS: AtomicUsize = AtomicUsize::new(0);

/// One SDK pointed at one gRPC endpoint; runs write under `out`.
pub(crate) struct Target<'a> {
    pub sdk: Sdk,
    pub out: &'a Path,
    pub endpoint: &'a str,
}

/// Checks that `sdk` can run; `false` (after saying why) when the test is
/// to be skipped.
pub(crate) async fn ready(sdk: Sdk) -> bool {
    match tokio::task::spawn_blocking(move || sdk.require())
        .await
        .unwrap()
    {
        Ready::Yes => true,
        Ready::Skip(why) => {
            eprintln!(
                "SKIPPED: the {} 5.x SDK test needs {}: {why}; {}",
                sdk.name(),
                sdk.name(),
                sdk.setup_hint()
            );
            false
        }
    }
}

/// Topic and group names of `sdk`'s scenarios start with this.
fn prefix(sdk: Sdk) -> &'static str {
    match sdk {
        Sdk::Node => "Node",
        Sdk::Python => "Py",
        Sdk::Go => "Go",
    }
}

/// Settings for the transaction scenario on top of `settings`: a half left
/// unknown is checked within a few seconds.
pub(crate) fn quick_check_back(mut settings: Settings) -> Settings {
    settings.broker.transaction_time_out_ms = TX_TIMEOUT_MS;
    settings.broker.transaction_check_interval_ms = TX_CHECK_INTERVAL_MS;
    settings
}

impl Target<'_> {
    /// Runs one scenario; it must end with `PASS`.
    async fn scenario(&self, args: &[&str]) -> ChildRun {
        let mut all: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        all.extend([
            "--endpoint".to_owned(),
            self.endpoint.to_owned(),
            "--timeout-ms".to_owned(),
            SCENARIO_DEADLINE.as_millis().to_string(),
        ]);
        let n = RUNS.fetch_add(1, Ordering::Relaxed);
        let (sdk, dir) = (self.sdk, self.out.to_path_buf());
        let tag = format!("{}-{n}", sdk.name());
        let run = tokio::task::spawn_blocking(move || sdk.run(&all, &dir, &tag, RUN_TIMEOUT))
            .await
            .unwrap();
        assert!(
            run.succeeded() && run.stdout.lines().any(|l| l.starts_with("PASS ")),
            "{}",
            run.report(&format!("{} grpc_check {args:?}", sdk.name()))
        );
        run
    }

    /// Sends `count` messages with `tag` (`send` scenario), in
    /// `message_groups` message groups when not 0; the SENT lines.
    async fn send(
        &self,
        topic: &str,
        (tag, mode): (&str, &str),
        count: usize,
        message_groups: usize,
    ) -> BTreeSet<Line> {
        let (n, groups) = (count.to_string(), message_groups.to_string());
        let run = self
            .scenario(&[
                "--scenario",
                "send",
                "--topic",
                topic,
                "--count",
                &n,
                "--tag",
                tag,
                "--mode",
                mode,
                "--message-groups",
                &groups,
            ])
            .await;
        let sent = lines(&run, "SENT");
        assert_eq!(sent.len(), count, "{}", run.report("send"));
        sent
    }

    /// Runs the consuming `scenario` of `group` on `topic` (with `more`
    /// arguments); what it received, in order, after checking that it is
    /// exactly `want`, each once.
    async fn consume(
        &self,
        (topic, group, filter): (&str, &str, &str),
        (scenario_name, more): (&str, &[&str]),
        want: &BTreeSet<Line>,
    ) -> Vec<Line> {
        let count = want.len().to_string();
        let mut args = vec![
            "--scenario",
            scenario_name,
            "--topic",
            topic,
            "--group",
            group,
            "--filter",
            filter,
            "--count",
            &count,
        ];
        args.extend_from_slice(more);
        let run = self.scenario(&args).await;
        let got = received_in_order(&run);
        let distinct: BTreeSet<Line> = got.iter().cloned().collect();
        assert_eq!(
            got.len(),
            distinct.len(),
            "{group}: a message twice\n{}",
            run.report(scenario_name)
        );
        assert_eq!(
            &distinct,
            want,
            "{group} ({filter}) did not receive exactly what was sent\n{}",
            run.report(scenario_name)
        );
        got
    }

    /// Plain sends, then SimpleConsumer receive and ack: everything (and
    /// then nothing more, past the invisible time: the acks held), and a
    /// tag filter's share.
    pub(crate) async fn send_and_simple(&self, broker: &Broker) {
        let p = prefix(self.sdk);
        let topic = format!("{p}Topic");
        let (all_group, tag_a_group) = (format!("{p}SimpleAll"), format!("{p}SimpleTagA"));
        create_topic(broker, &topic, 4, "NORMAL").await;
        for g in [&all_group, &tag_a_group] {
            create_group(broker, g, false).await;
        }
        let tag_a = self.send(&topic, ("TagA", "sync"), 5, 0).await;
        let tag_b = self.send(&topic, ("TagB", "async"), 5, 0).await;
        let all: BTreeSet<Line> = tag_a.union(&tag_b).cloned().collect();
        assert_eq!(all.len(), 10, "message ids repeat: {all:?}");
        let stored: i64 = (0..4)
            .map(|q| {
                broker
                    .context()
                    .store
                    .max_offset_in_queue(&topic, q)
                    .unwrap()
            })
            .sum();
        assert_eq!(stored, 10, "messages in {topic} on the broker");
        let invisible = ACK_CHECK_INVISIBLE.as_millis().to_string();
        let linger = ACK_CHECK_LINGER.as_millis().to_string();
        let ack_check: &[&str] = &["--invisible-ms", &invisible, "--linger-ms", &linger];
        self.consume((&topic, &all_group, "*"), ("simple", ack_check), &all)
            .await;
        self.consume((&topic, &tag_a_group, "TagA"), ("simple", &[]), &tag_a)
            .await;
    }

    /// Sends in message groups to a FIFO topic; a FIFO group gets each
    /// message group in send order.
    pub(crate) async fn fifo(&self, broker: &Broker) {
        let p = prefix(self.sdk);
        let (topic, group) = (format!("{p}FifoTopic"), format!("{p}FifoGroup"));
        let (count, groups) = (12, 3);
        create_topic(broker, &topic, 2, "FIFO").await;
        create_group(broker, &group, true).await;
        let sent = self.send(&topic, ("TagA", "sync"), count, groups).await;
        let got = self
            .consume((&topic, &group, "*"), ("fifo", &[]), &sent)
            .await;
        assert_send_order_per_group(&got, groups, &format!("{} fifo", self.sdk.name()));
    }

    /// Messages with a delivery timestamp to a DELAY topic: each arrives
    /// once, never early, not much late.
    pub(crate) async fn delay(&self, broker: &Broker) {
        let p = prefix(self.sdk);
        let (topic, group) = (format!("{p}DelayTopic"), format!("{p}DelayGroup"));
        create_topic(broker, &topic, 2, "DELAY").await;
        create_group(broker, &group, false).await;
        let delays: Vec<String> = DELAYS_MS.iter().map(i64::to_string).collect();
        let delays = delays.join(",");
        let run = self
            .scenario(&[
                "--scenario",
                "delay",
                "--topic",
                &topic,
                "--group",
                &group,
                "--delays-ms",
                &delays,
            ])
            .await;
        assert_delivered_on_time(&run, &DELAYS_MS);
    }

    /// Transactions committed and rolled back at once and by the checker
    /// (needs a broker with [`quick_check_back`]).
    pub(crate) async fn transaction(&self, broker: &Broker) {
        let p = prefix(self.sdk);
        let (topic, group) = (format!("{p}TxTopic"), format!("{p}TxGroup"));
        create_topic(broker, &topic, 2, "TRANSACTION").await;
        create_group(broker, &group, false).await;
        let each = TX_EACH.to_string();
        let run = self
            .scenario(&[
                "--scenario",
                "transaction",
                "--topic",
                &topic,
                "--group",
                &group,
                "--commit",
                &each,
                "--rollback",
                &each,
                "--check-commit",
                &each,
                "--check-rollback",
                &each,
            ])
            .await;
        assert_transaction_outcome(&run, &topic, TX_EACH);
    }
}

/// `sdk` straight at the broker's gRPC endpoint on `backend` (the paired
/// POP state; for Go, TLS on the port): every scenario. Skipped (saying why) only when the
/// language is missing.
pub(crate) async fn direct(sdk: Sdk, backend: rmq_common::config::CqBackend) {
    if !ready(sdk).await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut settings =
        quick_check_back(crate::proxy_grpc::paired_pop_settings(dir.path(), backend));
    if sdk == Sdk::Go {
        // The Go client speaks only TLS (and checks no certificate): the
        // broker's ports take TLS and plain, with a self-signed certificate.
        settings.broker.tls_mode = "permissive".into();
    }
    let broker = Broker::start(settings).await.unwrap();
    let endpoint = broker.grpc_addr().expect("gRPC served").to_string();
    let out = dir.path().join(sdk.name());
    std::fs::create_dir_all(&out).unwrap();
    let target = Target {
        sdk,
        out: &out,
        endpoint: &endpoint,
    };
    target.send_and_simple(&broker).await;
    target.fifo(&broker).await;
    target.delay(&broker).await;
    target.transaction(&broker).await;
    broker.shutdown().await;
}
