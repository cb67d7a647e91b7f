//! The remoting server: an accept loop, one task per connection, bounded
//! in-flight requests per connection, and clean shutdown. What a request
//! means is the [`RequestHandler`]'s business.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::StreamExt;
use rmq_common::remoting::RemotingCommand;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use rmq_client::RemotingCodec;

use super::writer::FrameBatch;

/// Identifies a connection for the server's lifetime.
pub type ConnId = u64;

static NEXT_CONN_ID: AtomicU64 = AtomicU64::new(1);

/// Frames queued for one connection's writer before senders wait.
const WRITE_QUEUE: usize = 1024;

/// One client connection, shared by the tasks that answer on it and by
/// services that send it requests (notifications, transaction checks).
#[derive(Debug)]
pub struct Connection {
    /// Connection id.
    pub id: ConnId,
    /// The client's address.
    pub peer: SocketAddr,
    tx: mpsc::Sender<RemotingCommand>,
    closed: CancellationToken,
    last_seen_ms: AtomicI64,
}

impl Connection {
    /// Queues a frame without waiting; false if the connection is gone or
    /// its queue is full.
    pub fn send(&self, cmd: RemotingCommand) -> bool {
        self.tx.try_send(cmd).is_ok()
    }

    /// Queues a frame, waiting for room.
    pub async fn send_async(&self, cmd: RemotingCommand) -> bool {
        self.tx.send(cmd).await.is_ok()
    }

    /// Closes the connection.
    pub fn close(&self) {
        self.closed.cancel();
    }

    /// Whether it was closed.
    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Time of the last frame received, ms.
    pub fn last_seen_ms(&self) -> i64 {
        self.last_seen_ms.load(Ordering::Relaxed)
    }
}

/// Answers requests arriving on connections.
pub trait RequestHandler: Send + Sync + 'static {
    /// Handles one request; `None` for oneway requests and for requests
    /// answered later.
    fn handle(
        self: Arc<Self>,
        conn: Arc<Connection>,
        req: RemotingCommand,
    ) -> BoxFuture<'static, Option<RemotingCommand>>;

    /// A response to a request this side sent on the connection.
    fn response(&self, _conn: &Arc<Connection>, _resp: RemotingCommand) {}

    /// A connection was accepted.
    fn connection_opened(&self, _conn: &Arc<Connection>) {}

    /// The connection is gone.
    fn connection_closed(&self, _conn: &Arc<Connection>) {}
}

/// Per-connection limits.
#[derive(Debug, Clone, Copy)]
pub struct ServerOptions {
    /// Largest frame accepted.
    pub max_frame: usize,
    /// Requests of one connection handled at once; further frames are not
    /// read until one finishes (back-pressure on that client only).
    pub max_in_flight: usize,
    /// A connection silent this long is closed.
    pub idle_timeout: Duration,
    /// Request bytes (bodies) of one connection held at once; further
    /// frames are not read until handled requests release theirs.
    pub max_buffered_bytes: usize,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            max_frame: rmq_common::remoting::MAX_FRAME_BYTES,
            max_in_flight: 256,
            idle_timeout: Duration::from_secs(120),
            max_buffered_bytes: 64 * 1024 * 1024,
        }
    }
}

/// Pause after a failed accept (e.g. out of file descriptors), so the loop
/// does not spin.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// Accepts connections on `listener` until `cancel`, handing each to
/// `on_accept`; a failed accept is logged (naming the listener `what`) and
/// retried after [`ACCEPT_RETRY`].
pub async fn accept_until(
    listener: &TcpListener,
    cancel: &CancellationToken,
    what: &str,
    mut on_accept: impl FnMut(TcpStream, SocketAddr),
) {
    loop {
        let accepted = tokio::select! {
            biased;
            _ = cancel.cancelled() => break,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, peer)) => on_accept(stream, peer),
            Err(e) => {
                tracing::warn!(error = %e, listener = what, "accept failed");
                tokio::time::sleep(ACCEPT_RETRY).await;
            }
        }
    }
}

/// Accepts connections until `cancel`; every task it starts is tracked.
pub async fn serve<H: RequestHandler>(
    listener: TcpListener,
    handler: Arc<H>,
    options: ServerOptions,
    cancel: CancellationToken,
    tracker: TaskTracker,
) {
    accept_until(&listener, &cancel, "remoting", |stream, peer| {
        let _ = stream.set_nodelay(true);
        let (h, c, t) = (Arc::clone(&handler), cancel.child_token(), tracker.clone());
        tracker.spawn(connection(stream, peer, h, options, c, t));
    })
    .await;
}

/// Most responses gathered into one write; bounds how long the first of
/// them waits behind the others.
const MAX_RESPONSES_PER_WRITE: usize = 64;

async fn connection<H: RequestHandler>(
    stream: TcpStream,
    peer: SocketAddr,
    handler: Arc<H>,
    options: ServerOptions,
    cancel: CancellationToken,
    tracker: TaskTracker,
) {
    let (read_half, mut write_half) = stream.into_split();
    let mut frames = FramedRead::new(read_half, RemotingCodec::new(options.max_frame));
    let (tx, mut rx) = mpsc::channel::<RemotingCommand>(WRITE_QUEUE);
    let conn = Arc::new(Connection {
        id: NEXT_CONN_ID.fetch_add(1, Ordering::Relaxed),
        peer,
        tx,
        closed: cancel.clone(),
        last_seen_ms: AtomicI64::new(rmq_common::time::now_ms()),
    });
    tracing::debug!(%peer, id = conn.id, "connection opened");
    handler.connection_opened(&conn);
    let writer_cancel = cancel.clone();
    let writer = tracker.spawn(async move {
        let mut batch = FrameBatch::default();
        loop {
            let next = tokio::select! {
                biased;
                cmd = rx.recv() => cmd,
                _ = writer_cancel.cancelled() => None,
            };
            let Some(cmd) = next else { break };
            // Responses that are ready as well go out with this one: one
            // write (and one wake-up of the peer) for the lot.
            let mut encoded = batch.push(&cmd);
            let mut batched = 1;
            while encoded.is_ok() && batched < MAX_RESPONSES_PER_WRITE {
                let Ok(more) = rx.try_recv() else { break };
                encoded = batch.push(&more);
                batched += 1;
            }
            if let Err(e) = encoded {
                tracing::warn!(%peer, error = %e, "a frame could not be encoded; closing connection");
                writer_cancel.cancel();
                break;
            }
            if let Err(e) = batch.write_to(&mut write_half).await {
                tracing::debug!(%peer, error = %e, "write failed; closing connection");
                writer_cancel.cancel();
                break;
            }
        }
        let _ = write_half.shutdown().await;
    });
    let in_flight = Arc::new(Semaphore::new(options.max_in_flight));
    let budget = options.max_buffered_bytes.clamp(1, u32::MAX as usize);
    let buffered = Arc::new(Semaphore::new(budget));
    loop {
        let permit = tokio::select! {
            biased;
            _ = cancel.cancelled() => break,
            p = Arc::clone(&in_flight).acquire_owned() => match p { Ok(p) => p, Err(_) => break },
        };
        let frame = tokio::select! {
            biased;
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep(options.idle_timeout) => {
                tracing::info!(%peer, idle_s = options.idle_timeout.as_secs(), "closing idle connection");
                break;
            }
            f = frames.next() => f,
        };
        let cmd = match frame {
            None => break,
            Some(Ok(cmd)) => cmd,
            Some(Err(e)) => {
                tracing::warn!(%peer, error = %e, "malformed frame; closing the connection");
                break;
            }
        };
        conn.last_seen_ms
            .store(rmq_common::time::now_ms(), Ordering::Relaxed);
        if cmd.is_response() {
            handler.response(&conn, cmd);
            continue;
        }
        // A frame larger than the whole budget takes all of it.
        let size = cmd.body.as_ref().map_or(0, |b| b.len()).clamp(1, budget) as u32;
        let bytes = tokio::select! {
            biased;
            _ = cancel.cancelled() => break,
            b = Arc::clone(&buffered).acquire_many_owned(size) => match b { Ok(b) => b, Err(_) => break },
        };
        let (h, c) = (Arc::clone(&handler), Arc::clone(&conn));
        tracker.spawn(async move {
            if let Some(resp) = h.handle(Arc::clone(&c), cmd).await {
                c.send_async(resp).await;
            }
            drop((permit, bytes));
        });
    }
    cancel.cancel();
    let _ = writer.await;
    handler.connection_closed(&conn);
    tracing::debug!(%peer, id = conn.id, "connection closed");
}
