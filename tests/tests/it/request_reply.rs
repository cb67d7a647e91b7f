//! Request-reply at the protocol level (issue 22): a reply sent with
//! SEND_REPLY_MESSAGE is pushed to the requester's connection as
//! PUSH_REPLY_MESSAGE_TO_CLIENT (found by the client id in REPLY_TO_CLIENT
//! among producer heartbeats), answered SUCCESS once the requester took it,
//! and stored in the cluster's reply topic. A reply whose requester is gone
//! is stored, answered SYSTEM_ERROR with RocketMQ's remark, and pushed to no
//! one. Both backends. (The stock Java client's `request` is checked in
//! `java_client`.)

use std::time::Duration;

use rmq_client::{self as sdk, RemotingClient};
use rmq_common::config::CqBackend;
use rmq_common::constants::property;
use rmq_common::message::Properties;
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode, SendMessageRequestHeader};
use rmq_tests::start_broker;
use tokio::sync::mpsc;

const TIMEOUT: Duration = Duration::from_secs(10);
const REPLY_TOPIC: &str = "DefaultCluster_REPLY_TOPIC";

fn reply(requester: &str, correlation: &str, body: &str) -> RemotingCommand {
    let mut p = Properties::new();
    p.insert("CORRELATION_ID", correlation);
    p.insert(property::REPLY_TO_CLIENT, requester);
    p.insert("MSG_TYPE", "reply");
    let header = SendMessageRequestHeader {
        producer_group: "replier".into(),
        topic: REPLY_TOPIC.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 0,
        sys_flag: 0,
        born_timestamp: rmq_common::time::now_ms(),
        flag: 0,
        properties: Some(String::from_utf8(p.encode().unwrap()).unwrap()),
        reconsume_times: 0,
        unit_mode: false,
        max_reconsume_times: None,
        batch: false,
        broker_name: None,
    };
    let mut req = RemotingCommand::request(RequestCode::SendReplyMessage);
    req.ext_fields = header.to_ext();
    req.with_body(body.as_bytes().to_vec())
}

/// A requester: a producer connection whose heartbeat names `client_id`,
/// answering every PUSH_REPLY_MESSAGE_TO_CLIENT with SUCCESS and handing it
/// over.
async fn requester(
    addr: std::net::SocketAddr,
    client_id: &str,
) -> (
    std::sync::Arc<RemotingClient>,
    mpsc::Receiver<RemotingCommand>,
) {
    let (tx, mut rx) = mpsc::channel(16);
    let client = std::sync::Arc::new(
        RemotingClient::connect_with_handler(addr, tx)
            .await
            .unwrap(),
    );
    let hb = serde_json::json!({
        "clientID": client_id,
        "producerDataSet": [{"groupName": "requesters"}],
        "consumerDataSet": [],
    });
    sdk::call(
        &client,
        RemotingCommand::request(RequestCode::HeartBeat).with_body(hb.to_string().into_bytes()),
    )
    .await
    .unwrap();
    let (out_tx, out_rx) = mpsc::channel(16);
    let c = std::sync::Arc::clone(&client);
    tokio::spawn(async move {
        while let Some(push) = rx.recv().await {
            let mut ok = RemotingCommand::response(ResponseCode::Success, None);
            ok.opaque = push.opaque;
            let _ = c.send_response(ok).await;
            if out_tx.send(push).await.is_err() {
                break;
            }
        }
    });
    (client, out_rx)
}

/// The reply topic's queue end, once reput has caught up with the log.
fn reply_topic_end(broker: &rmq_broker::broker::Broker) -> i64 {
    rmq_tests::wait_dispatched(&broker.context().store);
    broker
        .context()
        .store
        .max_offset_in_queue(REPLY_TOPIC, 0)
        .unwrap()
}

async fn replies_reach_their_requester(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), backend).await;
    assert!(
        broker.context().topics.get(REPLY_TOPIC).is_some(),
        "the cluster's reply topic exists from the start"
    );
    let (_req, mut pushes) = requester(broker.addr(), "req-1").await;
    let replier = sdk::connect(broker.addr()).await.unwrap();

    let r = replier
        .invoke(reply("req-1", "corr-1", "the answer"), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let push = tokio::time::timeout(TIMEOUT, pushes.recv())
        .await
        .expect("a push within the timeout")
        .unwrap();
    assert_eq!(push.code, i32::from(RequestCode::PushReplyMessageToClient));
    assert_eq!(push.body.as_deref(), Some(&b"the answer"[..]));
    let ext = push.ext();
    assert_eq!(ext.get_str("topic"), Some(REPLY_TOPIC));
    assert_eq!(ext.get_str("producerGroup"), Some("replier"));
    assert_eq!(
        ext.get_str("storeHost"),
        Some(broker.context().store_host.to_string().as_str())
    );
    for field in [
        "bornHost",
        "storeTimestamp",
        "bornTimestamp",
        "sysFlag",
        "flag",
        "queueId",
    ] {
        assert!(
            ext.get_str(field).is_some(),
            "{field} missing from the push"
        );
    }
    let props = Properties::decode(ext.get_str("properties").unwrap().as_bytes());
    assert_eq!(props.get("CORRELATION_ID"), Some("corr-1"));
    assert!(props.get(property::PUSH_REPLY_TIME).is_some());
    assert_eq!(reply_topic_end(&broker), 1, "the reply is stored too");

    // The requester is gone: stored, SYSTEM_ERROR, pushed to no one.
    let r = replier
        .invoke(reply("req-gone", "corr-2", "too late"), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(r.code, i32::from(ResponseCode::SystemError));
    assert_eq!(
        r.remark.as_deref(),
        Some("push reply message fail, channel of <req-gone> not found.")
    );
    assert_eq!(reply_topic_end(&broker), 2);
    assert!(
        pushes.try_recv().is_err(),
        "nothing pushed to the first requester"
    );
    // No REPLY_TO_CLIENT at all.
    let mut bare = reply("x", "corr-3", "nobody");
    let mut p = Properties::decode(bare.ext().get_str("properties").unwrap().as_bytes());
    p.remove(property::REPLY_TO_CLIENT);
    bare.put_ext(
        "properties",
        String::from_utf8(p.encode().unwrap()).unwrap(),
    );
    let r = replier.invoke(bare, TIMEOUT).await.unwrap();
    assert_eq!(r.code, i32::from(ResponseCode::SystemError));
    assert!(r.remark.unwrap_or_default().contains("REPLY_TO_CLIENT"));

    // storeReplyMessageEnable=false, changed at runtime: pushed, not
    // stored.
    let stored = reply_topic_end(&broker);
    let mut update = RemotingCommand::request(RequestCode::UpdateBrokerConfig);
    update.body = Some(b"storeReplyMessageEnable=false\n".to_vec().into());
    assert_eq!(replier.invoke(update, TIMEOUT).await.unwrap().code, 0);
    let r = replier
        .invoke(reply("req-1", "corr-4", "not kept"), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let push = tokio::time::timeout(TIMEOUT, pushes.recv())
        .await
        .expect("a push within the timeout")
        .unwrap();
    assert_eq!(push.body.as_deref(), Some(&b"not kept"[..]));
    // A stored message would be dispatched by the time a later one is:
    // send one to another topic and wait for it.
    let c = sdk::connect(broker.addr()).await.unwrap();
    let m = sdk::OutMessage {
        body: b"after".to_vec(),
        ..sdk::OutMessage::default()
    };
    sdk::send(&c, sdk::SendCode::V2, "p", "AfterReply", 0, &[m])
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + TIMEOUT;
    while broker
        .context()
        .store
        .max_offset_in_queue("AfterReply", 0)
        .unwrap()
        < 1
    {
        assert!(
            std::time::Instant::now() < deadline,
            "AfterReply never dispatched"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(reply_topic_end(&broker), stored, "the reply was stored");
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_reach_their_requester_file() {
    replies_reach_their_requester(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_reach_their_requester_rocksdb() {
    replies_reach_their_requester(CqBackend::Rocksdb).await;
}

/// Every sent message carries its broker's cluster (CLUSTER), which a
/// replier needs to name the reply topic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sent_messages_carry_the_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), CqBackend::File).await;
    let c = sdk::connect(broker.addr()).await.unwrap();
    let m = sdk::OutMessage {
        body: b"x".to_vec(),
        ..sdk::OutMessage::default()
    };
    let sent = sdk::send(&c, sdk::SendCode::V2, "p", "Clustered", 0, &[m])
        .await
        .unwrap();
    let (_, offset) = rmq_common::message::decode_offset_msg_id(&sent.msg_id).unwrap();
    let stored = broker.context().store.record_at(offset).unwrap();
    let view = rmq_common::message::record::RecordView::parse(stored.bytes(), false).unwrap();
    assert_eq!(
        view.property(property::CLUSTER).as_deref(),
        Some("DefaultCluster")
    );
    broker.shutdown().await;
}
