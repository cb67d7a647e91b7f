//! Issue 15: system topics are the broker's, and every name and number a
//! client sends is checked where it enters. Raw remoting requests against
//! an in-process broker on 127.0.0.1, as an attacker would send them; each
//! refusal must come with a remark and change nothing.

use std::time::Duration;

use rmq_broker::broker::Broker;
use rmq_client::RemotingClient;
use rmq_client::{self as sdk};
use rmq_common::config::CqBackend;
use rmq_common::constants::{property, SCHEDULE_TOPIC};
use rmq_common::message::Properties;
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode, SendMessageRequestHeader};
use rmq_tests::start_broker;

const TIMEOUT: Duration = Duration::from_secs(10);

fn header(topic: &str, queue_id: i32, props: &Properties) -> SendMessageRequestHeader {
    SendMessageRequestHeader {
        producer_group: "hostile".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id,
        sys_flag: 0,
        born_timestamp: rmq_common::time::now_ms(),
        flag: 0,
        properties: Some(String::from_utf8(props.encode().unwrap()).unwrap()),
        reconsume_times: 0,
        unit_mode: false,
        max_reconsume_times: None,
        batch: false,
        broker_name: None,
    }
}

async fn send(c: &RemotingClient, h: &SendMessageRequestHeader, body: Vec<u8>) -> RemotingCommand {
    let mut req = RemotingCommand::request(RequestCode::SendMessage);
    req.ext_fields = h.to_ext();
    c.invoke(req.with_body(body), TIMEOUT).await.unwrap()
}

async fn call(c: &RemotingClient, code: RequestCode, ext: &[(&str, String)]) -> RemotingCommand {
    c.invoke(sdk::request(code, ext), TIMEOUT).await.unwrap()
}

fn code(r: &RemotingCommand) -> i32 {
    r.code
}

fn remark(r: &RemotingCommand) -> &str {
    r.remark.as_deref().unwrap_or("")
}

fn log_end(b: &Broker) -> i64 {
    b.context().store.max_phy_offset()
}

/// Sends to the topics only the broker writes are refused as RocketMQ
/// refuses them, and nothing reaches the CommitLog: the self-feeding
/// schedule loop of the issue (SCHEDULE_TOPIC_XXXX naming itself as its
/// real topic) cannot start.
async fn system_topics_refuse_client_sends(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), backend).await;
    let c = sdk::connect(broker.addr()).await.unwrap();
    let before = log_end(&broker);
    for topic in [
        SCHEDULE_TOPIC,
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
    ] {
        let mut p = Properties::new();
        p.insert(property::DELAY_TIME_LEVEL, "1");
        p.insert(property::REAL_TOPIC, SCHEDULE_TOPIC);
        p.insert(property::REAL_QUEUE_ID, "0");
        let r = send(&c, &header(topic, 0, &p), b"loop".to_vec()).await;
        assert_eq!(code(&r), i32::from(ResponseCode::NoPermission), "{topic}");
        assert_eq!(
            remark(&r),
            format!("Sending message to topic[{topic}] is forbidden.")
        );
    }
    assert_eq!(log_end(&broker), before, "nothing was stored");

    // Creating, re-sizing or deleting them from a client is refused too.
    for topic in [
        SCHEDULE_TOPIC,
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "TBW102",
        "rmq_sys_x",
    ] {
        let r = call(
            &c,
            RequestCode::UpdateAndCreateTopic,
            &[
                ("topic", topic.into()),
                ("readQueueNums", "1".into()),
                ("writeQueueNums", "1".into()),
                ("perm", "6".into()),
            ],
        )
        .await;
        assert_eq!(code(&r), i32::from(ResponseCode::SystemError), "{topic}");
        assert!(
            remark(&r).contains("conflict with system topic"),
            "{}",
            remark(&r)
        );
        let r = call(
            &c,
            RequestCode::DeleteTopicInBroker,
            &[("topic", topic.into())],
        )
        .await;
        assert_eq!(code(&r), i32::from(ResponseCode::SystemError), "{topic}");
    }
    assert!(broker.context().topics.get("rmq_sys_x").is_none());
    assert!(
        broker.context().topics.get("TBW102").is_some(),
        "not deleted"
    );
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn system_topics_refuse_client_sends_file() {
    system_topics_refuse_client_sends(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn system_topics_refuse_client_sends_rocksdb() {
    system_topics_refuse_client_sends(CqBackend::Rocksdb).await;
}

/// A request, its header fields, and what its refusal's remark must say.
type BadRequest = (RequestCode, Vec<(&'static str, String)>, &'static str);

/// Queue ids, names, counts and offsets out of range are refused with a
/// remark, and none of them leaves a trace: no queue the topic does not
/// have, no offset entry, no topic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_range_fields_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), CqBackend::Rocksdb).await;
    let c = sdk::connect(broker.addr()).await.unwrap();
    let ok = call(
        &c,
        RequestCode::UpdateAndCreateTopic,
        &[
            ("topic", "Four".into()),
            ("readQueueNums", "4".into()),
            ("writeQueueNums", "4".into()),
            ("perm", "6".into()),
        ],
    )
    .await;
    assert_eq!(code(&ok), 0, "{}", remark(&ok));
    let before = log_end(&broker);

    // A queue the topic does not have, directly or as the real queue of a
    // delayed message (the broker sets REAL_QID itself).
    let r = send(
        &c,
        &header("Four", i32::MAX, &Properties::new()),
        b"x".to_vec(),
    )
    .await;
    assert_eq!(code(&r), i32::from(ResponseCode::SystemError));
    assert!(
        remark(&r).contains("queueId[2147483647] is illegal"),
        "{}",
        remark(&r)
    );
    let mut p = Properties::new();
    p.insert(property::DELAY_TIME_LEVEL, "1");
    p.insert(property::REAL_QUEUE_ID, i32::MAX.to_string());
    p.insert(property::REAL_TOPIC, "Four");
    let r = send(&c, &header("Four", 1, &p), b"x".to_vec()).await;
    assert_eq!(code(&r), 0, "{}", remark(&r));
    let stored = broker
        .context()
        .store
        .record_at(
            rmq_common::message::decode_offset_msg_id(r.ext().get_str("msgId").unwrap())
                .unwrap()
                .1,
        )
        .unwrap();
    let view = rmq_common::message::record::RecordView::parse(stored.bytes(), false).unwrap();
    assert_eq!(view.topic(), SCHEDULE_TOPIC);
    assert_eq!(view.property(property::REAL_QUEUE_ID).as_deref(), Some("1"));
    let after_delayed = log_end(&broker);
    assert!(after_delayed > before);

    // Names and counts.
    let bad: Vec<BadRequest> = vec![
        (
            RequestCode::UpdateAndCreateTopic,
            vec![("topic", "bad topic".into())],
            "illegal characters",
        ),
        (
            RequestCode::UpdateAndCreateTopic,
            vec![("topic", "T".repeat(128))],
            "longer than topic max length",
        ),
        (
            RequestCode::UpdateAndCreateTopic,
            vec![("topic", "Zero".into()), ("readQueueNums", "0".into())],
            "readQueueNums 0 is illegal",
        ),
        (
            RequestCode::UpdateAndCreateTopic,
            vec![
                ("topic", "Huge".into()),
                ("writeQueueNums", i32::MAX.to_string()),
            ],
            "writeQueueNums 2147483647 is illegal",
        ),
        (
            RequestCode::UpdateAndCreateTopic,
            vec![("topic", "Perm".into()), ("perm", "99".into())],
            "perm 99 is illegal",
        ),
        (
            RequestCode::UpdateConsumerOffset,
            vec![
                ("consumerGroup", "g".into()),
                ("topic", "T".repeat(4096)),
                ("queueId", "0".into()),
                ("commitOffset", "1".into()),
            ],
            "longer than topic max length",
        ),
        (
            RequestCode::UpdateConsumerOffset,
            vec![
                ("consumerGroup", "g".into()),
                ("topic", "NoSuchTopic".into()),
                ("queueId", "0".into()),
                ("commitOffset", "1".into()),
            ],
            "not exist",
        ),
        (
            RequestCode::UpdateConsumerOffset,
            vec![
                ("consumerGroup", "g".into()),
                ("topic", "Four".into()),
                ("queueId", "4".into()),
                ("commitOffset", "1".into()),
            ],
            "queueId[4] is illegal",
        ),
        (
            RequestCode::UpdateConsumerOffset,
            vec![
                ("consumerGroup", "g".into()),
                ("topic", "Four".into()),
                ("queueId", "0".into()),
                ("commitOffset", "-5".into()),
            ],
            "negative",
        ),
        (
            RequestCode::UpdateConsumerOffset,
            vec![
                ("consumerGroup", "g/../../etc".into()),
                ("topic", "Four".into()),
                ("queueId", "0".into()),
                ("commitOffset", "1".into()),
            ],
            "group name",
        ),
        (
            RequestCode::QueryConsumerOffset,
            vec![
                ("consumerGroup", "g".into()),
                ("topic", "Four".into()),
                ("queueId", "-1".into()),
            ],
            "queueId[-1] is illegal",
        ),
        (
            RequestCode::PullMessage,
            vec![
                ("consumerGroup", "g".into()),
                ("topic", "Four".into()),
                ("queueId", "9".into()),
                ("queueOffset", "0".into()),
                ("maxMsgNums", "32".into()),
                ("sysFlag", "0".into()),
                ("commitOffset", "0".into()),
                ("suspendTimeoutMillis", "0".into()),
                ("subVersion", "0".into()),
            ],
            "queueId[9] is illegal",
        ),
    ];
    for (req, ext, expect) in &bad {
        let r = call(&c, *req, ext).await;
        assert_ne!(code(&r), 0, "{req:?} {expect}");
        assert!(
            remark(&r).contains(expect),
            "{req:?}: {:?} lacks {expect:?}",
            remark(&r)
        );
    }
    let ctx = broker.context();
    for t in ["Zero", "Huge", "Perm"] {
        assert!(ctx.topics.get(t).is_none(), "{t}");
    }
    assert_eq!(ctx.topics.get("Four").unwrap().write_queue_nums, 4);
    assert_eq!(ctx.offsets.query("g", "Four", 0), None);
    assert_eq!(ctx.offsets.query("g", "NoSuchTopic", 0), None);
    assert_eq!(log_end(&broker), after_delayed, "refusals stored nothing");
    broker.shutdown().await;
}

/// A client's own send to its group's retry topic follows the retry rules
/// (RocketMQ's fallback when CONSUMER_SEND_MSG_BACK fails): past the
/// group's retries it lands in the dead-letter topic; a dead-letter topic
/// is never created by a plain send.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_topic_sends_follow_the_retry_rules() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), CqBackend::File).await;
    let c = sdk::connect(broker.addr()).await.unwrap();
    let r = send(&c, &header("%DLQ%cg", 0, &Properties::new()), b"x".to_vec()).await;
    assert_eq!(
        code(&r),
        i32::from(ResponseCode::TopicNotExist),
        "{}",
        remark(&r)
    );
    assert!(broker.context().topics.get("%DLQ%cg").is_none());

    let mut h = header("%RETRY%cg", 0, &Properties::new());
    let r = send(&c, &h, b"retry".to_vec()).await;
    assert_eq!(code(&r), 0, "{}", remark(&r));
    h.reconsume_times = 3;
    h.max_reconsume_times = Some(3);
    let r = send(&c, &h, b"dead".to_vec()).await;
    assert_eq!(code(&r), 0, "{}", remark(&r));
    let (_, offset) =
        rmq_common::message::decode_offset_msg_id(r.ext().get_str("msgId").unwrap()).unwrap();
    let stored = broker.context().store.record_at(offset).unwrap();
    let view = rmq_common::message::record::RecordView::parse(stored.bytes(), false).unwrap();
    assert_eq!(view.topic(), "%DLQ%cg");
    assert_eq!(view.body(), b"dead");
    assert!(broker.context().topics.get("%DLQ%cg").is_some());
    broker.shutdown().await;
}

/// A delayed or transactional message is refused up front when the form
/// the schedule service or the check walk would write later is over
/// maxMessageSize: it would otherwise be stored and then fail in the
/// service.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_room_for_what_the_services_add_is_refused_at_send() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), CqBackend::File).await;
    let c = sdk::connect(broker.addr()).await.unwrap();
    let max = broker.context().settings.store.max_message_size_bytes as usize;
    let before = log_end(&broker);
    let mut p = Properties::new();
    p.insert(property::DELAY_TIME_LEVEL, "1");
    let r = send(&c, &header("Late", 0, &p), vec![b'x'; max - 150]).await;
    assert_eq!(
        code(&r),
        i32::from(ResponseCode::MessageIllegal),
        "{}",
        remark(&r)
    );
    assert!(remark(&r).contains("schedule service"), "{}", remark(&r));
    let mut p = Properties::new();
    p.insert(property::TRANSACTION_PREPARED, "true");
    p.insert(property::PRODUCER_GROUP, "tx");
    let mut h = header("Late", 0, &p);
    h.sys_flag = rmq_common::message::sysflag::TRANSACTION_PREPARED_TYPE;
    let r = send(&c, &h, vec![b'x'; max - 150]).await;
    assert_eq!(
        code(&r),
        i32::from(ResponseCode::MessageIllegal),
        "{}",
        remark(&r)
    );
    assert!(remark(&r).contains("transaction check"), "{}", remark(&r));
    assert_eq!(log_end(&broker), before);
    // Plain messages of that size are still taken.
    let r = send(
        &c,
        &header("Late", 0, &Properties::new()),
        vec![b'x'; max - 150],
    )
    .await;
    assert_eq!(code(&r), 0, "{}", remark(&r));
    broker.shutdown().await;
}

/// A heartbeat naming an illegal group or subscribed topic registers
/// nothing and says which name broke the rules.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_with_illegal_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), CqBackend::File).await;
    let c = sdk::connect(broker.addr()).await.unwrap();
    let heartbeat = |group: &str, topic: &str| {
        let body = format!(
            r#"{{"clientID":"hb","producerDataSet":[],"consumerDataSet":[{{"groupName":"{group}","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[{{"topic":"{topic}","subString":"*","tagsSet":[],"codeSet":[],"subVersion":0}}],"unitMode":false}}]}}"#
        );
        RemotingCommand::request(RequestCode::HeartBeat).with_body(body.into_bytes())
    };
    for (group, topic, expect) in [
        ("bad group", "T", "heartbeat: group name"),
        ("good", "bad topic", "subscribed topic \"bad topic\""),
    ] {
        let r = c.invoke(heartbeat(group, topic), TIMEOUT).await.unwrap();
        assert_eq!(code(&r), i32::from(ResponseCode::SystemError));
        assert!(remark(&r).contains(expect), "{}", remark(&r));
    }
    assert!(broker.context().topics.get("%RETRY%good").is_none());
    let r = c.invoke(heartbeat("good", "T"), TIMEOUT).await.unwrap();
    assert_eq!(code(&r), 0, "{}", remark(&r));
    assert!(broker.context().topics.get("%RETRY%good").is_some());
    broker.shutdown().await;
}
