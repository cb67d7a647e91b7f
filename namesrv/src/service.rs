//! The NameServer service: the remoting server over [`NameServerHandler`]
//! and the scan that drops brokers which stopped heart-beating.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmq_common::time::Clock;
use tokio::net::TcpListener;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use futures::future::BoxFuture;
use rmq_common::remoting::{RemotingCommand, RequestCode};
use tokio::sync::Semaphore;

use super::config::{NamesrvConfig, NamesrvOptions};
use super::kv::KvConfig;
use super::processor::NameServerHandler;
use super::route::RouteInfoManager;
use rmq_common::meta_file::MetaError;
use rmq_remoting::{serve_tls, Connection, RequestHandler, ServerOptions};

/// How often the expiry scan runs.
pub const SCAN_INTERVAL: Duration = Duration::from_secs(10);

/// The NameServer's state: route tables, handler and clock.
#[derive(Debug)]
pub struct NameServer {
    handler: Arc<NameServerHandler>,
    clock: Arc<dyn Clock>,
}

impl NameServer {
    /// Empty route tables and the KV table and settings `options` keeps;
    /// `clock` stamps heartbeats and drives expiry. Fails if a kept file is
    /// not what it should be (it is left as it is).
    pub fn new(clock: Arc<dyn Clock>, options: &NamesrvOptions) -> Result<Self, MetaError> {
        let routes = Arc::new(RouteInfoManager::new());
        let kv = KvConfig::open(options.kv_config_path().as_deref())?;
        let config = NamesrvConfig::open(options);
        Ok(Self {
            handler: Arc::new(
                NameServerHandler::with_state(routes, Arc::clone(&clock), kv, config)
                    .with_acl(options.acl.clone()),
            ),
            clock,
        })
    }

    /// Serves NameServer requests on `listener` and runs the expiry scan
    /// every [`SCAN_INTERVAL`], both until `cancel`, both tracked by
    /// `tracker`. Fails only if the listener has no local address.
    pub async fn start(
        listener: TcpListener,
        clock: Arc<dyn Clock>,
        options: &NamesrvOptions,
        cancel: CancellationToken,
        tracker: TaskTracker,
    ) -> io::Result<NameServerHandle> {
        let addr = listener.local_addr()?;
        let server = Arc::new(Self::new(clock, options).map_err(io::Error::other)?);
        server.handler.config().set_listen_port(addr.port());
        tracker.spawn(serve_tls(
            listener,
            Arc::new(OneRegistrationAtATime::new(Arc::clone(&server.handler))),
            ServerOptions::default(),
            options.tls.clone(),
            cancel.clone(),
            tracker.clone(),
        ));
        tracker.spawn(scan_loop(Arc::clone(&server), cancel));
        tracing::info!(%addr, "NameServer listening");
        Ok(NameServerHandle { addr, server })
    }

    /// The route tables.
    pub fn routes(&self) -> &Arc<RouteInfoManager> {
        self.handler.routes()
    }

    /// The request handler.
    pub fn handler(&self) -> &Arc<NameServerHandler> {
        &self.handler
    }

    /// One expiry pass: drops every broker address not heard from for
    /// the expiry; returns the dropped addresses.
    pub fn scan_once(&self) -> Vec<String> {
        let expiry_ms = self.handler.config().expiry_ms();
        let dropped = self.routes().expire(self.clock.now_ms(), expiry_ms);
        for addr in &dropped {
            tracing::warn!(
                broker_addr = %addr,
                expiry_ms,
                "broker expired: no registration within the expiry; dropped from routes"
            );
        }
        self.handler.forget(&dropped);
        dropped
    }
}

/// Lets one REGISTER_BROKER be handled at a time: each may inflate a
/// compressed body of up to `MAX_INFLATED_BYTES` (64 MiB) and parse it
/// into topic tables, so concurrent ones (a broker fleet restarting, or a
/// hostile client) would multiply that. Registrations are rare (every 30 s
/// per broker); waiting ones hold no thread, only their received frame.
#[derive(Debug)]
struct OneRegistrationAtATime<H> {
    inner: Arc<H>,
    registering: Arc<Semaphore>,
}

impl<H> OneRegistrationAtATime<H> {
    fn new(inner: Arc<H>) -> Self {
        Self {
            inner,
            registering: Arc::new(Semaphore::new(1)),
        }
    }
}

impl<H: RequestHandler> RequestHandler for OneRegistrationAtATime<H> {
    fn handle(
        self: Arc<Self>,
        conn: Arc<Connection>,
        req: RemotingCommand,
    ) -> BoxFuture<'static, Option<RemotingCommand>> {
        if req.code != RequestCode::RegisterBroker.code() {
            return Arc::clone(&self.inner).handle(conn, req);
        }
        Box::pin(async move {
            // Never closed, so acquiring only fails if that changes.
            let _turn = Arc::clone(&self.registering).acquire_owned().await.ok()?;
            Arc::clone(&self.inner).handle(conn, req).await
        })
    }

    fn response(&self, conn: &Arc<Connection>, resp: RemotingCommand) {
        self.inner.response(conn, resp);
    }

    fn connection_opened(&self, conn: &Arc<Connection>) {
        self.inner.connection_opened(conn);
    }

    fn connection_closed(&self, conn: &Arc<Connection>) {
        self.inner.connection_closed(conn);
    }
}

async fn scan_loop(server: Arc<NameServer>, cancel: CancellationToken) {
    let mut tick = tokio::time::interval(SCAN_INTERVAL);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // The first tick is immediate; nothing can have expired yet.
    tick.tick().await;
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            _ = tick.tick() => {
                server.scan_once();
            }
        }
    }
    tracing::debug!("NameServer expiry scan stopped");
}

/// A running NameServer.
#[derive(Debug, Clone)]
pub struct NameServerHandle {
    /// The address it listens on.
    pub addr: SocketAddr,
    server: Arc<NameServer>,
}

impl NameServerHandle {
    /// The route tables.
    pub fn routes(&self) -> &Arc<RouteInfoManager> {
        self.server.routes()
    }

    /// Runs one expiry pass now (see [`NameServer::scan_once`]).
    pub fn scan_once(&self) -> Vec<String> {
        self.server.scan_once()
    }

    /// The NameServer's state.
    pub fn server(&self) -> &Arc<NameServer> {
        &self.server
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use rmq_client::RemotingClient;
    use rmq_common::remoting::ResponseCode;
    use tokio::sync::Notify;

    use super::*;

    /// Bound for anything expected to happen.
    const CALL_TIMEOUT: Duration = Duration::from_secs(5);

    /// Holds registrations until the gate opens; counts those inside.
    #[derive(Debug)]
    struct Held {
        inside: AtomicUsize,
        arrived: AtomicUsize,
        changed: Notify,
        gate: Semaphore,
    }

    impl Default for Held {
        fn default() -> Self {
            Self {
                inside: AtomicUsize::new(0),
                arrived: AtomicUsize::new(0),
                changed: Notify::new(),
                gate: Semaphore::new(0),
            }
        }
    }

    impl RequestHandler for Held {
        fn handle(
            self: Arc<Self>,
            _conn: Arc<Connection>,
            req: RemotingCommand,
        ) -> BoxFuture<'static, Option<RemotingCommand>> {
            Box::pin(async move {
                if req.code == RequestCode::RegisterBroker.code() {
                    self.inside.fetch_add(1, Ordering::SeqCst);
                    self.arrived.fetch_add(1, Ordering::SeqCst);
                    self.changed.notify_waiters();
                    self.gate.acquire().await.ok()?.forget();
                    self.inside.fetch_sub(1, Ordering::SeqCst);
                }
                Some(RemotingCommand::response_to(
                    &req,
                    ResponseCode::Success,
                    None,
                ))
            })
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn registrations_are_handled_one_at_a_time_and_lookups_go_on() {
        const REGISTRATIONS: usize = 4;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let held = Arc::new(Held::default());
        let (cancel, tracker) = (CancellationToken::new(), TaskTracker::new());
        tokio::spawn(rmq_remoting::serve(
            listener,
            Arc::new(OneRegistrationAtATime::new(Arc::clone(&held))),
            ServerOptions::default(),
            cancel.clone(),
            tracker,
        ));
        let client = Arc::new(RemotingClient::connect(addr).await.unwrap());
        let mut calls = Vec::new();
        for _ in 0..REGISTRATIONS {
            let c = Arc::clone(&client);
            calls.push(tokio::spawn(async move {
                let req = RemotingCommand::request(RequestCode::RegisterBroker);
                c.invoke(req, CALL_TIMEOUT * 4).await
            }));
        }
        for k in 1..=REGISTRATIONS {
            tokio::time::timeout(CALL_TIMEOUT, async {
                loop {
                    let changed = held.changed.notified();
                    if held.arrived.load(Ordering::SeqCst) >= k {
                        break;
                    }
                    changed.await;
                }
            })
            .await
            .unwrap();
            assert_eq!(held.inside.load(Ordering::SeqCst), 1, "registration {k}");
            if k == 1 {
                // Other requests are not held behind a registration.
                let lookup = RemotingCommand::request(RequestCode::GetRouteInfoByTopic);
                let resp = client.invoke(lookup, CALL_TIMEOUT).await.unwrap();
                assert_eq!(resp.code, i32::from(ResponseCode::Success));
            }
            held.gate.add_permits(1);
        }
        for c in calls {
            assert_eq!(
                c.await.unwrap().unwrap().code,
                i32::from(ResponseCode::Success)
            );
        }
        cancel.cancel();
    }
}
