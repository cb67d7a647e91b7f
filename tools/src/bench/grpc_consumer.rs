//! One gRPC simple consumer of the bench's group: a session with
//! SIMPLE_CONSUMER settings for every topic, then, for each topic, a loop
//! of ReceiveMessage (a POP on the broker) with each answer acked in one
//! AckMessageRequest, until the consumers together have every
//! acknowledged message.
//!
//! POP may hand a message out again (an ack lost, the invisible time
//! passed), possibly to another consumer of the group, so the consumers
//! count unique messages of this run (by the message ids the run's
//! producers made, [`Seen`]), not raw receipts; receipts of a message seen
//! before are counted as duplicates, messages from another run are acked
//! and not counted.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rmq_grpc::pb;
use rmq_grpc::tonic::Request;

use super::consumer::{ConsumerResult, Shared};
use super::grpc_client::{self as gc, Client, GrpcError, GrpcTarget};
use super::grpc_ids::client_id;

/// The consumer group of the bench's gRPC consumers.
pub const GROUP: &str = "BenchGroup";
/// How long a received message stays invisible to the rest of the group.
const INVISIBLE: Duration = Duration::from_secs(30);
/// Long polling asked for: the broker's minimum (it clamps to 5-20 s).
const LONG_POLLING: Duration = Duration::from_secs(5);
/// Longest ReceiveMessage, as the SDK bounds it: the long polling plus its
/// request timeout, plus slack before the bench calls it failed.
const RECEIVE_TIMEOUT: Duration = Duration::from_secs(5 + 3 + 2);
/// How often a consumer in a long poll looks whether the run is over.
const DONE_CHECK: Duration = Duration::from_millis(20);
/// Pause after a failed receive, so a refusing broker is not spun on.
const ERROR_BACKOFF: Duration = Duration::from_millis(50);
/// The broker's cap on a receive's batch.
const MAX_BATCH: i32 = 32;

/// Messages of this run the consumers have seen, by id key.
#[derive(Debug, Default)]
pub struct Seen(Mutex<HashSet<u64>>);

impl Seen {
    /// Whether `key` is seen for the first time (and now marks it seen).
    pub fn first(&self, key: u64) -> bool {
        self.0.lock().insert(key)
    }
}

/// One received message.
#[derive(Debug)]
struct Received {
    topic: String,
    id: String,
    handle: String,
    store_ms: Option<i64>,
}

/// Receives until everyone together has `shared.expected`: one receive
/// loop per topic on the one connection (as an application calls a simple
/// consumer's receive from several threads), so a long poll of a drained
/// topic never holds up one that has messages.
pub async fn run(
    target: GrpcTarget,
    index: usize,
    topics: Vec<String>,
    shared: Arc<Shared>,
    seen: Arc<Seen>,
    pull_batch: i32,
) -> ConsumerResult {
    let mut out = ConsumerResult::default();
    let id = client_id(target.nonce, "c", index);
    let settings = gc::consumer_settings(target.addr, GROUP, &topics);
    let mut session = match gc::open_session(target.addr, &id, settings, Some(GROUP)).await {
        Ok(s) => s,
        Err(e) => {
            out.errors += 1;
            out.first_error = Some(e.to_string());
            return out;
        }
    };
    let batch = pull_batch.clamp(1, MAX_BATCH);
    let loops = topics.iter().map(|topic| {
        let client = session.client.clone();
        receive_loop(client, topic, batch, &target, &shared, &seen)
    });
    for r in futures::future::join_all(loops).await {
        out.e2e.merge(&r.e2e);
        out.received += r.received;
        out.duplicates += r.duplicates;
        out.errors += r.errors;
        out.first_error = out.first_error.or(r.first_error);
    }
    gc::terminate(&mut session.client, Some(GROUP)).await;
    out
}

/// Receives from `topic` and acks, until the run is over.
async fn receive_loop(
    mut client: Client,
    topic: &str,
    batch: i32,
    target: &GrpcTarget,
    shared: &Shared,
    seen: &Seen,
) -> ConsumerResult {
    let mut out = ConsumerResult::default();
    let done = || {
        shared.stop.load(Ordering::Relaxed)
            || shared.received.load(Ordering::Relaxed) >= shared.expected.load(Ordering::Relaxed)
    };
    while !done() {
        let mut check = tokio::time::interval(DONE_CHECK);
        let got = {
            let receive = receive(&mut client, topic, batch);
            tokio::pin!(receive);
            loop {
                tokio::select! {
                    r = &mut receive => break Some(r),
                    _ = check.tick() => if done() { break None },
                }
            }
        };
        let messages = match got {
            // The run is over while this receive waited.
            None => break,
            Some(Ok(m)) => m,
            Some(Err(e)) => {
                out.errors += 1;
                out.first_error.get_or_insert_with(|| e.to_string());
                tokio::time::sleep(ERROR_BACKOFF).await;
                continue;
            }
        };
        let now_ms = rmq_common::time::now_ms();
        for m in &messages {
            let Some(key) = target.ids.key_of(&m.id) else {
                continue;
            };
            if !seen.first(key) {
                out.duplicates += 1;
                continue;
            }
            if let Some(stored) = m.store_ms {
                out.e2e.record((now_ms - stored).max(0) as u64 * 1000);
            }
            out.received += 1;
            shared.received.fetch_add(1, Ordering::Relaxed);
        }
        if let Err(e) = ack(&mut client, &messages).await {
            out.errors += 1;
            out.first_error.get_or_insert_with(|| e.to_string());
        }
    }
    out
}

/// One ReceiveMessage: the messages of its answer (none when the broker
/// found nothing within the long polling).
async fn receive(client: &mut Client, topic: &str, batch: i32) -> Result<Vec<Received>, GrpcError> {
    let req = pb::ReceiveMessageRequest {
        group: Some(gc::resource(GROUP)),
        message_queue: Some(pb::MessageQueue {
            topic: Some(gc::resource(topic)),
            id: -1,
            ..Default::default()
        }),
        filter_expression: Some(pb::FilterExpression {
            r#type: pb::FilterType::Tag as i32,
            expression: "*".into(),
        }),
        batch_size: batch,
        invisible_duration: Some(gc::duration(INVISIBLE)),
        auto_renew: false,
        long_polling_timeout: Some(gc::duration(LONG_POLLING)),
        attempt_id: None,
    };
    let mut req = Request::new(req);
    req.set_timeout(RECEIVE_TIMEOUT);
    let whole = async {
        let mut stream = client
            .receive_message(req)
            .await
            .map_err(|source| GrpcError::Call {
                rpc: "receive_message",
                source,
            })?
            .into_inner();
        let mut out = Vec::new();
        loop {
            let item = stream.message().await.map_err(|source| GrpcError::Call {
                rpc: "receive_message",
                source,
            })?;
            let Some(item) = item else { break };
            match item.content {
                Some(pb::receive_message_response::Content::Status(s))
                    if s.code != pb::Code::MessageNotFound as i32 =>
                {
                    gc::check("receive_message", Some(&s))?
                }
                Some(pb::receive_message_response::Content::Message(m)) => out.extend(received(m)),
                _ => {}
            }
        }
        Ok(out)
    };
    match tokio::time::timeout(RECEIVE_TIMEOUT, whole).await {
        Ok(r) => r,
        Err(_) => Err(GrpcError::Timeout {
            step: "receive_message",
            limit: RECEIVE_TIMEOUT,
        }),
    }
}

fn received(m: pb::Message) -> Option<Received> {
    let p = m.system_properties?;
    Some(Received {
        topic: m.topic.map(|t| t.name).unwrap_or_default(),
        id: p.message_id,
        handle: p.receipt_handle?,
        store_ms: p
            .store_timestamp
            .map(|t| t.seconds * 1000 + i64::from(t.nanos) / 1_000_000),
    })
}

/// Acks what one receive got: one AckMessageRequest per topic (one in
/// practice: a receive names one topic).
async fn ack(client: &mut Client, messages: &[Received]) -> Result<(), GrpcError> {
    let mut topics: Vec<&str> = messages.iter().map(|m| m.topic.as_str()).collect();
    topics.sort_unstable();
    topics.dedup();
    for topic in topics {
        let req = pb::AckMessageRequest {
            group: Some(gc::resource(GROUP)),
            topic: Some(gc::resource(topic)),
            entries: messages
                .iter()
                .filter(|m| m.topic == topic)
                .map(|m| pb::AckMessageEntry {
                    message_id: m.id.clone(),
                    receipt_handle: m.handle.clone(),
                })
                .collect(),
        };
        let r = gc::unary("ack_message", client.ack_message(req)).await?;
        for e in &r.entries {
            gc::check("ack_message", e.status.as_ref())?;
        }
        if r.entries.is_empty() {
            gc::check("ack_message", r.status.as_ref())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::grpc_ids::MessageIds;

    #[test]
    fn a_redelivered_message_counts_once() {
        let ids = MessageIds::new([3; 6], 9);
        let seen = Seen::default();
        let (a, b) = (ids.next_id(), ids.next_id());
        let key = |id: &str| ids.key_of(id).unwrap();
        assert!(seen.first(key(&a)));
        assert!(seen.first(key(&b)));
        assert!(!seen.first(key(&a)), "redelivery of a");
        assert!(!seen.first(key(&b)), "redelivery of b");
    }

    #[test]
    fn received_reads_id_handle_and_store_time() {
        let m = pb::Message {
            topic: Some(gc::resource("T")),
            system_properties: Some(pb::SystemProperties {
                message_id: "ID".into(),
                receipt_handle: Some("H".into()),
                store_timestamp: Some(rmq_grpc::prost_types::Timestamp {
                    seconds: 1_700_000_000,
                    nanos: 250_000_000,
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let r = received(m.clone()).unwrap();
        assert_eq!((r.topic.as_str(), r.id.as_str()), ("T", "ID"));
        assert_eq!(r.handle, "H");
        assert_eq!(r.store_ms, Some(1_700_000_000_250));
        let mut no_handle = m;
        if let Some(p) = no_handle.system_properties.as_mut() {
            p.receipt_handle = None;
        }
        assert!(received(no_handle).is_none(), "cannot be acked");
    }
}
