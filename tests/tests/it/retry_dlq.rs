//! Delayed delivery, consumer retry and dead-letter queues through a running
//! broker over the real protocol, in real time (the manual-clock cases are in
//! `schedule.rs`). Levels are one second each so a retry takes about 1 s.

use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_broker::config::Settings;
use rmq_client::{self as sdk, OutMessage, PullRequest, PullResult, SendCode};
use rmq_common::config::CqBackend;
use rmq_common::constants::property;
use rmq_common::message::decode_offset_msg_id;
use rmq_common::remoting::{ConsumerSendMsgBackRequestHeader, ResponseCode};
use rmq_tests::broker_settings;
use rmq_tools::admin;

/// Longest a test waits for one delayed or retried message.
const ARRIVAL_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest a held pull waits per round.
const LONG_POLL: Duration = Duration::from_secs(2);
/// How late past its due time a delayed message may arrive (the level
/// thread parks until the due time; this bounds scheduling noise on a busy
/// 2-core CI machine).
const MAX_LATENESS_MS: i64 = 2_500;

fn settings(root: &std::path::Path, backend: CqBackend, levels: &str) -> Settings {
    let mut s = broker_settings(root, backend);
    s.store.message_delay_level = levels.to_owned();
    s
}

/// Pulls `topic`/0 from `offset` until a message arrives (bounded).
async fn pull_one(client: &rmq_client::RemotingClient, topic: &str, offset: i64) -> PullResult {
    let deadline = Instant::now() + ARRIVAL_TIMEOUT;
    loop {
        let r = sdk::pull(
            client,
            &PullRequest {
                group: "observer".into(),
                topic: topic.into(),
                queue_id: 0,
                offset,
                max_msgs: 32,
                subscription: Some("*".into()),
                suspend: Some(LONG_POLL),
                commit_offset: None,
            },
        )
        .await
        .unwrap();
        if !r.messages.is_empty() {
            return r;
        }
        assert!(
            Instant::now() < deadline,
            "nothing arrived in {topic} at offset {offset} within {ARRIVAL_TIMEOUT:?} (last code {})",
            r.code
        );
    }
}

fn send_back_header(offset: i64, delay_level: i32, max: i32) -> ConsumerSendMsgBackRequestHeader {
    ConsumerSendMsgBackRequestHeader {
        offset,
        group: "RetryGroup".into(),
        delay_level,
        origin_msg_id: None,
        origin_topic: Some("RetryTopic".into()),
        unit_mode: false,
        max_reconsume_times: Some(max),
    }
}

async fn delayed_send_arrives_on_time(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(settings(dir.path(), backend, "1s 2s 3s"))
        .await
        .unwrap();
    let c = sdk::connect(broker.addr()).await.unwrap();
    for (level, key) in [(2, "two"), (1, "one")] {
        let m = OutMessage {
            body: key.as_bytes().to_vec(),
            keys: vec![key.into()],
            properties: vec![(property::DELAY_TIME_LEVEL.into(), level.to_string())],
            ..OutMessage::default()
        };
        sdk::send(&c, SendCode::V2, "p", "DelayTopic", 0, &[m])
            .await
            .unwrap();
    }
    let mut got = Vec::new();
    let mut offset = 0;
    while got.len() < 2 {
        let r = pull_one(&c, "DelayTopic", offset).await;
        offset = r.next_begin_offset;
        for (m, stored) in r.messages.iter().zip(&r.store_timestamps) {
            let origin: i64 = m
                .properties
                .get(property::ORIGIN_STORE_TIMESTAMP)
                .unwrap()
                .parse()
                .unwrap();
            got.push((String::from_utf8(m.body.clone()).unwrap(), stored - origin));
            assert_eq!(m.properties.get(property::DELAY_TIME_LEVEL), None);
        }
    }
    // Level 1 (sent second) arrives first.
    assert_eq!(got[0].0, "one");
    assert_eq!(got[1].0, "two");
    for ((_, waited), delay) in got.iter().zip([1000, 2000]) {
        assert!(*waited >= delay, "{got:?}: early");
        assert!(*waited <= delay + MAX_LATENESS_MS, "{got:?}: late");
    }
    broker.shutdown().await;
}

async fn send_back_retries_then_dead_letters(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(settings(dir.path(), backend, "1s 1s 1s 1s 1s 1s"))
        .await
        .unwrap();
    let c = sdk::connect(broker.addr()).await.unwrap();
    let m = OutMessage {
        body: b"fail me".to_vec(),
        keys: vec!["k1".into()],
        tags: Some("TagR".into()),
        ..OutMessage::default()
    };
    let sent = sdk::send(&c, SendCode::V2, "p", "RetryTopic", 0, &[m])
        .await
        .unwrap();
    let (_, offset) = decode_offset_msg_id(&sent.msg_id).unwrap();

    // A send-back naming no message is refused, clearly.
    let err = sdk::send_back(&c, &send_back_header(offset + 3, 0, 2))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, sdk::SdkError::Refused { code, remark }
            if *code == i32::from(ResponseCode::SystemError) && remark.contains("look message by offset failed")),
        "{err}"
    );

    // First failure: a retry with reconsumeTimes 1, after level 3.
    sdk::send_back(&c, &send_back_header(offset, 0, 2))
        .await
        .unwrap();
    let retry = broker.context().topics.get("%RETRY%RetryGroup").unwrap();
    assert_eq!((retry.read_queue_nums, retry.write_queue_nums), (1, 1));
    let r = pull_one(&c, "%RETRY%RetryGroup", 0).await;
    assert_eq!(r.messages.len(), 1);
    let m = &r.messages[0];
    assert_eq!(m.body, b"fail me");
    assert_eq!(m.reconsume_times, 1);
    assert_eq!(m.properties.get(property::RETRY_TOPIC), Some("RetryTopic"));
    assert_eq!(m.properties.get(property::RECONSUME_TIME), Some("1"));
    assert_eq!(m.properties.get(property::MAX_RECONSUME_TIMES), Some("2"));
    assert_eq!(
        m.properties.get(property::ORIGIN_MESSAGE_ID),
        Some(sent.msg_id.as_str())
    );
    assert_eq!(m.properties.get(property::TAGS), Some("TagR"));
    let waited = r.store_timestamps[0]
        - m.properties
            .get(property::ORIGIN_STORE_TIMESTAMP)
            .unwrap()
            .parse::<i64>()
            .unwrap();
    assert!(waited >= 1000, "retried after {waited} ms");

    // Second failure: retried again (reconsumeTimes 2).
    sdk::send_back(&c, &send_back_header(r.phy_offsets[0], 0, 2))
        .await
        .unwrap();
    let r = pull_one(&c, "%RETRY%RetryGroup", 1).await;
    assert_eq!(r.messages[0].reconsume_times, 2);
    assert_eq!(
        r.messages[0].properties.get(property::ORIGIN_MESSAGE_ID),
        Some(sent.msg_id.as_str()),
        "the origin stays the first message"
    );

    // Third failure: the budget (2) is used up; straight to the DLQ.
    sdk::send_back(&c, &send_back_header(r.phy_offsets[0], 0, 2))
        .await
        .unwrap();
    let dlq = pull_one(&c, "%DLQ%RetryGroup", 0).await;
    assert_eq!(dlq.messages.len(), 1);
    assert_eq!(dlq.messages[0].reconsume_times, 3);
    assert_eq!(
        dlq.messages[0].properties.get(property::DELAY_TIME_LEVEL),
        None
    );
    let out = admin::read_queue(
        &rmq_client::Connector::new(),
        broker.addr(),
        "%DLQ%RetryGroup",
        0,
        0,
        10,
    )
    .await
    .unwrap();
    assert!(
        out.contains("body=\"fail me\"")
            && out.contains("reconsumeTimes=3")
            && out.contains("retryTopic=\"RetryTopic\""),
        "{out}"
    );

    // A negative level goes to the DLQ at once, whatever the count.
    sdk::send_back(&c, &send_back_header(offset, -1, 16))
        .await
        .unwrap();
    let dlq = pull_one(&c, "%DLQ%RetryGroup", 1).await;
    assert_eq!(dlq.messages[0].reconsume_times, 1);
    // Nothing more reached the retry topic.
    let max = broker
        .context()
        .store
        .max_offset_in_queue("%RETRY%RetryGroup", 0)
        .unwrap();
    assert_eq!(max, 2);
    broker.shutdown().await;
}

macro_rules! backends {
    ($($body:ident),* $(,)?) => {
        mod file { $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $body() { super::$body(rmq_common::config::CqBackend::File).await; } )* }
        mod rocksdb { $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $body() { super::$body(rmq_common::config::CqBackend::Rocksdb).await; } )* }
    };
}

backends!(
    delayed_send_arrives_on_time,
    send_back_retries_then_dead_letters
);
