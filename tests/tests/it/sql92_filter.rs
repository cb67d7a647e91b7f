//! SQL92 property filters on the pull path, on both backends: a consumer
//! with `a > 5 AND b = 'x'` gets exactly the matching messages, whether the
//! expression comes with the pull or from the group's heartbeat; a bad
//! expression answers SUBSCRIPTION_PARSE_FAILED with the parse error; with
//! `enablePropertyFilter` off the broker refuses SQL92 as Java does.

use rmq_broker::broker::Broker;
use rmq_client::RemotingClient;
use rmq_client::{self as sdk, OutMessage, SendCode};
use rmq_common::config::CqBackend;
use rmq_common::remoting::{
    pull_sys_flag, PullMessageRequestHeader, RemotingCommand, RequestCode, ResponseCode,
};
use rmq_tests::broker_settings;

const TOPIC: &str = "SqlTopic";
const GROUP: &str = "SqlGroup";
const EXPRESSION: &str = "a > 5 AND b = 'x'";

/// Message `i`: `a` = i % 11 (left out when i % 7 == 0), `b` = x or y.
fn props(i: i32) -> Vec<(String, String)> {
    let mut p = vec![(
        "b".to_owned(),
        if i % 2 == 0 { "x" } else { "y" }.to_owned(),
    )];
    if i % 7 != 0 {
        p.push(("a".to_owned(), (i % 11).to_string()));
    }
    p
}

fn expected(i: i32) -> bool {
    i % 7 != 0 && i % 11 > 5 && i % 2 == 0
}

async fn start(backend: CqBackend, enable: bool) -> (tempfile::TempDir, Broker, RemotingClient) {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = broker_settings(&dir.path().join("store"), backend);
    settings.broker.enable_property_filter = enable;
    let broker = Broker::start(settings).await.unwrap();
    rmq_tools::admin::topic_create(&rmq_client::Connector::new(), broker.addr(), TOPIC, 1, 6)
        .await
        .unwrap();
    let client = sdk::connect(broker.addr()).await.unwrap();
    (dir, broker, client)
}

/// Pulls the whole queue once with `expression` (sent with the pull when
/// `with_pull`); returns the matching bodies' indexes, or the refusal.
async fn pull_all(
    client: &RemotingClient,
    expression: &str,
    with_pull: bool,
) -> Result<Vec<i32>, (i32, String)> {
    let mut got = Vec::new();
    let mut offset = 0;
    for _ in 0..100 {
        let header = PullMessageRequestHeader {
            consumer_group: GROUP.into(),
            topic: TOPIC.into(),
            queue_id: 0,
            queue_offset: offset,
            max_msg_nums: 8,
            sys_flag: if with_pull {
                pull_sys_flag::SUBSCRIPTION
            } else {
                0
            },
            commit_offset: -1,
            suspend_timeout_millis: 0,
            subscription: with_pull.then(|| expression.to_owned()),
            sub_version: 0,
            expression_type: Some("SQL92".into()),
            max_msg_bytes: None,
        };
        let req =
            RemotingCommand::request(RequestCode::PullMessage).with_ext_fields(header.to_ext());
        let resp = client.invoke(req, sdk::DEFAULT_TIMEOUT).await.unwrap();
        let next: i64 = resp.ext().req_i64("nextBeginOffset").unwrap_or(offset);
        match ResponseCode::from_i32(resp.code) {
            Some(ResponseCode::Success) => {
                let body = resp.body.as_deref().unwrap();
                let mut pos = 0;
                while pos < body.len() {
                    let v =
                        rmq_common::message::record::RecordView::parse(&body[pos..], true).unwrap();
                    let text = String::from_utf8(v.body().to_vec()).unwrap();
                    got.push(text.strip_prefix("m").unwrap().parse().unwrap());
                    pos += v.total_size();
                }
            }
            Some(ResponseCode::PullRetryImmediately) => {}
            Some(ResponseCode::PullNotFound) => return Ok(got),
            _ => return Err((resp.code, resp.remark.unwrap_or_default())),
        }
        offset = next;
    }
    panic!("the queue did not end within 100 pulls");
}

async fn sql92_selects_exactly(backend: CqBackend) {
    let (_dir, broker, client) = start(backend, true).await;
    for i in 0..60 {
        let msg = OutMessage {
            body: format!("m{i}").into_bytes(),
            tags: Some(if i % 3 == 0 { "TagA" } else { "TagB" }.into()),
            keys: vec![],
            properties: props(i),
        };
        sdk::send(&client, SendCode::V2, "pg", TOPIC, 0, &[msg])
            .await
            .unwrap();
    }
    assert!(broker.context().store.wait_dispatched_to(
        broker.context().store.max_phy_offset(),
        rmq_tests::DISPATCH_TIMEOUT
    ));
    let want: Vec<i32> = (0..60).filter(|i| expected(*i)).collect();
    assert!(!want.is_empty());
    assert_eq!(pull_all(&client, EXPRESSION, true).await.unwrap(), want);

    // The TAGS pseudo-property and the push consumer's path: the group's
    // heartbeat carries the expression, the pull does not.
    let hb = serde_json::json!({
        "clientID": "sql@1",
        "consumerDataSet": [{
            "groupName": GROUP, "consumeType": "CONSUME_PASSIVELY",
            "messageModel": "CLUSTERING", "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
            "subscriptionDataSet": [{"topic": TOPIC, "subString": "TAGS = 'TagA' AND b IS NOT NULL",
                "expressionType": "SQL92", "subVersion": "1"}]
        }]
    });
    let req = sdk::request(RequestCode::HeartBeat, &[]).with_body(hb.to_string().into_bytes());
    sdk::call(&client, req).await.unwrap();
    let tag_a: Vec<i32> = (0..60).filter(|i| i % 3 == 0).collect();
    assert_eq!(pull_all(&client, "", false).await.unwrap(), tag_a);

    let (code, remark) = pull_all(&client, "a > ", true).await.unwrap_err();
    assert_eq!(code, i32::from(ResponseCode::SubscriptionParseFailed));
    assert!(
        remark.contains("SQL92") && remark.contains("column"),
        "{remark}"
    );
    // CHECK_CLIENT_CONFIG, which Java's push consumer sends before it starts.
    let check = serde_json::json!({"clientId": "sql@1", "group": GROUP,
        "subscriptionData": {"topic": TOPIC, "subString": "a >", "expressionType": "SQL92"}});
    let req =
        sdk::request(RequestCode::CheckClientConfig, &[]).with_body(check.to_string().into_bytes());
    let resp = client.invoke(req, sdk::DEFAULT_TIMEOUT).await.unwrap();
    assert_eq!(resp.code, i32::from(ResponseCode::SubscriptionParseFailed));
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql92_filter_file() {
    sql92_selects_exactly(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql92_filter_rocksdb() {
    sql92_selects_exactly(CqBackend::Rocksdb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql92_refused_when_property_filter_is_off() {
    let (_dir, broker, client) = start(CqBackend::File, false).await;
    let (code, remark) = pull_all(&client, EXPRESSION, true).await.unwrap_err();
    assert_eq!(code, i32::from(ResponseCode::SystemError));
    assert!(
        remark.contains("does not support consumer to filter message by SQL92"),
        "{remark}"
    );
    broker.shutdown().await;
}
