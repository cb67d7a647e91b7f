//! One gRPC producer's connection: a session with producer settings for
//! every topic of the load, and SendMessage of NORMAL messages. A
//! SendMessageRequest names only the topic: the broker picks the queue
//! (round-robin over its write queues, as Apache's proxy does), so the
//! bench's round-robin over (topic, queue) targets picks only the topic.

use std::time::{SystemTime, UNIX_EPOCH};

use rmq_grpc::pb;

use super::grpc_client::{self as gc, GrpcError, GrpcTarget, Session};
use super::grpc_ids::client_id;
use super::producer::Sent;

/// Tag every bench message carries (as the remoting producer's).
const TAG: &str = "TagA";

/// A connected gRPC producer.
#[derive(Debug)]
pub struct GrpcProducer {
    session: Session,
    target: GrpcTarget,
}

impl GrpcProducer {
    /// Connects producer `index`, sends its settings for `topics` and one
    /// Heartbeat.
    pub async fn open(
        target: &GrpcTarget,
        index: usize,
        topics: &[String],
    ) -> Result<Self, GrpcError> {
        let id = client_id(target.nonce, "p", index);
        let settings = gc::producer_settings(target.addr, topics);
        let session = gc::open_session(target.addr, &id, settings, None).await?;
        Ok(Self {
            session,
            target: target.clone(),
        })
    }

    /// Sends `n` messages with `body` to `topic` in one SendMessageRequest.
    pub async fn send(&self, topic: &str, n: usize, body: &[u8]) -> Sent {
        let born = born_timestamp();
        let messages = (0..n)
            .map(|_| message(topic, self.target.ids.next_id(), body, born))
            .collect();
        let req = pb::SendMessageRequest { messages };
        let mut client = self.session.client.clone();
        match gc::unary("send_message", client.send_message(req)).await {
            Ok(r) => entries_sent(&r),
            Err(e) => Sent::failed(e.to_string()),
        }
    }

    /// Says goodbye and closes the connection.
    pub async fn close(mut self) {
        gc::terminate(&mut self.session.client, None).await;
    }
}

/// What a SendMessageResponse says: each entry has its own status.
fn entries_sent(r: &pb::SendMessageResponse) -> Sent {
    let acked = r
        .entries
        .iter()
        .filter(|e| {
            e.status
                .as_ref()
                .is_some_and(|s| s.code == pb::Code::Ok as i32)
        })
        .count() as u64;
    let failed = r.entries.iter().find(|e| {
        e.status
            .as_ref()
            .is_none_or(|s| s.code != pb::Code::Ok as i32)
    });
    let error = match failed {
        Some(e) => gc::check("send_message", e.status.as_ref()).err(),
        None if r.entries.is_empty() => {
            gc::check("send_message", r.status.as_ref())
                .err()
                .or(Some(GrpcError::Refused {
                    rpc: "send_message",
                    code: "OK".into(),
                    message: "no entries in the answer".into(),
                }))
        }
        None => None,
    };
    Sent {
        acked,
        error: error.map(|e| e.to_string()),
    }
}

fn born_timestamp() -> rmq_grpc::prost_types::Timestamp {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    rmq_grpc::prost_types::Timestamp {
        seconds: now.as_secs() as i64,
        nanos: now.subsec_nanos() as i32,
    }
}

/// A NORMAL message as a 5.x SDK builds one.
fn message(
    topic: &str,
    id: String,
    body: &[u8],
    born: rmq_grpc::prost_types::Timestamp,
) -> pb::Message {
    pb::Message {
        topic: Some(gc::resource(topic)),
        user_properties: Default::default(),
        system_properties: Some(pb::SystemProperties {
            tag: Some(TAG.into()),
            message_id: id,
            body_encoding: pb::Encoding::Identity as i32,
            message_type: pb::MessageType::Normal as i32,
            born_timestamp: Some(born),
            born_host: "rmq-bench".into(),
            ..Default::default()
        }),
        body: body.to_vec().into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(code: pb::Code) -> pb::SendResultEntry {
        pb::SendResultEntry {
            status: Some(pb::Status {
                code: code as i32,
                message: format!("{code:?}"),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn entries_count_one_by_one() {
        let all = pb::SendMessageResponse {
            status: None,
            entries: vec![entry(pb::Code::Ok), entry(pb::Code::Ok)],
        };
        assert_eq!(entries_sent(&all).acked, 2);
        assert_eq!(entries_sent(&all).error, None);
        let some = pb::SendMessageResponse {
            status: None,
            entries: vec![entry(pb::Code::Ok), entry(pb::Code::TooManyRequests)],
        };
        let s = entries_sent(&some);
        assert_eq!(s.acked, 1);
        assert!(s.error.unwrap().contains("TOO_MANY_REQUESTS"));
        let none = pb::SendMessageResponse {
            status: Some(pb::Status {
                code: pb::Code::TopicNotFound as i32,
                message: "topic T does not exist".into(),
            }),
            entries: vec![],
        };
        let s = entries_sent(&none);
        assert_eq!(s.acked, 0);
        assert!(s.error.unwrap().contains("TOPIC_NOT_FOUND"));
    }

    #[test]
    fn messages_carry_the_sdk_system_properties() {
        let m = message("T", "01AB".into(), b"x", born_timestamp());
        let p = m.system_properties.unwrap();
        assert_eq!(p.message_type(), pb::MessageType::Normal);
        assert_eq!(p.body_encoding(), pb::Encoding::Identity);
        assert!(p.born_timestamp.is_some_and(|t| t.seconds > 1_600_000_000));
        assert_eq!(m.topic.unwrap().name, "T");
    }
}
