//! Seeds of the `grpc_request` fuzz target: a few valid requests per
//! `MessagingService` rpc, encoded with prost (the raw-body shape of
//! `rmq_grpc::fuzz_harness`), plus one built-shape input per rpc.

use rmq_grpc::fuzz_harness::{method_index, raw_input, HEAD_BYTES, METHODS};
use rmq_grpc::pb;
use rmq_grpc::prost::Message;
use rmq_grpc::prost_types::Duration;

/// Metadata selectors: the producer's and the consumer's stable client
/// ids, no timeout, no authorization, an `x-mq-client-version` of 5.0.7.
const PRODUCER: [u8; HEAD_BYTES - 2] = [0, 0, 0, 0, 0, 0];
const CONSUMER: [u8; HEAD_BYTES - 2] = [1, 0, 0, 0, 0, 0];

fn res(name: &str) -> Option<pb::Resource> {
    Some(pb::Resource {
        resource_namespace: String::new(),
        name: name.into(),
    })
}

fn secs(s: i64) -> Option<Duration> {
    Some(Duration {
        seconds: s,
        nanos: 0,
    })
}

fn message(tag: &str, group: Option<&str>, body: &[u8]) -> pb::Message {
    pb::Message {
        topic: res("TopicA"),
        user_properties: [("k".to_owned(), "v".to_owned())].into(),
        system_properties: Some(pb::SystemProperties {
            tag: Some(tag.into()),
            keys: vec!["key1".into()],
            message_id: "01AABBCCDDEEFF00112233445566".into(),
            body_encoding: pb::Encoding::Identity as i32,
            message_type: if group.is_some() {
                pb::MessageType::Fifo as i32
            } else {
                pb::MessageType::Normal as i32
            },
            message_group: group.map(str::to_owned),
            born_host: "127.0.0.1".into(),
            ..Default::default()
        }),
        body: body.to_vec().into(),
    }
}

fn filter() -> Option<pb::FilterExpression> {
    Some(pb::FilterExpression {
        r#type: pb::FilterType::Tag as i32,
        expression: "*".into(),
    })
}

fn queue() -> Option<pb::MessageQueue> {
    Some(pb::MessageQueue {
        topic: res("TopicA"),
        id: 0,
        permission: pb::Permission::ReadWrite as i32,
        broker: None,
        accept_message_types: vec![pb::MessageType::Normal as i32],
    })
}

/// (file name, method, metadata, request).
fn seeds() -> Vec<(&'static str, &'static str, [u8; HEAD_BYTES - 2], Vec<u8>)> {
    let handle = "0 1700000000000 30000 0 0 broker-a 0 0 0".to_owned();
    vec![
        (
            "route",
            "QueryRoute",
            PRODUCER,
            pb::QueryRouteRequest {
                topic: res("TopicA"),
                endpoints: None,
            }
            .encode_to_vec(),
        ),
        (
            "heartbeat",
            "Heartbeat",
            CONSUMER,
            pb::HeartbeatRequest {
                group: res("g1"),
                client_type: pb::ClientType::SimpleConsumer as i32,
            }
            .encode_to_vec(),
        ),
        (
            "send",
            "SendMessage",
            PRODUCER,
            pb::SendMessageRequest {
                messages: vec![message("TagA", None, b"hello")],
            }
            .encode_to_vec(),
        ),
        (
            "send_fifo",
            "SendMessage",
            PRODUCER,
            pb::SendMessageRequest {
                messages: vec![message("TagB", Some("order-1"), b"first")],
            }
            .encode_to_vec(),
        ),
        (
            "assignment",
            "QueryAssignment",
            CONSUMER,
            pb::QueryAssignmentRequest {
                topic: res("TopicA"),
                group: res("g1"),
                endpoints: None,
            }
            .encode_to_vec(),
        ),
        (
            "receive",
            "ReceiveMessage",
            CONSUMER,
            pb::ReceiveMessageRequest {
                group: res("g1"),
                message_queue: queue(),
                filter_expression: filter(),
                batch_size: 16,
                invisible_duration: secs(30),
                auto_renew: false,
                long_polling_timeout: Some(Duration {
                    seconds: 0,
                    nanos: 1_000_000,
                }),
                attempt_id: None,
            }
            .encode_to_vec(),
        ),
        (
            "ack",
            "AckMessage",
            CONSUMER,
            pb::AckMessageRequest {
                group: res("g1"),
                topic: res("TopicA"),
                entries: vec![pb::AckMessageEntry {
                    message_id: "01AABBCCDDEEFF00112233445566".into(),
                    receipt_handle: handle.clone(),
                }],
            }
            .encode_to_vec(),
        ),
        (
            "dlq",
            "ForwardMessageToDeadLetterQueue",
            CONSUMER,
            pb::ForwardMessageToDeadLetterQueueRequest {
                group: res("g1"),
                topic: res("TopicA"),
                receipt_handle: handle.clone(),
                message_id: "01AABBCCDDEEFF00112233445566".into(),
                delivery_attempt: 17,
                max_delivery_attempts: 16,
            }
            .encode_to_vec(),
        ),
        (
            "pull",
            "PullMessage",
            CONSUMER,
            pb::PullMessageRequest {
                group: res("g1"),
                message_queue: queue(),
                offset: 0,
                batch_size: 8,
                filter_expression: filter(),
                long_polling_timeout: secs(1),
            }
            .encode_to_vec(),
        ),
        (
            "update_offset",
            "UpdateOffset",
            CONSUMER,
            pb::UpdateOffsetRequest {
                group: res("g1"),
                message_queue: queue(),
                offset: 3,
            }
            .encode_to_vec(),
        ),
        (
            "get_offset",
            "GetOffset",
            CONSUMER,
            pb::GetOffsetRequest {
                group: res("g1"),
                message_queue: queue(),
            }
            .encode_to_vec(),
        ),
        (
            "query_offset",
            "QueryOffset",
            CONSUMER,
            pb::QueryOffsetRequest {
                message_queue: queue(),
                query_offset_policy: pb::QueryOffsetPolicy::End as i32,
                timestamp: None,
            }
            .encode_to_vec(),
        ),
        (
            "end_transaction",
            "EndTransaction",
            PRODUCER,
            pb::EndTransactionRequest {
                topic: res("TopicA"),
                message_id: "01AABBCCDDEEFF00112233445566".into(),
                transaction_id: "7F000001000100000000".into(),
                resolution: pb::TransactionResolution::Commit as i32,
                source: pb::TransactionSource::SourceClient as i32,
                trace_context: String::new(),
            }
            .encode_to_vec(),
        ),
        (
            "telemetry_producer",
            "Telemetry",
            PRODUCER,
            pb::TelemetryCommand {
                status: None,
                command: Some(pb::telemetry_command::Command::Settings(pb::Settings {
                    client_type: Some(pb::ClientType::Producer as i32),
                    request_timeout: secs(3),
                    pub_sub: Some(pb::settings::PubSub::Publishing(pb::Publishing {
                        topics: vec![res("TopicA").unwrap_or_default()],
                        max_body_size: 4 << 20,
                        validate_message_type: true,
                    })),
                    ..Default::default()
                })),
            }
            .encode_to_vec(),
        ),
        (
            "telemetry_consumer",
            "Telemetry",
            CONSUMER,
            pb::TelemetryCommand {
                status: None,
                command: Some(pb::telemetry_command::Command::Settings(pb::Settings {
                    client_type: Some(pb::ClientType::SimpleConsumer as i32),
                    request_timeout: secs(3),
                    pub_sub: Some(pb::settings::PubSub::Subscription(pb::Subscription {
                        group: res("g1"),
                        subscriptions: vec![pb::SubscriptionEntry {
                            topic: res("TopicA"),
                            expression: filter(),
                        }],
                        fifo: None,
                        receive_batch_size: None,
                        long_polling_timeout: None,
                    })),
                    ..Default::default()
                })),
            }
            .encode_to_vec(),
        ),
        (
            "terminate",
            "NotifyClientTermination",
            CONSUMER,
            pb::NotifyClientTerminationRequest { group: res("g1") }.encode_to_vec(),
        ),
        (
            "change_invisible",
            "ChangeInvisibleDuration",
            CONSUMER,
            pb::ChangeInvisibleDurationRequest {
                group: res("g1"),
                topic: res("TopicA"),
                receipt_handle: handle,
                invisible_duration: secs(60),
                message_id: "01AABBCCDDEEFF00112233445566".into(),
            }
            .encode_to_vec(),
        ),
        (
            "recall",
            "RecallMessage",
            PRODUCER,
            pb::RecallMessageRequest {
                topic: res("TopicA"),
                recall_handle: "djE gVG9waWNB".into(),
            }
            .encode_to_vec(),
        ),
    ]
}

/// Writes the seeds into `dir` (`corpus/grpc_request`).
pub fn write(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    for (name, method, meta, body) in seeds() {
        let m = method_index(method).unwrap();
        std::fs::write(dir.join(name), raw_input(m, meta, &body)).unwrap();
    }
    // One built-shape input per rpc: its bytes seed `arbitrary`.
    for (i, m) in METHODS.iter().enumerate() {
        let mut data = raw_input(i as u8, PRODUCER, &[0x5a; 48]);
        data[1] = 1;
        std::fs::write(dir.join(format!("built_{}", m.name)), data).unwrap();
    }
}
