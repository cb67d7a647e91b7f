//! Fuzz target `grpc_request`: a hostile gRPC client against a real broker,
//! the gRPC sibling of `hostile_client`. Each input (layout:
//! `rmq_grpc::fuzz_harness`) is one call of one of the 16
//! `MessagingService` rpcs with chosen metadata (`meta.rs`), whose message
//! is either the input's raw bytes (garbage for the broker's prost decoder)
//! or a structurally valid request with hostile field values
//! (`requests.rs`), sent over one long-lived HTTP/2 connection (a tonic
//! `Channel` with a raw-bytes codec, `wire.rs`) to an `rmq-broker` process
//! on 127.0.0.1 port 0 with a fresh store (`broker_child.rs`). The target
//! fails when:
//! - the call gets neither a response nor a status within
//!   [`ANSWER_TIMEOUT`] ([`RECEIVE_TIMEOUT`] for a ReceiveMessage, which the
//!   broker may hold for its long polling), or fails on the connection, or
//!   the broker dies (a panic there ends the process);
//! - a response does not decode as the rpc's response type;
//! - every [`CHECK_EVERY`] inputs: the broker's resident memory, its store
//!   or its CommitLog segments passed their bound, or a normal QueryRoute
//!   on a new connection is not answered (with TopicA's route) within
//!   [`NORMAL_TIMEOUT`].
//!
//! Each input also runs the in-process half,
//! `rmq_grpc::fuzz_harness::grpc_request` (prost round trips), which the
//! corpus replay test runs without a broker.

#![no_main]

#[path = "../broker_child.rs"]
mod broker_child;
mod meta;
mod requests;
mod wire;

use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use libfuzzer_sys::arbitrary::Unstructured;
use rmq_grpc::fuzz_harness::{Input, Method, Shape};
use rmq_grpc::pb;
use rmq_grpc::prost::Message;
use rmq_grpc::tonic::transport::{Channel, Endpoint};
use rmq_grpc::tonic::Request;
use rmq_grpc::MessagingServiceClient;

use requests::Seen;
use wire::Answer;

const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);
/// Above the broker's longest long polling (20 s).
const RECEIVE_TIMEOUT: Duration = Duration::from_secs(25);
const NORMAL_TIMEOUT: Duration = Duration::from_secs(1);
const CHECK_EVERY: u64 = 500;
/// Topics made at start, one per message type (gRPC sends create none),
/// so sends are stored and receives, acks and transactions find messages.
const TOPICS: [(&str, &str); 4] = [
    ("TopicA", ""),
    ("fz-fifo", "+message.type=FIFO"),
    ("fz-delay", "+message.type=DELAY"),
    ("fz-tx", "+message.type=TRANSACTION"),
];

struct Target {
    broker: broker_child::BrokerChild,
    rt: tokio::runtime::Runtime,
    channel: Channel,
    seen: Seen,
    inputs: u64,
}

static TARGET: Mutex<Option<Target>> = Mutex::new(None);

fn endpoint(addr: std::net::SocketAddr) -> Endpoint {
    Endpoint::from_shared(format!("http://{addr}"))
        .expect("an http URI")
        .connect_timeout(NORMAL_TIMEOUT)
}

fn start() -> Target {
    let broker = broker_child::start("grpc");
    for (topic, attributes) in TOPICS {
        broker_child::create_topic(broker.remoting, topic, attributes);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let channel = rt
        .block_on(endpoint(broker.grpc).connect())
        .unwrap_or_else(|e| panic!("cannot connect to the broker's gRPC port: {e}"));
    Target {
        broker,
        rt,
        channel,
        seen: Seen::default(),
        inputs: 0,
    }
}

/// Remembers the handles and ids an answer carries, for later inputs.
fn remember(seen: &mut Seen, method: &Method, answer: &[Bytes]) {
    match method.name {
        "SendMessage" => {
            for m in answer {
                let Ok(r) = pb::SendMessageResponse::decode(m.as_ref()) else {
                    continue;
                };
                for e in r.entries {
                    Seen::keep(&mut seen.message_ids, e.message_id);
                    Seen::keep(&mut seen.transaction_ids, e.transaction_id);
                    Seen::keep(&mut seen.recall_handles, e.recall_handle);
                }
            }
        }
        "ReceiveMessage" => {
            for m in answer {
                let Ok(r) = pb::ReceiveMessageResponse::decode(m.as_ref()) else {
                    continue;
                };
                if let Some(pb::receive_message_response::Content::Message(msg)) = r.content {
                    let sp = msg.system_properties.unwrap_or_default();
                    Seen::keep(&mut seen.message_ids, sp.message_id);
                    Seen::keep(
                        &mut seen.receipt_handles,
                        sp.receipt_handle.unwrap_or_default(),
                    );
                }
            }
        }
        "ChangeInvisibleDuration" => {
            for m in answer {
                if let Ok(r) = pb::ChangeInvisibleDurationResponse::decode(m.as_ref()) {
                    Seen::keep(&mut seen.receipt_handles, r.receipt_handle);
                }
            }
        }
        _ => {}
    }
}

/// A normal QueryRoute on a new connection, answered in time.
fn check(t: &mut Target) {
    t.broker.check_bounds(t.inputs);
    let addr = t.broker.grpc;
    let normal = async move {
        let channel = endpoint(addr).connect().await?;
        let mut req = Request::new(pb::QueryRouteRequest {
            topic: Some(pb::Resource {
                resource_namespace: String::new(),
                name: "TopicA".into(),
            }),
            endpoints: None,
        });
        *req.metadata_mut() = meta::normal();
        let r = MessagingServiceClient::new(channel)
            .query_route(req)
            .await?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(r.into_inner())
    };
    let answered =
        t.rt.block_on(async { tokio::time::timeout(NORMAL_TIMEOUT, normal).await });
    let route = match answered {
        Err(_) => panic!("a normal QueryRoute was not answered within {NORMAL_TIMEOUT:?}"),
        Ok(Err(e)) => panic!("a normal QueryRoute failed: {e}"),
        Ok(Ok(r)) => r,
    };
    // TopicA was made at start: its route is there.
    let status = route.status.unwrap_or_default();
    assert!(
        status.code == pb::Code::Ok as i32 && !route.message_queues.is_empty(),
        "a normal QueryRoute was answered with {status:?} and {} queues",
        route.message_queues.len()
    );
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    rmq_grpc::fuzz_harness::grpc_request(data);
    let Some(input) = Input::split(data) else {
        return;
    };
    let method = input.method;
    let mut guard = TARGET.lock().unwrap_or_else(|p| p.into_inner());
    let t = guard.get_or_insert_with(start);
    let messages: Vec<Bytes> = match input.shape {
        Shape::Raw => vec![Bytes::copy_from_slice(input.body)],
        Shape::Built => {
            let mut u = Unstructured::new(input.body);
            match requests::build(method.name, &mut u, &t.seen) {
                Ok(m) => m.into_iter().map(Bytes::from).collect(),
                Err(_) => return,
            }
        }
    };
    let metadata = meta::metadata(input.meta);
    let bound = if method.name == "ReceiveMessage" {
        RECEIVE_TIMEOUT
    } else {
        ANSWER_TIMEOUT
    };
    t.broker.alive();
    // The timer is made inside the runtime.
    let answer = t.rt.block_on(async {
        tokio::time::timeout(bound, wire::call(&t.channel, method, metadata, messages)).await
    });
    let answer = match answer {
        Err(_) => {
            t.broker.alive();
            panic!("{}: no answer within {bound:?}", method.name)
        }
        Ok(Err(wire::NoAnswer(why))) => {
            t.broker.alive();
            panic!("{}: {why}", method.name)
        }
        Ok(Ok(a)) => a,
    };
    let got = match &answer {
        Answer::Messages(m) => m.as_slice(),
        Answer::Status => &[],
    };
    for m in got {
        assert!(
            (method.response_decodes)(m),
            "{}: a response that is not a {} response: {m:?}",
            method.name,
            method.name
        );
    }
    remember(&mut t.seen, method, got);
    t.inputs += 1;
    if t.inputs.is_multiple_of(CHECK_EVERY) {
        check(t);
    }
});
