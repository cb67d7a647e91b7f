//! TLS on the gRPC port, as on the broker's remoting port: with `tlsMode`
//! permissive or enforcing, each new connection is told apart by its first
//! byte (`rmq_remoting::tls::TlsServer::accept`) and served plain or over
//! TLS with the broker's certificate (a self-signed one in
//! `tlsTestModeEnable`). Apache's proxy serves its gRPC port the same way,
//! and some 5.x SDKs speak only TLS (the Go client v5.1.2 always does,
//! without checking the certificate).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use rmq_remoting::tls::{Accepted, TlsServer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tonic::transport::server::{Connected, TcpConnectInfo};

/// Connections handshaken but not yet taken by the server.
const READY_QUEUE: usize = 64;

/// One accepted gRPC connection.
pub(crate) enum GrpcIo {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Connected for GrpcIo {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        match self {
            GrpcIo::Plain(s) => s.connect_info(),
            GrpcIo::Tls(s) => s.get_ref().0.connect_info(),
        }
    }
}

impl AsyncRead for GrpcIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            GrpcIo::Plain(s) => Pin::new(s).poll_read(cx, buf),
            GrpcIo::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for GrpcIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            GrpcIo::Plain(s) => Pin::new(s).poll_write(cx, buf),
            GrpcIo::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            GrpcIo::Plain(s) => Pin::new(s).poll_flush(cx),
            GrpcIo::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            GrpcIo::Plain(s) => Pin::new(s).poll_shutdown(cx),
            GrpcIo::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// The connections of `listener` through `tls`, until `cancel`. Each
/// handshake runs in its own task on `tracker`, so a slow or silent
/// client holds up no other; one that fails it is closed and logged.
pub(crate) fn with_tls(
    listener: TcpListener,
    tls: Arc<TlsServer>,
    cancel: &CancellationToken,
    tracker: &TaskTracker,
) -> impl Stream<Item = io::Result<GrpcIo>> {
    let (tx, rx) = mpsc::channel(READY_QUEUE);
    let (stop, handshakes) = (cancel.clone(), tracker.clone());
    tracker.spawn(async move {
        loop {
            let accepted = tokio::select! {
                biased;
                _ = stop.cancelled() => break,
                a = listener.accept() => a,
            };
            let (stream, peer) = match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "gRPC accept failed");
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            let (tls, tx, stop) = (Arc::clone(&tls), tx.clone(), stop.clone());
            handshakes.spawn(async move {
                let io = tokio::select! {
                    _ = stop.cancelled() => return,
                    a = tls.accept(stream, peer) => match a {
                        Ok(Accepted::Plain(s)) => GrpcIo::Plain(s),
                        Ok(Accepted::Tls(s)) => GrpcIo::Tls(s),
                        Err(why) => {
                            tracing::info!(%peer, %why, "gRPC connection closed");
                            return;
                        }
                    },
                };
                let _ = tx.send(Ok(io)).await;
            });
        }
    });
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::StreamExt;
    use rmq_remoting::tls::TlsSettings;
    use tokio::io::AsyncWriteExt;

    use super::*;

    const WAIT: Duration = Duration::from_secs(10);

    #[tokio::test]
    async fn plain_and_tls_clients_on_one_permissive_port() {
        let raw = vec![
            ("tlsMode", "permissive".to_owned()),
            ("tlsTestModeEnable", "true".to_owned()),
        ];
        let settings = TlsSettings::from_keys(raw, "").unwrap();
        let server = settings.server(&["127.0.0.1".into()]).unwrap().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (cancel, tracker) = (CancellationToken::new(), TaskTracker::new());
        let mut conns = Box::pin(with_tls(listener, server, &cancel, &tracker));

        // HTTP/2's preface starts with 'P': a plain client.
        let mut plain = TcpStream::connect(addr).await.unwrap();
        plain.write_all(b"PRI * HTTP/2.0").await.unwrap();
        let got = tokio::time::timeout(WAIT, conns.next()).await.unwrap();
        assert!(matches!(got, Some(Ok(GrpcIo::Plain(_)))));

        let tcp = TcpStream::connect(addr).await.unwrap();
        let client = rmq_client::TlsClient::trust_any().unwrap();
        let (handshake, got) = tokio::time::timeout(WAIT, async {
            tokio::join!(client.handshake(tcp, addr), conns.next())
        })
        .await
        .unwrap();
        // Kept open: the server side reads its peer's address.
        let _client = handshake.unwrap();
        match got {
            Some(Ok(io @ GrpcIo::Tls(_))) => assert_eq!(
                io.connect_info().remote_addr().map(|a| a.ip()),
                Some(addr.ip())
            ),
            _ => panic!("the TLS client was not served over TLS"),
        }
        cancel.cancel();
        tracker.close();
        tokio::time::timeout(WAIT, tracker.wait()).await.unwrap();
    }
}
