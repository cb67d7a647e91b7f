//! The gRPC clients the broker knows, by client id. Each has a detached
//! remoting [`Connection`]: the heartbeat registers it in the same client
//! tables as a remoting client, and what the broker sends it (a
//! transaction check-back, a running-info or consume-directly request)
//! arrives in its outbox and goes out on its telemetry stream. A client
//! silent for [`IDLE_MS`] without a telemetry stream is dropped, as the
//! proxy drops idle gRPC channels (`grpcClientIdleTimeMills`).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use rmq_grpc::pb;
use rmq_remoting::{Connection, Outbox, RequestHandler};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::meta::CallMeta;
use crate::processor::BrokerHandler;

/// A client with no call and no telemetry stream for this long is dropped.
pub(crate) const IDLE_MS: i64 = 120_000;

/// One item of a telemetry stream. Boxed: a channel allocates its slots
/// 32 at a time up front, and an idle client's stream would otherwise hold
/// 32 whole commands (20 KB).
pub(crate) type TelemetryItem = Box<Result<pb::TelemetryCommand, tonic::Status>>;

/// Where telemetry commands to one client go.
pub(crate) type TelemetrySink = mpsc::Sender<TelemetryItem>;

/// A broker request relayed to a client, waiting for its answer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Relayed {
    pub opaque: i32,
}

/// One gRPC client.
#[derive(Debug)]
pub(crate) struct GrpcClient {
    pub id: String,
    pub conn: Arc<Connection>,
    pub version: String,
    /// `x-mq-language` of its first call.
    pub language: String,
    settings: Mutex<Option<pb::Settings>>,
    sink: Mutex<Option<TelemetrySink>>,
    relayed: Mutex<HashMap<String, Relayed>>,
    /// What the broker sends the client's connection, while no telemetry
    /// stream holds it.
    outbox: Mutex<Option<Outbox>>,
    /// Cancelled when the client is dropped.
    pub gone: CancellationToken,
}

impl GrpcClient {
    pub fn settings(&self) -> Option<pb::Settings> {
        self.settings.lock().clone()
    }

    pub fn set_settings(&self, s: pb::Settings) {
        *self.settings.lock() = Some(s);
    }

    pub fn set_sink(&self, sink: TelemetrySink) {
        *self.sink.lock() = Some(sink);
    }

    /// Forgets `sink` if it is still the client's (its stream ended).
    pub fn clear_sink(&self, sink: &TelemetrySink) {
        let mut s = self.sink.lock();
        if s.as_ref().is_some_and(|cur| cur.same_channel(sink)) {
            *s = None;
        }
    }

    pub fn has_stream(&self) -> bool {
        self.sink.lock().as_ref().is_some_and(|s| !s.is_closed())
    }

    /// Sends `cmd` on the client's telemetry stream; false if it has none
    /// or the stream is full.
    pub fn tell(&self, cmd: pb::TelemetryCommand) -> bool {
        let sink = self.sink.lock().clone();
        sink.is_some_and(|s| s.try_send(Box::new(Ok(cmd))).is_ok())
    }

    /// The outbox, for a telemetry stream to carry; `None` if another
    /// stream holds it.
    pub fn take_outbox(&self) -> Option<Outbox> {
        self.outbox.lock().take()
    }

    /// Gives the outbox back (its stream ended).
    pub fn return_outbox(&self, outbox: Outbox) {
        *self.outbox.lock() = Some(outbox);
    }

    pub fn relay(&self, nonce: String, r: Relayed) {
        self.relayed.lock().insert(nonce, r);
    }

    pub fn take_relayed(&self, nonce: &str) -> Option<Relayed> {
        self.relayed.lock().remove(nonce)
    }
}

/// Every gRPC client, by client id.
#[derive(Debug)]
pub(crate) struct GrpcClients {
    by_id: Mutex<HashMap<String, Arc<GrpcClient>>>,
    handler: Arc<BrokerHandler>,
    max_queued: usize,
}

impl GrpcClients {
    pub fn new(handler: Arc<BrokerHandler>, max_queued: usize) -> Self {
        Self {
            by_id: Mutex::new(HashMap::new()),
            handler,
            max_queued,
        }
    }

    /// The caller's client, made (with its connection) on its first call.
    pub fn get(&self, meta: &CallMeta) -> Arc<GrpcClient> {
        let mut map = self.by_id.lock();
        if let Some(c) = map.get(&meta.client_id) {
            c.conn.touch();
            return Arc::clone(c);
        }
        let (conn, outbox) = Connection::detached(meta.peer, self.max_queued);
        let client = Arc::new(GrpcClient {
            id: meta.client_id.clone(),
            conn,
            version: meta.version.clone(),
            language: meta.language.clone(),
            settings: Mutex::new(None),
            sink: Mutex::new(None),
            relayed: Mutex::new(HashMap::new()),
            outbox: Mutex::new(Some(outbox)),
            gone: CancellationToken::new(),
        });
        map.insert(meta.client_id.clone(), Arc::clone(&client));
        drop(map);
        self.handler.connection_opened(&client.conn);
        tracing::debug!(client = %client.id, peer = %meta.peer, "gRPC client seen");
        client
    }

    /// Whether a client of that id is connected.
    pub fn contains(&self, id: &str) -> bool {
        self.by_id.lock().contains_key(id)
    }

    /// Drops a client: unregistered from the client tables, its
    /// connection closed.
    pub fn remove(&self, id: &str) -> Option<Arc<GrpcClient>> {
        let client = self.by_id.lock().remove(id)?;
        client.conn.close();
        client.gone.cancel();
        self.handler.connection_closed(&client.conn);
        tracing::debug!(client = %client.id, "gRPC client dropped");
        Some(client)
    }

    /// Drops the clients idle at `now_ms`; how many.
    pub fn sweep(&self, now_ms: i64) -> usize {
        let idle: Vec<String> = self
            .by_id
            .lock()
            .values()
            .filter(|c| !c.has_stream() && now_ms - c.conn.last_seen_ms() >= IDLE_MS)
            .map(|c| c.id.clone())
            .collect();
        idle.iter().filter(|id| self.remove(id).is_some()).count()
    }

    /// Drops every client (the broker is stopping).
    pub fn clear(&self) {
        let ids: Vec<String> = self.by_id.lock().keys().cloned().collect();
        for id in ids {
            self.remove(&id);
        }
    }
}
