//! This project's own tools against Apache RocketMQ's 4.9.7 broker (its
//! published jars, fetched by `scripts/setup.sh` into
//! `tests/java/target-apache/lib`): `rmq-admin topic create` and `topic
//! list`, then `rmq-bench produce` with consumers, whose counts must agree
//! with what the Java broker reports. So the side-by-side benchmark drives
//! both brokers with the same tool.
//! (Started through `rmq_tests::apache`.)

use rmq_tests::apache::{self, Jvm};
use rmq_tools::admin;
use rmq_tools::bench::{load, LoadSpec};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmq_admin_and_rmq_bench_drive_apache_broker_4_9_7() {
    apache::require_jars();
    let dir = tempfile::tempdir().unwrap();
    let (_ns, ns_port) = Jvm::namesrv_on_free_port(&dir.path().join("ns"));
    let (_broker, port) = Jvm::broker_on_free_ports(
        &dir.path().join("broker"),
        &format!("127.0.0.1:{ns_port}"),
        "brokerId=0\nmapedFileSizeCommitLog=67108864\n",
    );
    let b = apache::local(port);

    // rmq-admin topic create / list (the CLI prints what these return).
    let out = admin::topic_create(&rmq_client::Connector::new(), b, "ApacheAdm", 3, 6)
        .await
        .unwrap();
    assert!(
        out.contains("ApacheAdm") && out.contains("3 queues"),
        "{out}"
    );
    let list = admin::topic_list(&rmq_client::Connector::new(), b)
        .await
        .unwrap();
    assert!(
        list.lines()
            .any(|l| l.starts_with("ApacheAdm ") && l.contains(" 3 ")),
        "{list}"
    );

    // rmq-bench produce with consumers: every message sent is received.
    let spec = LoadSpec::from_args(
        [
            "--producers",
            "2",
            "--consumers",
            "1",
            "--topics",
            "1",
            "--queues",
            "4",
            "--size",
            "256",
            "--mode",
            "async",
            "--inflight",
            "8",
            "--messages",
            "2000",
            "--topic-prefix",
            "ApacheBench",
        ]
        .iter()
        .copied(),
    )
    .unwrap();
    let r = load::run(b, None, &spec).await.unwrap();
    assert_eq!(r.first_error, None);
    assert_eq!((r.sent, r.send_errors), (2000, 0));
    assert_eq!((r.received, r.consume_errors), (2000, 0));
    // The Java broker's own count of the topic agrees.
    let status = admin::topic_status(&rmq_client::Connector::new(), b, "ApacheBench-0")
        .await
        .unwrap();
    let max: i64 = status
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(2)?.parse::<i64>().ok())
        .sum();
    assert!(max >= 2000, "{status}");
}
