//! RocketMQ 5.x subscription-group fields (consumeMessageOrderly,
//! groupRetryPolicy, groupSysFlag, consumeTimeoutMinute,
//! subscriptionDataSet, attributes): taken by
//! UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, kept over a restart
//! (`config/subscriptionGroup.json`), answered by
//! GET_ALL_SUBSCRIPTIONGROUP_CONFIG and GET_SUBSCRIPTIONGROUP_CONFIG; a
//! group attribute refused as 5.3.3 refuses it (it knows none).

use rmq_broker::broker::Broker;
use rmq_client::{self as sdk, RemotingClient};
use rmq_common::remoting::{RemotingCommand, RequestCode};

use crate::meta5x::{ask, json, start_with};

const GROUP: &str = r#"{"groupName":"G5","consumeMessageOrderly":true,"retryMaxTimes":5,
  "groupRetryPolicy":{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":1000,"max":60000,"multiplier":3}},
  "groupSysFlag":2,"consumeTimeoutMinute":7,
  "subscriptionDataSet":[{"topic":"T5","expressionType":"TAG","expression":"a || b","version":3}]}"#;

async fn create(b: &RemotingClient, body: &str) -> RemotingCommand {
    let mut req = RemotingCommand::request(RequestCode::UpdateAndCreateSubscriptionGroup);
    req.body = Some(body.as_bytes().to_vec().into());
    b.invoke(req, std::time::Duration::from_secs(10))
        .await
        .unwrap()
}

fn check_fields(g: &serde_json::Value) {
    assert_eq!(g["groupName"], "G5", "{g}");
    assert_eq!(g["consumeMessageOrderly"], true, "{g}");
    assert_eq!(g["retryMaxTimes"], 5, "{g}");
    assert_eq!(
        g["groupRetryPolicy"],
        serde_json::json!({"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":1000,"max":60000,"multiplier":3}}),
        "{g}"
    );
    assert_eq!(
        (&g["groupSysFlag"], &g["consumeTimeoutMinute"]),
        (&2.into(), &7.into()),
        "{g}"
    );
    assert_eq!(
        g["subscriptionDataSet"],
        serde_json::json!([{"topic":"T5","expressionType":"TAG","expression":"a || b","version":3}]),
        "{g}"
    );
}

#[tokio::test]
async fn five_x_group_fields_are_kept_and_answered() {
    let (_dir, broker, b, _n) = start_with(|_| {}).await;
    let r = create(&b, GROUP).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let one = ask(
        &b,
        RequestCode::GetSubscriptionGroupConfig,
        &[("group", "G5")],
    )
    .await;
    check_fields(&json(&one));
    let all = ask(&b, RequestCode::GetAllSubscriptiongroupConfig, &[]).await;
    check_fields(&json(&all)["subscriptionGroupTable"]["G5"]);
    // A 4.x body gets the 5.x defaults.
    assert_eq!(create(&b, r#"{"groupName":"G4"}"#).await.code, 0);
    let g4 = json(
        &ask(
            &b,
            RequestCode::GetSubscriptionGroupConfig,
            &[("group", "G4")],
        )
        .await,
    );
    assert_eq!(
        g4["groupRetryPolicy"],
        serde_json::json!({"type":"CUSTOMIZED"}),
        "{g4}"
    );
    assert_eq!(
        (&g4["consumeMessageOrderly"], &g4["consumeTimeoutMinute"]),
        (&false.into(), &15.into())
    );
    assert!(g4.get("subscriptionDataSet").is_none(), "{g4}");
    // No group attribute exists in 5.3.3.
    let r = create(&b, r#"{"groupName":"GA","attributes":{"+colour":"red"}}"#).await;
    assert_eq!(
        (r.code, r.remark.as_deref()),
        (1, Some("unsupported key: colour"))
    );
    assert!(broker.context().groups.get("GA").is_none());
    // Kept over a restart.
    let settings = broker.context().settings.clone();
    broker.shutdown().await;
    let broker = Broker::start(settings).await.unwrap();
    let b = sdk::connect(broker.addr()).await.unwrap();
    let one = ask(
        &b,
        RequestCode::GetSubscriptionGroupConfig,
        &[("group", "G5")],
    )
    .await;
    check_fields(&json(&one));
    broker.shutdown().await;
}
