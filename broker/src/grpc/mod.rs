//! RocketMQ 5.x's gRPC API (`apache.rocketmq.v2.MessagingService`, the
//! protocol of every 5.x SDK) served by the broker itself on
//! `grpcServerPort`, the role Apache RocketMQ gives its proxy: no second
//! process, no second hop. Every RPC runs through the broker's own request
//! handler (the ACL check, validation and the processors of
//! `processor/`), on a detached remoting connection per gRPC client, so a
//! gRPC client and a remoting client see the same topics, groups, offsets,
//! POP state, timers and transactions.
//!
//! Layout: `service` (the RPCs and what they share), `meta` (the caller),
//! `clients` (gRPC clients by id and their connections), `telemetry` (the
//! settings handshake and broker-to-client commands), `route`, `send`,
//! `receive`, `ack`, `renew` (receipt handles renewed for auto-renew
//! clients), `transaction`, `receipt` (receipt handles), `convert`
//! (messages between the two forms), `settings`, `config` (the proxy's
//! settings), `status`.

mod ack;
mod agent;
mod clients;
mod config;
mod convert;
mod listener;
mod meta;
mod receipt;
mod receive;
mod renew;
mod route;
mod send;
mod service;
mod settings;
mod status;
mod telemetry;
mod transaction;

use std::net::SocketAddr;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use rmq_grpc::MessagingServiceServer;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::context::BrokerContext;
use crate::processor::BrokerHandler;
use clients::GrpcClients;
pub use config::GrpcConfig;
use service::{GrpcService, Inner};

/// How often idle clients and expired transaction halves are dropped.
const SWEEP_INTERVAL: Duration = Duration::from_secs(5);
/// Streams (calls) one HTTP/2 connection may have open at once.
const MAX_STREAMS_PER_CONNECTION: u32 = 1024;
/// Longest wait, when the broker stops, for held messages to be let go.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(3);
/// Keepalive pings on an idle connection.
const KEEPALIVE: Duration = Duration::from_secs(30);

/// Serves gRPC on `listener` until `cancel`; the server and its sweeper
/// run on `tracker`. Returns the address routes name.
pub(crate) fn start(
    ctx: &Arc<BrokerContext>,
    handler: Arc<BrokerHandler>,
    listener: TcpListener,
    namesrv: Vec<SocketAddr>,
    cancel: &CancellationToken,
    tracker: &TaskTracker,
) -> std::io::Result<SocketAddr> {
    let endpoint = listener.local_addr()?;
    let max_body = usize::try_from(ctx.settings.store.max_message_size_bytes).unwrap_or(usize::MAX);
    let max_queued = usize::try_from(ctx.settings.broker.max_buffered_bytes_per_connection)
        .unwrap_or(usize::MAX);
    let inner = Arc::new(Inner {
        ctx: Arc::clone(ctx),
        clients: GrpcClients::new(Arc::clone(&handler), max_queued),
        handler,
        transactions: transaction::TransactionTable::default(),
        namesrv,
        endpoint,
        limits: convert::SendLimits::with_max_body(max_body),
        next_queue: AtomicUsize::new(0),
        renewals: renew::Renewals::default(),
        internal: rmq_remoting::Connection::detached(endpoint, max_queued).0,
        cancel: cancel.clone(),
        tracker: tracker.clone(),
    });
    // A whole batch of maximal messages fits in one request.
    let max_request = max_body.saturating_mul(4).saturating_add(1024 * 1024);
    let service = MessagingServiceServer::new(GrpcService {
        inner: Arc::clone(&inner),
    })
    .max_decoding_message_size(max_request)
    .max_encoding_message_size(usize::MAX);
    let store = &ctx.settings.store;
    let caps = rmq_remoting::limits::ConnectionCaps::new(
        store.max_connections as usize,
        store.max_connections_per_address as usize,
    );
    let tls = ctx
        .tls_server
        .as_ref()
        .map(|t| Arc::new(t.with_alpn(&[b"h2"])));
    let incoming = listener::incoming(listener, caps, tls, cancel.clone(), tracker);
    // HTTP/2 flow control bounds what one connection may have in flight.
    let window = u32::try_from(max_queued.min(i32::MAX as usize)).unwrap_or(u32::MAX);
    let max_header = u32::try_from(store.max_header_bytes).unwrap_or(u32::MAX);
    let shutdown = cancel.clone();
    let served = Arc::clone(&inner);
    tracker.spawn(async move {
        let result = tonic::transport::Server::builder()
            .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION)
            .initial_connection_window_size(window)
            .http2_max_header_list_size(max_header)
            .http2_keepalive_interval(Some(KEEPALIVE))
            .add_service(service)
            .serve_with_incoming_shutdown(incoming, shutdown.cancelled_owned())
            .await;
        if let Err(e) = result {
            tracing::error!(error = %e, "gRPC server stopped");
        }
        // Held messages go back to their groups soon, not after their
        // renewed invisible time.
        if tokio::time::timeout(RELEASE_TIMEOUT, renew::release_all(&served))
            .await
            .is_err()
        {
            tracing::warn!("gRPC: releasing held messages took too long");
        }
        served.clients.clear();
    });
    let swept = Arc::clone(&inner);
    let stop = cancel.clone();
    tracker.spawn(async move {
        let mut tick = tokio::time::interval(SWEEP_INTERVAL);
        loop {
            tokio::select! {
                biased;
                _ = stop.cancelled() => break,
                _ = tick.tick() => {
                    let now = rmq_common::time::now_ms();
                    let clients = swept.clients.sweep(now);
                    let halves = swept.transactions.sweep(now);
                    if clients + halves > 0 {
                        tracing::debug!(clients, halves, "gRPC sweep");
                    }
                }
            }
        }
    });
    if ctx.settings.broker.grpc.enable_proxy_auto_renew {
        let renewing = Arc::clone(&inner);
        let stop = cancel.clone();
        let period = Duration::from_millis(ctx.settings.broker.grpc.renew_schedule_period_ms);
        tracker.spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    biased;
                    _ = stop.cancelled() => break,
                    _ = tick.tick() => {
                        renew::pass(&renewing, rmq_common::time::now_ms()).await;
                    }
                }
            }
        });
    }
    tracing::info!(%endpoint, "gRPC (apache.rocketmq.v2) served");
    Ok(endpoint)
}
