//! RocketMQ 5.x's client, transaction and dead-letter series after real
//! traffic from a remoting producer and consumer and from gRPC clients
//! (a Rust client built from the 5.x protos, registering as the SDKs do on
//! its telemetry stream), checked by content:
//! - `rocketmq_producer_connections` / `rocketmq_consumer_connections`
//!   count each connection under its language, version, consume mode and
//!   `protocol_type` (`remoting`, or `grpc` for the broker's own gRPC
//!   clients), and a gRPC consumer's count drops to 0 when it leaves;
//! - a commit and a rollback count under the real topic, the commit's
//!   latency is observed, `rocketmq_half_messages` goes up with each half
//!   and down with each resolution, and is derived again after a restart;
//! - `rocketmq_send_to_dlq_messages_total` counts a gRPC
//!   ForwardMessageToDeadLetterQueue, a remoting send-back to the DLQ and a
//!   retry-topic send over the group's limit;
//! - `rocketmq_consumer_group_create_execution_time` observes a group
//!   creation.

use std::net::SocketAddr;
use std::time::Duration;

use futures::StreamExt;
use rmq_broker::broker::Broker;
use rmq_client::{self as sdk, LocalTxState, OutMessage, SendCode, TransactionProducer};
use rmq_common::config::CqBackend;
use rmq_common::constants::{property, RETRY_GROUP_TOPIC_PREFIX};
use rmq_common::message::decode_offset_msg_id;
use rmq_common::message::record::RecordView;
use rmq_common::remoting::{
    end_state, ConsumerSendMsgBackRequestHeader, EndTransactionRequestHeader, LanguageCode,
    RemotingCommand, RequestCode, SendMessageRequestHeader,
};
use rmq_grpc::pb;
use rmq_grpc::tonic::transport::{Channel, Endpoint};
use rmq_grpc::tonic::{Request, Streaming};
use rmq_grpc::MessagingServiceClient;

use crate::metrics::{parse, scrape, scrape_until, value, Sample};

/// Longest one call waits.
const TIMEOUT: Duration = Duration::from_secs(10);
const TX_TOPIC: &str = "TxTopic5x";
const DLQ_TOPIC: &str = "DlqTopic5x";
const TX_GROUP: &str = "TxProducers5x";
const REMOTING_GROUP: &str = "RemotingGroup5x";
const GRPC_GROUP: &str = "GrpcGroup5x";

const PRODUCERS: &str = "rocketmq_producer_connections";
const CONSUMERS: &str = "rocketmq_consumer_connections";
const COMMITS: &str = "rocketmq_commit_messages_total";
const ROLLBACKS: &str = "rocketmq_rollback_messages_total";
const FINISH: &str = "rocketmq_finish_message_latency_milliseconds";
const HALVES: &str = "rocketmq_half_messages";
const DLQ: &str = "rocketmq_send_to_dlq_messages_total";
const GROUP_CREATE: &str = "rocketmq_consumer_group_create_execution_time_milliseconds";

fn resource(name: &str) -> Option<pb::Resource> {
    Some(pb::Resource {
        resource_namespace: String::new(),
        name: name.into(),
    })
}

/// A call as an SDK makes it: client id, language and version headers.
fn call<T>(msg: T, client_id: &str, language: &str, version: &str) -> Request<T> {
    let mut r = Request::new(msg);
    let m = r.metadata_mut();
    m.insert("x-mq-client-id", client_id.parse().unwrap());
    m.insert("x-mq-language", language.parse().unwrap());
    m.insert("x-mq-client-version", version.parse().unwrap());
    r
}

/// A gRPC client registered by its settings on a telemetry stream that
/// stays open while it lives.
struct GrpcClient {
    c: MessagingServiceClient<Channel>,
    id: String,
    language: &'static str,
    version: &'static str,
    _telemetry: Streaming<pb::TelemetryCommand>,
}

impl GrpcClient {
    async fn register(
        addr: SocketAddr,
        id: &str,
        (language, version): (&'static str, &'static str),
        ua: pb::Language,
        settings: pb::Settings,
    ) -> Self {
        let channel = Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .timeout(TIMEOUT)
            .connect()
            .await
            .unwrap();
        let mut c = MessagingServiceClient::new(channel);
        let settings = pb::Settings {
            user_agent: Some(pb::Ua {
                language: ua as i32,
                version: version.into(),
                platform: "test".into(),
                hostname: "localhost".into(),
            }),
            ..settings
        };
        let first = pb::TelemetryCommand {
            status: None,
            command: Some(pb::telemetry_command::Command::Settings(settings)),
        };
        // The stream stays open after the settings, as an SDK's does.
        let outbound = futures::stream::iter([first]).chain(futures::stream::pending());
        let mut telemetry = c
            .telemetry(call(outbound, id, language, version))
            .await
            .unwrap()
            .into_inner();
        let answer = tokio::time::timeout(TIMEOUT, telemetry.next())
            .await
            .expect("settings answered in time")
            .expect("an answer")
            .unwrap();
        let status = answer.status.unwrap_or_default();
        assert_eq!(status.code, pb::Code::Ok as i32, "{id}: {status:?}");
        Self {
            c,
            id: id.into(),
            language,
            version,
            _telemetry: telemetry,
        }
    }

    fn req<T>(&self, msg: T) -> Request<T> {
        call(msg, &self.id, self.language, self.version)
    }
}

fn publishing(topic: &str) -> pb::Settings {
    pb::Settings {
        client_type: Some(pb::ClientType::Producer as i32),
        request_timeout: Some(prost_duration(3)),
        pub_sub: Some(pb::settings::PubSub::Publishing(pb::Publishing {
            topics: vec![resource(topic).unwrap()],
            max_body_size: 4 << 20,
            validate_message_type: true,
        })),
        ..Default::default()
    }
}

fn subscription(group: &str, topic: &str) -> pb::Settings {
    pb::Settings {
        client_type: Some(pb::ClientType::SimpleConsumer as i32),
        request_timeout: Some(prost_duration(3)),
        pub_sub: Some(pb::settings::PubSub::Subscription(pb::Subscription {
            group: resource(group),
            subscriptions: vec![pb::SubscriptionEntry {
                topic: resource(topic),
                expression: Some(pb::FilterExpression {
                    r#type: pb::FilterType::Tag as i32,
                    expression: "*".into(),
                }),
            }],
            fifo: Some(false),
            receive_batch_size: None,
            long_polling_timeout: None,
        })),
        ..Default::default()
    }
}

fn prost_duration(s: i64) -> rmq_grpc::prost_types::Duration {
    rmq_grpc::prost_types::Duration {
        seconds: s,
        nanos: 0,
    }
}

/// The value of `name` with exactly these labels among `extra` (0 when
/// absent).
fn at(samples: &[Sample], name: &str, extra: &[(&str, &str)]) -> f64 {
    value(samples, name, extra).unwrap_or(0.0)
}

/// A remoting consumer's heartbeat, as a Go client names itself.
async fn remoting_consumer(addr: SocketAddr) -> rmq_client::RemotingClient {
    let client = sdk::connect(addr).await.unwrap();
    let body = serde_json::json!({
        "clientID": "remoting-consumer@5x",
        "producerDataSet": [],
        "consumerDataSet": [{
            "groupName": REMOTING_GROUP,
            "consumeType": "CONSUME_PASSIVELY",
            "messageModel": "CLUSTERING",
            "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
            "subscriptionDataSet": [{"topic": DLQ_TOPIC, "subString": "*", "subVersion": 1}],
            "unitMode": false
        }]
    });
    let mut hb =
        RemotingCommand::request(RequestCode::HeartBeat).with_body(body.to_string().into_bytes());
    hb.language = LanguageCode::Go;
    hb.version = rmq_common::remoting::version::V5_0_0;
    let resp = client.invoke(hb, TIMEOUT).await.unwrap();
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    client
}

fn end_header(
    sent: &rmq_client::SendResult,
    uniq: &str,
    state: i32,
) -> EndTransactionRequestHeader {
    let (_, commit_log_offset) = decode_offset_msg_id(&sent.msg_id).unwrap();
    EndTransactionRequestHeader {
        producer_group: TX_GROUP.into(),
        tran_state_table_offset: sent.queue_offset,
        commit_log_offset,
        commit_or_rollback: state,
        from_transaction_check: false,
        msg_id: uniq.into(),
        transaction_id: Some(uniq.into()),
    }
}

fn out(body: &str) -> OutMessage {
    OutMessage {
        body: body.as_bytes().to_vec(),
        tags: None,
        keys: Vec::new(),
        properties: Vec::new(),
    }
}

/// Receives one message of `topic` for `group` and forwards it to the
/// group's dead-letter queue.
async fn forward_one_to_dlq(consumer: &mut GrpcClient, group: &str, topic: &str) {
    let req = pb::ReceiveMessageRequest {
        group: resource(group),
        message_queue: Some(pb::MessageQueue {
            topic: resource(topic),
            id: -1,
            ..Default::default()
        }),
        filter_expression: Some(pb::FilterExpression {
            r#type: pb::FilterType::Tag as i32,
            expression: "*".into(),
        }),
        batch_size: 1,
        invisible_duration: Some(prost_duration(30)),
        auto_renew: false,
        long_polling_timeout: Some(prost_duration(5)),
        attempt_id: None,
    };
    let req = consumer.req(req);
    let mut stream = consumer.c.receive_message(req).await.unwrap().into_inner();
    let mut message = None;
    while let Some(item) = stream.next().await {
        if let Some(pb::receive_message_response::Content::Message(m)) = item.unwrap().content {
            message = Some(m);
        }
    }
    let m = message.expect("the gRPC consumer received the message");
    let sp = m.system_properties.unwrap();
    let req = pb::ForwardMessageToDeadLetterQueueRequest {
        group: resource(group),
        topic: resource(topic),
        receipt_handle: sp.receipt_handle.unwrap(),
        message_id: sp.message_id,
        delivery_attempt: 1,
        max_delivery_attempts: 16,
    };
    let req = consumer.req(req);
    let resp = consumer
        .c
        .forward_message_to_dead_letter_queue(req)
        .await
        .unwrap()
        .into_inner();
    assert_eq!(resp.status.unwrap().code, pb::Code::Ok as i32);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rocketmq_5x_client_transaction_and_dlq_series() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings =
        rmq_tests::metered_settings(&dir.path().join("store"), CqBackend::File, "m5x");
    // No check walk: the resolved halves are still in the walk's range
    // when the broker restarts.
    settings.broker.transaction_check_interval_ms = 3_600_000;
    let broker = Broker::start(settings.clone()).await.unwrap();
    crate::proxy_grpc::create_topic(&broker, TX_TOPIC, 1, "TRANSACTION").await;
    crate::proxy_grpc::create_topic(&broker, DLQ_TOPIC, 1, "NORMAL").await;
    let metrics = broker.metrics_addr().unwrap();
    let grpc = broker.grpc_addr().unwrap();

    // Connections: two remoting clients, two gRPC clients.
    let producer = TransactionProducer::connect(
        broker.addr(),
        TX_GROUP,
        "tx-producer@5x",
        std::sync::Arc::new(|_: &rmq_client::CheckedHalf| LocalTxState::Unknown),
    )
    .await
    .unwrap();
    let remoting = remoting_consumer(broker.addr()).await;
    let grpc_producer = GrpcClient::register(
        grpc,
        "grpc-producer@5x",
        ("JAVA", "5.0.7"),
        pb::Language::Java,
        publishing(DLQ_TOPIC),
    )
    .await;
    let mut grpc_consumer = GrpcClient::register(
        grpc,
        "grpc-consumer@5x",
        ("PYTHON", "5.1.2"),
        pb::Language::Python,
        subscription(GRPC_GROUP, DLQ_TOPIC),
    )
    .await;
    let remoting_producer = [
        ("language", "java"),
        ("version", "v4_9_8"),
        ("protocol_type", "remoting"),
    ];
    let grpc_producer_labels = [
        ("language", "java"),
        ("version", "v5_0_7"),
        ("protocol_type", "grpc"),
    ];
    let remoting_consumer_labels = [
        ("consumer_group", REMOTING_GROUP),
        ("language", "go"),
        ("version", "v5_0_0"),
        ("consume_mode", "push"),
        ("protocol_type", "remoting"),
        ("is_system", "false"),
    ];
    let grpc_consumer_labels = [
        ("consumer_group", GRPC_GROUP),
        ("language", "python"),
        ("version", "v5_1_2"),
        ("consume_mode", "pull"),
        ("protocol_type", "grpc"),
        ("is_system", "false"),
    ];
    let s = scrape_until(metrics, "four client connections", |s| {
        at(s, PRODUCERS, &remoting_producer) == 1.0
            && at(s, PRODUCERS, &grpc_producer_labels) == 1.0
            && at(s, CONSUMERS, &remoting_consumer_labels) == 1.0
            && at(s, CONSUMERS, &grpc_consumer_labels) == 1.0
    })
    .await;
    let producers: f64 = s
        .iter()
        .filter(|x| x.name == PRODUCERS)
        .map(|x| x.value)
        .sum();
    let consumers: f64 = s
        .iter()
        .filter(|x| x.name == CONSUMERS)
        .map(|x| x.value)
        .sum();
    assert_eq!(
        (producers, consumers),
        (2.0, 2.0),
        "no other connection is counted"
    );

    // Transactions: three halves; one committed, one rolled back, one open.
    let mut halves = Vec::new();
    for i in 0..3 {
        halves.push(
            producer
                .send_half(TX_TOPIC, 0, &out(&format!("tx{i}")))
                .await
                .unwrap(),
        );
    }
    let topic = [("topic", TX_TOPIC)];
    scrape_until(metrics, "three halves", |s| at(s, HALVES, &topic) == 3.0).await;
    let (sent, uniq) = &halves[0];
    producer
        .end(&end_header(sent, uniq, end_state::COMMIT))
        .await
        .unwrap();
    scrape_until(metrics, "a commit", |s| {
        at(s, COMMITS, &topic) == 1.0 && at(s, HALVES, &topic) == 2.0
    })
    .await;
    let (sent, uniq) = &halves[1];
    producer
        .end(&end_header(sent, uniq, end_state::ROLLBACK))
        .await
        .unwrap();
    let s = scrape_until(metrics, "a rollback", |s| {
        at(s, ROLLBACKS, &topic) == 1.0 && at(s, HALVES, &topic) == 1.0
    })
    .await;
    assert_eq!(at(&s, COMMITS, &topic), 1.0, "a rollback is no commit");
    assert_eq!(
        at(&s, &format!("{FINISH}_count"), &topic),
        1.0,
        "the commit's latency, not the rollback's"
    );
    assert_eq!(
        at(
            &s,
            &format!("{FINISH}_bucket"),
            &[("topic", TX_TOPIC), ("le", "5")]
        ),
        1.0,
        "committed within 5 s of its birth"
    );

    // Dead letters: a gRPC forward, a remoting send-back, a retry-topic send
    // over the group's limit.
    let msg = pb::Message {
        topic: resource(DLQ_TOPIC),
        user_properties: Default::default(),
        system_properties: Some(pb::SystemProperties {
            message_id: "01DLQ5X".into(),
            message_type: pb::MessageType::Normal as i32,
            body_encoding: pb::Encoding::Identity as i32,
            ..Default::default()
        }),
        body: b"dead".to_vec().into(),
    };
    let mut gp = grpc_producer.c.clone();
    let sent = gp
        .send_message(grpc_producer.req(pb::SendMessageRequest {
            messages: vec![msg],
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(sent.status.unwrap().code, pb::Code::Ok as i32);
    forward_one_to_dlq(&mut grpc_consumer, GRPC_GROUP, DLQ_TOPIC).await;
    let plain = sdk::send(&remoting, SendCode::V2, "p", DLQ_TOPIC, 0, &[out("back")])
        .await
        .unwrap();
    let (_, offset) = decode_offset_msg_id(&plain.msg_id).unwrap();
    sdk::send_back(
        &remoting,
        &ConsumerSendMsgBackRequestHeader {
            offset,
            group: REMOTING_GROUP.into(),
            delay_level: -1,
            origin_msg_id: Some(plain.msg_id.clone()),
            origin_topic: Some(DLQ_TOPIC.into()),
            unit_mode: false,
            max_reconsume_times: Some(16),
        },
    )
    .await
    .unwrap();
    let mut props = rmq_common::message::Properties::default();
    props.insert(property::RETRY_TOPIC, DLQ_TOPIC);
    let header = SendMessageRequestHeader {
        producer_group: "CLIENT_INNER_PRODUCER".into(),
        topic: format!("{RETRY_GROUP_TOPIC_PREFIX}{REMOTING_GROUP}"),
        default_topic: rmq_common::constants::AUTO_CREATE_TOPIC.into(),
        default_topic_queue_nums: 4,
        queue_id: 0,
        sys_flag: 0,
        born_timestamp: rmq_common::time::now_ms(),
        flag: 0,
        properties: Some(String::from_utf8(props.encode().unwrap()).unwrap()),
        reconsume_times: 16,
        unit_mode: false,
        max_reconsume_times: Some(16),
        batch: false,
        broker_name: None,
    };
    let req = RemotingCommand::request(RequestCode::SendMessageV2)
        .with_ext_fields(header.to_ext_v2())
        .with_body(b"over the limit".to_vec());
    let resp = remoting.invoke(req, TIMEOUT).await.unwrap();
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    let grpc_dlq = [
        ("consumer_group", GRPC_GROUP),
        ("topic", DLQ_TOPIC),
        ("is_system", "false"),
    ];
    let remoting_dlq = [
        ("consumer_group", REMOTING_GROUP),
        ("topic", DLQ_TOPIC),
        ("is_system", "false"),
    ];
    let s = scrape_until(metrics, "three dead letters", |s| {
        at(s, DLQ, &grpc_dlq) == 1.0 && at(s, DLQ, &remoting_dlq) == 2.0
    })
    .await;
    let all: f64 = s.iter().filter(|x| x.name == DLQ).map(|x| x.value).sum();
    assert_eq!(all, 3.0, "each dead letter counted once: {s:#?}");

    // A subscription group created by an admin.
    let create = RemotingCommand::request(RequestCode::UpdateAndCreateSubscriptionGroup)
        .with_body(br#"{"groupName":"CreatedGroup5x"}"#.to_vec());
    let resp = remoting.invoke(create, TIMEOUT).await.unwrap();
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    scrape_until(metrics, "a group creation", |s| {
        at(
            s,
            &format!("{GROUP_CREATE}_count"),
            &[("invocation_status", "success")],
        ) == 1.0
    })
    .await;

    // The gRPC consumer leaves: its count drops to 0.
    let bye = pb::NotifyClientTerminationRequest {
        group: resource(GRPC_GROUP),
    };
    let mut gc = grpc_consumer.c.clone();
    gc.notify_client_termination(grpc_consumer.req(bye))
        .await
        .unwrap();
    scrape_until(metrics, "the gRPC consumer gone", |s| {
        at(s, CONSUMERS, &grpc_consumer_labels) == 0.0
            && at(s, CONSUMERS, &remoting_consumer_labels) == 1.0
    })
    .await;

    // The open half is counted again after a restart, from the half queue:
    // the resolved ones are left out, and a second copy of the open one (a
    // check copy whose original the walk had not passed yet, as a crash
    // leaves it) counts once.
    let (sent, _) = &halves[2];
    let (_, open_at) = decode_offset_msg_id(&sent.msg_id).unwrap();
    let store = broker.context().store.clone();
    let copy = RecordView::parse(store.record_at(open_at).unwrap().bytes(), false)
        .unwrap()
        .to_message();
    store.put_message(&copy).unwrap();
    producer.close().await;
    drop((grpc_producer, grpc_consumer, remoting));
    broker.shutdown().await;
    let broker = Broker::start(settings).await.unwrap();
    assert_eq!(
        broker.context().transactions.half_counts(),
        vec![(TX_TOPIC.to_owned(), 1)],
        "the open half, counted once"
    );
    let s = parse(&scrape(broker.metrics_addr().unwrap()).await);
    assert_eq!(at(&s, HALVES, &topic), 1.0);
    broker.shutdown().await;
}
