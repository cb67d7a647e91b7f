//! Pins the `MessagingService` paths: each published method path must reach
//! the generated server's handler of that rpc. A renamed rpc (or a changed
//! package or service name) fails here.

use tonic::codegen::http::{self, Request as HttpRequest};
use tonic::codegen::tokio_stream::Empty;
use tonic::codegen::Service as _;
use tonic::server::NamedService;
use tonic::{Code, Request, Response, Status, Streaming};

use crate::pb::*;
use crate::{MessagingService, MessagingServiceServer, SERVICE_NAME};

/// The published rpcs of `apache.rocketmq.v2.MessagingService` (v2.0.4).
const METHODS: [&str; 16] = [
    "QueryRoute",
    "Heartbeat",
    "SendMessage",
    "QueryAssignment",
    "ReceiveMessage",
    "AckMessage",
    "ForwardMessageToDeadLetterQueue",
    "PullMessage",
    "UpdateOffset",
    "GetOffset",
    "QueryOffset",
    "EndTransaction",
    "Telemetry",
    "NotifyClientTermination",
    "ChangeInvisibleDuration",
    "RecallMessage",
];

/// Answers every rpc with an error naming the rpc, so a test can see which
/// handler a path reached.
struct Echo;

fn reached<T>(rpc: &str) -> Result<Response<T>, Status> {
    Err(Status::unavailable(rpc))
}

#[tonic::async_trait]
impl MessagingService for Echo {
    type ReceiveMessageStream = Empty<Result<ReceiveMessageResponse, Status>>;
    type PullMessageStream = Empty<Result<PullMessageResponse, Status>>;
    type TelemetryStream = Empty<Result<TelemetryCommand, Status>>;

    async fn query_route(
        &self,
        _: Request<QueryRouteRequest>,
    ) -> Result<Response<QueryRouteResponse>, Status> {
        reached("QueryRoute")
    }
    async fn heartbeat(
        &self,
        _: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
        reached("Heartbeat")
    }
    async fn send_message(
        &self,
        _: Request<SendMessageRequest>,
    ) -> Result<Response<SendMessageResponse>, Status> {
        reached("SendMessage")
    }
    async fn query_assignment(
        &self,
        _: Request<QueryAssignmentRequest>,
    ) -> Result<Response<QueryAssignmentResponse>, Status> {
        reached("QueryAssignment")
    }
    async fn receive_message(
        &self,
        _: Request<ReceiveMessageRequest>,
    ) -> Result<Response<Self::ReceiveMessageStream>, Status> {
        reached("ReceiveMessage")
    }
    async fn ack_message(
        &self,
        _: Request<AckMessageRequest>,
    ) -> Result<Response<AckMessageResponse>, Status> {
        reached("AckMessage")
    }
    async fn forward_message_to_dead_letter_queue(
        &self,
        _: Request<ForwardMessageToDeadLetterQueueRequest>,
    ) -> Result<Response<ForwardMessageToDeadLetterQueueResponse>, Status> {
        reached("ForwardMessageToDeadLetterQueue")
    }
    async fn pull_message(
        &self,
        _: Request<PullMessageRequest>,
    ) -> Result<Response<Self::PullMessageStream>, Status> {
        reached("PullMessage")
    }
    async fn update_offset(
        &self,
        _: Request<UpdateOffsetRequest>,
    ) -> Result<Response<UpdateOffsetResponse>, Status> {
        reached("UpdateOffset")
    }
    async fn get_offset(
        &self,
        _: Request<GetOffsetRequest>,
    ) -> Result<Response<GetOffsetResponse>, Status> {
        reached("GetOffset")
    }
    async fn query_offset(
        &self,
        _: Request<QueryOffsetRequest>,
    ) -> Result<Response<QueryOffsetResponse>, Status> {
        reached("QueryOffset")
    }
    async fn end_transaction(
        &self,
        _: Request<EndTransactionRequest>,
    ) -> Result<Response<EndTransactionResponse>, Status> {
        reached("EndTransaction")
    }
    async fn telemetry(
        &self,
        _: Request<Streaming<TelemetryCommand>>,
    ) -> Result<Response<Self::TelemetryStream>, Status> {
        reached("Telemetry")
    }
    async fn notify_client_termination(
        &self,
        _: Request<NotifyClientTerminationRequest>,
    ) -> Result<Response<NotifyClientTerminationResponse>, Status> {
        reached("NotifyClientTermination")
    }
    async fn change_invisible_duration(
        &self,
        _: Request<ChangeInvisibleDurationRequest>,
    ) -> Result<Response<ChangeInvisibleDurationResponse>, Status> {
        reached("ChangeInvisibleDuration")
    }
    async fn recall_message(
        &self,
        _: Request<RecallMessageRequest>,
    ) -> Result<Response<RecallMessageResponse>, Status> {
        reached("RecallMessage")
    }
}

/// Posts one empty request message to `path` and returns the answer's
/// `grpc-status` and `grpc-message` headers.
async fn post(path: &str) -> (String, String) {
    // A gRPC frame holding an empty message is five zero bytes (not
    // compressed, length 0); every request type decodes it to its default.
    let body = String::from("\0\0\0\0\0");
    let request = HttpRequest::builder()
        .method(http::Method::POST)
        .uri(format!("http://127.0.0.1{path}"))
        .header(http::header::CONTENT_TYPE, "application/grpc")
        .body(body)
        .unwrap();
    let response = MessagingServiceServer::new(Echo)
        .call(request)
        .await
        .unwrap();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default()
    };
    (header("grpc-status"), header("grpc-message"))
}

#[test]
fn service_name_is_the_published_one() {
    assert_eq!(SERVICE_NAME, "apache.rocketmq.v2.MessagingService");
    assert_eq!(
        <MessagingServiceServer<Echo> as NamedService>::NAME,
        SERVICE_NAME
    );
}

#[tokio::test]
async fn every_published_path_reaches_its_handler() {
    let unavailable = (Code::Unavailable as i32).to_string();
    for method in METHODS {
        let path = format!("/apache.rocketmq.v2.MessagingService/{method}");
        assert_eq!(
            post(&path).await,
            (unavailable.clone(), method.to_string()),
            "{path}"
        );
    }
}

#[tokio::test]
async fn an_unknown_path_is_unimplemented() {
    let unimplemented = (Code::Unimplemented as i32).to_string();
    for path in [
        "/apache.rocketmq.v2.MessagingService/Recall",
        "/apache.rocketmq.v1.MessagingService/SendMessage",
        "/apache.rocketmq.v2.AdminService/SendMessage",
    ] {
        assert_eq!(post(path).await.0, unimplemented, "{path}");
    }
}
