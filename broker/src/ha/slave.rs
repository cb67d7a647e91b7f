//! The slave's side: connects to the master's HA address (configured, or
//! learned from the NameServer's register answer), reports its CommitLog
//! end at once and then after every chunk it stores and every
//! `haSendHeartbeatInterval`, and writes each chunk at the master's offset.
//! A chunk that does not continue the local log means the two logs
//! diverged: the connection is closed with an error naming both offsets and
//! tried again after `haSendHeartbeatInterval` (as is any failed
//! connection); nothing local is overwritten. Before each connection a
//! slave that can reach its master's request port checks that its log is
//! a prefix of the master's and cuts back what is not (`heal`). (RocketMQ's
//! slave waits a heartbeat interval before its first report; reporting at
//! once is the same bytes, sooner.)

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::heal::{self, Agreement, HealError};
use super::wire::{encode_report, FrameHeader, HEADER_LEN};
use super::HaSettings;
use rmq_namesrv::MasterInfo;
use rmq_store::MessageStore;

/// How long a connect to the master may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest frame body accepted (RocketMQ's read buffer is 4 MiB).
const MAX_BODY: usize = 4 * 1024 * 1024;

/// The master a slave is streaming from now, if any (for
/// GET_BROKER_RUNTIME_INFO and rmq-admin).
#[derive(Debug, Default)]
pub struct SlaveLink(parking_lot::Mutex<Option<String>>);

impl SlaveLink {
    /// The master's HA address while a connection to it is up.
    pub fn master(&self) -> Option<String> {
        self.0.lock().clone()
    }

    fn set(&self, master: Option<&str>) {
        *self.0.lock() = master.map(str::to_owned);
    }
}

/// How a slave reaches its master's request port to compare records
/// before it follows: the master the NameServers name, over the broker's
/// connector (signed, TLS when configured).
#[derive(Clone)]
pub struct MasterRequests {
    /// Opens the connection.
    pub connector: rmq_client::Connector,
    /// The master the NameServers name.
    pub named: watch::Receiver<Option<MasterInfo>>,
}

/// Why one connection to the master ended.
#[derive(Debug, thiserror::Error)]
enum Ended {
    #[error("stopped")]
    Stopped,
    #[error("the master's HA address changed")]
    AddressChanged,
    #[error("connection: {0}")]
    Io(#[from] std::io::Error),
    #[error("the master sent a frame of {0} bytes")]
    BadFrame(i32),
    #[error("{0}")]
    Store(#[from] rmq_store_file::StoreError),
    #[error("{0}")]
    Heal(#[from] HealError),
}

/// Follows the master at the address `master` holds (none: wait) until
/// `cancel`.
/// Over TLS when `tls` is given (the broker's `tlsEnable`, or enforcing).
/// With `requests`, each connection starts with the prefix check.
pub async fn follow(
    store: Arc<MessageStore>,
    mut master: watch::Receiver<Option<String>>,
    settings: HaSettings,
    link: Arc<SlaveLink>,
    tls: Option<rmq_client::TlsClient>,
    requests: Option<MasterRequests>,
    cancel: CancellationToken,
) {
    loop {
        let addr = master.borrow_and_update().clone();
        let ended = match addr {
            None => {
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => return,
                    () = address_changed(&mut master) => {}
                }
                continue;
            }
            Some(addr) => {
                let checked = tokio::select! {
                    biased;
                    () = cancel.cancelled() => return,
                    r = check_prefix(&store, requests.as_ref()) => r,
                };
                let ended = match checked {
                    Ok(()) => {
                        session(
                            &store,
                            &addr,
                            tls.as_ref(),
                            &mut master,
                            settings,
                            &link,
                            &cancel,
                        )
                        .await
                    }
                    Err(e) => e,
                };
                link.set(None);
                ended
            }
        };
        match ended {
            Ended::Stopped => return,
            Ended::AddressChanged => continue,
            Ended::Store(e @ rmq_store_file::StoreError::ReplicaGap { .. }) => {
                tracing::error!(error = %e, "replication refused: this slave's CommitLog does not continue the master's; nothing local was overwritten");
            }
            Ended::Heal(e @ HealError::NothingShared { .. }) => {
                tracing::error!(error = %e, "replication stopped");
            }
            e => tracing::warn!(error = %e, "connection to the master ended"),
        }
        tokio::select! {
            biased;
            () = cancel.cancelled() => return,
            // RocketMQ waits a fixed 5 s, the default heartbeat interval.
            () = tokio::time::sleep(settings.heartbeat) => {}
        }
    }
}

/// The prefix check against the master the NameServers name; skipped
/// without `requests` or while none is named (a configured
/// `haMasterAddress` before the first registration answer).
async fn check_prefix(store: &Arc<MessageStore>, r: Option<&MasterRequests>) -> Result<(), Ended> {
    let Some(r) = r else {
        return Ok(());
    };
    let Some(addr) = r.named.borrow().as_ref().map(|m| m.broker_addr.clone()) else {
        tracing::debug!("no master named yet: following without comparing records");
        return Ok(());
    };
    let unreachable = |reason: String| HealError::Unreachable {
        master: addr.clone(),
        reason,
    };
    let sock = addr.parse().map_err(|e| unreachable(format!("{e}")))?;
    let client = match tokio::time::timeout(CONNECT_TIMEOUT, r.connector.connect(sock)).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return Err(unreachable(e.to_string()).into()),
        Err(_) => return Err(unreachable(format!("no connection in {CONNECT_TIMEOUT:?}")).into()),
    };
    let agreed = heal::agree(store, &client, &addr).await;
    client.close().await;
    if let Agreement::Cut { from, to } = agreed? {
        tracing::info!(master = %addr, from, to, "following from the cut");
    }
    Ok(())
}

/// Completes when the master's address changes; never, once no one can
/// change it (a configured address).
async fn address_changed(master: &mut watch::Receiver<Option<String>>) {
    if master.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// One connection, plain or TLS.
async fn session(
    store: &MessageStore,
    addr: &str,
    tls: Option<&rmq_client::TlsClient>,
    master: &mut watch::Receiver<Option<String>>,
    settings: HaSettings,
    link: &SlaveLink,
    cancel: &CancellationToken,
) -> Ended {
    let timed_out = || {
        Ended::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("connect to {addr} took over {CONNECT_TIMEOUT:?}"),
        ))
    };
    let stream = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Ended::Io(e),
        Err(_) => return timed_out(),
    };
    let _ = stream.set_nodelay(true);
    let Some(tls) = tls else {
        return exchange(
            stream.into_split(),
            store,
            addr,
            master,
            settings,
            link,
            cancel,
        )
        .await;
    };
    let peer = match stream.peer_addr() {
        Ok(p) => p,
        Err(e) => return Ended::Io(e),
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, tls.handshake(stream, peer)).await {
        Ok(Ok(s)) => {
            exchange(
                tokio::io::split(s),
                store,
                addr,
                master,
                settings,
                link,
                cancel,
            )
            .await
        }
        Ok(Err(e)) => Ended::Io(e),
        Err(_) => timed_out(),
    }
}

/// Report, then store frames and report as they come.
async fn exchange<R, W>(
    (mut read, mut write): (R, W),
    store: &MessageStore,
    addr: &str,
    master: &mut watch::Receiver<Option<String>>,
    settings: HaSettings,
    link: &SlaveLink,
    cancel: &CancellationToken,
) -> Ended
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    tracing::info!(
        master = addr,
        offset = store.max_phy_offset(),
        "following the master"
    );
    let mut reported = store.max_phy_offset();
    if let Err(e) = send_report(&mut write, reported).await {
        return e.into();
    }
    link.set(Some(addr));
    let mut heartbeat = tokio::time::interval(settings.heartbeat);
    heartbeat.tick().await;
    // Frames are parsed from this buffer: `read_buf` is cancel-safe, so a
    // heartbeat never cuts a frame.
    let mut buf = bytes::BytesMut::with_capacity(64 * 1024);
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Ended::Stopped,
            () = address_changed(master) => return Ended::AddressChanged,
            _ = heartbeat.tick() => {
                reported = store.max_phy_offset();
                if let Err(e) = send_report(&mut write, reported).await {
                    return e.into();
                }
            }
            r = tokio::time::timeout(settings.housekeeping, read.read_buf(&mut buf)) => {
                match r {
                    Err(_) => return Ended::Io(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("nothing from the master for {:?}", settings.housekeeping),
                    )),
                    Ok(Err(e)) => return e.into(),
                    Ok(Ok(0)) => return Ended::Io(std::io::ErrorKind::UnexpectedEof.into()),
                    Ok(Ok(_)) => {}
                }
                if let Err(e) = store_frames(store, &mut buf) {
                    return e;
                }
                let end = store.max_phy_offset();
                if end > reported {
                    reported = end;
                    if let Err(e) = send_report(&mut write, reported).await {
                        return e.into();
                    }
                }
            }
        }
    }
}

/// Writes one report and flushes it (TLS holds what it encrypted until
/// flushed).
async fn send_report<W: AsyncWrite + Unpin>(write: &mut W, offset: i64) -> std::io::Result<()> {
    write.write_all(&encode_report(offset)).await?;
    write.flush().await
}

/// Stores every complete frame at the front of `buf` and removes it.
fn store_frames(store: &MessageStore, buf: &mut bytes::BytesMut) -> Result<(), Ended> {
    while buf.len() >= HEADER_LEN {
        let mut header = [0u8; HEADER_LEN];
        header.copy_from_slice(&buf[..HEADER_LEN]);
        let h = FrameHeader::decode(&header);
        let size = usize::try_from(h.size)
            .ok()
            .filter(|s| *s <= MAX_BODY)
            .ok_or(Ended::BadFrame(h.size))?;
        if buf.len() < HEADER_LEN + size {
            buf.reserve(HEADER_LEN + size - buf.len());
            return Ok(());
        }
        let frame = buf.split_to(HEADER_LEN + size);
        store.append_replica(h.offset, &frame[HEADER_LEN..])?;
    }
    Ok(())
}
