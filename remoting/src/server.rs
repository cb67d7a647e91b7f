//! The remoting server: an accept loop, one task per connection, bounded
//! in-flight requests per connection, and clean shutdown. What a request
//! means is the [`RequestHandler`]'s business.
//!
//! Memory a client can make the server hold is bounded (see
//! [`ServerOptions`]): connections in total and per peer IP, the bytes of
//! frames still arriving across all connections, each connection's request
//! bytes in flight (headers included) and its answers not yet written.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::StreamExt;
use rmq_common::remoting::RemotingCommand;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::frame::{Event, FrameError, GuardedCodec, UnfinishedBudget};
use super::limits::{ConnectionCaps, ConnectionSlot, RefusalLogs};
use super::tls::{Accepted, TlsServer};
use super::writer::{queued_size, FrameBatch, Queued};

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
    tx: mpsc::Sender<Queued>,
    closed: CancellationToken,
    last_seen_ms: AtomicI64,
    /// Bytes (estimated frame sizes) queued for the writer and not yet
    /// written.
    queued: Arc<AtomicUsize>,
    max_queued: usize,
    logs: Arc<RefusalLogs>,
    /// No socket: a client reaching the broker by another protocol (see
    /// [`Connection::detached`]).
    detached: bool,
}

impl Connection {
    /// Counts `bytes` more as queued; false (and the connection closed) if
    /// that passes the bound: the client is not reading its answers.
    fn reserve(&self, bytes: usize) -> bool {
        let now = self.queued.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if now <= self.max_queued {
            return true;
        }
        self.queued.fetch_sub(bytes, Ordering::Relaxed);
        if !self.is_closed() {
            if let Some(suppressed) = self.logs.writer.allow() {
                tracing::warn!(peer = %self.peer, queued_bytes = now, max = self.max_queued,
                    suppressed, "answers not read by the client pass maxQueuedBytesPerConnection; closing the connection");
            }
            self.close();
        }
        false
    }

    /// Queues a frame without waiting; false if the connection is gone, its
    /// queue is full or its unsent bytes would pass the bound.
    pub fn send(&self, cmd: RemotingCommand) -> bool {
        let bytes = queued_size(&cmd);
        if !self.reserve(bytes) {
            return false;
        }
        if self
            .tx
            .try_send(Queued {
                cmd: Box::new(cmd),
                bytes,
            })
            .is_err()
        {
            self.queued.fetch_sub(bytes, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Queues a frame, waiting for room in the queue; false if the
    /// connection is gone or its unsent bytes would pass the bound.
    pub async fn send_async(&self, cmd: RemotingCommand) -> bool {
        let bytes = queued_size(&cmd);
        if !self.reserve(bytes) {
            return false;
        }
        if self
            .tx
            .send(Queued {
                cmd: Box::new(cmd),
                bytes,
            })
            .await
            .is_err()
        {
            self.queued.fetch_sub(bytes, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Bytes queued for the client and not yet written.
    pub fn queued_bytes(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
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

/// Frames the broker sends to a [`Connection::detached`] connection, for
/// whoever carries them to the client by other means (the gRPC telemetry
/// stream).
#[derive(Debug)]
pub struct Outbox {
    rx: mpsc::Receiver<Queued>,
    queued: Arc<AtomicUsize>,
}

impl Outbox {
    /// The next frame; `None` once the connection is gone.
    pub async fn recv(&mut self) -> Option<RemotingCommand> {
        let q = self.rx.recv().await?;
        self.queued.fetch_sub(q.bytes, Ordering::Relaxed);
        Some(*q.cmd)
    }
}

impl Connection {
    /// A connection with no socket: a client that reaches the broker by
    /// another protocol (gRPC) but is registered, checked back and
    /// answered through the same tables as a remoting client. What the
    /// broker sends it arrives in the returned [`Outbox`]; at most
    /// `max_queued` bytes wait there before sends fail.
    pub fn detached(peer: SocketAddr, max_queued: usize) -> (Arc<Self>, Outbox) {
        let (tx, rx) = mpsc::channel::<Queued>(WRITE_QUEUE);
        let queued = Arc::new(AtomicUsize::new(0));
        let conn = Arc::new(Self {
            id: NEXT_CONN_ID.fetch_add(1, Ordering::Relaxed),
            peer,
            tx,
            closed: CancellationToken::new(),
            last_seen_ms: AtomicI64::new(rmq_common::time::now_ms()),
            queued: Arc::clone(&queued),
            max_queued,
            logs: Arc::new(RefusalLogs::default()),
            detached: true,
        });
        (conn, Outbox { rx, queued })
    }

    /// Whether it was made by [`Connection::detached`]: a client of
    /// another protocol (the broker's gRPC clients), not a socket.
    pub fn is_detached(&self) -> bool {
        self.detached
    }

    /// Records activity of a detached connection's client now.
    pub fn touch(&self) {
        self.last_seen_ms
            .store(rmq_common::time::now_ms(), Ordering::Relaxed);
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

/// Default of `maxConnections`.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
/// Default of `maxConnectionsPerAddress`.
pub const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS: usize = 1_000;
/// Default of `maxHeaderBytes`: far above any header a real client sends
/// (a send's properties are at most 32 KiB).
pub const DEFAULT_MAX_HEADER_BYTES: usize = 256 * 1024;
/// Default of `maxUnfinishedFrameBytes`.
pub const DEFAULT_MAX_UNFINISHED_FRAME_BYTES: usize = 256 * 1024 * 1024;
/// Default of `maxQueuedBytesPerConnection`: above the 16 MiB frame limit,
/// so any single answer fits.
pub const DEFAULT_MAX_QUEUED_BYTES: usize = 32 * 1024 * 1024;

/// Limits of one server and of each of its connections.
#[derive(Debug, Clone, Copy)]
pub struct ServerOptions {
    /// Largest frame accepted.
    pub max_frame: usize,
    /// Requests of one connection handled at once; further frames are not
    /// read until one finishes (back-pressure on that client only).
    pub max_in_flight: usize,
    /// A connection silent this long is closed; also the longest one frame
    /// may take to arrive.
    pub idle_timeout: Duration,
    /// Request bytes of one connection held at once: each frame is charged
    /// its bytes plus [`super::limits::HEADER_DECODE_FACTOR`] - 1 times its
    /// header's, before it is read; further frames are not read until
    /// handled requests release theirs.
    pub max_buffered_bytes: usize,
    /// Largest request header; a larger one closes the connection before
    /// it is buffered.
    pub max_header_bytes: usize,
    /// Connections open at once; further ones are closed at accept.
    pub max_connections: usize,
    /// Connections open at once from one peer IP.
    pub max_connections_per_address: usize,
    /// Bytes (charged as for `max_buffered_bytes`) of frames still arriving,
    /// over all connections; a connection whose next frame does not fit is
    /// closed.
    pub max_unfinished_frame_bytes: usize,
    /// Answer bytes queued for one connection and not yet written; a client
    /// that lets more pile up (it stopped reading) is disconnected.
    pub max_queued_bytes: usize,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            max_frame: rmq_common::remoting::MAX_FRAME_BYTES,
            max_in_flight: 256,
            idle_timeout: Duration::from_secs(120),
            max_buffered_bytes: 64 * 1024 * 1024,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_address: DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
            max_unfinished_frame_bytes: DEFAULT_MAX_UNFINISHED_FRAME_BYTES,
            max_queued_bytes: DEFAULT_MAX_QUEUED_BYTES,
        }
    }
}

impl ServerOptions {
    /// These options with the remoting limits of `config` (the keys
    /// `maxHeaderBytes`, `maxConnections`, `maxConnectionsPerAddress`,
    /// `maxUnfinishedFrameBytes`, `maxQueuedBytesPerConnection`).
    pub fn with_limits(self, config: &rmq_common::StoreConfig) -> Self {
        let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        Self {
            max_header_bytes: size(config.max_header_bytes),
            max_connections: size(u64::from(config.max_connections)),
            max_connections_per_address: size(u64::from(config.max_connections_per_address)),
            max_unfinished_frame_bytes: size(config.max_unfinished_frame_bytes),
            max_queued_bytes: size(config.max_queued_bytes_per_connection),
            ..self
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

/// What every connection of one server shares.
#[derive(Debug)]
struct Shared {
    options: ServerOptions,
    tls: Option<Arc<TlsServer>>,
    caps: Arc<ConnectionCaps>,
    /// Budget of bytes of frames still arriving, over all connections.
    unfinished: UnfinishedBudget,
    logs: Arc<RefusalLogs>,
}

/// Accepts connections until `cancel`; every task it starts is tracked.
/// Connections over the caps are closed at once (logged, rate-limited).
pub async fn serve<H: RequestHandler>(
    listener: TcpListener,
    handler: Arc<H>,
    options: ServerOptions,
    cancel: CancellationToken,
    tracker: TaskTracker,
) {
    serve_tls(listener, handler, options, None, cancel, tracker).await;
}

/// [`serve`], with TLS on the port as `tls` says (`None`: plain only).
pub async fn serve_tls<H: RequestHandler>(
    listener: TcpListener,
    handler: Arc<H>,
    options: ServerOptions,
    tls: Option<Arc<TlsServer>>,
    cancel: CancellationToken,
    tracker: TaskTracker,
) {
    let shared = Arc::new(Shared {
        tls,
        options,
        caps: ConnectionCaps::new(options.max_connections, options.max_connections_per_address),
        unfinished: UnfinishedBudget::new(options.max_unfinished_frame_bytes),
        logs: Arc::new(RefusalLogs::default()),
    });
    accept_until(&listener, &cancel, "remoting", |stream, peer| {
        let slot = match shared.caps.admit(peer.ip()) {
            Ok(slot) => slot,
            Err(why) => {
                if let Some(suppressed) = shared.logs.accept.allow() {
                    tracing::warn!(%peer, limit = why.key(), suppressed,
                        "connection over the limit; closed at accept");
                }
                // Dropping the stream closes it.
                drop(stream);
                return;
            }
        };
        let _ = stream.set_nodelay(true);
        let (h, c, t) = (Arc::clone(&handler), cancel.child_token(), tracker.clone());
        tracker.spawn(connection(stream, peer, h, Arc::clone(&shared), slot, c, t));
    })
    .await;
}

/// Most responses gathered into one write; bounds how long the first of
/// them waits behind the others.
const MAX_RESPONSES_PER_WRITE: usize = 64;

type Frames<R> = FramedRead<R, GuardedCodec>;

/// The next decoder event, or `None` once the connection should close
/// (end of stream, cancel, idle, or a bad frame, logged).
async fn next_event<R: AsyncRead + Unpin>(
    frames: &mut Frames<R>,
    peer: SocketAddr,
    shared: &Shared,
    cancel: &CancellationToken,
) -> Option<Event> {
    let idle = shared.options.idle_timeout;
    let next = tokio::select! {
        biased;
        _ = cancel.cancelled() => return None,
        _ = tokio::time::sleep(idle) => {
            tracing::info!(%peer, idle_s = idle.as_secs(), "closing idle connection");
            return None;
        }
        f = frames.next() => f,
    };
    match next? {
        Ok(event) => Some(event),
        Err(FrameError::Io(e)) => {
            tracing::debug!(%peer, error = %e, "read failed; closing the connection");
            None
        }
        Err(e) => {
            if let Some(suppressed) = shared.logs.frame.allow() {
                tracing::warn!(%peer, error = %e, suppressed, "refused frame; closing the connection");
            }
            None
        }
    }
}

async fn connection<H: RequestHandler>(
    stream: TcpStream,
    peer: SocketAddr,
    handler: Arc<H>,
    shared: Arc<Shared>,
    slot: ConnectionSlot,
    cancel: CancellationToken,
    tracker: TaskTracker,
) {
    // Plain streams split without a lock (the hot path); TLS ones share
    // theirs between the halves.
    let Some(tls) = shared.tls.clone() else {
        let io = stream.into_split();
        return serve_connection(io, peer, handler, shared, slot, cancel, tracker).await;
    };
    let accepted = tokio::select! {
        biased;
        _ = cancel.cancelled() => return,
        a = tls.accept(stream, peer) => a,
    };
    match accepted {
        Ok(Accepted::Plain(stream)) => {
            let io = stream.into_split();
            serve_connection(io, peer, handler, shared, slot, cancel, tracker).await;
        }
        Ok(Accepted::Tls(stream)) => {
            let io = tokio::io::split(*stream);
            serve_connection(io, peer, handler, shared, slot, cancel, tracker).await;
        }
        Err(why) => {
            if let Some(suppressed) = shared.logs.accept.allow() {
                tracing::warn!(%peer, mode = ?tls.mode(), reason = %why, suppressed, "connection closed before any request");
            }
        }
    }
}

async fn serve_connection<H, R, W>(
    (read_half, mut write_half): (R, W),
    peer: SocketAddr,
    handler: Arc<H>,
    shared: Arc<Shared>,
    slot: ConnectionSlot,
    cancel: CancellationToken,
    tracker: TaskTracker,
) where
    H: RequestHandler,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let options = shared.options;
    let mut frames = FramedRead::new(
        read_half,
        GuardedCodec::new(
            options.max_frame,
            options.max_header_bytes,
            shared.unfinished.clone(),
        ),
    );
    let (tx, mut rx) = mpsc::channel::<Queued>(WRITE_QUEUE);
    let queued = Arc::new(AtomicUsize::new(0));
    let conn = Arc::new(Connection {
        id: NEXT_CONN_ID.fetch_add(1, Ordering::Relaxed),
        peer,
        tx,
        closed: cancel.clone(),
        last_seen_ms: AtomicI64::new(rmq_common::time::now_ms()),
        queued: Arc::clone(&queued),
        max_queued: options.max_queued_bytes,
        logs: Arc::clone(&shared.logs),
        detached: false,
    });
    tracing::debug!(%peer, id = conn.id, "connection opened");
    handler.connection_opened(&conn);
    let writer_cancel = cancel.clone();
    let writer = tracker.spawn(async move {
        let mut batch = FrameBatch::default();
        loop {
            let next = tokio::select! {
                biased;
                q = rx.recv() => q,
                _ = writer_cancel.cancelled() => None,
            };
            let Some(first) = next else { break };
            // Responses that are ready as well go out with this one: one
            // write (and one wake-up of the peer) for the lot.
            let mut written = first.bytes;
            let mut encoded = batch.push(&first.cmd);
            let mut batched = 1;
            while encoded.is_ok() && batched < MAX_RESPONSES_PER_WRITE {
                let Ok(more) = rx.try_recv() else { break };
                written += more.bytes;
                encoded = batch.push(&more.cmd);
                batched += 1;
            }
            if let Err(e) = encoded {
                tracing::warn!(%peer, error = %e, "a frame could not be encoded; closing connection");
                writer_cancel.cancel();
                break;
            }
            // Cancellable: a client that stopped reading must not keep
            // this task (and its connection slot) forever.
            let result = tokio::select! {
                r = batch.write_to(&mut write_half) => r,
                _ = writer_cancel.cancelled() => break,
            };
            queued.fetch_sub(written, Ordering::Relaxed);
            if let Err(e) = result {
                tracing::debug!(%peer, error = %e, "write failed; closing connection");
                writer_cancel.cancel();
                break;
            }
        }
        let _ = write_half.shutdown().await;
    });
    let in_flight = Arc::new(Semaphore::new(options.max_in_flight));
    let budget = options
        .max_buffered_bytes
        .clamp(1, u32::MAX as usize)
        .min(Semaphore::MAX_PERMITS);
    let buffered = Arc::new(Semaphore::new(budget));
    loop {
        let permit = tokio::select! {
            biased;
            _ = cancel.cancelled() => break,
            p = Arc::clone(&in_flight).acquire_owned() => match p { Ok(p) => p, Err(_) => break },
        };
        let Some(event) = next_event(&mut frames, peer, &shared, &cancel).await else {
            break;
        };
        let Event::Head(head) = event else {
            tracing::error!(%peer, "frame without a head from the decoder; closing the connection");
            break;
        };
        // The frame's bytes are budgeted against this connection's budget
        // before they are read (waiting: back-pressure on this client
        // only); while they arrive the decoder charges them to the server's
        // budget for unfinished frames (a connection that cannot get it is
        // closed). A frame larger than a whole budget takes all of it.
        let charge = head.charge().clamp(1, budget) as u32;
        let bytes = tokio::select! {
            biased;
            _ = cancel.cancelled() => break,
            b = Arc::clone(&buffered).acquire_many_owned(charge) => match b { Ok(b) => b, Err(_) => break },
        };
        let Some(event) = next_event(&mut frames, peer, &shared, &cancel).await else {
            break;
        };
        let Event::Frame(cmd) = event else {
            tracing::error!(%peer, "a head where a frame was due; closing the connection");
            break;
        };
        conn.last_seen_ms
            .store(rmq_common::time::now_ms(), Ordering::Relaxed);
        if cmd.is_response() {
            handler.response(&conn, cmd);
            continue;
        }
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
    drop(slot);
    tracing::debug!(%peer, id = conn.id, "connection closed");
}
