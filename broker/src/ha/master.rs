//! The master's side: slaves connect to `haListenPort`; each connection
//! reads the slave's reports (acknowledgements for SYNC_MASTER) and streams
//! the CommitLog to it from where it asked (an empty slave: from the start
//! of the master's last segment, as RocketMQ does), in frames of at most
//! `haTransferBatchSize` bytes, with an empty frame after
//! `haSendHeartbeatInterval` of silence. A slave silent for
//! `haHousekeepingInterval` is dropped.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::acks::ReplicaAcks;
use super::wire::{last_report, FrameHeader};
use super::HaSettings;
use rmq_store::MessageStore;

/// Longest wait for new CommitLog data before looking again (a put also
/// wakes the writers at once).
const IDLE_POLL: Duration = Duration::from_millis(100);
/// Bytes of slave reports read at a time.
const READ_BUF: usize = 64 * 1024;

/// What every slave connection shares.
#[derive(Debug, Clone)]
pub struct MasterShared {
    /// The store streamed from.
    pub store: Arc<MessageStore>,
    /// Where acknowledgements go.
    pub acks: Arc<ReplicaAcks>,
    /// Woken when the CommitLog grows.
    pub appended: Arc<Notify>,
    /// Timings and sizes.
    pub settings: HaSettings,
    /// TLS on the port, as on the broker's (`None`: plain only).
    pub tls: Option<Arc<rmq_remoting::tls::TlsServer>>,
}

/// Accepts slaves on `listener` until `cancel`, each connection tracked by
/// `tracker`.
pub async fn serve(
    listener: TcpListener,
    shared: MasterShared,
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
                tracing::info!(%peer, "slave connected");
                tracker.spawn(connection(
                    stream,
                    peer,
                    shared.clone(),
                    cancel.child_token(),
                ));
            }
            Err(e) => {
                tracing::warn!(error = %e, "HA accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// One slave, over TLS when the port says so.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    shared: MasterShared,
    cancel: CancellationToken,
) {
    use rmq_remoting::tls::Accepted;
    let Some(tls) = shared.tls.clone() else {
        return stream_to(stream.into_split(), peer, shared, cancel).await;
    };
    let accepted = tokio::select! {
        biased;
        () = cancel.cancelled() => return,
        a = tls.accept(stream, peer) => a,
    };
    match accepted {
        Ok(Accepted::Plain(stream)) => stream_to(stream.into_split(), peer, shared, cancel).await,
        Ok(Accepted::Tls(stream)) => {
            stream_to(tokio::io::split(*stream), peer, shared, cancel).await;
        }
        Err(why) => {
            tracing::warn!(%peer, reason = %why, "slave connection closed before its first report")
        }
    }
}

/// One slave: its reports read on one task, the stream written on this one.
async fn stream_to<R, W>(
    (read, write): (R, W),
    peer: SocketAddr,
    shared: MasterShared,
    cancel: CancellationToken,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let slave = peer.to_string();
    shared.acks.slave_connected(&slave);
    let (first_tx, first_rx) = watch::channel(None);
    let reader = tokio::spawn(read_reports(
        read,
        peer,
        shared.clone(),
        first_tx,
        cancel.clone(),
    ));
    let why = write_stream(write, peer, &shared, first_rx, &cancel).await;
    cancel.cancel();
    let _ = reader.await;
    shared.acks.slave_gone(&slave);
    tracing::info!(%peer, why, "slave connection closed");
}

/// Reads the slave's reports: the first says where to start, every one
/// acknowledges what the slave has.
async fn read_reports<R: AsyncRead + Unpin>(
    mut read: R,
    peer: SocketAddr,
    shared: MasterShared,
    first: watch::Sender<Option<i64>>,
    cancel: CancellationToken,
) {
    let slave = peer.to_string();
    let mut buf = Vec::with_capacity(READ_BUF);
    let mut chunk = vec![0u8; READ_BUF];
    let housekeeping = shared.settings.housekeeping;
    let mut started = false;
    loop {
        let n = tokio::select! {
            biased;
            () = cancel.cancelled() => return,
            r = tokio::time::timeout(housekeeping, read.read(&mut chunk)) => match r {
                Err(_) => {
                    tracing::warn!(%peer, ?housekeeping, "ha housekeeping: no report from the slave; dropping it");
                    break;
                }
                Ok(Ok(0)) | Ok(Err(_)) => break,
                Ok(Ok(n)) => n,
            },
        };
        buf.extend_from_slice(&chunk[..n]);
        let Some((offset, used)) = last_report(&buf) else {
            continue;
        };
        buf.drain(..used);
        // A slave never holds more than was streamed to it: a log ending
        // past ours diverged (another broker's, or ours lost its tail).
        // Java acknowledges it blindly; here it is refused, never counted.
        // A slave of this broker cuts its log back to what it shares with
        // its master before it connects (`heal`); a slave ending inside one
        // of our records is taken, as a transfer stops anywhere.
        let local = shared.store.max_phy_offset();
        if offset > local {
            tracing::error!(
                %peer,
                slave_end = offset,
                master_end = local,
                "the slave's CommitLog ends past this master's: the two logs diverged; \
                 refusing it (empty its store, or let it cut its log back, to make it follow)"
            );
            break;
        }
        if !started {
            started = true;
            tracing::info!(%peer, offset, "slave requests offset");
            let _ = first.send(Some(offset));
        }
        shared.acks.ack(&slave, offset);
    }
    cancel.cancel();
}

/// Streams the CommitLog to the slave; returns why it stopped.
async fn write_stream<W: AsyncWrite + Unpin>(
    mut write: W,
    peer: SocketAddr,
    shared: &MasterShared,
    mut first: watch::Receiver<Option<i64>>,
    cancel: &CancellationToken,
) -> &'static str {
    let requested = loop {
        if let Some(o) = *first.borrow_and_update() {
            break o;
        }
        tokio::select! {
            biased;
            () = cancel.cancelled() => return "closed before the slave's first report",
            r = first.changed() => if r.is_err() { return "reader ended" },
        }
    };
    let log = shared.store.commit_log();
    let mut next = if requested == 0 {
        let max = log.max_offset();
        max - max.rem_euclid(log.segment_size() as i64)
    } else {
        requested
    };
    tracing::info!(%peer, from = next, requested, "streaming the CommitLog to the slave");
    let settings = shared.settings;
    let mut last_write = Instant::now();
    loop {
        let notified = shared.appended.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let chunk = log.select_from(next).filter(|s| !s.bytes().is_empty());
        let frame = match chunk {
            Some(sel) => {
                let n = sel.bytes().len().min(settings.batch_bytes);
                let body = Bytes::from_owner(sel).slice(..n);
                let header = FrameHeader {
                    offset: next,
                    size: n as i32,
                };
                next += n as i64;
                Some((header, body))
            }
            None if last_write.elapsed() >= settings.heartbeat => Some((
                FrameHeader {
                    offset: next,
                    size: 0,
                },
                Bytes::new(),
            )),
            None if next < log.min_offset() => {
                tracing::error!(
                    %peer,
                    next,
                    min = log.min_offset(),
                    "the slave needs CommitLog data this master no longer has; it must be \
                     rebuilt from an empty store"
                );
                return "slave behind the retained CommitLog";
            }
            None => None,
        };
        if let Some((header, body)) = frame {
            let n = body.len() as u64;
            let sent = async {
                write.write_all(&header.encode()).await?;
                write.write_all(&body).await?;
                // TLS holds what it encrypted until flushed.
                write.flush().await
            };
            tokio::select! {
                biased;
                () = cancel.cancelled() => return "stopped",
                r = sent => if r.is_err() { return "write failed" },
            }
            metrics::counter!(
                crate::metrics::names::HA_SENT_BYTES_TOTAL,
                shared.store.metrics().labels().to_vec()
            )
            .increment(n);
            last_write = Instant::now();
            continue;
        }
        tokio::select! {
            biased;
            () = cancel.cancelled() => return "stopped",
            () = notified => {}
            () = tokio::time::sleep(IDLE_POLL) => {}
        }
    }
}
