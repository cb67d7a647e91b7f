//! RocketMQ 5.x metadata answers over the wire, on a broker with its
//! embedded NameServer: the topics named after the cluster and the broker
//! have routes (the 5.x proxy and `mqadmin updateTopic -c` find a
//! cluster's brokers through them); UPDATE_AND_CREATE_TOPIC answers once
//! the NameServer routes the topic (the proxy reads the route right after
//! the answer, with no pause); GET_TOPIC_CONFIG (351) and
//! GET_SUBSCRIPTIONGROUP_CONFIG (352) as 5.3.3 answers them.

use std::time::Duration;

use rmq_broker::broker::Broker;
use rmq_client::{self as sdk, RemotingClient};
use rmq_common::config::CqBackend;
use rmq_common::remoting::{RemotingCommand, RequestCode};

const TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) async fn ask(
    client: &RemotingClient,
    code: RequestCode,
    ext: &[(&str, &str)],
) -> RemotingCommand {
    let ext: Vec<(&str, String)> = ext.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
    client
        .invoke(sdk::request(code, &ext), TIMEOUT)
        .await
        .unwrap()
}

pub(crate) fn json(resp: &RemotingCommand) -> serde_json::Value {
    serde_json::from_slice(resp.body.as_deref().unwrap_or_default()).unwrap_or_else(|e| {
        panic!(
            "answer {} ({:?}) body is not JSON: {e}",
            resp.code, resp.remark
        )
    })
}

/// A broker (settings changed by `tune`) and connections to it and to its
/// NameServer.
pub(crate) async fn start_with(
    tune: impl FnOnce(&mut rmq_broker::config::Settings),
) -> (tempfile::TempDir, Broker, RemotingClient, RemotingClient) {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = rmq_tests::broker_settings(&dir.path().join("store"), CqBackend::File);
    tune(&mut settings);
    let broker = Broker::start(settings).await.unwrap();
    let b = sdk::connect(broker.addr()).await.unwrap();
    let n = sdk::connect(broker.namesrv_addr().unwrap()).await.unwrap();
    (dir, broker, b, n)
}

#[tokio::test]
async fn cluster_and_broker_topics_are_routed() {
    let (_dir, broker, _b, n) = start_with(|_| {}).await;
    let s = &broker.context().settings.broker;
    for topic in [&s.broker_cluster_name, &s.broker_name] {
        let r = ask(&n, RequestCode::GetRouteInfoByTopic, &[("topic", topic)]).await;
        assert_eq!(r.code, 0, "route of {topic}: {:?}", r.remark);
        let route = json(&r);
        assert_eq!(
            route["brokerDatas"][0]["brokerName"], s.broker_name,
            "{route}"
        );
    }
    broker.shutdown().await;
}

#[tokio::test]
async fn a_created_topic_is_routed_when_the_create_is_answered() {
    let (_dir, broker, b, n) = start_with(|_| {}).await;
    for i in 0..5 {
        let topic = format!("Routed{i}");
        let r = ask(
            &b,
            RequestCode::UpdateAndCreateTopic,
            &[
                ("topic", &topic),
                ("readQueueNums", "2"),
                ("writeQueueNums", "2"),
            ],
        )
        .await;
        assert_eq!(r.code, 0, "{:?}", r.remark);
        // At once, as the proxy asks.
        let r = ask(&n, RequestCode::GetRouteInfoByTopic, &[("topic", &topic)]).await;
        assert_eq!(
            r.code, 0,
            "route of {topic} right after its create: {:?}",
            r.remark
        );
    }
    broker.shutdown().await;
}

#[tokio::test]
async fn get_topic_config_answers_one_topic_or_topic_not_exist() {
    let (_dir, broker, b, _n) = start_with(|_| {}).await;
    let r = ask(&b, RequestCode::GetTopicConfig, &[("topic", "NoSuchTopic")]).await;
    assert_eq!(r.code, 17, "TOPIC_NOT_EXIST");
    assert_eq!(
        r.remark.as_deref(),
        Some("No topic in this broker. topic: NoSuchTopic")
    );
    let r = ask(
        &b,
        RequestCode::UpdateAndCreateTopic,
        &[
            ("topic", "Seen"),
            ("readQueueNums", "3"),
            ("writeQueueNums", "5"),
            ("perm", "4"),
        ],
    )
    .await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let r = ask(
        &b,
        RequestCode::GetTopicConfig,
        &[("topic", "Seen"), ("lo", "true")],
    )
    .await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let config = json(&r);
    assert_eq!(config["topicName"], "Seen", "{config}");
    assert_eq!(
        (
            &config["readQueueNums"],
            &config["writeQueueNums"],
            &config["perm"]
        ),
        (&3.into(), &5.into(), &4.into()),
        "{config}"
    );
    assert!(config.get("mappingDetail").is_none(), "{config}");
    let r = ask(&b, RequestCode::GetTopicConfig, &[]).await;
    assert_eq!(r.code, 1, "a request without topic: {:?}", r.remark);
    assert!(r.remark.unwrap_or_default().contains("`topic`"));
    broker.shutdown().await;
}

#[tokio::test]
async fn get_group_config_creates_the_group_as_java_unless_auto_create_is_off() {
    let (_dir, broker, b, _n) = start_with(|_| {}).await;
    let r = ask(
        &b,
        RequestCode::GetSubscriptionGroupConfig,
        &[("group", "G1")],
    )
    .await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let config = json(&r);
    assert_eq!(config["groupName"], "G1", "{config}");
    assert_eq!(config["retryMaxTimes"], 16, "{config}");
    assert!(broker.context().groups.get("G1").is_some());
    broker.shutdown().await;

    let (_dir, broker, b, _n) =
        start_with(|s| s.broker.auto_create_subscription_group = false).await;
    let r = ask(
        &b,
        RequestCode::GetSubscriptionGroupConfig,
        &[("group", "G2")],
    )
    .await;
    assert_eq!(r.code, 26, "SUBSCRIPTION_GROUP_NOT_EXIST: {:?}", r.remark);
    assert_eq!(r.remark.as_deref(), Some("No group in this broker"));
    assert!(broker.context().groups.get("G2").is_none());
    broker.shutdown().await;
}
