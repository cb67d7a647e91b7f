//! Issue 15: a hostile or broken client cannot hurt anyone else (this file: hostile_memory).
//!
//! Each test replays one reproduction against a broker on 127.0.0.1 and
//! states the memory bound it checks. The bounds are on the broker's own
//! resident set (`VmRSS` of a broker child process), which no other test
//! of the suite runs in.

use std::time::Duration;

use bytes::BytesMut;
use rmq_client::{self as sdk, OutMessage, RemotingClient, SendCode};
use rmq_common::config::{CqBackend, StoreConfig};
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::server::{
    DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, DEFAULT_MAX_QUEUED_BYTES,
    DEFAULT_MAX_UNFINISHED_FRAME_BYTES,
};
use rmq_tests::start_broker;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::broker_process::BrokerProcess;

/// Bound for anything expected to happen (a call, a close).
const EVENT_TIMEOUT: Duration = Duration::from_secs(30);
const MIB: usize = 1024 * 1024;

async fn fill(c: &RemotingClient, topic: &str, count: usize, size: usize) {
    for _ in 0..count {
        let m = OutMessage {
            body: vec![b'x'; size],
            tags: None,
            keys: Vec::new(),
            properties: Vec::new(),
        };
        sdk::send(c, SendCode::V2, "p", topic, 0, &[m])
            .await
            .unwrap();
    }
}

fn pull(topic: &str, max_nums: i64, max_bytes: Option<i64>) -> RemotingCommand {
    let mut req = RemotingCommand::request(RequestCode::PullMessage);
    req.put_ext("consumerGroup", "hostile");
    req.put_ext("topic", topic);
    req.put_ext("queueId", 0);
    req.put_ext("queueOffset", 0);
    req.put_ext("maxMsgNums", max_nums);
    req.put_ext("sysFlag", 4);
    req.put_ext("commitOffset", -1);
    req.put_ext("suspendTimeoutMillis", 0);
    req.put_ext("subscription", "*");
    req.put_ext("subVersion", 0);
    req.put_ext("expressionType", "TAG");
    if let Some(b) = max_bytes {
        req.put_ext("maxMsgBytes", b);
    }
    req
}

/// Reads until the broker closes the connection; the bytes read, or `None`
/// if it did not close within [`EVENT_TIMEOUT`].
async fn read_until_closed(s: &mut TcpStream) -> Option<usize> {
    tokio::time::timeout(EVENT_TIMEOUT, async {
        let mut buf = vec![0u8; 64 * 1024];
        let mut total = 0;
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return total,
                Ok(n) => total += n,
            }
        }
    })
    .await
    .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_asking_for_everything_gets_the_transfer_limits() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), CqBackend::File).await;
    let c = sdk::connect(broker.addr()).await.unwrap();
    // 40 messages of 16 KiB: 640 KiB in the queue.
    fill(&c, "HM_CAP", 40, 16 * 1024).await;
    let limits = StoreConfig::default();
    let max_bytes = limits.max_transfer_bytes_on_message_in_memory_bytes as usize;
    let max_count = limits.max_transfer_count_on_message_in_memory as i64;
    for asked in [Some(i64::from(i32::MAX)), None] {
        let resp = c
            .invoke(pull("HM_CAP", 1_000_000, asked), EVENT_TIMEOUT)
            .await
            .unwrap();
        assert_eq!(resp.code, i32::from(ResponseCode::Success), "{resp:?}");
        let got = resp.ext().req_i64("nextBeginOffset").unwrap();
        let bytes = resp.body_len();
        assert!(
            (1..=max_count).contains(&got),
            "maxMsgBytes {asked:?}: {got} messages, limit {max_count}"
        );
        assert!(
            bytes <= max_bytes,
            "maxMsgBytes {asked:?}: {bytes} bytes, maxTransferBytesOnMessageInMemory {max_bytes}"
        );
    }
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_disconnected() {
    /// Pulls written at most (~60 MiB of requests, far more than socket
    /// buffers take); each is answered with ~256 KiB.
    const MAX_PULLS: usize = 250_000;
    /// The broker may hold the queued answers, the socket buffers and what
    /// the store mapped; without the bound it held gigabytes.
    const RSS_BOUND: usize = DEFAULT_MAX_QUEUED_BYTES + 128 * MIB;
    let dir = tempfile::tempdir().unwrap();
    let (ns, broker) = BrokerProcess::with_namesrv(dir.path(), &[]).await;
    let c = sdk::connect(broker.addr).await.unwrap();
    fill(&c, "HM_SLOW", 32, 8 * 1024).await;
    let mut frame = BytesMut::new();
    pull("HM_SLOW", 32, None).encode(&mut frame).unwrap();
    let before = broker.rss_bytes();
    let mut s = TcpStream::connect(broker.addr).await.unwrap();
    // Writes pulls and never reads: the broker must close the connection
    // (a write then fails) before the pulls run out.
    let disconnected = tokio::time::timeout(EVENT_TIMEOUT, async {
        for _ in 0..MAX_PULLS {
            if s.write_all(&frame).await.is_err() {
                return true;
            }
        }
        false
    })
    .await;
    let grown = broker.rss_bytes().saturating_sub(before);
    assert_eq!(
        disconnected,
        Ok(true),
        "the broker kept a client that reads nothing"
    );
    assert!(grown < RSS_BOUND, "RSS grew by {grown} bytes");
    // Others are still served.
    let resp = c
        .invoke(pull("HM_SLOW", 1, None), EVENT_TIMEOUT)
        .await
        .unwrap();
    assert_eq!(resp.code, i32::from(ResponseCode::Success));
    broker.stop().await;
    ns.stop().await;
}

/// A JSON request header with `fields` ext fields.
fn huge_header_frame(fields: usize) -> Vec<u8> {
    let mut header = String::from(
        r#"{"code":34,"flag":0,"language":"JAVA","opaque":1,"version":0,"extFields":{"#,
    );
    for i in 0..fields {
        if i > 0 {
            header.push(',');
        }
        header.push_str(&format!(r#""k{i}":"v""#));
    }
    header.push_str("}}");
    let mut frame = Vec::with_capacity(header.len() + 8);
    frame.extend_from_slice(&(header.len() as i32 + 4).to_be_bytes());
    frame.extend_from_slice(&(header.len() as i32).to_be_bytes());
    frame.extend_from_slice(header.as_bytes());
    frame
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_with_a_million_ext_fields_is_refused() {
    /// Four such frames decoded at once took hundreds of MiB; refused, they
    /// take no more than a read buffer each.
    const RSS_BOUND: usize = 64 * MIB;
    const CONNECTIONS: usize = 4;
    let dir = tempfile::tempdir().unwrap();
    let (ns, broker) = BrokerProcess::with_namesrv(dir.path(), &[]).await;
    let frame = huge_header_frame(1_000_000);
    assert!(frame.len() < rmq_common::remoting::MAX_FRAME_BYTES);
    let before = broker.rss_bytes();
    let mut tasks = Vec::new();
    for _ in 0..CONNECTIONS {
        let (addr, frame) = (broker.addr, frame.clone());
        tasks.push(tokio::spawn(async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            // The broker may close while this is still being written.
            let _ = s.write_all(&frame).await;
            read_until_closed(&mut s).await
        }));
    }
    for t in tasks {
        assert_eq!(
            t.await.unwrap(),
            Some(0),
            "closed without an answer (not decoded)"
        );
    }
    let grown = broker.rss_bytes().saturating_sub(before);
    assert!(grown < RSS_BOUND, "RSS grew by {grown} bytes");
    let c = sdk::connect(broker.addr).await.unwrap();
    fill(&c, "HM_HEADER", 1, 10).await;
    broker.stop().await;
    ns.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_per_address_cap_are_closed_while_others_are_served() {
    const EXTRA: usize = 5;
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), CqBackend::File).await;
    let c = sdk::connect(broker.addr()).await.unwrap();
    fill(&c, "HM_CONN", 1, 10).await;
    // The client above holds one slot; these take the rest.
    let mut held = Vec::new();
    for _ in 1..DEFAULT_MAX_CONNECTIONS_PER_ADDRESS {
        held.push(TcpStream::connect(broker.addr()).await.unwrap());
    }
    // Accepted in order, so these are over the cap: closed at once.
    for _ in 0..EXTRA {
        let mut s = TcpStream::connect(broker.addr()).await.unwrap();
        assert_eq!(read_until_closed(&mut s).await, Some(0));
    }
    fill(&c, "HM_CONN", 1, 10).await;
    // A slot given back is usable again.
    drop(held.pop());
    let again = tokio::time::timeout(EVENT_TIMEOUT, async {
        loop {
            let c2 = sdk::connect(broker.addr()).await.unwrap();
            let m = OutMessage {
                body: b"x".to_vec(),
                tags: None,
                keys: Vec::new(),
                properties: Vec::new(),
            };
            // The broker may not have seen the close yet: retry.
            if sdk::send(&c2, SendCode::V2, "p", "HM_CONN", 0, &[m])
                .await
                .is_ok()
            {
                break;
            }
        }
    })
    .await;
    assert!(again.is_ok(), "a freed slot was not given back");
    drop(held);
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_frames_are_bounded_across_connections() {
    /// Each connection sends 15 MiB of a 16 MiB frame; without a budget
    /// the 40 of them held 600 MiB.
    const CONNECTIONS: usize = 40;
    const SENT: usize = 15 * MIB;
    const RSS_BOUND: usize = DEFAULT_MAX_UNFINISHED_FRAME_BYTES + 96 * MIB;
    let dir = tempfile::tempdir().unwrap();
    let (ns, broker) = BrokerProcess::with_namesrv(dir.path(), &[]).await;
    // A heartbeat whose body makes the frame just under 16 MiB.
    let mut req = RemotingCommand::request(RequestCode::HeartBeat);
    req.body = Some(vec![b' '; rmq_common::remoting::MAX_FRAME_BYTES - 4096].into());
    let mut frame = BytesMut::new();
    req.encode(&mut frame).unwrap();
    let before = broker.rss_bytes();
    let mut conns = Vec::new();
    for _ in 0..CONNECTIONS {
        let mut s = TcpStream::connect(broker.addr).await.unwrap();
        let ok = tokio::time::timeout(EVENT_TIMEOUT, s.write_all(&frame[..SENT]))
            .await
            .expect("the broker reads or closes");
        conns.push((s, ok.is_ok()));
    }
    let grown = broker.rss_bytes().saturating_sub(before);
    // Finish every frame: a connection still open gets an answer, a closed
    // one an end of stream.
    let mut open = 0;
    for (mut s, written) in conns {
        if written && s.write_all(&frame[SENT..]).await.is_ok() {
            let mut b = [0u8; 1];
            let read = tokio::time::timeout(EVENT_TIMEOUT, s.read(&mut b))
                .await
                .expect("an answer or a close");
            if matches!(read, Ok(1)) {
                open += 1;
            }
        }
    }
    let most_open = DEFAULT_MAX_UNFINISHED_FRAME_BYTES / SENT + 1;
    assert!(
        (1..=most_open).contains(&open),
        "{open} of {CONNECTIONS} connections kept their unfinished frames (at most {most_open})"
    );
    assert!(grown < RSS_BOUND, "RSS grew by {grown} bytes");
    broker.stop().await;
    ns.stop().await;
}
