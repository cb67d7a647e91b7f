//! The master's side of the auto-switch HA protocol
//! (`docs/controller-facts.md` 8.2, 8.3, 8.7): slaves connect to the HA
//! port; every slave handshake is answered with the master's epoch entries;
//! after its first offset report the CommitLog streams from there in
//! frames labelled with the epoch that wrote them (a frame never crosses an
//! epoch's end; the one reaching it is labelled with the next epoch), an
//! empty frame after `haSendHeartbeatInterval` of silence; every report
//! acknowledges what the slave has ([`InSync`]). A link silent for
//! `haHousekeepingInterval` is closed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use rmq_store::{EpochEntry, MessageStore};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::switch_sync::InSync;
use super::switch_wire::{MasterHandshake, SlaveFrame, SwitchWireError, TransferHeader};
use super::HaSettings;

/// Longest wait for new CommitLog data before looking again (a put also
/// wakes the writers at once).
const IDLE_POLL: Duration = Duration::from_millis(100);

/// What every slave link shares.
#[derive(Debug, Clone)]
pub struct SwitchMasterShared {
    /// The store streamed from.
    pub store: Arc<MessageStore>,
    /// Acks, caught-up times, the SyncStateSet and the confirm offset.
    pub in_sync: Arc<InSync>,
    /// Timings and sizes.
    pub settings: HaSettings,
    /// TLS on the port, as on the broker's (`None`: plain only).
    pub tls: Option<Arc<rmq_remoting::tls::TlsServer>>,
}

/// The master's HA listener and its links; [`SwitchMaster::stop`] ends
/// them all.
#[derive(Debug)]
pub struct SwitchMaster {
    addr: SocketAddr,
    cancel: CancellationToken,
    tracker: TaskTracker,
}

impl SwitchMaster {
    /// Serves slaves on `listener` until stopped.
    pub fn start(listener: TcpListener, shared: SwitchMasterShared) -> std::io::Result<Self> {
        let addr = listener.local_addr()?;
        let cancel = CancellationToken::new();
        let tracker = TaskTracker::new();
        tracker.spawn(serve(listener, shared, cancel.clone(), tracker.clone()));
        Ok(Self {
            addr,
            cancel,
            tracker,
        })
    }

    /// The address slaves connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Closes the listener and every link, and waits for their tasks.
    pub async fn stop(self) {
        self.cancel.cancel();
        self.tracker.close();
        self.tracker.wait().await;
    }
}

async fn serve(
    listener: TcpListener,
    shared: SwitchMasterShared,
    cancel: CancellationToken,
    tracker: TaskTracker,
) {
    loop {
        let accepted = tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, peer)) => {
                let _ = stream.set_nodelay(true);
                tracker.spawn(connection(
                    stream,
                    peer,
                    shared.clone(),
                    cancel.child_token(),
                ));
            }
            Err(e) => {
                tracing::warn!(error = %e, "HA accept failed");
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => break,
                    () = tokio::time::sleep(IDLE_POLL) => {}
                }
            }
        }
    }
}

/// One slave, over TLS when the port says so.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    shared: SwitchMasterShared,
    cancel: CancellationToken,
) {
    use rmq_remoting::tls::Accepted;
    let Some(tls) = shared.tls.clone() else {
        return link(stream.into_split(), peer, &shared, cancel).await;
    };
    let accepted = tokio::select! {
        biased;
        () = cancel.cancelled() => return,
        a = tls.accept(stream, peer) => a,
    };
    match accepted {
        Ok(Accepted::Plain(s)) => link(s.into_split(), peer, &shared, cancel).await,
        Ok(Accepted::Tls(s)) => link(tokio::io::split(*s), peer, &shared, cancel).await,
        Err(why) => {
            tracing::warn!(%peer, reason = %why, "HA connection closed before its handshake")
        }
    }
}

/// What the reader tells the writer.
#[derive(Debug)]
enum Event {
    /// Answer with the handshake; stream from the next report on.
    Handshake {
        id: i64,
        conn: u64,
        sync_from_last_file: bool,
    },
    /// The slave has everything below this.
    Report(i64),
}

/// Why a link ended.
#[derive(Debug, thiserror::Error)]
enum Ended {
    #[error("stopped")]
    Stopped,
    #[error("connection: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Wire(#[from] SwitchWireError),
    #[error("nothing from the slave for {0:?}")]
    Silent(Duration),
    #[error("an offset report before any handshake")]
    NoHandshake,
    #[error("the slave reports {slave}, past this master's end {master}: the logs diverged")]
    Ahead { slave: i64, master: i64 },
    #[error("the slave needs offset {0}, below what this master still has")]
    Gone(i64),
}

async fn link<R, W>(
    (read, write): (R, W),
    peer: SocketAddr,
    shared: &SwitchMasterShared,
    cancel: CancellationToken,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (tx, rx) = mpsc::unbounded_channel();
    let mut slave: Option<(i64, u64)> = None;
    let (r, w) = tokio::join!(
        async {
            let r = read_reports(read, shared, tx, &mut slave, &cancel).await;
            cancel.cancel();
            r
        },
        async {
            let w = write_stream(write, shared, rx, &cancel).await;
            cancel.cancel();
            w
        }
    );
    if let Some((id, conn)) = slave {
        shared.in_sync.disconnected(id, conn);
    }
    let why = match (r, w) {
        (Ended::Stopped, e) | (e, _) => e,
    };
    tracing::info!(%peer, slave = ?slave.map(|s| s.0), why = %why, "HA link closed");
}

async fn read_reports<R: AsyncRead + Unpin>(
    mut read: R,
    shared: &SwitchMasterShared,
    tx: mpsc::UnboundedSender<Event>,
    slave: &mut Option<(i64, u64)>,
    cancel: &CancellationToken,
) -> Ended {
    let mut buf = BytesMut::with_capacity(1024);
    let housekeeping = shared.settings.housekeeping;
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Ended::Stopped,
            r = tokio::time::timeout(housekeeping, read.read_buf(&mut buf)) => match r {
                Err(_) => return Ended::Silent(housekeeping),
                Ok(Err(e)) => return e.into(),
                Ok(Ok(0)) => return Ended::Io(std::io::ErrorKind::UnexpectedEof.into()),
                Ok(Ok(_)) => {}
            },
        }
        loop {
            let (frame, used) = match SlaveFrame::decode(&buf) {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => return e.into(),
            };
            buf.advance(used);
            match frame {
                SlaveFrame::Handshake {
                    sync_from_last_file,
                    async_learner,
                    broker_id,
                } => {
                    if let Some((id, conn)) = slave.take() {
                        shared.in_sync.disconnected(id, conn);
                    }
                    let conn = shared.in_sync.connected(broker_id, async_learner);
                    *slave = Some((broker_id, conn));
                    let _ = tx.send(Event::Handshake {
                        id: broker_id,
                        conn,
                        sync_from_last_file,
                    });
                }
                SlaveFrame::Report { offset } => {
                    let Some((id, conn)) = *slave else {
                        return Ended::NoHandshake;
                    };
                    let master = shared.store.max_phy_offset();
                    if offset > master {
                        return Ended::Ahead {
                            slave: offset,
                            master,
                        };
                    }
                    shared.in_sync.ack(id, conn, offset);
                    let _ = tx.send(Event::Report(offset));
                }
            }
        }
    }
}

/// Where a slave's stream is.
#[derive(Debug, Clone, Copy)]
struct Stream {
    id: i64,
    conn: u64,
    sync_from_last_file: bool,
    /// Next offset to send; `None` until the first report after a handshake.
    next: Option<i64>,
}

async fn write_stream<W: AsyncWrite + Unpin>(
    mut write: W,
    shared: &SwitchMasterShared,
    mut rx: mpsc::UnboundedReceiver<Event>,
    cancel: &CancellationToken,
) -> Ended {
    let store = &shared.store;
    let mut stream: Option<Stream> = None;
    let mut last_write = Instant::now();
    let mut pending: Option<Event> = None;
    loop {
        let notified = store.appended().notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        while let Some(ev) = pending.take().or_else(|| rx.try_recv().ok()) {
            match ev {
                Event::Handshake {
                    id,
                    conn,
                    sync_from_last_file,
                } => {
                    let hs = MasterHandshake {
                        max_offset: store.max_phy_offset(),
                        last_epoch: store.last_epoch(),
                        entries: store.epoch_pairs(),
                    };
                    if let Err(e) = send(&mut write, &hs.encode(), &[], cancel).await {
                        return e;
                    }
                    last_write = Instant::now();
                    stream = Some(Stream {
                        id,
                        conn,
                        sync_from_last_file,
                        next: None,
                    });
                }
                Event::Report(offset) => {
                    if let Some(s) = stream.as_mut().filter(|s| s.next.is_none()) {
                        s.next = Some(start_offset(store, offset, s.sync_from_last_file));
                        tracing::info!(slave = s.id, requested = offset, from = ?s.next, "streaming the CommitLog to the slave");
                    }
                }
            }
        }
        if let Some(s) = stream.as_mut() {
            if let Some(next) = s.next {
                match transfer(store, next, shared.settings.batch_bytes) {
                    Transfer::Data(header, body) => {
                        let n = body.len();
                        if let Err(e) = send(&mut write, &header.encode(), &body, cancel).await {
                            return e;
                        }
                        metrics::counter!(
                            crate::metrics::names::HA_SENT_BYTES_TOTAL,
                            store.metrics().labels().to_vec()
                        )
                        .increment(n as u64);
                        s.next = Some(next + n as i64);
                        shared.in_sync.sent(s.id, s.conn, store.max_phy_offset());
                        last_write = Instant::now();
                        continue;
                    }
                    Transfer::Gone => return Ended::Gone(next),
                    Transfer::Nothing(heartbeat) => {
                        shared.in_sync.nothing_to_send(s.id, s.conn);
                        if last_write.elapsed() >= shared.settings.heartbeat {
                            if let Err(e) = send(&mut write, &heartbeat.encode(), &[], cancel).await
                            {
                                return e;
                            }
                            last_write = Instant::now();
                        }
                    }
                }
            }
        }
        let wait = shared
            .settings
            .heartbeat
            .saturating_sub(last_write.elapsed())
            .min(IDLE_POLL);
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Ended::Stopped,
            ev = rx.recv() => match ev {
                Some(ev) => pending = Some(ev),
                None => return Ended::Stopped,
            },
            () = notified => {}
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// Where a slave that reported `offset` first starts: there, or for an
/// empty slave at the CommitLog's min offset (the start of the last segment
/// with `isSyncFromLastFile`).
fn start_offset(store: &MessageStore, offset: i64, sync_from_last_file: bool) -> i64 {
    if offset != 0 {
        return offset;
    }
    let log = store.commit_log();
    if sync_from_last_file {
        let max = log.max_offset();
        max - max.rem_euclid(log.segment_size() as i64)
    } else {
        log.min_offset()
    }
}

/// What to send next.
enum Transfer {
    /// A frame and its body.
    Data(TransferHeader, Bytes),
    /// Nothing new; the heartbeat to send if it is time.
    Nothing(TransferHeader),
    /// The slave needs bytes retention deleted.
    Gone,
}

/// The frame from `next`: at most `batch` bytes of one segment, never past
/// the end of the epoch holding `next`; labelled with that epoch, or with
/// the next one when the frame reaches its end (the slave records the
/// label's start as where the next epoch begins).
fn transfer(store: &MessageStore, next: i64, batch: usize) -> Transfer {
    let entries = store.epoch_entries();
    let confirm_offset = store.confirm_offset();
    let idx = entries
        .iter()
        .position(|e| e.start <= next && next < e.end)
        .unwrap_or(0);
    let label = |e: Option<&EpochEntry>| e.map_or((0, 0), |e| (e.epoch, e.start));
    let log = store.commit_log();
    let Some(sel) = log.select_from(next).filter(|s| !s.bytes().is_empty()) else {
        if next < log.min_offset() {
            return Transfer::Gone;
        }
        let (epoch, epoch_start) = label(entries.get(idx).or(entries.last()));
        return Transfer::Nothing(TransferHeader {
            size: 0,
            offset: next,
            epoch,
            epoch_start,
            confirm_offset,
        });
    };
    let mut n = sel.bytes().len().min(batch);
    let current = entries.get(idx);
    if let Some(e) = current.filter(|e| e.end != i64::MAX) {
        n = n.min(usize::try_from(e.end - next).unwrap_or(n).max(1));
    }
    let at_end = current.is_some_and(|e| next + n as i64 == e.end);
    let (epoch, epoch_start) = match (at_end, entries.get(idx + 1)) {
        (true, Some(following)) => label(Some(following)),
        _ => label(current),
    };
    let body = Bytes::from_owner(sel).slice(..n);
    Transfer::Data(
        TransferHeader {
            size: n as i32,
            offset: next,
            epoch,
            epoch_start,
            confirm_offset,
        },
        body,
    )
}

/// Writes a frame and flushes it (TLS holds what it encrypted until
/// flushed).
async fn send<W: AsyncWrite + Unpin>(
    write: &mut W,
    head: &[u8],
    body: &[u8],
    cancel: &CancellationToken,
) -> Result<(), Ended> {
    let sent = async {
        write.write_all(head).await?;
        write.write_all(body).await?;
        write.flush().await
    };
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(Ended::Stopped),
        r = sent => r.map_err(Ended::Io),
    }
}
