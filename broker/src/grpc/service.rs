//! `MessagingService` over the broker: each RPC reads the caller from the
//! metadata, finds (or makes) its client, and hands the request to its
//! family's file, which runs it through the broker's own request handler
//! on the client's connection. A failure is answered in the response's
//! `status`, as the proxy answers it; only the streams fail at the gRPC
//! level.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Instant;

use futures::Stream;
use rmq_common::remoting::RemotingCommand;
use rmq_grpc::pb;
use rmq_remoting::Connection;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tonic::{Request, Response, Status, Streaming};

use super::clients::{GrpcClient, GrpcClients};
use super::convert::SendLimits;
use super::meta::CallMeta;
use super::renew::Renewals;
use super::status::{self, Failure, WithStatus};
use super::transaction::{self, TransactionTable};
use super::{ack, receive, route, send, telemetry};
use crate::context::BrokerContext;
use crate::processor::{BrokerHandler, Origin};

/// Telemetry commands queued for one client before the broker's sends to
/// it fail.
const TELEMETRY_QUEUE: usize = 256;

/// What every RPC shares.
#[derive(Debug)]
pub(crate) struct Inner {
    pub ctx: Arc<BrokerContext>,
    pub handler: Arc<BrokerHandler>,
    pub clients: GrpcClients,
    pub transactions: TransactionTable,
    /// NameServers asked for routes.
    pub namesrv: Vec<SocketAddr>,
    /// This broker's gRPC address, as routes name it.
    pub endpoint: SocketAddr,
    pub limits: SendLimits,
    pub next_queue: AtomicUsize,
    /// Receipt handles the broker renews for auto-renew clients.
    pub renewals: Renewals,
    /// The connection the broker's own requests (renewals) run on.
    pub internal: Arc<Connection>,
    pub cancel: CancellationToken,
    pub tracker: TaskTracker,
}

/// `name` under `namespace`, as the SDKs' namespaces wrap it.
fn wrap(r: &pb::Resource) -> String {
    if r.resource_namespace.is_empty() {
        r.name.clone()
    } else {
        format!("{}%{}", r.resource_namespace, r.name)
    }
}

impl Inner {
    /// The topic a resource names; ILLEGAL_TOPIC for a bad or system one.
    pub fn check_topic(&self, r: &pb::Resource) -> Result<String, Failure> {
        let name = wrap(r);
        rmq_common::names::validate_topic(&name)
            .map_err(|e| Failure::new(pb::Code::IllegalTopic, e.to_string()))?;
        if rmq_common::names::is_system_topic(&name) {
            return Err(Failure::new(
                pb::Code::IllegalTopic,
                "cannot access system topic",
            ));
        }
        Ok(name)
    }

    /// The group a resource names; ILLEGAL_CONSUMER_GROUP for a bad or
    /// system one.
    pub fn check_group(&self, r: &pb::Resource) -> Result<String, Failure> {
        let name = wrap(r);
        rmq_common::names::validate_group(&name)
            .map_err(|e| Failure::new(pb::Code::IllegalConsumerGroup, e.to_string()))?;
        if name.starts_with("CID_RMQ_SYS_") {
            return Err(Failure::new(
                pb::Code::IllegalConsumerGroup,
                "cannot access system consumer group",
            ));
        }
        Ok(name)
    }

    /// Runs `cmd` through the broker's request handler on the caller's
    /// connection, after the ACL check of the call's signature (the
    /// plain ACL file's accounts and permissions, as for remoting).
    pub async fn call(
        &self,
        caller: &Caller,
        cmd: RemotingCommand,
    ) -> Result<RemotingCommand, Failure> {
        caller.client.conn.touch();
        if let Some(acl) = &self.ctx.acl {
            let auth = caller.meta.auth.as_ref();
            let signed = |secret: &str| {
                auth.is_some_and(|a| {
                    rmq_common::acl::verify_raw(secret, a.content.as_bytes(), &a.signature)
                })
            };
            acl.check_signed(
                cmd.code,
                caller.meta.peer.ip(),
                auth.map(|a| a.access_key.as_str()),
                &signed,
                &cmd.ext_fields,
                cmd.body.as_deref(),
            )
            .map_err(|denied| Failure::new(pb::Code::Unauthorized, denied.0))?;
        }
        self.run_on(&caller.client.conn, cmd).await
    }

    /// Runs the broker's own `cmd` (no caller, no ACL check) on its
    /// internal connection.
    pub async fn run_internal(&self, cmd: RemotingCommand) -> Result<RemotingCommand, Failure> {
        self.run_on(&self.internal, cmd).await
    }

    /// Runs `cmd` through the broker's request handler on `conn`.
    async fn run_on(
        &self,
        conn: &Arc<Connection>,
        cmd: RemotingCommand,
    ) -> Result<RemotingCommand, Failure> {
        Arc::clone(&self.handler)
            .run(Arc::clone(conn), cmd, Origin::Grpc)
            .await
            .ok_or_else(|| Failure::internal("the broker gave no answer"))
    }

    /// The caller's client.
    fn client(&self, meta: &CallMeta) -> Arc<GrpcClient> {
        self.clients.get(meta)
    }
}

/// One call's caller: its client and what its metadata said.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub client: Arc<GrpcClient>,
    pub meta: CallMeta,
}

/// The broker's `MessagingService`.
#[derive(Debug, Clone)]
pub(crate) struct GrpcService {
    pub inner: Arc<Inner>,
}

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

impl GrpcService {
    fn begin<T>(&self, req: &Request<T>) -> Result<Caller, Failure> {
        let meta = CallMeta::read(req.metadata(), req.remote_addr())?;
        let client = self.inner.client(&meta);
        Ok(Caller { client, meta })
    }
}

impl GrpcService {
    /// The answer to a unary call of `rpc` that arrived at `started`, its
    /// latency recorded.
    fn answer<R: WithStatus>(
        &self,
        rpc: &'static str,
        started: Instant,
        r: Result<R, Failure>,
    ) -> Result<Response<R>, Status> {
        let r = r.unwrap_or_else(|f| R::failed(&f));
        self.inner
            .ctx
            .rocketmq
            .rpc
            .record_grpc(rpc, status::code_name(r.status_code()), started);
        Ok(Response::new(r))
    }
}

/// The caller of a unary call, or its answer if the metadata is refused.
macro_rules! begin_or_answer {
    ($self:ident, $req:ident, $rpc:literal, $started:ident) => {
        match $self.begin(&$req) {
            Ok(x) => x,
            Err(f) => return $self.answer($rpc, $started, Err(f)),
        }
    };
}

#[tonic::async_trait]
impl rmq_grpc::MessagingService for GrpcService {
    async fn query_route(
        &self,
        request: Request<pb::QueryRouteRequest>,
    ) -> Result<Response<pb::QueryRouteResponse>, Status> {
        let started = Instant::now();
        let _caller = begin_or_answer!(self, request, "query_route", started);
        self.answer(
            "query_route",
            started,
            route::query_route(&self.inner, request.into_inner()).await,
        )
    }

    async fn heartbeat(
        &self,
        request: Request<pb::HeartbeatRequest>,
    ) -> Result<Response<pb::HeartbeatResponse>, Status> {
        let started = Instant::now();
        let caller = begin_or_answer!(self, request, "heartbeat", started);
        let Some(settings) = caller.client.settings() else {
            return self.answer(
                "heartbeat",
                started,
                Err(Failure::new(
                    pb::Code::UnrecognizedClientType,
                    "cannot find client settings for this client",
                )),
            );
        };
        let r = telemetry::register(&self.inner, &caller, &settings).await;
        self.answer(
            "heartbeat",
            started,
            r.map(|()| pb::HeartbeatResponse {
                status: Some(status::ok()),
            }),
        )
    }

    async fn send_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Result<Response<pb::SendMessageResponse>, Status> {
        let started = Instant::now();
        let caller = begin_or_answer!(self, request, "send_message", started);
        self.answer(
            "send_message",
            started,
            send::send(&self.inner, &caller, request.into_inner()).await,
        )
    }

    async fn query_assignment(
        &self,
        request: Request<pb::QueryAssignmentRequest>,
    ) -> Result<Response<pb::QueryAssignmentResponse>, Status> {
        let started = Instant::now();
        let _caller = begin_or_answer!(self, request, "query_assignment", started);
        self.answer(
            "query_assignment",
            started,
            route::query_assignment(&self.inner, request.into_inner()).await,
        )
    }

    type ReceiveMessageStream = BoxStream<pb::ReceiveMessageResponse>;

    async fn receive_message(
        &self,
        request: Request<pb::ReceiveMessageRequest>,
    ) -> Result<Response<Self::ReceiveMessageStream>, Status> {
        let started = Instant::now();
        let items = match self.begin(&request) {
            Ok(caller) => receive::receive(&self.inner, &caller, request.into_inner()).await,
            Err(f) => vec![pb::ReceiveMessageResponse {
                content: Some(pb::receive_message_response::Content::Status(f.status())),
            }],
        };
        let code = items.first().and_then(|r| match &r.content {
            Some(pb::receive_message_response::Content::Status(s)) => Some(s.code),
            _ => None,
        });
        self.inner.ctx.rocketmq.rpc.record_grpc(
            "receive_message",
            status::code_name(code),
            started,
        );
        let stream = futures::stream::iter(items.into_iter().map(Ok));
        Ok(Response::new(Box::pin(stream)))
    }

    async fn ack_message(
        &self,
        request: Request<pb::AckMessageRequest>,
    ) -> Result<Response<pb::AckMessageResponse>, Status> {
        let started = Instant::now();
        let caller = begin_or_answer!(self, request, "ack_message", started);
        self.answer(
            "ack_message",
            started,
            ack::ack(&self.inner, &caller, request.into_inner()).await,
        )
    }

    async fn forward_message_to_dead_letter_queue(
        &self,
        request: Request<pb::ForwardMessageToDeadLetterQueueRequest>,
    ) -> Result<Response<pb::ForwardMessageToDeadLetterQueueResponse>, Status> {
        let started = Instant::now();
        let caller = begin_or_answer!(
            self,
            request,
            "forward_message_to_dead_letter_queue",
            started
        );
        self.answer(
            "forward_message_to_dead_letter_queue",
            started,
            ack::forward_to_dlq(&self.inner, &caller, request.into_inner()).await,
        )
    }

    type PullMessageStream = BoxStream<pb::PullMessageResponse>;

    async fn pull_message(
        &self,
        _request: Request<pb::PullMessageRequest>,
    ) -> Result<Response<Self::PullMessageStream>, Status> {
        Err(Status::unimplemented(
            "PullMessage is not served (Apache RocketMQ 5.3.3's proxy does not serve it either)",
        ))
    }

    async fn update_offset(
        &self,
        _request: Request<pb::UpdateOffsetRequest>,
    ) -> Result<Response<pb::UpdateOffsetResponse>, Status> {
        Err(Status::unimplemented("UpdateOffset is not served"))
    }

    async fn get_offset(
        &self,
        _request: Request<pb::GetOffsetRequest>,
    ) -> Result<Response<pb::GetOffsetResponse>, Status> {
        Err(Status::unimplemented("GetOffset is not served"))
    }

    async fn query_offset(
        &self,
        _request: Request<pb::QueryOffsetRequest>,
    ) -> Result<Response<pb::QueryOffsetResponse>, Status> {
        Err(Status::unimplemented("QueryOffset is not served"))
    }

    async fn end_transaction(
        &self,
        request: Request<pb::EndTransactionRequest>,
    ) -> Result<Response<pb::EndTransactionResponse>, Status> {
        let started = Instant::now();
        let caller = begin_or_answer!(self, request, "end_transaction", started);
        self.answer(
            "end_transaction",
            started,
            end_transaction(&self.inner, &caller, request.into_inner()).await,
        )
    }

    type TelemetryStream = BoxStream<pb::TelemetryCommand>;

    async fn telemetry(
        &self,
        request: Request<Streaming<pb::TelemetryCommand>>,
    ) -> Result<Response<Self::TelemetryStream>, Status> {
        let caller = self
            .begin(&request)
            .map_err(|f| Status::invalid_argument(f.message))?;
        let (tx, rx) = mpsc::channel(TELEMETRY_QUEUE);
        self.inner.tracker.spawn(telemetry::serve(
            Arc::clone(&self.inner),
            caller,
            request.into_inner(),
            tx,
        ));
        let stream = futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (*item, rx))
        });
        Ok(Response::new(Box::pin(stream)))
    }

    async fn notify_client_termination(
        &self,
        request: Request<pb::NotifyClientTerminationRequest>,
    ) -> Result<Response<pb::NotifyClientTerminationResponse>, Status> {
        let started = Instant::now();
        let caller = begin_or_answer!(self, request, "notify_client_termination", started);
        if caller.client.settings().is_none() {
            self.inner.clients.remove(&caller.meta.client_id);
            return self.answer(
                "notify_client_termination",
                started,
                Err(Failure::new(
                    pb::Code::UnrecognizedClientType,
                    "cannot find client settings for this client",
                )),
            );
        }
        self.inner.clients.remove(&caller.meta.client_id);
        self.answer(
            "notify_client_termination",
            started,
            Ok(pb::NotifyClientTerminationResponse {
                status: Some(status::ok()),
            }),
        )
    }

    async fn change_invisible_duration(
        &self,
        request: Request<pb::ChangeInvisibleDurationRequest>,
    ) -> Result<Response<pb::ChangeInvisibleDurationResponse>, Status> {
        let started = Instant::now();
        let caller = begin_or_answer!(self, request, "change_invisible_duration", started);
        self.answer(
            "change_invisible_duration",
            started,
            ack::change_invisible(&self.inner, &caller, request.into_inner()).await,
        )
    }

    async fn recall_message(
        &self,
        request: Request<pb::RecallMessageRequest>,
    ) -> Result<Response<pb::RecallMessageResponse>, Status> {
        let started = Instant::now();
        let caller = begin_or_answer!(self, request, "recall_message", started);
        self.answer(
            "recall_message",
            started,
            send::recall(&self.inner, &caller, request.into_inner()).await,
        )
    }
}

async fn end_transaction(
    inner: &Inner,
    caller: &Caller,
    req: pb::EndTransactionRequest,
) -> Result<pb::EndTransactionResponse, Failure> {
    let topic = inner.check_topic(&req.topic.clone().unwrap_or_default())?;
    transaction::check_id(&req.transaction_id)?;
    let Some(half) = inner.transactions.take(&topic, &req.transaction_id) else {
        return Err(Failure::new(
            pb::Code::InvalidTransactionId,
            format!(
                "cannot find transaction data for transaction id {}",
                req.transaction_id
            ),
        ));
    };
    let Some(cmd) = transaction::end_command(&req, &topic, &half) else {
        // UNSPECIFIED: kept for the check-back's answer.
        inner
            .transactions
            .remember(&topic, &req.transaction_id, half);
        return Ok(pb::EndTransactionResponse {
            status: Some(status::ok()),
        });
    };
    let resp = inner.call(caller, cmd).await?;
    if resp.code != i32::from(rmq_common::remoting::ResponseCode::Success) {
        return Err(Failure::remoting(resp.code, resp.remark.as_deref()));
    }
    Ok(pb::EndTransactionResponse {
        status: Some(status::ok()),
    })
}
