//! CommitLog retention: expired segments go at `deleteWhen`, on request, or
//! when the disk fills (unexpired too past `diskSpaceCleanForciblyRatio`),
//! at most `deleteFileBatchMax` a pass, never the segment being written.
//! Afterwards each backend's queue min offset moves to the first message
//! left, reads below it are told where to go, and nothing at or above it
//! is lost, also after a restart. Store level with an injected clock and
//! disk probe, plus the protocol path (DELETE_EXPIRED_COMMITLOG, then a
//! pull below the min answered PULL_OFFSET_MOVED).

use std::sync::Arc;

use rmq_broker::broker::Broker;
use rmq_client::{self as sdk, OutMessage, PullRequest, SendCode};
use rmq_common::config::CqBackend;
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};
use rmq_common::time::{Clock, ManualClock};
use rmq_common::StoreConfig;
use rmq_store::clean::{CleanReason, CleanTrigger, PassEnd};
use rmq_store::MessageStore;
use rmq_store::{GetRequest, GetStatus, TagFilter};
use rmq_tests::{
    broker_settings, message, open_store_with_clock, read_queue, small_config, wait_dispatched,
    FakeDisk,
};

const TOPIC: &str = "RetentionTopic";
/// A topic whose messages all expire.
const OLD_TOPIC: &str = "RetentionSilentTopic";
const HOUR_MS: i64 = 3_600_000;
/// 2026-12-03 10:00 UTC: not the `deleteWhen` hour (04).
const T0: i64 = 1_796_292_000_000;

fn config(root: &std::path::Path, backend: CqBackend) -> StoreConfig {
    StoreConfig {
        file_reserved_time_hours: 1,
        delete_file_batch_max: 2,
        // The service thread stays out of the way; the test runs passes.
        clean_resource_interval_ms: 3_600_000,
        ..small_config(root, backend)
    }
}

/// (queue, queue offset, phy offset, body) of every message put.
type Sent = Vec<(i32, i64, i64, Vec<u8>)>;

fn fill(store: &MessageStore, n: usize) -> Sent {
    let mut sent = Vec::new();
    for i in 0..n {
        let q = (i % 2) as i32;
        let body = format!("retained-{i:05}-{}", "x".repeat(400)).into_bytes();
        let r = store.put_message(&message(TOPIC, q, body.clone())).unwrap();
        let a = &r.appended[0];
        sent.push((q, a.queue_offset, a.phy_offset, body));
    }
    wait_dispatched(store);
    sent
}

fn segments(store: &MessageStore) -> usize {
    store.commit_log().segments().snapshot().len()
}

/// Every message at or above the CommitLog min is read back intact, each
/// queue's min is the first such message, and a read below it is told to
/// move to the min.
fn check_after(store: &MessageStore, sent: &Sent) {
    let min_phy = store.min_phy_offset();
    for q in 0..2 {
        let kept: Vec<_> = sent.iter().filter(|s| s.0 == q && s.2 >= min_phy).collect();
        let first = kept.first().expect("the last segment holds messages").1;
        assert_eq!(
            store.min_offset_in_queue(TOPIC, q).unwrap(),
            first,
            "queue {q}"
        );
        let read = read_queue(store, TOPIC, q);
        assert_eq!(read.len(), kept.len(), "queue {q}");
        for (r, s) in read.iter().zip(&kept) {
            assert_eq!((r.queue_offset, r.phy_offset), (s.1, s.2));
            assert_eq!(r.body, s.3);
        }
        let below = store
            .get_message(&GetRequest::new(TOPIC, q, 0, 32, &TagFilter::all()))
            .unwrap();
        assert_eq!(below.status, GetStatus::OffsetTooSmall);
        assert_eq!(below.next_begin_offset, first);
    }
}

fn policy_and_restart(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let cfg = config(dir.path(), backend);
    let store = open_store_with_clock(&cfg, clock.clone()).unwrap();
    let disk = FakeDisk::new(0.5);
    store.set_disk_usage(disk.clone());
    // Segment ages are their files' mtimes: now, by the real clock.
    clock.set(rmq_common::time::now_ms());
    let sent = fill(&store, 700);
    let total = segments(&store);
    assert!(total >= 5, "{total} segments");

    // Nothing expired yet: neither an operator nor a full disk deletes.
    let r = store.clean_pass(CleanTrigger::Operator).unwrap();
    assert_eq!((r.deleted, r.end), (0, PassEnd::NotExpired));
    disk.set(0.8);
    let r = store.clean_pass(CleanTrigger::Service).unwrap();
    assert_eq!(
        (r.reason, r.deleted, r.end),
        (Some(CleanReason::DiskFull), 0, PassEnd::NotExpired)
    );

    // Two hours on, outside deleteWhen, disk fine: the service waits.
    disk.set(0.5);
    let now = clock.now_ms();
    let off_hour = now - now.rem_euclid(24 * HOUR_MS) + 10 * HOUR_MS + 2 * 24 * HOUR_MS;
    clock.set(off_hour);
    let r = store.clean_pass(CleanTrigger::Service).unwrap();
    assert_eq!((r.reason, r.deleted, r.end), (None, 0, PassEnd::NotDue));
    assert_eq!(segments(&store), total);

    // At 04:xx it deletes, deleteFileBatchMax (2) a pass.
    clock.set(off_hour - 10 * HOUR_MS + 4 * HOUR_MS + 5 * 60_000);
    let r = store.clean_pass(CleanTrigger::Service).unwrap();
    assert_eq!(
        (r.reason, r.deleted, r.end),
        (Some(CleanReason::Scheduled), 2, PassEnd::BatchMax)
    );
    assert_eq!(segments(&store), total - 2);
    check_after(&store, &sent);

    // An operator's passes go on until only the segment being written is left.
    clock.set(off_hour);
    let mut passes = 0;
    while segments(&store) > 1 {
        let r = store.clean_pass(CleanTrigger::Operator).unwrap();
        assert!(r.deleted <= 2 && r.deleted > 0, "{r:?}");
        passes += 1;
        assert!(passes < 100);
    }
    let r = store.clean_pass(CleanTrigger::Operator).unwrap();
    assert_eq!((r.deleted, r.end), (0, PassEnd::WritingSegment));
    check_after(&store, &sent);
    let min_phy = store.min_phy_offset();
    assert!(min_phy > 0);

    // New messages continue the queues; a restart keeps the mins and data.
    let more = fill(&store, 10);
    store.shutdown().unwrap();
    drop(store);
    let store = open_store_with_clock(&cfg, clock.clone()).unwrap();
    assert_eq!(store.min_phy_offset(), min_phy);
    let all: Sent = sent.into_iter().chain(more).collect();
    check_after(&store, &all);
    store.shutdown().unwrap();
}

fn forcibly(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(rmq_common::time::now_ms()));
    let store = open_store_with_clock(&config(dir.path(), backend), clock).unwrap();
    let disk = FakeDisk::new(0.9);
    store.set_disk_usage(disk);
    let sent = fill(&store, 500);
    let total = segments(&store);
    // Nothing has expired, but past the forcible ratio segments go anyway.
    let r = store.clean_pass(CleanTrigger::Service).unwrap();
    assert_eq!((r.reason, r.deleted), (Some(CleanReason::Forcibly), 2));
    assert_eq!(segments(&store), total - 2);
    check_after(&store, &sent);
    store.shutdown().unwrap();
}

async fn over_the_protocol(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = broker_settings(dir.path(), backend);
    s.store.mapped_file_size_commit_log_bytes = 64 * 1024;
    s.store.max_message_size_bytes = 16 * 1024;
    s.store.file_reserved_time_hours = 0;
    s.store.clean_resource_interval_ms = 3_600_000;
    let broker = Broker::start(s).await.unwrap();
    let c = sdk::connect(broker.addr()).await.unwrap();
    rmq_tools::admin::topic_create(&rmq_client::Connector::new(), broker.addr(), TOPIC, 1, 6)
        .await
        .unwrap();
    rmq_tools::admin::topic_create(
        &rmq_client::Connector::new(),
        broker.addr(),
        OLD_TOPIC,
        1,
        6,
    )
    .await
    .unwrap();
    // Three messages of a topic that then falls silent: they are in the
    // first segment, which retention removes.
    for i in 0..3 {
        let m = OutMessage {
            body: format!("old{i}").into_bytes(),
            ..OutMessage::default()
        };
        sdk::send(&c, SendCode::V2, "p", OLD_TOPIC, 0, &[m])
            .await
            .unwrap();
    }
    for i in 0..400 {
        let m = OutMessage {
            body: format!("m{i}-{}", "y".repeat(500)).into_bytes(),
            ..OutMessage::default()
        };
        let r = sdk::send(&c, SendCode::V2, "p", TOPIC, 0, &[m])
            .await
            .unwrap();
        assert_eq!(r.code, 0);
    }
    let store = &broker.context().store;
    wait_dispatched(store);
    let report = rmq_tools::admin::clean(&rmq_client::Connector::new(), broker.addr())
        .await
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert!(v["deleted"].as_u64().unwrap() >= 1, "{report}");
    let min = store.min_offset_in_queue(TOPIC, 0).unwrap();
    assert!(min > 0);
    // A consumer at 0 is told to skip ahead to the new min.
    let pulled = sdk::pull(
        &c,
        &PullRequest {
            group: "g".into(),
            topic: TOPIC.into(),
            queue_id: 0,
            offset: 0,
            max_msgs: 32,
            subscription: Some("*".into()),
            suspend: None,
            commit_offset: None,
        },
    )
    .await
    .unwrap();
    assert_eq!(pulled.code, i32::from(ResponseCode::PullOffsetMoved));
    assert_eq!(pulled.next_begin_offset, min);
    let min_answer = sdk::queue_offset(&c, RequestCode::GetMinOffset, TOPIC, 0)
        .await
        .unwrap();
    assert_eq!(min_answer, min);

    // CLEAN_EXPIRED_CONSUMEQUEUE as RocketMQ: the silent topic's queue,
    // whose last unit points below the CommitLog's minimum, goes (its
    // next message is at 0 again); the live topic keeps its queue and
    // every message still stored.
    let max_before = store.max_offset_in_queue(TOPIC, 0).unwrap();
    assert_eq!(store.max_offset_in_queue(OLD_TOPIC, 0).unwrap(), 3);
    let r = c
        .invoke(
            RemotingCommand::request(RequestCode::CleanExpiredConsumequeue),
            sdk::DEFAULT_TIMEOUT,
        )
        .await
        .unwrap();
    assert_eq!(r.code, 0, "{:?}", r.remark);
    assert_eq!(store.max_offset_in_queue(OLD_TOPIC, 0).unwrap(), 0);
    assert_eq!(store.min_offset_in_queue(TOPIC, 0).unwrap(), min);
    assert_eq!(store.max_offset_in_queue(TOPIC, 0).unwrap(), max_before);
    let mut read = 0;
    let mut at = min;
    while at < max_before {
        let p = PullRequest::new("g", TOPIC, 0, at, 32);
        let pulled = sdk::pull(&c, &p).await.unwrap();
        assert!(
            !pulled.messages.is_empty(),
            "nothing read at {at} of {max_before}"
        );
        read += pulled.messages.len() as i64;
        at = pulled.next_begin_offset;
    }
    assert_eq!(read, max_before - min);
    let again = OutMessage {
        body: b"old-again".to_vec(),
        ..OutMessage::default()
    };
    let r = sdk::send(&c, SendCode::V2, "p", OLD_TOPIC, 0, &[again])
        .await
        .unwrap();
    assert_eq!(r.queue_offset, 0, "the removed queue starts again at 0");
    broker.shutdown().await;
}

macro_rules! per_backend {
    ($($backend:ident => $b:expr),*) => {$(
        mod $backend {
            use super::*;

            #[test]
            fn policy_batch_limit_and_restart() {
                policy_and_restart($b);
            }

            #[test]
            fn past_the_forcible_ratio_unexpired_segments_go() {
                forcibly($b);
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn delete_expired_commitlog_then_pull_below_min() {
                over_the_protocol($b).await;
            }
        }
    )*};
}

per_backend!(file => CqBackend::File, rocksdb => CqBackend::Rocksdb);
