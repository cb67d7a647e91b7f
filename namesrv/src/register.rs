//! The broker side of the NameServer protocol: register with every
//! NameServer at start, every period (the heartbeat), and at once when the
//! topic table changes; unregister on shutdown.
//!
//! Each NameServer has its own connection, kept open between heartbeats
//! (a NameServer drops a broker's routes as soon as the connection it
//! registered over closes, so a killed broker stops being routed to at
//! once) and reopened after any failure, with a full registration retried
//! 1 s later, then 2 s... up to the period. A failing NameServer is logged
//! once per failure streak (and once when it recovers), not on every
//! heartbeat.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmq_common::message::record::body_crc;
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode, MAX_FRAME_BYTES};
use tokio::sync::{watch, Mutex, Notify};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use rmq_common::remoting::body::{register as register_body, RegisterBrokerBody};

use super::route::BrokerIdentity;
use rmq_client::{ClientError, Connector, RemotingClient};

/// Builds what to register: called afresh for every registration, so a
/// changed topic table goes out with the next one. Bump the body's
/// `dataVersion` when the topics change; the NameServer ignores the topic
/// list of a version it already has.
pub type RegistrationProvider = Arc<dyn Fn() -> (BrokerIdentity, RegisterBrokerBody) + Send + Sync>;

/// Builds the next incremental registration: what changed since the last
/// one was taken.
pub type IncrementProvider = Arc<dyn Fn() -> Increment + Send + Sync>;

/// The topic changes one incremental registration tells (as RocketMQ 4.9's
/// `registerIncrementBrokerData`): a REGISTER_BROKER whose body holds only
/// the changed topics with the table's whole data version, and a
/// DELETE_TOPIC_IN_NAMESRV for each deleted topic.
#[derive(Debug, Clone)]
pub struct Increment {
    /// Who registers.
    pub id: BrokerIdentity,
    /// The changed topics (empty: none).
    pub body: RegisterBrokerBody,
    /// Topics deleted.
    pub deleted: Vec<String>,
    /// Every topic changed: a full registration instead.
    pub full: bool,
}

/// RocketMQ's default registration period (the broker's heartbeat).
pub const DEFAULT_REGISTER_PERIOD: Duration = Duration::from_secs(30);

/// Time allowed to connect to a NameServer and, separately, for it to
/// answer a registration.
pub const REGISTER_TIMEOUT: Duration = Duration::from_secs(6);

/// The first retry of a failed registration comes this long after it; each
/// next one waits twice as long, up to the registration period.
const FIRST_RETRY: Duration = Duration::from_secs(1);

/// Time allowed for the best-effort UNREGISTER_BROKER at shutdown, connect
/// included, per NameServer (all are asked at once).
pub const UNREGISTER_TIMEOUT: Duration = Duration::from_secs(2);

/// A JSON body larger than this goes out compressed even when
/// `compressedRegister` is off: a little over 6,000 topics. A Java
/// NameServer reads both forms.
pub const AUTO_COMPRESS_BYTES: usize = 1024 * 1024;

/// Room left in a frame for the header next to the body.
const HEADER_ROOM: usize = 64 * 1024;

/// How the registration body goes out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BodyForm {
    /// JSON, or compressed once the JSON passes [`AUTO_COMPRESS_BYTES`].
    #[default]
    Auto,
    /// Always compressed (`compressedRegister=true`).
    Compressed,
}

/// What the last registration sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyStats {
    /// Topics in it.
    pub topics: usize,
    /// Bytes of the JSON form.
    pub json_bytes: usize,
    /// Bytes sent (the compressed form if `compressed`).
    pub sent_bytes: usize,
    /// Whether it went out compressed.
    pub compressed: bool,
}

/// Why one NameServer did not take a registration.
#[derive(Debug, thiserror::Error)]
pub enum NameServerError {
    /// Connecting or the call failed (refused, closed, timed out).
    #[error("NameServer {addr}: {source}")]
    Client {
        /// The NameServer.
        addr: SocketAddr,
        /// The client's error.
        #[source]
        source: ClientError,
    },
    /// The TCP connect did not finish in time.
    #[error("NameServer {addr}: no connection within {timeout:?}")]
    ConnectTimeout {
        /// The NameServer.
        addr: SocketAddr,
        /// The time allowed.
        timeout: Duration,
    },
    /// The NameServer answered with an error code.
    #[error("NameServer {addr} refused the request: code {code}, remark {remark:?}")]
    Rejected {
        /// The NameServer.
        addr: SocketAddr,
        /// The response code.
        code: i32,
        /// The response remark.
        remark: String,
    },
}

/// Why [`BrokerRegistrar::register_now`] failed.
#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    /// The body could not be encoded.
    #[error("cannot encode the RegisterBrokerBody: {0}")]
    Encode(String),
    /// Even compressed, the body does not fit in a frame.
    #[error(
        "the RegisterBrokerBody of {topics} topics is {bytes} bytes compressed, over the \
         {limit}-byte frame limit; NameServers cannot learn this broker's topics"
    )]
    TooLarge {
        /// Topics in the body.
        topics: usize,
        /// Compressed size.
        bytes: usize,
        /// Largest body a frame can carry.
        limit: usize,
    },
    /// Some NameServers did not take the registration (the others did).
    #[error("registration failed at {} of {total} NameServers: {}", .failures.len(), describe(.failures))]
    Failed {
        /// One error per failed NameServer.
        failures: Vec<NameServerError>,
        /// NameServers asked.
        total: usize,
    },
    /// The registrar was cancelled.
    #[error("the registrar is stopped")]
    Stopped,
}

impl RegisterError {
    /// Some NameServer refused it for lack of permission (NO_PERMISSION:
    /// ACL on, and the registration unsigned or signed by no admin).
    pub fn refused_by_acl(&self) -> bool {
        let no_permission = rmq_common::remoting::ResponseCode::NoPermission.code();
        matches!(self, Self::Failed { failures, .. }
            if failures.iter().any(|f| matches!(f, NameServerError::Rejected { code, .. } if *code == no_permission)))
    }
}

impl NameServerError {
    /// The NameServer it concerns.
    pub fn addr(&self) -> SocketAddr {
        match self {
            Self::Client { addr, .. }
            | Self::ConnectTimeout { addr, .. }
            | Self::Rejected { addr, .. } => *addr,
        }
    }
}

fn describe(failures: &[NameServerError]) -> String {
    failures
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// One NameServer and the connection to it.
struct Link {
    addr: SocketAddr,
    connector: Connector,
    /// Held across a whole exchange, so registrations to one NameServer
    /// never overtake each other.
    state: Mutex<LinkState>,
}

#[derive(Default)]
struct LinkState {
    client: Option<RemotingClient>,
    /// Set by the first failure of a streak, which is the one logged.
    failing: bool,
}

struct Inner {
    links: Vec<Link>,
    provider: RegistrationProvider,
    increments: Option<IncrementProvider>,
    /// An increment failed somewhere: the next pass registers in full.
    full_due: std::sync::atomic::AtomicBool,
    form: BodyForm,
    last_body: parking_lot::Mutex<Option<BodyStats>>,
    /// Set by [`BrokerRegistrar::halt`]: stop without UNREGISTER_BROKER.
    silent: std::sync::atomic::AtomicBool,
    wake: Notify,
    passes: watch::Sender<u64>,
    /// Passes of the background task begun, and the last one finished
    /// (numbered alike): see [`BrokerRegistrar::sync`].
    begun: std::sync::atomic::AtomicU64,
    finished: watch::Sender<u64>,
    /// The master the answers named last.
    master: watch::Sender<Option<MasterInfo>>,
    cancel: CancellationToken,
}

/// A slave's master as a register answer names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MasterInfo {
    /// Where it takes slaves (`haServerAddr`).
    pub ha_addr: String,
    /// Where it serves requests (`masterAddr`).
    pub broker_addr: String,
}

/// Keeps this broker registered with its NameServers. Cheap to clone; every
/// clone drives the same task.
#[derive(Clone)]
pub struct BrokerRegistrar {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for BrokerRegistrar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrokerRegistrar")
            .field("namesrv_addrs", &self.namesrv_addrs())
            .field("passes", &*self.inner.passes.borrow())
            .finish_non_exhaustive()
    }
}

/// A handle on a [`BrokerRegistrar`] that does not keep it alive: what the
/// broker's shared state holds, since the registrar's own closures hold
/// that state (a strong handle there would be a cycle, and nothing the
/// registrar reaches would ever be dropped).
#[derive(Debug, Clone)]
pub struct WeakRegistrar(std::sync::Weak<Inner>);

impl WeakRegistrar {
    /// [`BrokerRegistrar::sync`]; false once the registrar is gone.
    pub async fn sync(&self, timeout: Duration) -> bool {
        match self.0.upgrade() {
            Some(inner) => BrokerRegistrar { inner }.sync(timeout).await,
            None => false,
        }
    }
}

impl BrokerRegistrar {
    /// A handle that does not keep the registrar alive.
    pub fn downgrade(&self) -> WeakRegistrar {
        WeakRegistrar(Arc::downgrade(&self.inner))
    }

    /// Starts the registration task on `tracker`: it registers with every
    /// address in `namesrv_addrs` at once, then again `period` after each
    /// pass (see [`DEFAULT_REGISTER_PERIOD`]) and at once on each
    /// [`BrokerRegistrar::trigger`], until `cancel`; then it sends
    /// UNREGISTER_BROKER (best effort, [`UNREGISTER_TIMEOUT`]) and stops.
    pub fn start(
        namesrv_addrs: Vec<SocketAddr>,
        provider: RegistrationProvider,
        period: Duration,
        cancel: CancellationToken,
        tracker: &TaskTracker,
    ) -> Self {
        Self::start_with(
            namesrv_addrs,
            provider,
            None,
            period,
            BodyForm::Auto,
            &Connector::new(),
            cancel,
            tracker,
        )
    }

    /// [`BrokerRegistrar::start`] with the body sent in `form`, over
    /// connections `connector` opens (signed when the NameServers check).
    #[allow(clippy::too_many_arguments)]
    pub fn start_with(
        namesrv_addrs: Vec<SocketAddr>,
        provider: RegistrationProvider,
        increments: Option<IncrementProvider>,
        period: Duration,
        form: BodyForm,
        connector: &Connector,
        cancel: CancellationToken,
        tracker: &TaskTracker,
    ) -> Self {
        let links = namesrv_addrs
            .into_iter()
            .map(|addr| Link {
                addr,
                connector: connector.clone(),
                state: Mutex::new(LinkState::default()),
            })
            .collect();
        let inner = Arc::new(Inner {
            links,
            provider,
            increments,
            full_due: std::sync::atomic::AtomicBool::new(false),
            form,
            last_body: parking_lot::Mutex::new(None),
            silent: std::sync::atomic::AtomicBool::new(false),
            wake: Notify::new(),
            passes: watch::channel(0).0,
            begun: std::sync::atomic::AtomicU64::new(0),
            finished: watch::channel(0).0,
            master: watch::channel(None).0,
            cancel,
        });
        tracker.spawn(run(Arc::clone(&inner), period));
        Self { inner }
    }

    /// Asks for a registration now (the topic table changed). Triggers that
    /// arrive during a registration cause one more.
    pub fn trigger(&self) {
        self.inner.wake.notify_one();
    }

    /// Registers once with every NameServer, all at once, and returns when
    /// each has answered or failed. Used at broker start so routes exist
    /// before the broker reports ready.
    pub async fn register_now(&self) -> Result<(), RegisterError> {
        if self.inner.cancel.is_cancelled() {
            return Err(RegisterError::Stopped);
        }
        self.inner.register_all().await
    }

    /// Asks for a registration and waits (at most `timeout`) until a pass
    /// that began after this call has finished, so every topic change made
    /// before the call has reached the NameServers (or failed to: failures
    /// are logged by the pass). As Java's `registerIncrementBrokerData`
    /// after UPDATE_AND_CREATE_TOPIC, whose caller (the 5.x proxy) reads
    /// the route right after the answer. Returns false on a timeout or a
    /// stop.
    pub async fn sync(&self, timeout: Duration) -> bool {
        let target = self.inner.begun.load(std::sync::atomic::Ordering::Acquire) + 1;
        let mut finished = self.inner.finished.subscribe();
        self.trigger();
        tokio::select! {
            biased;
            () = self.inner.cancel.cancelled() => false,
            r = tokio::time::timeout(timeout, finished.wait_for(|n| *n >= target)) => {
                matches!(r, Ok(Ok(_)))
            }
        }
    }

    /// Completed registration passes (background and
    /// [`BrokerRegistrar::register_now`]), failed ones included; for
    /// waiting on a [`BrokerRegistrar::trigger`].
    pub fn passes(&self) -> watch::Receiver<u64> {
        self.inner.passes.subscribe()
    }

    /// This broker's master, as the NameServers' answers name it (slaves
    /// only; `None` until one does).
    pub fn master(&self) -> watch::Receiver<Option<MasterInfo>> {
        self.inner.master.subscribe()
    }

    /// What the last registration sent, once one was built.
    pub fn last_body(&self) -> Option<BodyStats> {
        *self.inner.last_body.lock()
    }

    /// Makes the coming stop (cancellation) skip UNREGISTER_BROKER, as a
    /// killed broker would: its connections just close, so a NameServer
    /// drops it then (RocketMQ's do, and ours), or when it expires.
    pub fn halt(&self) {
        self.inner
            .silent
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// The NameServers.
    pub fn namesrv_addrs(&self) -> Vec<SocketAddr> {
        self.inner.links.iter().map(|l| l.addr).collect()
    }
}

async fn run(inner: Arc<Inner>, period: Duration) {
    let cancel = inner.cancel.clone();
    // A full registration at once and every period; in between, a wake-up
    // sends what changed (or a full one without an increment provider).
    let mut full_at = tokio::time::Instant::now();
    let mut retry = FIRST_RETRY.min(period);
    loop {
        let now = tokio::time::Instant::now();
        let full = now >= full_at
            || inner.increments.is_none()
            || inner
                .full_due
                .swap(false, std::sync::atomic::Ordering::AcqRel);
        if full {
            full_at = now + period;
        }
        // Numbered before the pass takes the changes it sends.
        let pass = inner
            .begun
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel)
            + 1;
        let failed = tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            result = inner.register(full) => match result {
                Ok(()) | Err(RegisterError::Stopped) => false,
                // Per-NameServer failures were logged by their links.
                Err(RegisterError::Failed { .. }) => true,
                Err(e) => {
                    tracing::error!(error = %e, "cannot build the broker registration");
                    false
                }
            },
        };
        // A NameServer that lost this broker (it restarted, or the
        // connection broke and it dropped the routes with it) hears again
        // soon, not a whole period later: a full registration after 1 s,
        // then 2 s, 4 s... up to the period while it keeps failing.
        if failed {
            full_at = full_at.min(tokio::time::Instant::now() + retry);
            retry = retry.saturating_mul(2).min(period);
        } else {
            retry = FIRST_RETRY;
        }
        inner.finished.send_replace(pass);
        tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            () = inner.wake.notified() => {}
            () = tokio::time::sleep_until(full_at) => {}
        }
    }
    if inner.silent.load(std::sync::atomic::Ordering::Acquire) {
        // As the system closes a killed process's sockets: a NameServer
        // that watches the connection drops this broker at once.
        inner.close_all().await;
        tracing::debug!("broker registrar halted without unregistering");
        return;
    }
    inner.unregister_all().await;
    tracing::debug!("broker registrar stopped");
}

impl Inner {
    async fn register(&self, full: bool) -> Result<(), RegisterError> {
        if full {
            return self.register_all().await;
        }
        let result = self.register_increment().await;
        self.passes.send_modify(|n| *n += 1);
        result
    }

    /// Sends what changed since the last increment: the changed topics in
    /// one REGISTER_BROKER, each deleted topic in a DELETE_TOPIC_IN_NAMESRV.
    /// A NameServer that missed part of it gets everything at the next
    /// pass, which is then a full registration.
    async fn register_increment(&self) -> Result<(), RegisterError> {
        let Some(provider) = &self.increments else {
            return self.register_all_once().await;
        };
        // It may wait for the changes to reach the disk: off the async
        // threads.
        let provider = Arc::clone(provider);
        let inc = tokio::task::spawn_blocking(move || provider())
            .await
            .map_err(|e| RegisterError::Encode(format!("increment task failed: {e}")))?;
        if inc.full {
            let result = self.register_all_once().await;
            self.delete_topics(&inc.id, &inc.deleted).await;
            return result;
        }
        let mut failures: Vec<NameServerError> = Vec::new();
        if !inc
            .body
            .topic_config_serialize_wrapper
            .topic_config_table
            .is_empty()
        {
            let (bytes, stats) = encode_body(&inc.body, BodyForm::Auto)?;
            let req = register_request(&inc.id, bytes, stats.compressed);
            let calls = self.links.iter().map(|link| link.register(req.clone()));
            for result in futures::future::join_all(calls).await {
                if let Err(e) = result {
                    failures.push(e);
                }
            }
        }
        if !self.delete_topics(&inc.id, &inc.deleted).await {
            self.full_due
                .store(true, std::sync::atomic::Ordering::Release);
        }
        if failures.is_empty() {
            Ok(())
        } else {
            self.full_due
                .store(true, std::sync::atomic::Ordering::Release);
            self.wake.notify_one();
            Err(RegisterError::Failed {
                failures,
                total: self.links.len(),
            })
        }
    }

    /// Tells every NameServer that this broker deleted `topics` (naming the
    /// broker, so the topic's other brokers keep their queues). Returns
    /// whether every NameServer took every one.
    async fn delete_topics(&self, id: &BrokerIdentity, topics: &[String]) -> bool {
        let mut all = true;
        for topic in topics {
            let mut req = RemotingCommand::request(RequestCode::DeleteTopicInNamesrv);
            req.put_ext("topic", topic);
            req.put_ext("clusterName", &id.cluster);
            req.put_ext("brokerName", &id.broker_name);
            let calls = self.links.iter().map(|link| link.delete_topic(req.clone()));
            for (link, result) in self
                .links
                .iter()
                .zip(futures::future::join_all(calls).await)
            {
                if let Err(e) = result {
                    all = false;
                    tracing::warn!(namesrv = %link.addr, topic, error = %e, "cannot tell a NameServer of a deleted topic; its route stays until this broker unregisters or expires");
                }
            }
        }
        all
    }

    async fn register_all(&self) -> Result<(), RegisterError> {
        let result = self.register_all_once().await;
        self.passes.send_modify(|n| *n += 1);
        result
    }

    async fn register_all_once(&self) -> Result<(), RegisterError> {
        // Building and compressing tens of thousands of topics takes
        // milliseconds: off the async threads.
        let (provider, form) = (Arc::clone(&self.provider), self.form);
        let (id, parts) = tokio::task::spawn_blocking(move || {
            let (id, body) = provider();
            encode_parts(&body, form, MAX_FRAME_BYTES - HEADER_ROOM).map(|parts| (id, parts))
        })
        .await
        .map_err(|e| RegisterError::Encode(format!("encoding task failed: {e}")))??;
        let stats = BodyStats {
            topics: parts.iter().map(|(_, s)| s.topics).sum(),
            json_bytes: parts.iter().map(|(_, s)| s.json_bytes).sum(),
            sent_bytes: parts.iter().map(|(_, s)| s.sent_bytes).sum(),
            compressed: parts.iter().any(|(_, s)| s.compressed),
        };
        let previous = self.last_body.lock().replace(stats);
        if stats.compressed && previous.is_none_or(|p| !p.compressed) {
            tracing::info!(
                topics = stats.topics,
                json_bytes = stats.json_bytes,
                sent_bytes = stats.sent_bytes,
                parts = parts.len(),
                "registering with a compressed body"
            );
        }
        let mut failures: Vec<NameServerError> = Vec::new();
        let mut master = None;
        for (body, part) in parts {
            let req = register_request(&id, body, part.compressed);
            let calls = self.links.iter().map(|link| link.register(req.clone()));
            for result in futures::future::join_all(calls).await {
                match result {
                    Ok(addr) => master = master.or(addr),
                    // One failure per NameServer, whatever the parts.
                    Err(e) if !failures.iter().any(|f| f.addr() == e.addr()) => failures.push(e),
                    Err(_) => {}
                }
            }
        }
        // As Java: the master from the answers (kept when no answer names
        // one, as a master that is down names none).
        if let Some(info) = master {
            self.master.send_if_modified(|old| {
                let changed = old.as_ref() != Some(&info);
                if changed {
                    tracing::info!(master = %info.broker_addr, master_ha = %info.ha_addr, "the NameServer names this broker's master");
                    *old = Some(info.clone());
                }
                changed
            });
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(RegisterError::Failed {
                failures,
                total: self.links.len(),
            })
        }
    }

    /// Closes every NameServer connection, saying nothing.
    async fn close_all(&self) {
        for link in &self.links {
            if let Some(client) = link.state.lock().await.client.take() {
                client.close().await;
            }
        }
    }

    async fn unregister_all(&self) {
        let provider = Arc::clone(&self.provider);
        let Ok((id, _)) = tokio::task::spawn_blocking(move || provider()).await else {
            tracing::warn!("cannot build the broker's identity to unregister");
            return;
        };
        let mut req = RemotingCommand::request(RequestCode::UnregisterBroker);
        put_identity(&mut req, &id);
        let calls = self.links.iter().map(|link| link.unregister(req.clone()));
        futures::future::join_all(calls).await;
    }
}

/// The body in `form`, and what it holds; compressed past
/// [`AUTO_COMPRESS_BYTES`] whatever the form, refused past the frame limit.
pub fn encode_body(
    body: &RegisterBrokerBody,
    form: BodyForm,
) -> Result<(Vec<u8>, BodyStats), RegisterError> {
    encode_within(body, form, MAX_FRAME_BYTES - HEADER_ROOM)
}

/// The body as one or more bodies of at most `limit` bytes as sent: a
/// table too large for one frame even compressed is split in halves until
/// every part fits (as RocketMQ 5.x's `enableSplitRegistration` splits a
/// registration). Every part carries the table's whole data version; the
/// NameServer adds each part's topics (see
/// [`RouteInfoManager::register`](super::RouteInfoManager::register)).
pub fn encode_parts(
    body: &RegisterBrokerBody,
    form: BodyForm,
    limit: usize,
) -> Result<Vec<(Vec<u8>, BodyStats)>, RegisterError> {
    match encode_within(body, form, limit) {
        Ok(part) => Ok(vec![part]),
        Err(RegisterError::TooLarge { topics, .. }) if topics > 1 => {
            let table = &body.topic_config_serialize_wrapper.topic_config_table;
            let mut first = table.clone();
            let Some(middle) = table.keys().nth(topics / 2).cloned() else {
                return Err(RegisterError::Encode("cannot split the topic table".into()));
            };
            let second = first.split_off(&middle);
            let half = |t| RegisterBrokerBody {
                topic_config_serialize_wrapper:
                    rmq_common::remoting::body::TopicConfigSerializeWrapper {
                        topic_config_table: t,
                        data_version: body.topic_config_serialize_wrapper.data_version.clone(),
                    },
                filter_server_list: body.filter_server_list.clone(),
            };
            let mut parts = encode_parts(&half(first), form, limit)?;
            parts.extend(encode_parts(&half(second), form, limit)?);
            Ok(parts)
        }
        Err(e) => Err(e),
    }
}

fn encode_within(
    body: &RegisterBrokerBody,
    form: BodyForm,
    limit: usize,
) -> Result<(Vec<u8>, BodyStats), RegisterError> {
    let json =
        register_body::encode_json(body).map_err(|e| RegisterError::Encode(e.to_string()))?;
    let topics = body.topic_config_serialize_wrapper.topic_config_table.len();
    let mut stats = BodyStats {
        topics,
        json_bytes: json.len(),
        sent_bytes: json.len(),
        compressed: false,
    };
    if form == BodyForm::Auto && json.len() <= limit.min(AUTO_COMPRESS_BYTES) {
        return Ok((json, stats));
    }
    let z =
        register_body::encode_compressed(body).map_err(|e| RegisterError::Encode(e.to_string()))?;
    if z.len() > limit {
        return Err(RegisterError::TooLarge {
            topics,
            bytes: z.len(),
            limit,
        });
    }
    stats.sent_bytes = z.len();
    stats.compressed = true;
    Ok((z, stats))
}

/// The REGISTER_BROKER request for `id` carrying `body`, already encoded
/// (compressed or not, as `compressed` says; see [`encode_body`]).
pub fn register_request(id: &BrokerIdentity, body: Vec<u8>, compressed: bool) -> RemotingCommand {
    let mut req = RemotingCommand::request(RequestCode::RegisterBroker);
    put_identity(&mut req, id);
    // Not-null in Java: blank for a broker that takes no slaves.
    req.put_ext("haServerAddr", &id.ha_server_addr);
    req.put_ext("compressed", compressed);
    req.put_ext("bodyCrc32", body_crc(&body));
    req.with_body(body)
}

fn put_identity(req: &mut RemotingCommand, id: &BrokerIdentity) {
    req.put_ext("brokerName", &id.broker_name);
    req.put_ext("brokerAddr", &id.broker_addr);
    req.put_ext("clusterName", &id.cluster);
    req.put_ext("brokerId", id.broker_id);
}

impl Link {
    /// Registers; returns the master the answer names (a slave's
    /// registration, once its master registered), if any.
    async fn register(&self, req: RemotingCommand) -> Result<Option<MasterInfo>, NameServerError> {
        let mut state = self.state.lock().await;
        let result = self.call(&mut state, req, REGISTER_TIMEOUT).await;
        match &result {
            Ok(_) if state.failing => {
                state.failing = false;
                tracing::info!(namesrv = %self.addr, "registration with NameServer works again");
            }
            Ok(_) => tracing::trace!(namesrv = %self.addr, "registered with NameServer"),
            Err(e) if !state.failing => {
                state.failing = true;
                tracing::warn!(
                    namesrv = %self.addr,
                    error = %e,
                    "registration with NameServer failed; retrying, 1 s first and up to the \
                     heartbeat period apart (not logged again until it works)"
                );
            }
            Err(e) => {
                tracing::debug!(namesrv = %self.addr, error = %e, "registration still failing")
            }
        }
        result.map(|resp| {
            let ext = resp.ext();
            let field = |k| {
                ext.get_str(k)
                    .map(str::trim)
                    .filter(|a| !a.is_empty())
                    .map(str::to_owned)
            };
            Some(MasterInfo {
                ha_addr: field("haServerAddr")?,
                broker_addr: field("masterAddr")?,
            })
        })
    }

    /// Best effort, bounded by [`UNREGISTER_TIMEOUT`]; closes the connection.
    async fn delete_topic(&self, req: RemotingCommand) -> Result<(), NameServerError> {
        let mut state = self.state.lock().await;
        self.call(&mut state, req, REGISTER_TIMEOUT)
            .await
            .map(|_| ())
    }

    async fn unregister(&self, req: RemotingCommand) {
        let exchange = async {
            let mut state = self.state.lock().await;
            let result = self.call(&mut state, req, UNREGISTER_TIMEOUT).await;
            if let Some(client) = state.client.take() {
                client.close().await;
            }
            result
        };
        match tokio::time::timeout(UNREGISTER_TIMEOUT, exchange).await {
            Ok(Ok(_)) => tracing::info!(namesrv = %self.addr, "unregistered from NameServer"),
            Ok(Err(e)) => tracing::info!(namesrv = %self.addr, error = %e, "unregister failed"),
            Err(_) => tracing::info!(
                namesrv = %self.addr,
                timeout = ?UNREGISTER_TIMEOUT,
                "unregister did not finish in time"
            ),
        }
    }

    /// One request over the link's connection, opened first if needed; a
    /// failed call drops the connection so the next one reconnects.
    async fn call(
        &self,
        state: &mut LinkState,
        req: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, NameServerError> {
        let client = match state.client.take() {
            Some(client) if !client.is_closed() => client,
            stale => {
                if let Some(client) = stale {
                    client.close().await;
                }
                self.connect(timeout).await?
            }
        };
        let resp = match client.invoke(req, timeout).await {
            Ok(resp) => resp,
            Err(source) => {
                client.close().await;
                return Err(NameServerError::Client {
                    addr: self.addr,
                    source,
                });
            }
        };
        state.client = Some(client);
        if resp.code == ResponseCode::Success.code() {
            Ok(resp)
        } else {
            Err(NameServerError::Rejected {
                addr: self.addr,
                code: resp.code,
                remark: resp.remark.unwrap_or_default(),
            })
        }
    }

    async fn connect(&self, timeout: Duration) -> Result<RemotingClient, NameServerError> {
        match tokio::time::timeout(timeout, self.connector.connect(self.addr)).await {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(source)) => Err(NameServerError::Client {
                addr: self.addr,
                source,
            }),
            Err(_) => Err(NameServerError::ConnectTimeout {
                addr: self.addr,
                timeout,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use rmq_common::remoting::body::{DataVersion, TopicConfig, TopicConfigSerializeWrapper};

    #[test]
    fn a_table_too_large_for_one_frame_goes_in_parts_that_each_fit() {
        // Names that do not compress well, so a small limit splits them.
        let table = (0..3000u64)
            .map(|i| {
                let name = format!("T{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
                (name.clone(), TopicConfig::new(&name, 4))
            })
            .collect();
        let version = DataVersion {
            timestamp: 7,
            counter: 42,
            state_version: 0,
        };
        let body = RegisterBrokerBody {
            topic_config_serialize_wrapper: TopicConfigSerializeWrapper {
                topic_config_table: table,
                data_version: version.clone(),
            },
            filter_server_list: Vec::new(),
        };
        let limit = 8 * 1024;
        let parts = encode_parts(&body, BodyForm::Auto, limit).unwrap();
        assert!(parts.len() > 1, "{} part(s)", parts.len());
        let mut seen = std::collections::BTreeMap::new();
        for (bytes, stats) in &parts {
            assert!(bytes.len() <= limit && stats.compressed);
            let part = register_body::decode(bytes, true).unwrap();
            assert_eq!(part.topic_config_serialize_wrapper.data_version, version);
            seen.extend(part.topic_config_serialize_wrapper.topic_config_table);
        }
        assert_eq!(
            seen.keys().collect::<Vec<_>>(),
            body.topic_config_serialize_wrapper
                .topic_config_table
                .keys()
                .collect::<Vec<_>>()
        );
        // One frame is enough: one part, as before.
        assert_eq!(
            encode_parts(&body, BodyForm::Auto, MAX_FRAME_BYTES)
                .unwrap()
                .len(),
            1
        );
        // A single topic over the limit cannot be split: refused by name.
        let one = RegisterBrokerBody {
            topic_config_serialize_wrapper: TopicConfigSerializeWrapper {
                topic_config_table: [("T".to_owned(), TopicConfig::new("T", 4))].into(),
                data_version: version,
            },
            filter_server_list: Vec::new(),
        };
        assert!(matches!(
            encode_parts(&one, BodyForm::Auto, 8),
            Err(RegisterError::TooLarge { topics: 1, .. })
        ));
    }
}
