//! RocketMQ 5.x typed topics: UPDATE_AND_CREATE_TOPIC's `attributes`
//! (`+message.type=FIFO`, `-key`, the refusals of 5.3.3 with its remarks),
//! kept in the topic table (GET_TOPIC_CONFIG, GET_ALL_TOPIC_CONFIG, over a
//! restart, copied by a slave), and a send whose message type is not the
//! topic's refused with MESSAGE_ILLEGAL and the 5.x remark on
//! SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE.

use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_broker::ha::BrokerRole;
use rmq_client::{self as sdk, OutMessage, RemotingClient, SdkError, SendCode};
use rmq_common::config::CqBackend;
use rmq_common::remoting::RequestCode;

use crate::meta5x::{ask, json, start_with};

/// Longest a slave may take to copy its master's topics.
const CATCH_UP: Duration = Duration::from_secs(20);

async fn create(b: &RemotingClient, topic: &str, attributes: &str) -> (i32, String) {
    let r = ask(
        b,
        RequestCode::UpdateAndCreateTopic,
        &[
            ("topic", topic),
            ("readQueueNums", "2"),
            ("writeQueueNums", "2"),
            ("attributes", attributes),
        ],
    )
    .await;
    (r.code, r.remark.unwrap_or_default())
}

async fn attributes_of(b: &RemotingClient, topic: &str) -> serde_json::Value {
    let r = ask(b, RequestCode::GetTopicConfig, &[("topic", topic)]).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    json(&r)["attributes"].clone()
}

#[tokio::test]
async fn attributes_are_applied_kept_and_refused_as_5_3_3() {
    let (dir, broker, b, _n) = start_with(|_| {}).await;
    assert_eq!(
        create(&b, "Fifo", "+message.type=FIFO").await,
        (0, String::new())
    );
    assert_eq!(
        attributes_of(&b, "Fifo").await,
        serde_json::json!({"message.type": "FIFO"})
    );
    // Created with every refusal's remark.
    for (attrs, code, remark) in [
        (
            "+message.type=MIXED",
            29,
            "MIXED message type is not supported.",
        ),
        (
            "-message.type",
            1,
            "only add attribute is supported while creating topic. key: message.type",
        ),
        ("+colour=red", 1, "unsupported key: colour"),
        (
            "message.type=FIFO",
            1,
            "add/alter attribute format is wrong: message.type",
        ),
        (
            "+reserve.time=5",
            1,
            "Update topic reserveTime not supported",
        ),
    ] {
        assert_eq!(
            create(&b, "Refused", attrs).await,
            (code, remark.to_owned()),
            "{attrs}"
        );
    }
    assert!(broker.context().topics.get("Refused").is_none());
    // Updates: an unchangeable attribute stays, `-` removes, the rest is kept.
    assert_eq!(
        create(&b, "Queue", "+queue.type=BatchCQ,+message.type=NORMAL")
            .await
            .0,
        0
    );
    assert_eq!(
        create(&b, "Queue", "+queue.type=SimpleCQ").await,
        (
            1,
            "attempt to update an unchangeable attribute. key: queue.type".to_owned()
        )
    );
    assert_eq!(create(&b, "Queue", "-message.type").await.0, 0);
    assert_eq!(
        attributes_of(&b, "Queue").await,
        serde_json::json!({"queue.type": "BatchCQ"})
    );
    assert_eq!(
        create(&b, "Queue", "-message.type").await,
        (
            1,
            "attempt to delete a nonexistent key: message.type".to_owned()
        )
    );
    // An update without attributes keeps them.
    assert_eq!(create(&b, "Fifo", "").await.0, 0);
    let all = ask(&b, RequestCode::GetAllTopicConfig, &[]).await;
    assert_eq!(
        json(&all)["topicConfigTable"]["Fifo"]["attributes"],
        serde_json::json!({"message.type": "FIFO"})
    );
    // Kept over a restart (config/topics.json).
    let settings = broker.context().settings.clone();
    broker.shutdown().await;
    let broker = Broker::start(settings).await.unwrap();
    let b = sdk::connect(broker.addr()).await.unwrap();
    assert_eq!(
        attributes_of(&b, "Fifo").await,
        serde_json::json!({"message.type": "FIFO"})
    );
    broker.shutdown().await;
    drop(dir);
}

fn message(properties: &[(&str, &str)]) -> OutMessage {
    OutMessage {
        body: b"typed".to_vec(),
        tags: Some("T".into()),
        keys: vec![],
        properties: properties
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    }
}

async fn send(
    b: &RemotingClient,
    code: SendCode,
    topic: &str,
    msgs: &[OutMessage],
) -> Result<(), (i32, String)> {
    match sdk::send(b, code, "typed-producer", topic, 0, msgs).await {
        Ok(r) => {
            assert_eq!(r.code, 0);
            Ok(())
        }
        Err(SdkError::Refused { code, remark }) => Err((code, remark)),
        Err(e) => panic!("send to {topic}: {e}"),
    }
}

#[tokio::test]
async fn a_send_of_the_wrong_type_is_refused_on_every_send_code() {
    let (_dir, broker, b, _n) = start_with(|_| {}).await;
    assert_eq!(create(&b, "FifoT", "+message.type=FIFO").await.0, 0);
    assert_eq!(create(&b, "NormalT", "+message.type=NORMAL").await.0, 0);
    assert_eq!(create(&b, "TxT", "+message.type=TRANSACTION").await.0, 0);
    assert_eq!(create(&b, "Untyped", "").await.0, 0);
    let plain = message(&[]);
    let fifo = message(&[("__SHARDINGKEY", "order-1")]);
    let delayed = message(&[("DELAY", "2")]);
    let refused = |expected: &str, actual: &str| {
        Err((
            13,
            format!(
                "TopicMessageType validate failed, the expected type is {expected}, but actual type is {actual}"
            ),
        ))
    };
    for code in [SendCode::V1, SendCode::V2] {
        assert_eq!(
            send(&b, code, "FifoT", std::slice::from_ref(&plain)).await,
            refused("FIFO", "NORMAL")
        );
        assert_eq!(
            send(&b, code, "FifoT", std::slice::from_ref(&fifo)).await,
            Ok(())
        );
        assert_eq!(
            send(&b, code, "NormalT", std::slice::from_ref(&delayed)).await,
            refused("NORMAL", "DELAY")
        );
        assert_eq!(
            send(&b, code, "NormalT", std::slice::from_ref(&plain)).await,
            Ok(())
        );
        // A topic without the attribute takes every type, as in 4.x.
        assert_eq!(
            send(&b, code, "Untyped", std::slice::from_ref(&delayed)).await,
            Ok(())
        );
    }
    // A batch: each message is checked.
    assert_eq!(
        send(&b, SendCode::V2, "FifoT", &[fifo.clone(), plain.clone()]).await,
        refused("FIFO", "NORMAL")
    );
    assert_eq!(
        send(&b, SendCode::V2, "FifoT", &[fifo.clone(), fifo.clone()]).await,
        Ok(())
    );
    assert_eq!(
        send(&b, SendCode::V2, "TxT", &[plain.clone(), plain.clone()]).await,
        refused("TRANSACTION", "NORMAL")
    );
    // What was refused was not stored: the FIFO single of each code and
    // the FIFO batch of 2.
    let store = &broker.context().store;
    rmq_tests::wait_dispatched(store);
    let stored = store.max_offset_in_queue("FifoT", 0).unwrap();
    assert_eq!(stored, 4);
    broker.shutdown().await;
}

#[tokio::test]
async fn a_slave_copies_the_attributes() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = rmq_tests::broker_settings(&dir.path().join("master"), CqBackend::File);
    s.broker.broker_role = BrokerRole::AsyncMaster;
    let master = Broker::start(s).await.unwrap();
    let b = sdk::connect(master.addr()).await.unwrap();
    assert_eq!(create(&b, "FifoHa", "+message.type=FIFO").await.0, 0);
    let mut s = rmq_tests::broker_settings(&dir.path().join("slave"), CqBackend::File);
    s.broker.broker_role = BrokerRole::Slave;
    s.broker.broker_id = 1;
    s.broker.namesrv_listen_port = -1;
    s.broker.namesrv_addr = master.namesrv_addr().unwrap().to_string();
    let slave = Broker::start(s).await.unwrap();
    let ctx = std::sync::Arc::clone(slave.context());
    let deadline = Instant::now() + CATCH_UP;
    loop {
        let attrs = ctx.topics.get("FifoHa").map(|t| t.attributes);
        if let Some(attrs) = attrs {
            assert_eq!(attrs.get("message.type").map(String::as_str), Some("FIFO"));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the slave copied FifoHa within {CATCH_UP:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    slave.shutdown().await;
    master.shutdown().await;
}
