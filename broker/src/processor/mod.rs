//! Request processors, one file per request family, and the dispatch from
//! request code to processor.

pub mod acl_admin;
pub mod admin;
pub mod client;
pub mod consumers;
pub mod cq_admin;
pub mod groups;
pub mod inspect;
pub mod lock;
pub mod offsets;
pub mod pull;
pub mod query;
pub mod reply;
pub mod runtime;
pub mod send;
pub mod send_back;
pub mod stats;
pub mod transaction;
pub mod validate;

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use parking_lot::Mutex;
use rmq_common::remoting::catalog::Served;
use rmq_common::remoting::{HeaderError, RemotingCommand, RequestCode, ResponseCode};
use tokio_util::sync::CancellationToken;

use crate::context::BrokerContext;
use crate::remoting::{ConnId, Connection, RequestHandler};

/// The broker's request handler.
#[derive(Debug)]
pub struct BrokerHandler {
    ctx: Arc<BrokerContext>,
    gone: ConnectionGone,
    refusals: crate::logging::RateLimiter,
}

impl BrokerHandler {
    /// A handler over `ctx`.
    pub fn new(ctx: Arc<BrokerContext>) -> Self {
        Self {
            ctx,
            gone: ConnectionGone::default(),
            refusals: crate::logging::RateLimiter::new(REFUSAL_LOG_INTERVAL),
        }
    }
}

/// One token per connection with held requests, cancelled when the
/// connection closes (the client left, or the broker is stopping), so a
/// held pull does not outlive its connection. RocketMQ's hold service
/// likewise never delays shutdown for held pulls.
#[derive(Debug, Default)]
pub struct ConnectionGone {
    tokens: Mutex<HashMap<ConnId, CancellationToken>>,
}

impl ConnectionGone {
    /// A token cancelled once `conn` has closed (already cancelled if it has).
    pub fn token(&self, conn: &Connection) -> CancellationToken {
        let token = self.tokens.lock().entry(conn.id).or_default().clone();
        // The server marks a connection closed before it reports the close,
        // so a token made after the report is caught here.
        if conn.is_closed() {
            self.closed(conn.id);
        }
        token
    }

    /// Cancels the connection's token.
    pub fn closed(&self, id: ConnId) {
        if let Some(token) = self.tokens.lock().remove(&id) {
            token.cancel();
        }
    }
}

/// Answers that are part of normal operation, not refusals worth a line.
const ROUTINE_CODES: [ResponseCode; 5] = [
    ResponseCode::Success,
    ResponseCode::PullNotFound,
    ResponseCode::PullRetryImmediately,
    ResponseCode::PullOffsetMoved,
    ResponseCode::QueryNotFound,
];

/// One line per (request code, response code) per this interval.
const REFUSAL_LOG_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

impl BrokerHandler {
    /// Logs a refused request, at most one line per class per
    /// [`REFUSAL_LOG_INTERVAL`] with the count held back.
    fn log_refusal(&self, conn: &Connection, req: &RemotingCommand, resp: &RemotingCommand) {
        if ROUTINE_CODES.iter().any(|c| i32::from(*c) == resp.code) {
            return;
        }
        if let Some(suppressed) = self.refusals.allow((req.code, resp.code)) {
            tracing::warn!(
                peer = %conn.peer,
                request = req.code,
                response = resp.code,
                remark = resp.remark.as_deref().unwrap_or(""),
                suppressed,
                "request refused"
            );
        }
    }
}

impl RequestHandler for BrokerHandler {
    fn handle(
        self: Arc<Self>,
        conn: Arc<Connection>,
        req: RemotingCommand,
    ) -> BoxFuture<'static, Option<RemotingCommand>> {
        async move {
            let oneway = req.is_oneway();
            let resp = dispatch(&self.ctx, &self.gone, &conn, &req).await;
            if let Some(r) = &resp {
                self.log_refusal(&conn, &req, r);
            }
            let resp = resp.map(|mut r| {
                r.opaque = req.opaque;
                r.serialize_type = req.serialize_type;
                r.mark_response();
                r
            });
            if oneway {
                None
            } else {
                resp
            }
        }
        .boxed()
    }

    fn response(&self, conn: &Arc<Connection>, resp: RemotingCommand) {
        self.ctx.calls.answered(conn.id, resp);
    }

    fn connection_opened(&self, _conn: &Arc<Connection>) {
        self.ctx
            .connections
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn connection_closed(&self, conn: &Arc<Connection>) {
        self.ctx
            .connections
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        self.gone.closed(conn.id);
        self.ctx.calls.connection_closed(conn.id);
        let change = self.ctx.clients.connection_closed(conn.id);
        client::notify_group_changes(&self.ctx, &change);
    }
}

async fn dispatch(
    ctx: &Arc<BrokerContext>,
    gone: &ConnectionGone,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
) -> Option<RemotingCommand> {
    if let Some(acl) = &ctx.acl {
        if let Err(denied) = acl.check(
            req.code,
            conn.peer.ip(),
            &req.ext_fields,
            req.body.as_deref(),
        ) {
            return Some(RemotingCommand::response(
                ResponseCode::NoPermission,
                Some(denied.0),
            ));
        }
    }
    let Some(code) = RequestCode::from_i32(req.code) else {
        return Some(unsupported(req.code));
    };
    if let Err(refusal) = validate::request(ctx, code, req) {
        return Some(refusal.into_response());
    }
    let result = match code {
        RequestCode::SendMessage | RequestCode::SendMessageV2 | RequestCode::SendBatchMessage => {
            send::handle(ctx, conn, req).await
        }
        // The 5.x client's DefaultLitePullConsumer pulls with its own code and
        // the same header; Java's broker serves both with one processor.
        RequestCode::PullMessage | RequestCode::LitePullMessage => {
            pull::handle(ctx, req, || gone.token(conn)).await
        }
        RequestCode::ConsumerSendMsgBack => send_back::handle(ctx, req).await,
        RequestCode::SendReplyMessage | RequestCode::SendReplyMessageV2 => {
            reply::handle(ctx, conn, req).await
        }
        RequestCode::EndTransaction => transaction::handle(ctx, req).await,
        RequestCode::QueryConsumerOffset
        | RequestCode::UpdateConsumerOffset
        | RequestCode::GetMaxOffset
        | RequestCode::GetMinOffset
        | RequestCode::SearchOffsetByTimestamp
        | RequestCode::GetEarliestMsgStoretime => offsets::handle(ctx, code, req).await,
        RequestCode::HeartBeat
            if req
                .body
                .as_ref()
                .is_some_and(|b| b.len() > client::HEARTBEAT_INLINE_BYTES) =>
        {
            let (ctx, conn, req) = (Arc::clone(ctx), Arc::clone(conn), req.clone());
            blocking(move || client::heartbeat(&ctx, &conn, &req))
                .await
                .and_then(|handled| handled)
        }
        RequestCode::HeartBeat
        | RequestCode::UnregisterClient
        | RequestCode::GetConsumerListByGroup
        | RequestCode::CheckClientConfig => client::handle(ctx, conn, code, req),
        RequestCode::QueryMessage | RequestCode::ViewMessageById => {
            query::handle(ctx, code, req).await
        }
        RequestCode::UpdateAndCreateTopic
        | RequestCode::UpdateAndCreateTopicList
        | RequestCode::GetAllTopicConfig
        | RequestCode::GetBrokerConfig => admin::handle(ctx, code, req).await,
        RequestCode::DeleteExpiredCommitlog => admin::delete_expired(ctx).await,
        RequestCode::RmqCqStatus
        | RequestCode::RmqCqVerify
        | RequestCode::RmqCqAddShadow
        | RequestCode::RmqCqServe
        | RequestCode::RmqCqDropShadow => cq_admin::handle(ctx, code, req).await,
        RequestCode::DeleteTopicInBroker => admin::delete_topic(ctx, req).await,
        RequestCode::CleanExpiredConsumequeue => admin::clean_expired_cq(ctx).await,
        RequestCode::GetBrokerRuntimeInfo => runtime::runtime_info(ctx).await,
        RequestCode::UpdateAndCreateAclConfig => acl_admin::update(ctx, req).await,
        RequestCode::DeleteAclConfig => acl_admin::delete(ctx, req).await,
        RequestCode::UpdateGlobalWhiteAddrsConfig => acl_admin::global_white(ctx, req).await,
        RequestCode::GetBrokerClusterAclInfo => acl_admin::info(ctx).await,
        RequestCode::GetBrokerClusterAclConfig => acl_admin::config(ctx).await,
        RequestCode::UpdateBrokerConfig => runtime::update_config(ctx, req),
        RequestCode::GetTopicStatsInfo
        | RequestCode::GetConsumeStats
        | RequestCode::QueryTopicConsumeByWho => stats::handle(ctx, code, req).await,
        RequestCode::UpdateAndCreateSubscriptionGroup
        | RequestCode::UpdateAndCreateSubscriptionGroupList
        | RequestCode::DeleteSubscriptionGroup
        | RequestCode::GetConsumerConnectionList
        | RequestCode::GetProducerConnectionList
        | RequestCode::InvokeBrokerToResetOffset
        | RequestCode::GetAllSubscriptiongroupConfig
        | RequestCode::GetAllProducerInfo
        | RequestCode::CloneGroupOffset
        | RequestCode::QueryCorrectionOffset => groups::handle(ctx, code, req).await,
        RequestCode::InvokeBrokerToGetConsumerStatus
        | RequestCode::GetConsumerRunningInfo
        | RequestCode::ConsumeMessageDirectly => consumers::handle(ctx, code, req).await,
        RequestCode::QueryConsumeTimeSpan
        | RequestCode::ViewBrokerStatsData
        | RequestCode::GetBrokerConsumeStats
        | RequestCode::QueryConsumeQueue => inspect::handle(ctx, code, req).await,
        RequestCode::GetSystemTopicListFromBroker => admin::system_topics(ctx),
        // What a slave copies from its master (with 21 and 201).
        RequestCode::GetAllConsumerOffset => ctx
            .offsets
            .table_json()
            .map(|body| success().with_body(body))
            .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string())),
        RequestCode::GetAllDelayOffset => json_success(&ctx.scheduler.offsets_json()),
        RequestCode::CleanUnusedTopic => admin::clean_unused_topic(ctx).await,
        RequestCode::ResumeCheckHalfMessage => admin::resume_check_half(ctx, req).await,
        RequestCode::LockBatchMq | RequestCode::UnlockBatchMq => lock::handle(ctx, code, req),
        RequestCode::GetKvConfig => Ok(RemotingCommand::response(
            ResponseCode::QueryNotFound,
            Some("no KV config on this broker".into()),
        )),
        _ => return Some(unsupported(req.code)),
    };
    Some(result.unwrap_or_else(|e| e.into_response()))
}

/// REQUEST_CODE_NOT_SUPPORTED, saying why where the request-code table
/// (`rmq_common::remoting::catalog`) says.
fn unsupported(code: i32) -> RemotingCommand {
    let name = RequestCode::from_i32(code).map_or("", |c| c.name());
    let why = match rmq_common::remoting::catalog::entry(code).map(|e| e.served) {
        Some(Served::No(why)) => why,
        Some(Served::NameServer) => "served by the NameServer, not the broker",
        _ => "not a request code this broker knows",
    };
    RemotingCommand::response(
        ResponseCode::RequestCodeNotSupported,
        Some(format!(
            "request code {code} {name} is not supported by this broker: {why}"
        )),
    )
}

/// A request that cannot be served, with the code to answer it with.
#[derive(Debug)]
pub struct Refusal {
    code: ResponseCode,
    remark: String,
}

impl Refusal {
    /// A refusal.
    pub fn new(code: ResponseCode, remark: impl Into<String>) -> Self {
        Self {
            code,
            remark: remark.into(),
        }
    }

    /// The same refusal, its remark prefixed with where it was found.
    pub fn context(self, what: &str) -> Self {
        Self {
            code: self.code,
            remark: format!("{what}: {}", self.remark),
        }
    }

    fn into_response(self) -> RemotingCommand {
        RemotingCommand::response(self.code, Some(self.remark))
    }
}

impl From<HeaderError> for Refusal {
    fn from(e: HeaderError) -> Self {
        Self::new(
            ResponseCode::SystemError,
            format!("bad request header: {e}"),
        )
    }
}

/// `ENOSPC` on Linux.
const ENOSPC: i32 = 28;

impl From<rmq_store_file::StoreError> for Refusal {
    fn from(e: rmq_store_file::StoreError) -> Self {
        use rmq_store_file::StoreError as E;
        let code = match &e {
            E::MessageIllegal { .. } | E::IllegalName(_) | E::Encode(_) => {
                ResponseCode::MessageIllegal
            }
            E::Poisoned { .. } | E::ShutDown | E::DiskFull { .. } | E::Slave => {
                ResponseCode::ServiceNotAvailable
            }
            // A new CommitLog segment could not be allocated: nothing was
            // written, and the client may try another broker.
            E::Io { source, .. } if source.raw_os_error() == Some(ENOSPC) => {
                ResponseCode::ServiceNotAvailable
            }
            _ => ResponseCode::SystemError,
        };
        Self::new(code, e.to_string())
    }
}

/// A meta file that cannot be written is the broker's fault, not the
/// request's.
impl From<crate::error::MetaError> for Refusal {
    fn from(e: crate::error::MetaError) -> Self {
        Self::new(ResponseCode::SystemError, e.to_string())
    }
}

/// Result of a processor.
pub type Handled = Result<RemotingCommand, Refusal>;

/// A successful response with no fields.
pub fn success() -> RemotingCommand {
    RemotingCommand::response(ResponseCode::Success, None)
}

/// A successful response whose body is `value` as JSON.
pub fn json_success<T: serde::Serialize>(value: &T) -> Handled {
    let body = serde_json::to_vec(value)
        .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
    Ok(success().with_body(body))
}

/// Runs blocking store work off the async workers.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Refusal> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Refusal::new(ResponseCode::SystemError, format!("store task failed: {e}")))
}
