//! A TCP proxy on 127.0.0.1:0 whose link a test controls: it passes bytes
//! both ways, stalls them (connections stay open, nothing moves: a network
//! partition as TCP sees it), or cuts them (every connection closed and new
//! ones closed at once: a peer that went away).

use std::net::SocketAddr;

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
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (link, state) = watch::channel(Link::Up);
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if *state.borrow() == Link::Cut {
                    continue; // dropped: closed at once
                }
                let state = state.clone();
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let (cr, cw) = client.into_split();
                    let (sr, sw) = server.into_split();
                    // Either direction ending ends both (both halves drop).
                    tokio::select! {
                        () = pipe(cr, sw, state.clone()) => {}
                        () = pipe(sr, cw, state) => {}
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

/// Copies `from` to `to` while the link is up; waits while it is stalled;
/// returns when it is cut or either side closes.
async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut state: watch::Receiver<Link>,
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
                if to.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}
