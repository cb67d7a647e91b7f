//! The gRPC port's connections: accepted under the same per-port and
//! per-address caps as remoting (`maxConnections`,
//! `maxConnectionsPerAddress`), and under `tlsMode` the same TLS (offering
//! `h2` by ALPN, which gRPC clients require): a plain client is taken in
//! permissive mode and refused in enforcing mode, as on the remoting port.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use rmq_remoting::limits::{ConnectionCaps, ConnectionSlot};
use rmq_remoting::tls::{Accepted, TlsServer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tonic::transport::server::{Connected, TcpConnectInfo};

/// Connections accepted and not yet taken by the server.
const BACKLOG: usize = 128;

/// One accepted connection, plain or TLS; its slot under the caps is
/// given back when it drops.
pub(crate) struct GrpcIo {
    stream: Transport,
    peer: SocketAddr,
    local: Option<SocketAddr>,
    _slot: ConnectionSlot,
}

enum Transport {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl Connected for GrpcIo {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        TcpConnectInfo {
            local_addr: self.local,
            remote_addr: Some(self.peer),
        }
    }
}

impl AsyncRead for GrpcIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().stream {
            Transport::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for GrpcIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().stream {
            Transport::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().stream {
            Transport::Plain(s) => Pin::new(s).poll_flush(cx),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().stream {
            Transport::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().stream {
            Transport::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.stream {
            Transport::Plain(s) => s.is_write_vectored(),
            Transport::Tls(s) => s.is_write_vectored(),
        }
    }
}

/// Accepts on `listener` until `cancel`, handing each admitted (and, with
/// TLS, handshaken) connection to the returned stream.
pub(crate) fn incoming(
    listener: TcpListener,
    caps: Arc<ConnectionCaps>,
    tls: Option<Arc<TlsServer>>,
    cancel: CancellationToken,
    tracker: &TaskTracker,
) -> impl Stream<Item = io::Result<GrpcIo>> + Send + 'static {
    let (tx, rx) = mpsc::channel::<io::Result<GrpcIo>>(BACKLOG);
    let handshakes = tracker.clone();
    tracker.spawn(async move {
        loop {
            let (stream, peer) = tokio::select! {
                biased;
                _ = cancel.cancelled() => break,
                accepted = listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(error = %e, "gRPC accept failed");
                        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                        continue;
                    }
                },
            };
            let slot = match caps.admit(peer.ip()) {
                Ok(slot) => slot,
                Err(refused) => {
                    tracing::debug!(%peer, ?refused, "gRPC connection refused");
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            let local = stream.local_addr().ok();
            let tx = tx.clone();
            let tls = tls.clone();
            handshakes.spawn(async move {
                let stream = match &tls {
                    None => Transport::Plain(stream),
                    Some(t) => match t.accept(stream, peer).await {
                        Ok(Accepted::Plain(s)) => Transport::Plain(s),
                        Ok(Accepted::Tls(s)) => Transport::Tls(s),
                        Err(why) => {
                            tracing::debug!(%peer, why, "gRPC connection closed");
                            return;
                        }
                    },
                };
                let _ = tx
                    .send(Ok(GrpcIo {
                        stream,
                        peer,
                        local,
                        _slot: slot,
                    }))
                    .await;
            });
        }
    });
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) })
}
