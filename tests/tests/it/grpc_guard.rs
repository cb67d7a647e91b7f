//! The broker's gRPC port against clients that are not welcome or not
//! well-formed, with a Rust gRPC client built from the same protos:
//! - ACL (`aclEnable`): a 5.x SDK's signature (`authorization`: access key
//!   and hex HMAC-SHA1 of `x-mq-date-time`) is checked against the plain
//!   ACL file; the right key sends, a wrong secret, an unsigned call and a
//!   denied topic are refused with UNAUTHORIZED and store nothing.
//! - Malformed calls get a status naming the problem: no client id, no
//!   message, a receipt handle that is not one; bytes that are not HTTP/2
//!   close that connection only.
//! - `maxConnectionsPerAddress` holds on the gRPC port.
//! - `tlsMode=enforcing`: a plain client is refused, a TLS client (ALPN h2)
//!   is served.
//! - Each call is one `rocketmq_rpc_latency_milliseconds` observation under
//!   `protocol_type="grpc"`, named by its RPC and status code; its steps
//!   through the broker's handler are not counted again as remoting.

use std::net::SocketAddr;
use std::time::Duration;

use rmq_broker::broker::Broker;
use rmq_common::config::CqBackend;
use rmq_grpc::pb;
use rmq_grpc::tonic::transport::{Channel, Endpoint};
use rmq_grpc::tonic::Request;
use rmq_grpc::MessagingServiceClient;
use tokio::io::AsyncWriteExt;

const TIMEOUT: Duration = Duration::from_secs(10);
const DATE_TIME: &str = "20261206T001500Z";

async fn connect(addr: SocketAddr) -> MessagingServiceClient<Channel> {
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .timeout(TIMEOUT)
        .connect()
        .await
        .unwrap();
    MessagingServiceClient::new(channel)
}

fn resource(name: &str) -> Option<pb::Resource> {
    Some(pb::Resource {
        resource_namespace: String::new(),
        name: name.into(),
    })
}

/// A request as a 5.x SDK sends it: client id, and signed with `key` if given.
fn call<T>(msg: T, key: Option<(&str, &str)>) -> Request<T> {
    let mut r = Request::new(msg);
    let m = r.metadata_mut();
    m.insert("x-mq-client-id", "guard-client@1".parse().unwrap());
    m.insert("x-mq-language", "JAVA".parse().unwrap());
    if let Some((ak, sk)) = key {
        let sig: String = rmq_common::acl::sign_raw(sk, DATE_TIME.as_bytes())
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect();
        let auth = format!(
            "MQv2-HMAC-SHA1 Credential={ak}, SignedHeaders=x-mq-date-time, Signature={sig}"
        );
        m.insert("authorization", auth.parse().unwrap());
        m.insert("x-mq-date-time", DATE_TIME.parse().unwrap());
    }
    r
}

fn message(topic: &str, id: &str) -> pb::Message {
    pb::Message {
        topic: resource(topic),
        user_properties: Default::default(),
        system_properties: Some(pb::SystemProperties {
            message_id: id.into(),
            message_type: pb::MessageType::Normal as i32,
            body_encoding: pb::Encoding::Identity as i32,
            ..Default::default()
        }),
        body: b"guarded".to_vec().into(),
    }
}

async fn send(
    c: &mut MessagingServiceClient<Channel>,
    topic: &str,
    id: &str,
    key: Option<(&str, &str)>,
) -> pb::Status {
    let req = pb::SendMessageRequest {
        messages: vec![message(topic, id)],
    };
    // A refused message carries its own status with the reason; the
    // answer's status names only the code.
    let resp = c.send_message(call(req, key)).await.unwrap().into_inner();
    resp.entries
        .first()
        .and_then(|e| e.status.clone())
        .or(resp.status)
        .unwrap()
}

fn code(s: &pb::Status) -> pb::Code {
    pb::Code::try_from(s.code).unwrap()
}

fn stored(broker: &Broker, topic: &str) -> i64 {
    let store = broker.context().store.clone();
    (0..8)
        .map(|q| store.max_offset_in_queue(topic, q).unwrap_or(0))
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_acl_checks_the_sdk_signature_against_the_plain_acl_file() {
    let dir = tempfile::tempdir().unwrap();
    let broker = crate::acl::start(dir.path(), CqBackend::File).await;
    let admin = crate::acl::client(&broker, "rocketmq2", "87654321").await;
    for t in ["Allowed", "Denied"] {
        let resp = admin
            .invoke(crate::acl::create_topic(t), TIMEOUT)
            .await
            .unwrap();
        assert_eq!(resp.code, 0, "{:?}", resp.remark);
    }
    let mut c = connect(broker.grpc_addr().unwrap()).await;
    let ok = send(&mut c, "Allowed", "M1", Some(("RocketMQ", "12345678"))).await;
    assert_eq!(code(&ok), pb::Code::Ok, "{ok:?}");
    for (id, topic, key) in [
        ("M2", "Allowed", Some(("RocketMQ", "wrong-secret"))),
        ("M3", "Allowed", None),
        ("M4", "Allowed", Some(("nobody", "12345678"))),
        ("M5", "Denied", Some(("RocketMQ", "12345678"))),
    ] {
        let s = send(&mut c, topic, id, key).await;
        assert_eq!(code(&s), pb::Code::Unauthorized, "{id}: {s:?}");
        assert!(s.message.starts_with("ACL:"), "{id}: {s:?}");
    }
    assert_eq!(
        stored(&broker, "Allowed"),
        1,
        "only the signed send is stored"
    );
    assert_eq!(stored(&broker, "Denied"), 0);
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_malformed_calls_get_a_status_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let settings = rmq_tests::broker_settings(&dir.path().join("store"), CqBackend::File);
    let broker = Broker::start(settings).await.unwrap();
    let addr = broker.grpc_addr().unwrap();
    let mut c = connect(addr).await;
    let no_id = c
        .query_route(Request::new(pb::QueryRouteRequest {
            topic: resource("T"),
            endpoints: None,
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        code(no_id.status.as_ref().unwrap()),
        pb::Code::ClientIdRequired
    );
    let empty = c
        .send_message(call(pb::SendMessageRequest { messages: vec![] }, None))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        code(empty.status.as_ref().unwrap()),
        pb::Code::MessageCorrupted
    );
    let ack = c
        .ack_message(call(
            pb::AckMessageRequest {
                group: resource("G"),
                topic: resource("T"),
                entries: vec![pb::AckMessageEntry {
                    message_id: "M".into(),
                    receipt_handle: "not a handle".into(),
                }],
            },
            None,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        code(&ack.entries[0].status.clone().unwrap()),
        pb::Code::InvalidReceiptHandle
    );
    let bad_topic = send(&mut c, "bad topic!", "M", None).await;
    assert_eq!(code(&bad_topic), pb::Code::IllegalTopic, "{bad_topic:?}");
    // Bytes that are not HTTP/2: that connection closes, others go on.
    let mut raw = tokio::net::TcpStream::connect(addr).await.unwrap();
    raw.write_all(&[0xFF; 4096]).await.unwrap();
    let mut sink = Vec::new();
    let read = tokio::time::timeout(
        TIMEOUT,
        tokio::io::AsyncReadExt::read_to_end(&mut raw, &mut sink),
    )
    .await;
    assert!(read.is_ok(), "the garbage connection was not closed");
    let after = send(&mut c, "NoSuchTopic", "M9", None).await;
    assert_eq!(code(&after), pb::Code::TopicNotFound, "{after:?}");
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_connections_per_address_are_capped() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = rmq_tests::broker_settings(&dir.path().join("store"), CqBackend::File);
    settings.store.max_connections_per_address = 2;
    let broker = Broker::start(settings).await.unwrap();
    let addr = broker.grpc_addr().unwrap();
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut c = connect(addr).await;
        let s = send(&mut c, "NoSuchTopic", "M", None).await;
        assert_eq!(code(&s), pb::Code::TopicNotFound);
        held.push(c);
    }
    let third = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .timeout(TIMEOUT)
        .connect()
        .await;
    let refused = match third {
        Err(_) => true,
        Ok(ch) => MessagingServiceClient::new(ch)
            .send_message(call(
                pb::SendMessageRequest {
                    messages: vec![message("T", "M")],
                },
                None,
            ))
            .await
            .is_err(),
    };
    assert!(refused, "a third connection from 127.0.0.1 was served");
    drop(held);
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_tls_enforcing_serves_only_tls_clients() {
    let dir = tempfile::tempdir().unwrap();
    let pki = crate::tls::pki(dir.path());
    let settings = crate::tls::settings(&dir.path().join("store"), &pki, "enforcing");
    let broker = Broker::start(settings).await.unwrap();
    let addr = broker.grpc_addr().unwrap();
    let plain = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .timeout(TIMEOUT)
        .connect()
        .await;
    let plain_served = match plain {
        Err(_) => false,
        Ok(ch) => MessagingServiceClient::new(ch)
            .query_route(call(
                pb::QueryRouteRequest {
                    topic: resource("T"),
                    endpoints: None,
                },
                None,
            ))
            .await
            .is_ok(),
    };
    assert!(
        !plain_served,
        "a plain client was served under tlsMode=enforcing"
    );
    let ca = std::fs::read_to_string(pki.file("ca.pem")).unwrap();
    let tls = rmq_grpc::tonic::transport::ClientTlsConfig::new()
        .ca_certificate(rmq_grpc::tonic::transport::Certificate::from_pem(ca))
        .domain_name("localhost");
    let ch = Endpoint::from_shared(format!("https://{addr}"))
        .unwrap()
        .tls_config(tls)
        .unwrap()
        .timeout(TIMEOUT)
        .connect()
        .await
        .unwrap();
    let route = MessagingServiceClient::new(ch)
        .query_route(call(
            pb::QueryRouteRequest {
                topic: resource("NoSuchTopic"),
                endpoints: None,
            },
            None,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        code(route.status.as_ref().unwrap()),
        pb::Code::TopicNotFound
    );
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_calls_are_timed_under_protocol_type_grpc() {
    let dir = tempfile::tempdir().unwrap();
    let settings =
        rmq_tests::metered_settings(&dir.path().join("store"), CqBackend::File, "grpc_rpc");
    let broker = Broker::start(settings).await.unwrap();
    crate::proxy_grpc::create_topic(&broker, "Metered", 2, "NORMAL").await;
    let mut c = connect(broker.grpc_addr().unwrap()).await;
    for i in 0..3 {
        let s = send(&mut c, "Metered", &format!("M{i}"), None).await;
        assert_eq!(code(&s), pb::Code::Ok, "{s:?}");
    }
    let text = crate::metrics::scrape(broker.metrics_addr().unwrap()).await;
    let series: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.starts_with("rocketmq_rpc_latency_milliseconds_count")
                && l.contains("broker=\"grpc_rpc-file\"")
        })
        .collect();
    let grpc_send = series.iter().find(|l| {
        l.contains("protocol_type=\"grpc\"")
            && l.contains("request_code=\"send_message\"")
            && l.contains("response_code=\"ok\"")
    });
    let line = grpc_send.unwrap_or_else(|| panic!("no gRPC send series in {series:#?}"));
    assert!(line.ends_with(" 3"), "{line}");
    assert!(
        !series
            .iter()
            .any(|l| l.contains("protocol_type=\"remoting\"")
                && l.contains("request_code=\"send_message\"")),
        "a gRPC send was also counted as a remoting send: {series:#?}"
    );
    broker.shutdown().await;
}
