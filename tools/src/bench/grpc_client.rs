//! A bench client of the broker's gRPC port, set up as a 5.x SDK sets one
//! up (docs/grpc.md): its own HTTP/2 connection (one tonic `Channel`), its
//! own client id in every call's `x-mq-client-id`, a Telemetry stream whose
//! first command is the client's settings and whose first answer is the
//! broker's, held open for the client's life; then Heartbeats and the calls
//! of its role.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmq_grpc::pb;
use rmq_grpc::tonic::metadata::AsciiMetadataValue;
use rmq_grpc::tonic::service::interceptor::InterceptedService;
use rmq_grpc::tonic::service::Interceptor;
use rmq_grpc::tonic::transport::{Channel, Endpoint};
use rmq_grpc::tonic::{self, Request, Status};
use rmq_grpc::MessagingServiceClient;
use tokio::sync::mpsc;

use super::grpc_ids::MessageIds;

/// Longest wait for a connection (TCP and the HTTP/2 handshake).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for a unary call or the settings answer: the SDKs' default
/// request timeout is 3 s; the bench allows more before it calls a call
/// failed, so a slow broker shows up as latency rather than errors.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The request timeout the bench's settings announce (the SDKs' default).
const ANNOUNCED_REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

/// Where gRPC load goes, and the ids its clients make.
#[derive(Debug, Clone)]
pub struct GrpcTarget {
    /// The broker's gRPC address.
    pub addr: SocketAddr,
    /// Message ids of this run (one maker, so they never repeat).
    pub ids: Arc<MessageIds>,
    /// This run's client-id nonce.
    pub nonce: u64,
}

impl GrpcTarget {
    /// A target at `addr` with fresh ids.
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            ids: Arc::new(MessageIds::for_this_process()),
            nonce: super::grpc_ids::client_nonce(),
        }
    }
}

/// Why a gRPC bench step failed.
#[derive(Debug, thiserror::Error)]
pub enum GrpcError {
    /// No connection (refused, reset during the handshake, or timed out).
    #[error("connect {addr}: {detail}")]
    Connect {
        /// Where.
        addr: SocketAddr,
        /// The transport error and its causes.
        detail: String,
    },
    /// The call failed at the gRPC level.
    #[error("{rpc}: {source}")]
    Call {
        /// The RPC.
        rpc: &'static str,
        /// What tonic said.
        #[source]
        source: Status,
    },
    /// The broker answered with a status other than OK.
    #[error("{rpc} answered {code}: {message}")]
    Refused {
        /// The RPC.
        rpc: &'static str,
        /// The `Code` name (or number if unknown).
        code: String,
        /// The status message.
        message: String,
    },
    /// No answer in time.
    #[error("{step}: no answer within {limit:?}")]
    Timeout {
        /// The step.
        step: &'static str,
        /// The limit.
        limit: Duration,
    },
    /// The telemetry stream ended before the broker answered the settings.
    #[error("telemetry stream closed before the settings answer")]
    StreamClosed,
    /// A client id that cannot be a header value.
    #[error("client id {0:?} is not a valid ASCII header value")]
    BadClientId(String),
}

impl GrpcError {
    /// Whether the connection failed (refused, reset or closed) rather
    /// than a call being answered: what a broker over its connection caps
    /// does (it closes the connections it does not admit, which the client
    /// may see only at its first call).
    pub fn is_connection_failure(&self) -> bool {
        match self {
            Self::Connect { .. } => true,
            Self::Call { source, .. } => matches!(
                source.code(),
                tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled
            ),
            _ => false,
        }
    }
}

/// The error and its causes on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        out.push_str(": ");
        out.push_str(&s.to_string());
        cur = s.source();
    }
    out
}

/// The metadata a 5.x SDK puts on every call.
#[derive(Debug, Clone)]
pub struct ClientMeta {
    id: AsciiMetadataValue,
    version: AsciiMetadataValue,
}

impl Interceptor for ClientMeta {
    fn call(&mut self, mut r: Request<()>) -> Result<Request<()>, Status> {
        let m = r.metadata_mut();
        m.insert("x-mq-client-id", self.id.clone());
        m.insert("x-mq-client-version", self.version.clone());
        m.insert("x-mq-language", AsciiMetadataValue::from_static("RUST"));
        m.insert("x-mq-protocol", AsciiMetadataValue::from_static("v2"));
        Ok(r)
    }
}

/// A connected client: every call carries its metadata.
pub type Client = MessagingServiceClient<InterceptedService<Channel, ClientMeta>>;

/// Opens one HTTP/2 connection to `addr` for client `id`.
pub async fn connect(addr: SocketAddr, id: &str) -> Result<Client, GrpcError> {
    let meta = ClientMeta {
        id: id
            .parse()
            .map_err(|_| GrpcError::BadClientId(id.to_owned()))?,
        version: AsciiMetadataValue::from_static(env!("CARGO_PKG_VERSION")),
    };
    let failed = |detail: String| GrpcError::Connect { addr, detail };
    let endpoint = Endpoint::from_shared(format!("http://{addr}"))
        .map_err(|e| failed(chain(&e)))?
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_nodelay(true);
    let channel = match tokio::time::timeout(CONNECT_TIMEOUT, endpoint.connect()).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return Err(failed(chain(&e))),
        Err(_) => {
            return Err(GrpcError::Timeout {
                step: "connect",
                limit: CONNECT_TIMEOUT,
            })
        }
    };
    Ok(MessagingServiceClient::with_interceptor(channel, meta))
}

/// A resource in the default namespace.
pub fn resource(name: &str) -> pb::Resource {
    pb::Resource {
        resource_namespace: String::new(),
        name: name.to_owned(),
    }
}

/// Protobuf duration of `d`.
pub fn duration(d: Duration) -> rmq_grpc::prost_types::Duration {
    rmq_grpc::prost_types::Duration {
        seconds: d.as_secs() as i64,
        nanos: d.subsec_nanos() as i32,
    }
}

/// Settings fields every client sends.
fn base_settings(addr: SocketAddr, kind: pb::ClientType) -> pb::Settings {
    pb::Settings {
        client_type: Some(kind as i32),
        access_point: Some(pb::Endpoints {
            scheme: if addr.is_ipv4() {
                pb::AddressScheme::IPv4
            } else {
                pb::AddressScheme::IPv6
            } as i32,
            addresses: vec![pb::Address {
                host: addr.ip().to_string(),
                port: i32::from(addr.port()),
            }],
        }),
        backoff_policy: None,
        request_timeout: Some(duration(ANNOUNCED_REQUEST_TIMEOUT)),
        pub_sub: None,
        user_agent: Some(pb::Ua {
            language: pb::Language::Rust as i32,
            version: env!("CARGO_PKG_VERSION").to_owned(),
            platform: std::env::consts::OS.to_owned(),
            hostname: "rmq-bench".to_owned(),
        }),
        metric: None,
    }
}

/// A producer's settings: the topics it will send to.
pub fn producer_settings(addr: SocketAddr, topics: &[String]) -> pb::Settings {
    pb::Settings {
        pub_sub: Some(pb::settings::PubSub::Publishing(pb::Publishing {
            topics: topics.iter().map(|t| resource(t)).collect(),
            max_body_size: 0,
            validate_message_type: true,
        })),
        ..base_settings(addr, pb::ClientType::Producer)
    }
}

/// A simple consumer's settings: its group, every topic with `*`.
pub fn consumer_settings(addr: SocketAddr, group: &str, topics: &[String]) -> pb::Settings {
    pb::Settings {
        pub_sub: Some(pb::settings::PubSub::Subscription(pb::Subscription {
            group: Some(resource(group)),
            subscriptions: topics
                .iter()
                .map(|t| pb::SubscriptionEntry {
                    topic: Some(resource(t)),
                    expression: Some(pb::FilterExpression {
                        r#type: pb::FilterType::Tag as i32,
                        expression: "*".into(),
                    }),
                })
                .collect(),
            fifo: None,
            receive_batch_size: None,
            long_polling_timeout: None,
        })),
        ..base_settings(addr, pb::ClientType::SimpleConsumer)
    }
}

/// Ok, or the status as an error.
pub fn check(rpc: &'static str, status: Option<&pb::Status>) -> Result<(), GrpcError> {
    let Some(s) = status else {
        return Err(GrpcError::Refused {
            rpc,
            code: "no status".into(),
            message: String::new(),
        });
    };
    if s.code == pb::Code::Ok as i32 {
        return Ok(());
    }
    Err(GrpcError::Refused {
        rpc,
        code: code_name(s.code),
        message: s.message.clone(),
    })
}

/// A `Code`'s name, or its number.
pub fn code_name(code: i32) -> String {
    pb::Code::try_from(code).map_or_else(|_| code.to_string(), |c| c.as_str_name().to_owned())
}

/// Runs a unary call within [`REQUEST_TIMEOUT`].
pub async fn unary<T>(
    rpc: &'static str,
    call: impl std::future::Future<Output = Result<tonic::Response<T>, Status>>,
) -> Result<T, GrpcError> {
    match tokio::time::timeout(REQUEST_TIMEOUT, call).await {
        Ok(Ok(r)) => Ok(r.into_inner()),
        Ok(Err(source)) => Err(GrpcError::Call { rpc, source }),
        Err(_) => Err(GrpcError::Timeout {
            step: rpc,
            limit: REQUEST_TIMEOUT,
        }),
    }
}

/// An open Telemetry stream: held for the client's life (dropping it ends
/// the stream, as a closing SDK does).
#[derive(Debug)]
pub struct Telemetry {
    _outbound: mpsc::Sender<pb::TelemetryCommand>,
    _inbound: tonic::Streaming<pb::TelemetryCommand>,
}

/// Opens the Telemetry stream, sends `settings` and waits for the broker's
/// answer (its settings for this client).
pub async fn open_telemetry(
    client: &mut Client,
    settings: pb::Settings,
) -> Result<(Telemetry, pb::Settings), GrpcError> {
    let (tx, rx) = mpsc::channel(4);
    let first = pb::TelemetryCommand {
        status: None,
        command: Some(pb::telemetry_command::Command::Settings(settings)),
    };
    // The receiver is alive in `rx`, so the send cannot fail.
    let _ = tx.send(first).await;
    let outbound =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) });
    let mut inbound = unary("telemetry", client.telemetry(outbound)).await?;
    let answer = match tokio::time::timeout(REQUEST_TIMEOUT, inbound.message()).await {
        Ok(Ok(Some(a))) => a,
        Ok(Ok(None)) => return Err(GrpcError::StreamClosed),
        Ok(Err(source)) => {
            return Err(GrpcError::Call {
                rpc: "telemetry",
                source,
            })
        }
        Err(_) => {
            return Err(GrpcError::Timeout {
                step: "telemetry settings",
                limit: REQUEST_TIMEOUT,
            })
        }
    };
    check("telemetry", answer.status.as_ref())?;
    let Some(pb::telemetry_command::Command::Settings(s)) = answer.command else {
        return Err(GrpcError::Refused {
            rpc: "telemetry",
            code: "OK".into(),
            message: "the first answer is not settings".into(),
        });
    };
    Ok((
        Telemetry {
            _outbound: tx,
            _inbound: inbound,
        },
        s,
    ))
}

/// One Heartbeat, as the SDKs send one periodically.
pub async fn heartbeat(
    client: &mut Client,
    group: Option<&str>,
    kind: pb::ClientType,
) -> Result<(), GrpcError> {
    let req = pb::HeartbeatRequest {
        group: group.map(resource),
        client_type: kind as i32,
    };
    let r = unary("heartbeat", client.heartbeat(req)).await?;
    check("heartbeat", r.status.as_ref())
}

/// Tells the broker the client is going (as a closing SDK does); failures
/// are of no interest to a bench on its way out.
pub async fn terminate(client: &mut Client, group: Option<&str>) {
    let req = pb::NotifyClientTerminationRequest {
        group: group.map(resource),
    };
    let _ = unary(
        "notify_client_termination",
        client.notify_client_termination(req),
    )
    .await;
}

/// A client that has sent its settings and one Heartbeat.
#[derive(Debug)]
pub struct Session {
    /// Its calls.
    pub client: Client,
    /// Its telemetry stream.
    pub telemetry: Telemetry,
}

/// Connects client `id`, opens its Telemetry with `settings` and sends one
/// Heartbeat (naming `group` for a consumer).
pub async fn open_session(
    addr: SocketAddr,
    id: &str,
    settings: pb::Settings,
    group: Option<&str>,
) -> Result<Session, GrpcError> {
    let kind = settings.client_type();
    let mut client = connect(addr, id).await?;
    let (telemetry, _) = open_telemetry(&mut client, settings).await?;
    heartbeat(&mut client, group, kind).await?;
    Ok(Session { client, telemetry })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_connections_are_told_from_answers() {
        let call = |code| GrpcError::Call {
            rpc: "telemetry",
            source: Status::new(code, "x"),
        };
        assert!(call(tonic::Code::Unavailable).is_connection_failure());
        assert!(call(tonic::Code::Cancelled).is_connection_failure());
        assert!(!call(tonic::Code::InvalidArgument).is_connection_failure());
        let refused = GrpcError::Refused {
            rpc: "heartbeat",
            code: "FORBIDDEN".into(),
            message: String::new(),
        };
        assert!(!refused.is_connection_failure());
    }

    #[test]
    fn statuses_other_than_ok_are_errors_named_by_code() {
        let ok = pb::Status {
            code: pb::Code::Ok as i32,
            message: "OK".into(),
        };
        assert!(check("heartbeat", Some(&ok)).is_ok());
        assert!(check("heartbeat", None).is_err());
        let busy = pb::Status {
            code: pb::Code::TooManyRequests as i32,
            message: "busy".into(),
        };
        let e = check("send_message", Some(&busy)).unwrap_err().to_string();
        assert_eq!(e, "send_message answered TOO_MANY_REQUESTS: busy");
        assert_eq!(code_name(123_456), "123456");
    }
}
