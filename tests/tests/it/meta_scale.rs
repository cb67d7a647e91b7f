//! Metadata in bulk: 10,000 topics and 10,000 groups per request (RocketMQ
//! 5.x's UPDATE_AND_CREATE_TOPIC_LIST and _SUBSCRIPTIONGROUP_LIST), all or
//! nothing; a created topic's route served within one second through an
//! incremental registration, a deleted one's gone as fast; everything back
//! after a restart (journal replayed into the JSON files).

use std::time::{Duration, Instant};

use rmq_client::{self as sdk, RemotingClient};
use rmq_common::config::CqBackend;
use rmq_common::remoting::body::{
    CreateTopicList, SubscriptionGroupConfig, SubscriptionGroupList, TopicConfig,
    TopicConfigSerializeWrapper,
};
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};
use rmq_tests::fixtures::start_broker;

const ENTRIES: usize = 10_000;
/// A new or deleted topic's route must follow within this.
const ROUTE_BOUND: Duration = Duration::from_secs(1);

async fn topics_of(client: &RemotingClient) -> TopicConfigSerializeWrapper {
    let resp = sdk::call(client, sdk::request(RequestCode::GetAllTopicConfig, &[]))
        .await
        .unwrap();
    serde_json::from_slice(resp.body.as_deref().unwrap()).unwrap()
}

async fn groups_of(client: &RemotingClient) -> serde_json::Value {
    let resp = sdk::call(
        client,
        sdk::request(RequestCode::GetAllSubscriptiongroupConfig, &[]),
    )
    .await
    .unwrap();
    serde_json::from_slice(resp.body.as_deref().unwrap()).unwrap()
}

async fn routed(ns: &RemotingClient, topic: &str) -> bool {
    let resp = ns
        .invoke(
            sdk::request(RequestCode::GetRouteInfoByTopic, &[("topic", topic.into())]),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    resp.code == i32::from(ResponseCode::Success)
}

/// Polls until `topic`'s route is `present` (or not); returns how long.
async fn route_follows(ns: &RemotingClient, topic: &str, present: bool) -> Duration {
    let t = Instant::now();
    while routed(ns, topic).await != present {
        assert!(
            t.elapsed() < ROUTE_BOUND,
            "{topic}: route {} not within {ROUTE_BOUND:?}",
            if present { "served" } else { "dropped" }
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    t.elapsed()
}

fn group(name: &str) -> SubscriptionGroupConfig {
    rmq_common::json::from_str(&format!(r#"{{"groupName":"{name}"}}"#)).unwrap()
}

async fn run(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), backend).await;
    let client = sdk::connect(broker.addr()).await.unwrap();
    let ns = sdk::connect(broker.namesrv_addr().unwrap()).await.unwrap();

    // 10,000 topics in one request, and their routes.
    let list = CreateTopicList {
        topic_config_list: (0..ENTRIES)
            .map(|i| TopicConfig::new(&format!("Bulk{i}"), 1 + (i % 4) as i32))
            .collect(),
    };
    let req = RemotingCommand::request(RequestCode::UpdateAndCreateTopicList)
        .with_body(serde_json::to_vec(&list).unwrap());
    sdk::call(&client, req).await.unwrap();
    route_follows(&ns, &format!("Bulk{}", ENTRIES - 1), true).await;
    let table = topics_of(&client).await.topic_config_table;
    for i in 0..ENTRIES {
        assert_eq!(
            table[&format!("Bulk{i}")].write_queue_nums,
            1 + (i % 4) as i32
        );
    }

    // 10,000 groups in one request; one bad name and none is applied.
    let mut groups = SubscriptionGroupList {
        group_config_list: (0..ENTRIES).map(|i| group(&format!("G{i}"))).collect(),
    };
    groups.group_config_list.push(group("bad group!"));
    let req = RemotingCommand::request(RequestCode::UpdateAndCreateSubscriptionGroupList)
        .with_body(serde_json::to_vec(&groups).unwrap());
    assert!(sdk::call(&client, req).await.is_err());
    assert!(groups_of(&client).await["subscriptionGroupTable"]["G0"].is_null());
    groups.group_config_list.pop();
    let req = RemotingCommand::request(RequestCode::UpdateAndCreateSubscriptionGroupList)
        .with_body(serde_json::to_vec(&groups).unwrap());
    sdk::call(&client, req).await.unwrap();
    let held = groups_of(&client).await;
    for i in [0, ENTRIES / 2, ENTRIES - 1] {
        assert_eq!(
            held["subscriptionGroupTable"][format!("G{i}")]["groupName"],
            format!("G{i}")
        );
    }

    // One create and one delete: the routes follow within a second.
    let create = sdk::request(
        RequestCode::UpdateAndCreateTopic,
        &[
            ("topic", "Single".into()),
            ("readQueueNums", "3".into()),
            ("writeQueueNums", "3".into()),
        ],
    );
    sdk::call(&client, create).await.unwrap();
    route_follows(&ns, "Single", true).await;
    let delete = sdk::request(
        RequestCode::DeleteTopicInBroker,
        &[("topic", "Bulk0".into())],
    );
    sdk::call(&client, delete).await.unwrap();
    route_follows(&ns, "Bulk0", false).await;
    assert!(routed(&ns, "Bulk1").await, "the broker's other topics stay");

    // A restart finds it all.
    client.close().await;
    ns.close().await;
    broker.shutdown().await;
    let broker = start_broker(dir.path(), backend).await;
    let client = sdk::connect(broker.addr()).await.unwrap();
    let table = topics_of(&client).await.topic_config_table;
    assert!(table.contains_key("Single") && table.contains_key("Bulk1"));
    assert!(!table.contains_key("Bulk0"));
    assert!(groups_of(&client).await["subscriptionGroupTable"]["G9999"].is_object());
    // The clean stop wrote the JSON files whole, as Apache's tools read them.
    let config = dir.path().join("config");
    let file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(config.join("topics.json")).unwrap()).unwrap();
    assert!(file["topicConfigTable"]["Single"].is_object());
    assert!(!config.join("topics.json.journal").exists());
    client.close().await;
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_thousand_per_request_and_routes_within_a_second_file() {
    run(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_thousand_per_request_and_routes_within_a_second_rocksdb() {
    run(CqBackend::Rocksdb).await;
}
