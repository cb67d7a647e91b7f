//! Per-connection limits of the remoting server: a connection's request
//! bytes (headers included) held at once stay within `max_buffered_bytes`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use bytes::BytesMut;

use super::limits::frame_charge;
use super::server::{serve, Connection, RequestHandler, ServerOptions};
use rmq_client::RemotingClient;

/// Bound for anything expected to happen.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the test gives the server to (wrongly) read a fourth request.
const ABSENCE_WINDOW: Duration = Duration::from_millis(200);

/// Holds every request until the gate opens; counts those inside.
#[derive(Debug)]
struct Gated {
    inside: AtomicUsize,
    arrived: Notify,
    gate: Semaphore,
}

impl Default for Gated {
    fn default() -> Self {
        Self {
            inside: AtomicUsize::new(0),
            arrived: Notify::new(),
            gate: Semaphore::new(0),
        }
    }
}

impl RequestHandler for Gated {
    fn handle(
        self: Arc<Self>,
        _conn: Arc<Connection>,
        req: RemotingCommand,
    ) -> BoxFuture<'static, Option<RemotingCommand>> {
        Box::pin(async move {
            self.inside.fetch_add(1, Ordering::SeqCst);
            self.arrived.notify_one();
            let _pass = self.gate.acquire().await.ok()?;
            Some(RemotingCommand::response_to(
                &req,
                ResponseCode::Success,
                None,
            ))
        })
    }
}

fn heartbeat() -> RemotingCommand {
    let mut req = RemotingCommand::request(RequestCode::HeartBeat);
    req.body = Some(vec![0u8; 1_000].into());
    req
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_request_bytes_are_bounded_per_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handler = Arc::new(Gated::default());
    // Each request is charged its frame plus its header's expansion; the
    // budget holds three and a half of them.
    let mut one = BytesMut::new();
    heartbeat().encode(&mut one).unwrap();
    let header_len = (u32::from_be_bytes([one[4], one[5], one[6], one[7]]) & 0xFF_FFFF) as usize;
    let charge = frame_charge(one.len() - 4, header_len);
    let options = ServerOptions {
        max_buffered_bytes: charge * 7 / 2,
        ..ServerOptions::default()
    };
    let (cancel, tracker) = (CancellationToken::new(), TaskTracker::new());
    tokio::spawn(serve(
        listener,
        Arc::clone(&handler),
        options,
        cancel.clone(),
        tracker,
    ));
    let client = Arc::new(RemotingClient::connect(addr).await.unwrap());
    let mut calls = Vec::new();
    for _ in 0..5 {
        let c = Arc::clone(&client);
        calls.push(tokio::spawn(async move {
            c.invoke(heartbeat(), CALL_TIMEOUT * 2).await
        }));
    }
    // Three fit in the budget; the fourth waits.
    tokio::time::timeout(CALL_TIMEOUT, async {
        while handler.inside.load(Ordering::SeqCst) < 3 {
            handler.arrived.notified().await;
        }
    })
    .await
    .unwrap();
    tokio::time::sleep(ABSENCE_WINDOW).await;
    assert_eq!(handler.inside.load(Ordering::SeqCst), 3);
    handler.gate.add_permits(5);
    for c in calls {
        let resp = c.await.unwrap().unwrap();
        assert_eq!(resp.code, i32::from(ResponseCode::Success));
    }
    assert_eq!(handler.inside.load(Ordering::SeqCst), 5);
    cancel.cancel();
}
