//! The controller's metrics as a Prometheus recorder renders them: a
//! broker's election and the scan's are counted by trigger and result,
//! each new master's time to elect is recorded, requests are counted by
//! type and status, and the gauges show leadership and live brokers.
//! The recorder is local to the test's thread (a current-thread runtime),
//! so tests running beside it cannot add to what it reads.

use std::sync::Arc;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use rmq_common::remoting::ResponseCode;
use rmq_common::time::ManualClock;

use crate::metrics::{names, ELECTION_BUCKETS};
use crate::server::test_broker::{code, connect, eventually, ext_i64, metadata, FakeBroker};
use crate::server::tests_single::{start_single_with, wait_alive, WAIT};
use crate::wire::SyncStateSetBody;

/// The value of the series `name` whose labels include every one of
/// `labels` (`key="value"`), if the scrape has it.
fn value(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .find(|l| labels.iter().all(|want| l.contains(want)))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

fn scrape(handle: &PrometheusHandle) -> String {
    handle.render()
}

#[test]
fn elections_requests_and_gauges_are_recorded() {
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full(names::ELECTION_SECONDS.into()),
            ELECTION_BUCKETS,
        )
        .unwrap()
        .build_recorder();
    let handle = recorder.handle();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || rt.block_on(scenario(&handle)));
}

async fn scenario(handle: &PrometheusHandle) {
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    // Short pauses between the scan's tries: it finds nobody to elect
    // until the first election, and must not be waiting then.
    let c = start_single_with(Arc::clone(&clock), |s| s.elect_retry_pause_ms = 50).await;
    let h = &c.handle;
    let to = connect(h.addr).await;
    eventually(WAIT, "the replica leads", || async {
        metadata(&to)
            .await
            .ext_fields
            .get("isLeader")
            .map(String::as_str)
            == Some("true")
    })
    .await;
    let me = h.metrics_needle();
    let me = me.as_str();

    // Broker 1 asks for an election and wins it; broker 2 asks and keeps
    // it.
    let a1 = FakeBroker::new("broker-a", "10.0.0.1:30911");
    let a2 = FakeBroker::new("broker-a", "10.0.0.2:30911");
    for (b, id) in [(&a1, 1), (&a2, 2)] {
        assert_eq!(
            code(&b.apply_broker_id(&to, id).await),
            ResponseCode::Success
        );
        assert_eq!(code(&b.register(&to, id).await), ResponseCode::Success);
    }
    a1.heartbeat(&to, 1, 10_000).await;
    a2.heartbeat(&to, 2, 3_600_000).await;
    wait_alive(h, &clock, "broker-a", 1).await;
    wait_alive(h, &clock, "broker-a", 2).await;
    let resp = a1.elect(&to, 1).await;
    assert_eq!(code(&resp), ResponseCode::Success, "{resp:?}");
    let resp = a2.elect(&to, 2).await;
    assert_eq!(code(&resp), ResponseCode::ControllerMasterStillExist);
    let text = scrape(handle);
    let elections = |text: &str, trigger: &str, result: &str| {
        let (t, r) = (
            format!("trigger=\"{trigger}\""),
            format!("result=\"{result}\""),
        );
        value(
            text,
            names::ELECTIONS_TOTAL,
            &[
                me,
                "broker_set=\"broker-a\"",
                "cluster=\"DefaultCluster\"",
                &t,
                &r,
            ],
        )
    };
    assert_eq!(
        elections(&text, "broker", "new_master_elected"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        elections(&text, "broker", "keep_current_master"),
        Some(1.0),
        "{text}"
    );
    let count = format!("{}_count", names::ELECTION_SECONDS);
    assert_eq!(
        value(&text, &count, &[me, "trigger=\"broker\""]),
        Some(1.0),
        "{text}"
    );
    let elect = "request_type=\"CONTROLLER_ELECT_MASTER\"";
    let requests = |text: &str, status: &str| {
        let s = format!("status=\"{status}\"");
        value(text, names::REQUESTS_TOTAL, &[me, elect, &s])
    };
    assert_eq!(requests(&text, "success"), Some(1.0), "{text}");
    assert_eq!(requests(&text, "failed"), Some(1.0), "{text}");
    let latency = format!("{}_count", names::REQUEST_SECONDS);
    assert_eq!(value(&text, &latency, &[me, elect]), Some(2.0), "{text}");

    h.service().refresh_gauges();
    let text = scrape(handle);
    assert_eq!(value(&text, names::IS_LEADER, &[me]), Some(1.0), "{text}");
    let active = |text: &str| {
        value(
            text,
            names::ACTIVE_BROKERS,
            &[me, "broker_set=\"broker-a\""],
        )
    };
    assert_eq!(active(&text), Some(2.0), "{text}");

    // Broker 2 joins the SyncStateSet; the master's heartbeats stop and
    // the scan elects broker 2.
    let info = a1.replica_info(&to).await;
    let want = SyncStateSetBody {
        sync_state_set: [1, 2].into(),
        sync_state_set_epoch: i32::try_from(ext_i64(&info, "syncStateSetEpoch")).unwrap(),
    };
    assert_eq!(
        code(&a1.alter(&to, 1, 1, &want).await),
        ResponseCode::Success
    );
    clock.advance(10_001);
    eventually(WAIT, "the scan elects broker 2", || async {
        elections(&scrape(handle), "scan", "new_master_elected") == Some(1.0)
    })
    .await;
    let text = scrape(handle);
    assert_eq!(
        value(&text, &count, &[me, "trigger=\"scan\""]),
        Some(1.0),
        "{text}"
    );
    h.service().refresh_gauges();
    assert_eq!(active(&scrape(handle)), Some(1.0));

    to.close().await;
    c.stop().await;
}
