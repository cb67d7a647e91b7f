//! Automatic renewal of receipt handles: the stock Java 5.0.7 push
//! consumer (which receives with `auto_renew`) holds each message longer
//! than its invisible time, and the broker renews the handles so no
//! message is given twice; the acks, made with the handles the client was
//! given, settle every message. Short renewal settings keep it quick.

use std::time::Duration;

use rmq_broker::broker::Broker;
use rmq_common::config::CqBackend;

use crate::grpc_direct::start_direct;
use crate::proxy_grpc::create_topic;
use crate::proxy_grpc::scenario;
use crate::proxy_grpc_pop::{create_group, received_in_order, send};

/// Messages pushed.
const COUNT: usize = 4;
/// Invisible time of a message received with `auto_renew`, ms.
const INVISIBLE_MS: i64 = 3_000;
/// How long the listener holds each message: past two invisible times.
const HOLD_MS: u64 = 8_000;
/// Bound on waiting for the acks to settle.
const SETTLE: Duration = Duration::from_secs(10);

async fn in_flight_settles(broker: &Broker) -> u64 {
    let deadline = tokio::time::Instant::now() + SETTLE;
    loop {
        let n = broker.context().pop.state.in_flight();
        if n == 0 || tokio::time::Instant::now() >= deadline {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn slow_push_consumer_is_not_given_a_message_twice(backend: CqBackend) {
    let d = start_direct(backend, |s| {
        let g = &mut s.broker.grpc;
        g.default_invisible_time_ms = INVISIBLE_MS;
        g.renew_ahead_time_ms = 1_500;
        g.renew_schedule_period_ms = 250;
    })
    .await;
    let (topic, group) = ("GrpcRenewTopic", "GrpcRenewGroup");
    create_topic(&d.broker, topic, 2, "NORMAL").await;
    create_group(&d.broker, group, false).await;
    let sent = send(&d.home, &d.endpoint, topic, "TagA", "sync", COUNT, 0).await;
    let hold = HOLD_MS.to_string();
    let linger = (2 * INVISIBLE_MS).to_string();
    let count = COUNT.to_string();
    let run = scenario(
        &d.home,
        &[
            "--scenario",
            "push",
            "--endpoint",
            &d.endpoint,
            "--topic",
            topic,
            "--group",
            group,
            "--count",
            &count,
            "--hold-ms",
            &hold,
            "--linger-ms",
            &linger,
        ],
    )
    .await;
    let got: std::collections::BTreeSet<_> = received_in_order(&run).into_iter().collect();
    assert_eq!(got, sent, "{}", run.report("push --hold-ms"));
    assert_eq!(
        in_flight_settles(&d.broker).await,
        0,
        "messages acked with renewed handles are settled"
    );
    d.broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_slow_push_consumer_has_its_handles_renewed_file_cq() {
    slow_push_consumer_is_not_given_a_message_twice(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_slow_push_consumer_has_its_handles_renewed_rocks_cq() {
    slow_push_consumer_is_not_given_a_message_twice(CqBackend::Rocksdb).await;
}
