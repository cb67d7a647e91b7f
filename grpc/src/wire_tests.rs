//! Pins the wire: exact bytes for a send, hand-built bytes for a receive.
//! A changed field number or type in the protos fails here.

use std::collections::HashMap;

use prost::Message as _;
use prost_types::Timestamp;

use crate::pb::{
    receive_message_response::Content, Encoding, Message, MessageType, ReceiveMessageResponse,
    Resource, SendMessageRequest, SystemProperties,
};

fn topic(name: &str) -> Option<Resource> {
    Some(Resource {
        resource_namespace: String::new(),
        name: name.to_string(),
    })
}

/// One NORMAL message as a producer sends it.
fn one_message_request() -> SendMessageRequest {
    let system = SystemProperties {
        tag: Some("A".to_string()),
        keys: vec!["K".to_string()],
        message_id: "ID".to_string(),
        body_encoding: Encoding::Identity as i32,
        message_type: MessageType::Normal as i32,
        born_timestamp: Some(Timestamp {
            seconds: 1,
            nanos: 0,
        }),
        born_host: "h".to_string(),
        message_group: Some("g".to_string()),
        ..Default::default()
    };
    SendMessageRequest {
        messages: vec![Message {
            topic: topic("T"),
            user_properties: HashMap::from([("k".to_string(), "v".to_string())]),
            system_properties: Some(system),
            body: b"hi".to_vec().into(),
        }],
    }
}

#[test]
fn send_message_request_encodes_to_the_published_tags() {
    #[rustfmt::skip]
    let system: &[u8] = &[
        0x0a, 1, b'A',            // 1 tag (optional string)
        0x12, 1, b'K',            // 2 keys (repeated string)
        0x1a, 2, b'I', b'D',      // 3 message_id
        0x28, 1,                  // 5 body_encoding = IDENTITY
        0x30, 1,                  // 6 message_type = NORMAL
        0x3a, 2, 0x08, 1,         // 7 born_timestamp { seconds: 1 }
        0x42, 1, b'h',            // 8 born_host
        0x8a, 0x01, 1, b'g',      // 17 message_group: a two-byte tag
    ];
    let mut message = vec![
        0x0a, 3, 0x12, 1, b'T', // 1 topic { 2 name }
        0x12, 6, 0x0a, 1, b'k', 0x12, 1, b'v', // 2 user_properties entry {1 key, 2 value}
        0x1a, // 3 system_properties
    ];
    message.push(u8::try_from(system.len()).unwrap());
    message.extend_from_slice(system);
    message.extend_from_slice(&[0x22, 2, b'h', b'i']); // 4 body
    let mut expected = vec![0x0a]; // SendMessageRequest: 1 messages
    expected.push(u8::try_from(message.len()).unwrap());
    expected.extend_from_slice(&message);

    let encoded = one_message_request().encode_to_vec();
    assert_eq!(encoded, expected);
    assert_eq!(
        SendMessageRequest::decode(encoded.as_slice()).unwrap(),
        one_message_request()
    );
}

#[test]
fn receive_message_response_decodes_each_oneof_arm() {
    // 1 status { 1 code = OK (20000, varint a0 9c 01), 2 message "OK" }
    let status: &[u8] = &[0x0a, 8, 0x08, 0xa0, 0x9c, 0x01, 0x12, 2, b'O', b'K'];
    #[rustfmt::skip]
    let message: &[u8] = &[
        0x12, 18,                     // 2 message
        0x0a, 3, 0x12, 1, b'T',       //   1 topic { 2 name }
        0x1a, 8,                      //   3 system_properties
        0x62, 1, b'r',                //     12 receipt_handle
        0x70, 7,                      //     14 queue_offset = 7
        0x80, 0x01, 1,                //     16 delivery_attempt = 1
        0x22, 1, b'x',                //   4 body
    ];
    // 3 delivery_timestamp { seconds: 5 }
    let delivered: &[u8] = &[0x1a, 2, 0x08, 5];

    let got = ReceiveMessageResponse::decode(status).unwrap();
    let Some(Content::Status(status)) = got.content else {
        panic!("expected the status arm, got {got:?}");
    };
    assert_eq!(status.code, crate::pb::Code::Ok as i32);
    assert_eq!(status.code, 20000);
    assert_eq!(status.message, "OK");

    let got = ReceiveMessageResponse::decode(message).unwrap();
    let Some(Content::Message(message)) = got.content else {
        panic!("expected the message arm, got {got:?}");
    };
    assert_eq!(message.topic, topic("T"));
    assert_eq!(message.body.as_ref(), b"x");
    let system = message.system_properties.unwrap_or_default();
    assert_eq!(system.receipt_handle.as_deref(), Some("r"));
    assert_eq!(system.queue_offset, Some(7));
    assert_eq!(system.delivery_attempt, Some(1));
    assert_eq!(system.tag, None);

    let got = ReceiveMessageResponse::decode(delivered).unwrap();
    assert_eq!(
        got.content,
        Some(Content::DeliveryTimestamp(Timestamp {
            seconds: 5,
            nanos: 0
        }))
    );
}

#[test]
fn truncated_input_is_an_error_not_a_panic() {
    let encoded = one_message_request().encode_to_vec();
    for cut in 1..encoded.len() {
        assert!(
            SendMessageRequest::decode(&encoded[..cut]).is_err(),
            "a request cut at {cut} of {} bytes decoded",
            encoded.len()
        );
    }
}
