//! Request processors, one file per request family, and the dispatch from
//! request to processor.
//!
//! A request is checked and decoded once: the ACL, then the code's rule and
//! the names its fields carry ([`validate::request`]), then its header into
//! a typed [`BrokerRequest`] (a missing or bad field is refused naming it),
//! and one exhaustive match in `serve` hands it to one function per request
//! code. No handler sees a request code or reads a header field from
//! `extFields`, and none takes the whole [`BrokerContext`]: each takes the
//! tables it uses (the store, the topic table, ...) or its family's part
//! ([`parts::SendPath`], [`parts::PullPath`], ...), built once with the
//! handler.
//!
//! To add a request code: add its row to the table in
//! `rmq_common::remoting::requests` (value, Java name, where it is served,
//! its rule and header type; a new header goes in
//! `rmq_common::remoting::header` with `ext_header!`), write its handler
//! here taking the header and only the parts of the broker it uses, and add
//! its arm to `serve` (the compiler asks for it).

pub(crate) mod ack;
pub(crate) mod acl_admin;
pub(crate) mod admin;
pub(crate) mod assignment;
pub(crate) mod client;
pub(crate) mod consumers;
pub(crate) mod controller_mode;
pub(crate) mod cq_admin;
pub(crate) mod groups;
pub(crate) mod inspect;
pub(crate) mod lock;
pub(crate) mod meta_get;
pub(crate) mod notification;
pub(crate) mod offsets;
pub(crate) mod parts;
pub(crate) mod pop;
pub(crate) mod pull;
pub(crate) mod query;
pub(crate) mod recall;
pub(crate) mod reply;
pub(crate) mod runtime;
pub(crate) mod send;
pub(crate) mod send_back;
pub(crate) mod stats;
pub(crate) mod topic_attributes;
pub(crate) mod transaction;
pub(crate) mod validate;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use futures::FutureExt;
use parking_lot::Mutex;
use rmq_common::remoting::catalog::Served;
use rmq_common::remoting::{
    BrokerRequest, HeaderError, RemotingCommand, RequestCode, ResponseCode,
};
use tokio_util::sync::CancellationToken;

use crate::context::BrokerContext;
use crate::metrics::rpc::{self, RpcResult};
use parts::Parts;
use rmq_remoting::{ConnId, Connection, RequestHandler};

/// The broker's request handler.
#[derive(Debug)]
pub(crate) struct BrokerHandler {
    /// Wiring: the ACL check, the connection count and the client calls
    /// of a closing connection. Handlers get [`Parts`], never this.
    ctx: Arc<BrokerContext>,
    parts: Parts,
    gone: ConnectionGone,
    refusals: crate::logging::RateLimiter,
}

impl BrokerHandler {
    /// A handler over `ctx`.
    pub fn new(ctx: Arc<BrokerContext>) -> Self {
        Self {
            parts: Parts::new(&ctx),
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
pub(crate) struct ConnectionGone {
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
const ROUTINE_CODES: [ResponseCode; 7] = [
    ResponseCode::Success,
    ResponseCode::POLLING_TIMEOUT,
    ResponseCode::POLLING_FULL,
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

/// Where a request came from, which decides its ACL check and its
/// `rocketmq_rpc_latency` series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// A remoting request: its extFields' signature is checked here, and
    /// its latency recorded under `protocol_type="remoting"`.
    Remoting,
    /// A gRPC call's step: checked by the gRPC layer (the call is signed
    /// in its metadata), which records the call's own latency.
    Grpc,
}

impl BrokerHandler {
    /// Handles one request from `origin`.
    pub(crate) fn run(
        self: Arc<Self>,
        conn: Arc<Connection>,
        req: RemotingCommand,
        origin: Origin,
    ) -> BoxFuture<'static, Option<RemotingCommand>> {
        async move {
            let started = Instant::now();
            let oneway = req.is_oneway();
            let rpc = &self.ctx.rocketmq.rpc;
            let busy = rpc.busy(RequestCode::from_i32(req.code));
            let (resp, held) = rpc::scope(dispatch(
                &self.ctx,
                &self.parts,
                &self.gone,
                &conn,
                &req,
                origin,
            ))
            .await;
            drop(busy);
            if let Some(r) = &resp {
                self.log_refusal(&conn, &req, r);
                if origin == Origin::Remoting {
                    let result = if oneway {
                        RpcResult::Oneway
                    } else {
                        RpcResult::Success
                    };
                    rpc.record(req.code, r.code, held, result, started);
                }
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
}

impl RequestHandler for BrokerHandler {
    fn handle(
        self: Arc<Self>,
        conn: Arc<Connection>,
        req: RemotingCommand,
    ) -> BoxFuture<'static, Option<RemotingCommand>> {
        self.run(conn, req, Origin::Remoting)
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
        client::notify_group_changes(&self.ctx.clients, &change);
    }
}

async fn dispatch(
    ctx: &BrokerContext,
    parts: &Parts,
    gone: &ConnectionGone,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
    origin: Origin,
) -> Option<RemotingCommand> {
    if let Some(acl) = ctx.acl.as_ref().filter(|_| origin == Origin::Remoting) {
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
    if let Err(refusal) = validate::request(&parts.store, &parts.topics, code.rule(), req) {
        return Some(refusal.into_response());
    }
    let request = match BrokerRequest::decode(code, &req.ext()) {
        None => return Some(unsupported(req.code)),
        Some(Err(e)) => return Some(Refusal::from(e).into_response()),
        Some(Ok(request)) => request,
    };
    Some(
        serve(parts, gone, conn, req, request)
            .await
            .unwrap_or_else(Refusal::into_response),
    )
}

/// The one match from a decoded request to its handler. `req` is there
/// for the handlers that read the body (or forward the fields); none reads
/// a header field from it.
async fn serve(
    parts: &Parts,
    gone: &ConnectionGone,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
    request: BrokerRequest,
) -> Handled {
    use BrokerRequest as R;
    let p = parts;
    match request {
        R::SendMessage(h) | R::SendMessageV2(h) => send::send(&p.send, conn, req, h, false).await,
        R::SendBatchMessage(h) => send::send(&p.send, conn, req, h, true).await,
        // The 5.x client's DefaultLitePullConsumer pulls with its own code and
        // the same header; Java's broker serves both with one processor.
        R::PullMessage(h) | R::LitePullMessage(h) => {
            pull::pull(&p.pull, h, || gone.token(conn)).await
        }
        R::PopMessage(h) => pop::pop(&p.pop, h, || gone.token(conn)).await,
        R::PeekMessage(h) => pop::peek(&p.pop, h).await,
        R::AckMessage(h) => ack::ack(&p.pop, h).await,
        R::BatchAckMessage(_) => ack::batch_ack(&p.pop, req).await,
        R::ChangeMessageInvisibletime(h) => ack::change_invisible(&p.pop, h).await,
        R::Notification(h) => notification::notification(&p.pop, h, || gone.token(conn)).await,
        R::PollingInfo(h) => notification::polling_info(&p.pop, h),
        R::QueryAssignment(_) => assignment::query(&p.pop, req),
        R::SetMessageRequestMode(_) => assignment::set(&p.pop, req).await,
        R::GetAllMessageRequestMode(_) => assignment::all(&p.pop),
        R::ConsumerSendMsgBack(h) => send_back::send_back(&p.send, h).await,
        R::SendReplyMessage(h) | R::SendReplyMessageV2(h) => {
            reply::reply(&p.send, conn, req, h).await
        }
        R::EndTransaction(h) => transaction::end(&p.send, h).await,
        R::RecallMessage(h) => recall::recall(&p.send, conn, h).await,
        R::QueryConsumerOffset(h) => offsets::query(&p.offsets, &p.store, h).await,
        R::UpdateConsumerOffset(h) => offsets::update(&p.topics, &p.offsets, h),
        R::GetMaxOffset(h) => offsets::max(&p.store, h).await,
        R::GetMinOffset(h) => offsets::min(&p.store, h).await,
        R::SearchOffsetByTimestamp(h) => offsets::search(&p.store, h).await,
        R::GetEarliestMsgStoretime(h) => offsets::earliest(&p.store, h).await,
        // What a slave copies from its master (with 21 and 201).
        R::GetAllConsumerOffset(_) => offsets::all(&p.offsets),
        R::GetAllDelayOffset(_) => offsets::all_delay(&p.scheduler),
        R::HeartBeat(_)
            if req
                .body
                .as_ref()
                .is_some_and(|b| b.len() > client::HEARTBEAT_INLINE_BYTES) =>
        {
            let (table, conn, req) = (Arc::clone(&p.client_table), Arc::clone(conn), req.clone());
            blocking(move || client::heartbeat(&table, &conn, &req))
                .await
                .and_then(|handled| handled)
        }
        R::HeartBeat(_) => client::heartbeat(&p.client_table, conn, req),
        R::UnregisterClient(h) => client::unregister(&p.client_table, conn, h),
        R::GetConsumerListByGroup(h) => client::consumer_list(&p.client_table, h),
        R::CheckClientConfig(_) => client::check_config(&p.client_table, req),
        R::QueryMessage(h) => query::by_key(&p.store, h).await,
        R::ViewMessageById(h) => query::by_offset(&p.store, h).await,
        R::UpdateAndCreateTopic(h) => admin::create_topic(&p.admin, h).await,
        R::UpdateAndCreateTopicList(_) => admin::create_topics(&p.admin, req).await,
        R::GetAllTopicConfig(_) => admin::all_topics(&p.admin),
        R::GetTopicConfig(h) => meta_get::topic_config(&p.topics, h),
        R::GetSubscriptionGroupConfig(h) => meta_get::group_config(
            &p.client_table.groups,
            p.client_table.auto_create_subscription_group,
            h,
        ),
        R::GetBrokerConfig(_) => admin::broker_config(&p.admin),
        R::DeleteTopicInBroker(h) => admin::delete_topic(&p.admin, h).await,
        R::DeleteExpiredCommitlog(_) => admin::delete_expired(&p.admin).await,
        R::CleanExpiredConsumequeue(_) => admin::clean_expired_cq(&p.admin).await,
        R::CleanUnusedTopic(_) => admin::clean_unused_topic(&p.admin).await,
        R::GetSystemTopicListFromBroker(_) => admin::system_topics(&p.admin),
        R::ResumeCheckHalfMessage(h) => admin::resume_check_half(&p.admin, h).await,
        R::RmqCqStatus(_) => cq_admin::status(&p.store),
        R::RmqCqVerify(h) => cq_admin::verify(&p.store, h).await,
        R::RmqCqAddShadow(h) => cq_admin::add_shadow(&p.store, h).await,
        R::RmqCqServe(h) => cq_admin::serve(&p.store, h).await,
        R::RmqCqDropShadow(_) => cq_admin::drop_shadow(&p.store).await,
        R::GetBrokerRuntimeInfo(_) => runtime::runtime_info(&p.admin).await,
        R::UpdateBrokerConfig(_) => runtime::update_config(&p.admin, req),
        R::NotifyBrokerRoleChanged(_) => controller_mode::notify_role_changed(&p.admin, req),
        R::GetBrokerEpochCache(_) => controller_mode::epoch_cache(&p.admin),
        R::UpdateAndCreateAclConfig(h) => acl_admin::update(&p.acl_admin, h).await,
        R::DeleteAclConfig(h) => acl_admin::delete(&p.acl_admin, h).await,
        R::UpdateGlobalWhiteAddrsConfig(h) => acl_admin::global_white(&p.acl_admin, h).await,
        R::GetBrokerClusterAclInfo(_) => acl_admin::info(&p.acl_admin).await,
        R::GetBrokerClusterAclConfig(_) => acl_admin::config(&p.acl_admin).await,
        R::GetTopicStatsInfo(h) => stats::topic_stats(&p.consumption, h).await,
        R::GetConsumeStats(h) => stats::consume_stats(&p.consumption, h).await,
        R::QueryTopicConsumeByWho(h) => stats::consumed_by(&p.consumption, h),
        R::UpdateAndCreateSubscriptionGroup(_) => groups::create(&p.consumption, req).await,
        R::UpdateAndCreateSubscriptionGroupList(_) => {
            groups::create_list(&p.consumption, req).await
        }
        R::DeleteSubscriptionGroup(h) => groups::delete(&p.consumption, h).await,
        R::GetConsumerConnectionList(h) => groups::consumer_connections(&p.consumption, h),
        R::GetProducerConnectionList(h) => groups::producer_connections(&p.consumption, h),
        R::InvokeBrokerToResetOffset(h) => groups::reset_offset(&p.consumption, h).await,
        R::GetAllSubscriptiongroupConfig(_) => groups::all(&p.consumption),
        R::GetAllProducerInfo(_) => groups::producers(&p.consumption),
        R::CloneGroupOffset(h) => groups::clone_offset(&p.consumption, h),
        R::QueryCorrectionOffset(h) => groups::correction_offset(&p.consumption, h).await,
        R::InvokeBrokerToGetConsumerStatus(h) => consumers::status(&p.consumption, h).await,
        R::GetConsumerRunningInfo(h) => consumers::running_info(&p.consumption, req, h).await,
        R::ConsumeMessageDirectly(h) => consumers::consume_directly(&p.consumption, req, h).await,
        R::QueryConsumeTimeSpan(h) => inspect::time_span(&p.consumption, h).await,
        R::ViewBrokerStatsData(h) => inspect::stats_data(&p.consumption, h),
        R::GetBrokerConsumeStats(h) => inspect::consume_stats(&p.consumption, h).await,
        R::QueryConsumeQueue(h) => inspect::consume_queue(&p.consumption, h).await,
        R::LockBatchMq(_) => lock::lock(&p.locks, &p.topics, req),
        R::UnlockBatchMq(_) => lock::unlock(&p.locks, &p.topics, req),
        R::GetKvConfig(_) => Ok(RemotingCommand::response(
            ResponseCode::QueryNotFound,
            Some("no KV config on this broker".into()),
        )),
    }
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
pub(crate) struct Refusal {
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
pub(crate) type Handled = Result<RemotingCommand, Refusal>;

/// A successful response with no fields.
pub(crate) fn success() -> RemotingCommand {
    RemotingCommand::response(ResponseCode::Success, None)
}

/// A successful response whose body is `value` as JSON.
pub(crate) fn json_success<T: serde::Serialize>(value: &T) -> Handled {
    let body = serde_json::to_vec(value)
        .map_err(|e| Refusal::new(ResponseCode::SystemError, e.to_string()))?;
    Ok(success().with_body(body))
}

/// Runs blocking store work off the async workers.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Refusal> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Refusal::new(ResponseCode::SystemError, format!("store task failed: {e}")))
}
