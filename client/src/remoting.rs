//! An async remoting client: one TCP connection, a writer task and a reader
//! task, requests matched to responses by opaque.
//!
//! Requests are encoded by the caller (so an unencodable command fails its
//! own call with [`ClientError::Codec`]) and queued to the writer. The reader
//! hands each response to the waiter registered under its opaque, and each
//! request the server sends (`NOTIFY_CONSUMER_IDS_CHANGED`,
//! `CHECK_TRANSACTION_STATE`, ...) to the handler channel given at connect.
//! When the connection ends, every waiting call fails with
//! [`ClientError::ConnectionClosed`].

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use parking_lot::Mutex;
use rmq_common::remoting::{RemotingCommand, RemotingError, FLAG_ONEWAY, FLAG_RESPONSE};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::codec::RemotingCodec;
use crate::tls::TlsClient;

/// Encoded frames queued for the writer; callers wait when it is full.
const OUTBOUND_QUEUE: usize = 1024;

/// The writer coalesces queued frames into one write up to this many bytes.
const MAX_WRITE_BATCH_BYTES: usize = 64 * 1024;

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No response arrived in time; the request may still be processed.
    #[error("request code {code} (opaque {opaque}) to {peer}: no response within {timeout:?}")]
    Timeout {
        /// The server.
        peer: SocketAddr,
        /// The request code.
        code: i32,
        /// The opaque the request was sent with.
        opaque: i32,
        /// The time allowed.
        timeout: Duration,
    },
    /// The connection ended (closed by either side, or failed) before the
    /// call completed.
    #[error("connection to {peer} is closed")]
    ConnectionClosed {
        /// The server.
        peer: SocketAddr,
    },
    /// Connecting failed.
    #[error("cannot connect to {peer}: {source}")]
    Io {
        /// The server.
        peer: SocketAddr,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },
    /// The TLS handshake failed (the server speaks plain, or refused us).
    #[error("TLS handshake with {peer} failed: {source}")]
    Tls {
        /// The server.
        peer: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The command cannot be encoded (a value does not fit its wire slot).
    #[error("cannot encode request for {peer}: {source}")]
    Codec {
        /// The server.
        peer: SocketAddr,
        /// The codec's error.
        #[source]
        source: RemotingError,
    },
}

/// Calls waiting for a response, by opaque. `closed` is set, under the same
/// lock, when the connection ends, so no waiter is registered after the
/// table was drained.
#[derive(Default)]
struct PendingTable {
    closed: bool,
    waiters: HashMap<i32, oneshot::Sender<RemotingCommand>>,
}

/// State shared by the client handle and its tasks.
struct Shared {
    peer: SocketAddr,
    pending: Mutex<PendingTable>,
}

impl Shared {
    /// Marks the connection closed and drops every waiter, which fails their
    /// calls with [`ClientError::ConnectionClosed`].
    fn close(&self) {
        let waiters = {
            let mut table = self.pending.lock();
            table.closed = true;
            std::mem::take(&mut table.waiters)
        };
        drop(waiters);
    }

    fn closed_error(&self) -> ClientError {
        ClientError::ConnectionClosed { peer: self.peer }
    }
}

/// Removes a waiter when its call ends, however it ends (response, timeout,
/// or the caller dropping the future).
struct PendingGuard<'a> {
    shared: &'a Shared,
    opaque: i32,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.shared.pending.lock().waiters.remove(&self.opaque);
    }
}

/// A connection to a remoting server (broker or NameServer).
///
/// Dropping the client, or [`RemotingClient::close`], ends its tasks and the
/// connection.
pub struct RemotingClient {
    shared: Arc<Shared>,
    outbound: mpsc::Sender<Bytes>,
    next_opaque: AtomicI32,
    cancel: CancellationToken,
    tracker: TaskTracker,
    credentials: Option<rmq_common::acl::Credentials>,
}

impl RemotingClient {
    /// Signs every request from now on with `credentials` (a broker with
    /// `aclEnable` checks them), as Java's `AclClientRPCHook`.
    pub fn with_credentials(mut self, credentials: rmq_common::acl::Credentials) -> Self {
        self.credentials = Some(credentials);
        self
    }

    fn sign(&self, cmd: &mut RemotingCommand) {
        if let Some(c) = &self.credentials {
            c.sign(&mut cmd.ext_fields, cmd.body.as_deref());
        }
    }

    /// Connects to `addr`; requests from the server are logged and dropped.
    pub async fn connect(addr: SocketAddr) -> Result<Self, ClientError> {
        Self::start(addr, None, None).await
    }

    /// Connects to `addr`; requests from the server (non-response frames) are
    /// sent to `handler`. The reader waits while `handler` is full, so a slow
    /// handler delays responses too.
    pub async fn connect_with_handler(
        addr: SocketAddr,
        handler: mpsc::Sender<RemotingCommand>,
    ) -> Result<Self, ClientError> {
        Self::start(addr, Some(handler), None).await
    }

    /// Connects to `addr` over TLS (see [`TlsClient`]); requests from the
    /// server go to `handler` when given.
    pub async fn connect_tls(
        addr: SocketAddr,
        tls: &TlsClient,
        handler: Option<mpsc::Sender<RemotingCommand>>,
    ) -> Result<Self, ClientError> {
        Self::start(addr, handler, Some(tls)).await
    }

    async fn start(
        addr: SocketAddr,
        handler: Option<mpsc::Sender<RemotingCommand>>,
        tls: Option<&TlsClient>,
    ) -> Result<Self, ClientError> {
        let io_error = |source| ClientError::Io { peer: addr, source };
        let stream = TcpStream::connect(addr).await.map_err(io_error)?;
        stream.set_nodelay(true).map_err(io_error)?;
        Ok(match tls {
            None => {
                let (read_half, write_half) = stream.into_split();
                Self::run(addr, read_half, write_half, handler)
            }
            Some(tls) => {
                let stream = tls
                    .handshake(stream, addr)
                    .await
                    .map_err(|source| ClientError::Tls { peer: addr, source })?;
                let (read_half, write_half) = tokio::io::split(stream);
                Self::run(addr, read_half, write_half, handler)
            }
        })
    }

    fn run<R, W>(
        addr: SocketAddr,
        read_half: R,
        write_half: W,
        handler: Option<mpsc::Sender<RemotingCommand>>,
    ) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let shared = Arc::new(Shared {
            peer: addr,
            pending: Mutex::new(PendingTable::default()),
        });
        let (outbound, outbound_rx) = mpsc::channel(OUTBOUND_QUEUE);
        let cancel = CancellationToken::new();
        let tracker = TaskTracker::new();
        tracker.spawn(read_loop(
            FramedRead::new(read_half, RemotingCodec::default()),
            Arc::clone(&shared),
            handler,
            cancel.clone(),
        ));
        tracker.spawn(write_loop(
            write_half,
            outbound_rx,
            Arc::clone(&shared),
            cancel.clone(),
        ));
        tracker.close();
        Self {
            shared,
            outbound,
            next_opaque: AtomicI32::new(1),
            cancel,
            tracker,
            credentials: None,
        }
    }

    /// The server's address.
    pub fn peer_addr(&self) -> SocketAddr {
        self.shared.peer
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.shared.pending.lock().closed
    }

    /// Sends `cmd` as a request with a fresh opaque and waits up to `timeout`
    /// for the response with that opaque.
    pub async fn invoke(
        &self,
        mut cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, ClientError> {
        cmd.opaque = self.next_opaque();
        cmd.flag &= !(FLAG_RESPONSE | FLAG_ONEWAY);
        self.sign(&mut cmd);
        let frame = self.encode(&cmd)?;
        let (tx, rx) = oneshot::channel();
        let _guard = self.register(cmd.opaque, tx)?;
        let exchange = async {
            self.outbound
                .send(frame)
                .await
                .map_err(|_| self.shared.closed_error())?;
            rx.await.map_err(|_| self.shared.closed_error())
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_elapsed) => Err(ClientError::Timeout {
                peer: self.shared.peer,
                code: cmd.code,
                opaque: cmd.opaque,
                timeout,
            }),
        }
    }

    /// Sends `cmd` as a oneway request (fresh opaque, oneway flag); returns
    /// once it is queued for writing.
    pub async fn invoke_oneway(&self, mut cmd: RemotingCommand) -> Result<(), ClientError> {
        cmd.opaque = self.next_opaque();
        cmd.flag &= !FLAG_RESPONSE;
        cmd.mark_oneway();
        self.sign(&mut cmd);
        self.send_frame(&cmd).await
    }

    /// Sends a response to a request the server made (see
    /// [`RemotingCommand::response_to`]); the opaque is kept and the response
    /// flag set.
    pub async fn send_response(&self, mut response: RemotingCommand) -> Result<(), ClientError> {
        response.mark_response();
        self.send_frame(&response).await
    }

    /// Ends the connection and waits for both tasks to finish; calls still
    /// waiting fail with [`ClientError::ConnectionClosed`].
    pub async fn close(&self) {
        self.cancel.cancel();
        self.tracker.wait().await;
    }

    fn next_opaque(&self) -> i32 {
        self.next_opaque.fetch_add(1, Ordering::Relaxed)
    }

    fn encode(&self, cmd: &RemotingCommand) -> Result<Bytes, ClientError> {
        let mut buf = BytesMut::new();
        cmd.encode(&mut buf).map_err(|source| ClientError::Codec {
            peer: self.shared.peer,
            source,
        })?;
        Ok(buf.freeze())
    }

    async fn send_frame(&self, cmd: &RemotingCommand) -> Result<(), ClientError> {
        let frame = self.encode(cmd)?;
        if self.is_closed() {
            return Err(self.shared.closed_error());
        }
        self.outbound
            .send(frame)
            .await
            .map_err(|_| self.shared.closed_error())
    }

    /// Registers a waiter for `opaque`, unless the connection already ended.
    fn register(
        &self,
        opaque: i32,
        tx: oneshot::Sender<RemotingCommand>,
    ) -> Result<PendingGuard<'_>, ClientError> {
        let mut table = self.shared.pending.lock();
        if table.closed {
            return Err(self.shared.closed_error());
        }
        table.waiters.insert(opaque, tx);
        Ok(PendingGuard {
            shared: &self.shared,
            opaque,
        })
    }

    #[cfg(test)]
    fn pending_len(&self) -> usize {
        self.shared.pending.lock().waiters.len()
    }
}

impl Drop for RemotingClient {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Reads frames until the peer closes, a frame is bad, or the client is
/// closed; then fails every waiting call and stops the writer.
async fn read_loop<R: AsyncRead + Unpin>(
    mut frames: FramedRead<R, RemotingCodec>,
    shared: Arc<Shared>,
    handler: Option<mpsc::Sender<RemotingCommand>>,
    cancel: CancellationToken,
) {
    let peer = shared.peer;
    loop {
        let next = tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            next = frames.next() => next,
        };
        let cmd = match next {
            None => {
                tracing::debug!(%peer, "server closed the connection");
                break;
            }
            Some(Err(error)) => {
                tracing::warn!(%peer, %error, "closing connection after a read error");
                break;
            }
            Some(Ok(cmd)) => cmd,
        };
        if cmd.is_response() {
            let waiter = shared.pending.lock().waiters.remove(&cmd.opaque);
            match waiter {
                // The caller may have given up meanwhile; nothing to do then.
                Some(tx) => drop(tx.send(cmd)),
                None => tracing::debug!(
                    %peer,
                    opaque = cmd.opaque,
                    code = cmd.code,
                    "response matches no waiting request (timed out?)"
                ),
            }
        } else if let Some(handler) = &handler {
            tokio::select! {
                biased;
                () = cancel.cancelled() => break,
                sent = handler.send(cmd) => if sent.is_err() {
                    tracing::debug!(%peer, "request handler is gone; dropping server request");
                },
            }
        } else {
            tracing::debug!(%peer, code = cmd.code, "no handler; dropping server request");
        }
    }
    shared.close();
    cancel.cancel();
}

/// Writes queued frames, coalescing what is already queued, until the queue
/// closes, a write fails, or the client is closed.
async fn write_loop<W: AsyncWrite + Unpin>(
    mut socket: W,
    mut queue: mpsc::Receiver<Bytes>,
    shared: Arc<Shared>,
    cancel: CancellationToken,
) {
    let peer = shared.peer;
    let mut batch = BytesMut::new();
    loop {
        let first = tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            frame = queue.recv() => match frame {
                Some(frame) => frame,
                None => break,
            },
        };
        batch.extend_from_slice(&first);
        while batch.len() < MAX_WRITE_BATCH_BYTES {
            match queue.try_recv() {
                Ok(frame) => batch.extend_from_slice(&frame),
                Err(_) => break,
            }
        }
        let written = tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            // A TLS stream holds what it encrypted until flushed.
            written = async { socket.write_all(&batch).await?; socket.flush().await } => written,
        };
        batch.clear();
        if let Err(error) = written {
            tracing::warn!(%peer, %error, "closing connection after a write error");
            break;
        }
    }
    shared.close();
    cancel.cancel();
    // Best effort: the peer sees EOF rather than a reset.
    if let Err(error) = socket.shutdown().await {
        tracing::debug!(%peer, %error, "shutdown of the write half failed");
    }
}

#[cfg(test)]
#[path = "remoting_tests.rs"]
mod tests;
