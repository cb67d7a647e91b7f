//! Heartbeats, consumer groups, the heartbeat subscription used by pulls
//! without one, and NOTIFY_CONSUMER_IDS_CHANGED on membership change.

use std::time::Duration;

use rmq_broker::broker::Broker;
use rmq_client::RemotingClient;
use rmq_client::{self as sdk, OutMessage, PullRequest, SendCode};
use rmq_common::config::CqBackend;
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};
use rmq_tests::broker_settings;
use tokio::sync::mpsc;

/// Longest wait for a notification the broker sends.
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(10);

fn heartbeat(client_id: &str, sub: &str, version: i64) -> RemotingCommand {
    // Enums as names for one client and ordinals for the other, as real
    // clients differ.
    let body = serde_json::json!({
        "clientID": client_id,
        "producerDataSet": [{"groupName": "pg"}],
        "consumerDataSet": [{
            "groupName": "cg",
            "consumeType": if client_id.ends_with('1') { serde_json::json!("CONSUME_PASSIVELY") } else { serde_json::json!(1) },
            "messageModel": "CLUSTERING",
            "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
            "subscriptionDataSet": [{"topic": "Hb", "subString": sub, "subVersion": version}],
            "unitMode": false
        }]
    });
    RemotingCommand::request(RequestCode::HeartBeat).with_body(body.to_string().into_bytes())
}

async fn consumer_ids(c: &RemotingClient) -> Vec<String> {
    let resp = c
        .invoke(
            sdk::request(
                RequestCode::GetConsumerListByGroup,
                &[("consumerGroup", "cg".into())],
            ),
            sdk::DEFAULT_TIMEOUT,
        )
        .await
        .unwrap();
    if resp.code != 0 {
        return Vec::new();
    }
    let v: serde_json::Value = serde_json::from_slice(resp.body.as_deref().unwrap()).unwrap();
    let mut ids: Vec<String> = v["consumerIdList"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_notifications_and_heartbeat_subscriptions() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(broker_settings(dir.path(), CqBackend::File))
        .await
        .unwrap();
    let (tx1, mut notes1) = mpsc::channel(16);
    let c1 = RemotingClient::connect_with_handler(broker.addr(), tx1)
        .await
        .unwrap();
    assert_eq!(
        sdk::call(&c1, heartbeat("client-1", "TagB", 1))
            .await
            .unwrap()
            .code,
        0
    );
    assert_eq!(consumer_ids(&c1).await, vec!["client-1"]);
    // Like RocketMQ, every member is told, the new one included.
    let note = tokio::time::timeout(NOTIFY_TIMEOUT, notes1.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(note.code, i32::from(RequestCode::NotifyConsumerIdsChanged));
    // The retry topic of the group exists now.
    let topics = rmq_tools::admin::topic_list(&rmq_client::Connector::new(), broker.addr())
        .await
        .unwrap();
    assert!(topics.contains("%RETRY%cg"), "{topics}");

    // A second member joins: the first is told to rebalance.
    let c2 = sdk::connect(broker.addr()).await.unwrap();
    sdk::call(&c2, heartbeat("client-2", "TagB", 1))
        .await
        .unwrap();
    let note = tokio::time::timeout(NOTIFY_TIMEOUT, notes1.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(note.code, i32::from(RequestCode::NotifyConsumerIdsChanged));
    assert_eq!(note.ext().get_str("consumerGroup"), Some("cg"));
    assert_eq!(consumer_ids(&c1).await, vec!["client-1", "client-2"]);

    // Pulls without a subscription use the heartbeat's (TagB).
    for (i, tag) in ["TagA", "TagB", "TagA", "TagB"].iter().enumerate() {
        let m = OutMessage {
            body: format!("m{i}").into_bytes(),
            tags: Some((*tag).into()),
            ..OutMessage::default()
        };
        sdk::send(&c1, SendCode::V2, "p", "Hb", 0, &[m])
            .await
            .unwrap();
    }
    let mut p = PullRequest {
        group: "cg".into(),
        topic: "Hb".into(),
        queue_id: 0,
        offset: 0,
        max_msgs: 32,
        subscription: None,
        suspend: Some(Duration::from_secs(5)),
        commit_offset: None,
    };
    let mut got = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while got.len() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "TagB messages never arrived"
        );
        let r = sdk::pull(&c1, &p).await.unwrap();
        got.extend(
            r.messages
                .iter()
                .map(|m| String::from_utf8_lossy(&m.body).into_owned()),
        );
        p.offset = r.next_begin_offset;
    }
    assert_eq!(got, vec!["m1", "m3"]);

    // Unknown group, and a newer subscription than the broker has.
    let mut q = p.clone();
    q.group = "nobody".into();
    q.suspend = None;
    let err = sdk::pull(&c1, &q).await.unwrap_err();
    assert!(
        matches!(err, sdk::SdkError::Refused { code, .. } if code == i32::from(ResponseCode::SubscriptionNotExist)),
        "{err}"
    );
    let mut req = RemotingCommand::request(RequestCode::PullMessage);
    for (k, v) in [
        ("consumerGroup", "cg"),
        ("topic", "Hb"),
        ("queueId", "0"),
        ("queueOffset", "0"),
        ("maxMsgNums", "1"),
        ("sysFlag", "0"),
        ("subVersion", "99"),
    ] {
        req.put_ext(k, v);
    }
    let resp = c1.invoke(req, sdk::DEFAULT_TIMEOUT).await.unwrap();
    assert_eq!(resp.code, i32::from(ResponseCode::SubscriptionNotLatest));

    // The second member leaves by closing its connection.
    c2.close().await;
    let note = tokio::time::timeout(NOTIFY_TIMEOUT, notes1.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(note.code, i32::from(RequestCode::NotifyConsumerIdsChanged));
    assert_eq!(consumer_ids(&c1).await, vec!["client-1"]);

    // UNREGISTER_CLIENT empties the group.
    sdk::call(
        &c1,
        sdk::request(
            RequestCode::UnregisterClient,
            &[
                ("clientID", "client-1".into()),
                ("consumerGroup", "cg".into()),
            ],
        ),
    )
    .await
    .unwrap();
    assert!(consumer_ids(&c1).await.is_empty());
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orderly_consumers_lock_queues() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(broker_settings(dir.path(), CqBackend::File))
        .await
        .unwrap();
    let c = sdk::connect(broker.addr()).await.unwrap();
    let lock = |client: &str| {
        let body = serde_json::json!({"consumerGroup": "og", "clientId": client,
            "mqSet": [{"topic": "Ord", "brokerName": "broker-a", "queueId": 0}, {"topic": "Ord", "brokerName": "broker-a", "queueId": 1}]});
        RemotingCommand::request(RequestCode::LockBatchMq).with_body(body.to_string().into_bytes())
    };
    let locked = |resp: RemotingCommand| {
        let v: serde_json::Value = serde_json::from_slice(resp.body.as_deref().unwrap()).unwrap();
        v["lockOKMQSet"].as_array().unwrap().len()
    };
    assert_eq!(locked(sdk::call(&c, lock("a")).await.unwrap()), 2);
    assert_eq!(locked(sdk::call(&c, lock("b")).await.unwrap()), 0);
    let mut unlock = lock("a");
    unlock.code = i32::from(RequestCode::UnlockBatchMq);
    sdk::call(&c, unlock).await.unwrap();
    assert_eq!(locked(sdk::call(&c, lock("b")).await.unwrap()), 2);
    broker.shutdown().await;
}
