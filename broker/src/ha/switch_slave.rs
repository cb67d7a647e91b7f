//! The slave's side of the auto-switch HA protocol
//! (`docs/controller-facts.md` 8.2, 8.4, 8.5): connect to the master's HA
//! address, send the handshake with this broker's controller id, truncate
//! the local log to the point both logs agree on (the newest epoch both
//! epoch files hold with the same start; none: retry later, overwriting
//! nothing), then follow: every frame's body is appended at its offset, an
//! epoch label not seen before is recorded in the epoch file, the confirm
//! offset becomes the master's (capped by the local end), and the local end
//! is reported after each frame that grew it and every
//! `haSendHeartbeatInterval`.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use rmq_store::{DispatchBound, MessageStore};
use rmq_store_file::epoch_file::consistent_point;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::switch_wire::{MasterFrame, MasterHandshake, SlaveFrame, SwitchWireError};
use super::HaSettings;

/// How long a connect, a TLS handshake, or the master's handshake may take
/// (Java waits 5 s for the master's handshake).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest frame body accepted (Java's read buffer is 4 MiB).
const MAX_BODY: usize = 4 * 1024 * 1024;

/// How a slave follows.
#[derive(Debug, Clone)]
pub struct SwitchSlaveConfig {
    /// This broker's controller id (sent in the handshake).
    pub broker_id: i64,
    /// Timings and sizes.
    pub settings: HaSettings,
    /// `readUnCommitted`: dispatch to the log's end, not the confirm offset.
    pub read_uncommitted: bool,
    /// Wait after a failed connection or when no common epoch was found
    /// (Java: 2 s for the latter, 5 s otherwise).
    pub retry_after: Duration,
    /// TLS to the master (the broker's `tlsEnable`, or enforcing).
    pub tls: Option<rmq_client::TlsClient>,
}

/// What a slave is doing, for tests and status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlaveStatus {
    /// Connections tried.
    pub attempts: u64,
    /// The master streaming to this slave now.
    pub following: Option<String>,
    /// Why the last connection ended.
    pub last_error: Option<String>,
}

/// A running slave link; [`SwitchSlave::stop`] ends it.
#[derive(Debug)]
pub struct SwitchSlave {
    cancel: CancellationToken,
    tracker: TaskTracker,
    status: watch::Receiver<SlaveStatus>,
}

impl SwitchSlave {
    /// Makes `store` a replica and follows the master whose HA address
    /// `master` holds (none: wait for one).
    pub fn start(
        store: Arc<MessageStore>,
        master: watch::Receiver<Option<String>>,
        config: SwitchSlaveConfig,
    ) -> Self {
        store.set_replica_only();
        if !config.read_uncommitted {
            store.set_dispatch_bound(DispatchBound::ConfirmOffset);
        }
        let cancel = CancellationToken::new();
        let tracker = TaskTracker::new();
        let (status_tx, status) = watch::channel(SlaveStatus::default());
        tracker.spawn(follow(store, master, config, status_tx, cancel.clone()));
        Self {
            cancel,
            tracker,
            status,
        }
    }

    /// What the link is doing.
    pub fn status(&self) -> watch::Receiver<SlaveStatus> {
        self.status.clone()
    }

    /// Closes the link and waits for its task.
    pub async fn stop(self) {
        self.cancel.cancel();
        self.tracker.close();
        self.tracker.wait().await;
    }
}

/// Why one connection ended.
#[derive(Debug, thiserror::Error)]
enum Ended {
    #[error("stopped")]
    Stopped,
    #[error("the master's HA address changed")]
    AddressChanged,
    #[error("connection: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Wire(#[from] SwitchWireError),
    #[error("the master sent {0} where {1} was expected")]
    Unexpected(&'static str, &'static str),
    #[error("a frame of {0} bytes")]
    TooLarge(i32),
    #[error("no epoch in common with the master (local {local:?}, master {master:?}); nothing local was overwritten")]
    NoCommonEpoch {
        local: Vec<(i32, i64)>,
        master: Vec<(i32, i64)>,
    },
    #[error("the master sent offset {master} where this log ends at {local}")]
    Diverged { master: i64, local: i64 },
    #[error("{0}")]
    Store(#[from] rmq_store_file::StoreError),
}

async fn follow(
    store: Arc<MessageStore>,
    mut master: watch::Receiver<Option<String>>,
    config: SwitchSlaveConfig,
    status: watch::Sender<SlaveStatus>,
    cancel: CancellationToken,
) {
    loop {
        let addr = master.borrow_and_update().clone();
        let Some(addr) = addr else {
            tokio::select! {
                biased;
                () = cancel.cancelled() => return,
                () = address_changed(&mut master) => {}
            }
            continue;
        };
        status.send_modify(|s| s.attempts += 1);
        let ended = session(&store, &addr, &mut master, &config, &status, &cancel).await;
        status.send_modify(|s| {
            s.following = None;
            s.last_error = Some(ended.to_string());
        });
        match ended {
            Ended::Stopped => return,
            Ended::AddressChanged => continue,
            e @ Ended::NoCommonEpoch { .. } => {
                tracing::error!(master = %addr, error = %e, "cannot follow the master")
            }
            e => tracing::warn!(master = %addr, error = %e, "HA link to the master ended"),
        }
        tokio::select! {
            biased;
            () = cancel.cancelled() => return,
            () = address_changed(&mut master) => {}
            () = tokio::time::sleep(config.retry_after) => {}
        }
    }
}

/// Completes when the address changes; never once no one can change it.
async fn address_changed(master: &mut watch::Receiver<Option<String>>) {
    if master.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
}

async fn session(
    store: &Arc<MessageStore>,
    addr: &str,
    master: &mut watch::Receiver<Option<String>>,
    config: &SwitchSlaveConfig,
    status: &watch::Sender<SlaveStatus>,
    cancel: &CancellationToken,
) -> Ended {
    let timed_out = |what: &str| {
        Ended::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("{what} {addr} took over {HANDSHAKE_TIMEOUT:?}"),
        ))
    };
    let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, TcpStream::connect(addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return e.into(),
        Err(_) => return timed_out("connect to"),
    };
    let _ = stream.set_nodelay(true);
    let link = Link {
        store,
        addr,
        config,
        status,
    };
    let Some(tls) = &config.tls else {
        return link.run(stream.into_split(), master, cancel).await;
    };
    let peer = match stream.peer_addr() {
        Ok(p) => p,
        Err(e) => return e.into(),
    };
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.handshake(stream, peer)).await {
        Ok(Ok(s)) => link.run(tokio::io::split(s), master, cancel).await,
        Ok(Err(e)) => e.into(),
        Err(_) => timed_out("TLS handshake with"),
    }
}

struct Link<'a> {
    store: &'a Arc<MessageStore>,
    addr: &'a str,
    config: &'a SwitchSlaveConfig,
    status: &'a watch::Sender<SlaveStatus>,
}

impl Link<'_> {
    async fn run<R, W>(
        self,
        (mut read, mut write): (R, W),
        master: &mut watch::Receiver<Option<String>>,
        cancel: &CancellationToken,
    ) -> Ended
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let hello = SlaveFrame::Handshake {
            sync_from_last_file: false,
            async_learner: false,
            broker_id: self.config.broker_id,
        };
        if let Err(e) = send(&mut write, &hello.encode()).await {
            return e.into();
        }
        let mut buf = BytesMut::with_capacity(64 * 1024);
        let theirs =
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake(&mut read, &mut buf)).await {
                Ok(Ok(h)) => h,
                Ok(Err(e)) => return e,
                Err(_) => {
                    return Ended::Io(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!(
                            "no handshake from {} within {HANDSHAKE_TIMEOUT:?}",
                            self.addr
                        ),
                    ))
                }
            };
        if let Err(e) = self.truncate(&theirs).await {
            return e;
        }
        let store = self.store;
        let mut reported = store.max_phy_offset();
        if let Err(e) = send(
            &mut write,
            &SlaveFrame::Report { offset: reported }.encode(),
        )
        .await
        {
            return e.into();
        }
        tracing::info!(
            master = self.addr,
            offset = reported,
            "following the master"
        );
        self.status
            .send_modify(|s| s.following = Some(self.addr.to_owned()));
        let settings = self.config.settings;
        let mut heartbeat = tokio::time::interval(settings.heartbeat);
        heartbeat.tick().await;
        let mut last_epoch = -1;
        loop {
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Ended::Stopped,
                () = address_changed(master) => return Ended::AddressChanged,
                _ = heartbeat.tick() => {
                    reported = store.max_phy_offset();
                    if let Err(e) = send(&mut write, &SlaveFrame::Report { offset: reported }.encode()).await {
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
                    if let Err(e) = self.store_frames(&mut buf, &mut last_epoch) {
                        return e;
                    }
                    let end = store.max_phy_offset();
                    if end > reported {
                        reported = end;
                        if let Err(e) = send(&mut write, &SlaveFrame::Report { offset: reported }.encode()).await {
                            return e.into();
                        }
                    }
                }
            }
        }
    }

    /// Cuts the local log to where it agrees with the master's (8.5).
    async fn truncate(&self, theirs: &MasterHandshake) -> Result<(), Ended> {
        let store = self.store;
        let local = store.epoch_pairs();
        if local.is_empty() {
            return Ok(());
        }
        let max = store.max_phy_offset();
        let point =
            consistent_point(&local, max, &theirs.entries, theirs.max_offset).ok_or_else(|| {
                Ended::NoCommonEpoch {
                    local: local.clone(),
                    master: theirs.entries.clone(),
                }
            })?;
        if point < max {
            tracing::warn!(
                master = self.addr,
                point,
                local_end = max,
                "truncating to the last point shared with the master"
            );
            let store = Arc::clone(store);
            tokio::task::spawn_blocking(move || store.truncate_to(point))
                .await
                .map_err(|e| Ended::Io(std::io::Error::other(e)))??;
        }
        Ok(())
    }

    /// Stores every complete frame at the front of `buf` and removes it.
    fn store_frames(&self, buf: &mut BytesMut, last_epoch: &mut i32) -> Result<(), Ended> {
        let store = self.store;
        loop {
            let (header, used) = match MasterFrame::decode(buf)? {
                None => return Ok(()),
                Some((MasterFrame::Handshake(_), _)) => {
                    return Err(Ended::Unexpected("a handshake", "a transfer"))
                }
                Some((MasterFrame::Transfer(h), used)) => (h, used),
            };
            let size = usize::try_from(header.size)
                .ok()
                .filter(|s| *s <= MAX_BODY)
                .ok_or(Ended::TooLarge(header.size))?;
            if buf.len() < used + size {
                buf.reserve(used + size - buf.len());
                return Ok(());
            }
            buf.advance(used);
            let body = buf.split_to(size);
            let local = store.max_phy_offset();
            if local != 0 && local != header.offset {
                return Err(Ended::Diverged {
                    master: header.offset,
                    local,
                });
            }
            if header.epoch != *last_epoch {
                // Refused (false) unless above the last entry, as Java.
                store.append_epoch(header.epoch, header.epoch_start)?;
                *last_epoch = header.epoch;
            }
            if !body.is_empty() || local == 0 {
                store.append_replica(header.offset, &body)?;
            }
            store.set_confirm_offset(header.confirm_offset.min(store.max_phy_offset()));
        }
    }
}

/// Reads the master's handshake.
async fn handshake<R: AsyncRead + Unpin>(
    read: &mut R,
    buf: &mut BytesMut,
) -> Result<MasterHandshake, Ended> {
    loop {
        match MasterFrame::decode(buf)? {
            Some((MasterFrame::Handshake(h), used)) => {
                buf.advance(used);
                return Ok(h);
            }
            Some((MasterFrame::Transfer(_), _)) => {
                return Err(Ended::Unexpected("a transfer", "a handshake"))
            }
            None => {}
        }
        if read.read_buf(buf).await? == 0 {
            return Err(Ended::Io(std::io::ErrorKind::UnexpectedEof.into()));
        }
    }
}

/// Writes one frame and flushes it (TLS holds what it encrypted until
/// flushed).
async fn send<W: AsyncWrite + Unpin>(write: &mut W, frame: &[u8]) -> std::io::Result<()> {
    write.write_all(frame).await?;
    write.flush().await
}
