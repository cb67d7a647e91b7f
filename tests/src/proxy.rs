//! A TCP proxy on 127.0.0.1:0 whose link a test controls: it passes bytes
//! both ways, stalls them (connections stay open, nothing moves: a network
//! partition as TCP sees it), or cuts them (every connection closed and new
//! ones closed at once: a peer that went away). A proxy may also rewrite
//! RocketMQ remoting frames both ways: a header field naming one address
//! names another (an address translated on the way, as NAT does: a broker
//! advertising an HA address that reaches it through the proxy, a
//! controller naming itself by the proxy's address).

use std::net::SocketAddr;

use bytes::BytesMut;
use rmq_common::remoting::{RemotingCommand, MAX_FRAME_BYTES};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What the link does now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// Bytes pass.
    Up,
    /// Connections stay open, no byte moves.
    Stalled,
    /// Connections are closed, new ones too.
    Cut,
}

/// A proxy to one upstream address; stops when dropped.
#[derive(Debug)]
pub struct LinkProxy {
    addr: SocketAddr,
    link: watch::Sender<Link>,
    accept: JoinHandle<()>,
}

impl LinkProxy {
    /// Listens on 127.0.0.1:0 and forwards each connection to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Self {
        Self::start_with(upstream, None).await
    }

    /// [`LinkProxy::start`] for remoting traffic: in every frame either
    /// way, each header field whose value is the rewrite's `from` passes
    /// as its `to`; `rewrite` is given the proxy's own address.
    pub async fn start_rewriting(
        upstream: SocketAddr,
        rewrite: impl FnOnce(SocketAddr) -> Rewrite,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let rewrite = rewrite(listener.local_addr().unwrap());
        Self::serve(listener, upstream, Some(rewrite))
    }

    async fn start_with(upstream: SocketAddr, rewrite: Option<Rewrite>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        Self::serve(listener, upstream, rewrite)
    }

    fn serve(listener: TcpListener, upstream: SocketAddr, rewrite: Option<Rewrite>) -> Self {
        let addr = listener.local_addr().unwrap();
        let (link, state) = watch::channel(Link::Up);
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if *state.borrow() == Link::Cut {
                    continue; // dropped: closed at once
                }
                let state = state.clone();
                let filter = || match &rewrite {
                    Some(r) => Filter::Rewrite(r.clone(), BytesMut::new()),
                    None => Filter::Raw,
                };
                let (requests, answers) = (filter(), filter());
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let (cr, cw) = client.into_split();
                    let (sr, sw) = server.into_split();
                    // Either direction ending ends both (both halves drop).
                    tokio::select! {
                        () = pipe(cr, sw, state.clone(), requests) => {}
                        () = pipe(sr, cw, state, answers) => {}
                    }
                });
            }
        });
        Self { addr, link, accept }
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Sets the link.
    pub fn set(&self, link: Link) {
        self.link.send_replace(link);
    }
}

impl Drop for LinkProxy {
    fn drop(&mut self) {
        self.set(Link::Cut);
        self.accept.abort();
    }
}

/// A header value a rewriting proxy replaces.
#[derive(Debug, Clone)]
pub struct Rewrite {
    /// The value clients send.
    pub from: String,
    /// What the upstream receives instead.
    pub to: String,
}

/// What one direction does to the bytes it copies.
enum Filter {
    /// Passes them as they are.
    Raw,
    /// Decodes remoting frames (the bytes of an unfinished one are kept)
    /// and rewrites their header fields.
    Rewrite(Rewrite, BytesMut),
}

impl Filter {
    /// The bytes to send on for `input`; `None` when the input is not a
    /// remoting stream (the connection is then closed).
    fn pass(&mut self, input: &[u8]) -> Option<Vec<u8>> {
        let Self::Rewrite(rewrite, pending) = self else {
            return Some(input.to_vec());
        };
        pending.extend_from_slice(input);
        let mut out = BytesMut::new();
        while let Some(mut frame) = RemotingCommand::decode(pending, MAX_FRAME_BYTES).ok()? {
            for value in frame.ext_fields.values_mut() {
                if *value == rewrite.from {
                    value.clone_from(&rewrite.to);
                }
            }
            frame.encode(&mut out).ok()?;
        }
        Some(out.to_vec())
    }
}

/// Copies `from` to `to` through `filter` while the link is up; waits
/// while it is stalled; returns when it is cut or either side closes.
async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut state: watch::Receiver<Link>,
    mut filter: Filter,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let link = *state.borrow_and_update();
        match link {
            Link::Cut => return,
            Link::Stalled => {
                if state.changed().await.is_err() {
                    return;
                }
            }
            Link::Up => {
                let n = tokio::select! {
                    r = from.read(&mut buf) => match r {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    },
                    r = state.changed() => {
                        if r.is_err() {
                            return;
                        }
                        continue;
                    }
                };
                let Some(out) = filter.pass(&buf[..n]) else {
                    return;
                };
                if to.write_all(&out).await.is_err() {
                    return;
                }
            }
        }
    }
}
