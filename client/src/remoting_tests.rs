//! Tests of the remoting client against tiny in-process servers on
//! 127.0.0.1 port 0.

use super::*;
use futures::SinkExt;
use rmq_common::remoting::{RequestCode, ResponseCode, SerializeType};
use std::future::Future;
use tokio::net::TcpListener;
use tokio_util::codec::Framed;

/// Generous bound for calls that are expected to succeed.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// The bound for the call that is expected to time out.
const SHORT_TIMEOUT: Duration = Duration::from_millis(150);

type Conn = Framed<TcpStream, RemotingCodec>;

/// A one-connection server on 127.0.0.1:0 running `serve` on the
/// accepted connection.
async fn server<F, Fut>(serve: F) -> SocketAddr
where
    F: FnOnce(Conn) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        serve(Framed::new(stream, RemotingCodec::default())).await;
    });
    addr
}

fn echo(req: &RemotingCommand) -> RemotingCommand {
    let mut resp = RemotingCommand::response_to(
        req,
        ResponseCode::Success,
        Some(format!("echo {}", req.code)),
    );
    resp.ext_fields = req.ext_fields.clone();
    resp.body = req.body.clone();
    resp
}

async fn echo_server(mut conn: Conn) {
    while let Some(Ok(req)) = conn.next().await {
        if !req.is_oneway() {
            conn.send(echo(&req)).await.unwrap();
        }
    }
}

#[tokio::test]
async fn remoting_invoke_round_trip() {
    let addr = server(echo_server).await;
    let client = RemotingClient::connect(addr).await.unwrap();
    for serialize_type in [SerializeType::Json, SerializeType::RocketMq] {
        let mut req = RemotingCommand::request(RequestCode::GetRouteInfoByTopic)
            .with_serialize_type(serialize_type)
            .with_body(&b"payload"[..]);
        req.put_ext("topic", "TopicTest");
        let resp = client.invoke(req, CALL_TIMEOUT).await.unwrap();
        assert!(resp.is_response());
        assert_eq!(resp.code, ResponseCode::Success.code());
        assert_eq!(resp.serialize_type, serialize_type);
        assert_eq!(resp.remark.as_deref(), Some("echo 105"));
        assert_eq!(resp.ext().req_str("topic"), Ok("TopicTest"));
        assert_eq!(resp.body.as_deref(), Some(&b"payload"[..]));
    }
    assert_eq!(client.pending_len(), 0);
    client.close().await;
}

#[tokio::test]
async fn remoting_concurrent_invokes_matched_out_of_order() {
    const N: usize = 16;
    let addr = server(|mut conn: Conn| async move {
        let mut reqs = Vec::new();
        while reqs.len() < N {
            reqs.push(conn.next().await.unwrap().unwrap());
        }
        // Answer newest first.
        for req in reqs.iter().rev() {
            conn.send(echo(req)).await.unwrap();
        }
        echo_server(conn).await;
    })
    .await;
    let client = RemotingClient::connect(addr).await.unwrap();
    let calls = (0..N).map(|i| {
        let req = RemotingCommand::request(RequestCode::PullMessage)
            .with_body(format!("req-{i}").into_bytes());
        let client = &client;
        async move { (i, client.invoke(req, CALL_TIMEOUT).await) }
    });
    let results = futures::future::join_all(calls).await;
    let mut opaques = std::collections::HashSet::new();
    for (i, result) in results {
        let resp = result.unwrap();
        assert_eq!(resp.body.as_deref(), Some(format!("req-{i}").as_bytes()));
        assert!(opaques.insert(resp.opaque), "opaques are distinct");
    }
    assert_eq!(client.pending_len(), 0);
}

#[tokio::test]
async fn remoting_invoke_times_out_and_connection_stays_usable() {
    // Ignores the first request, echoes the rest.
    let addr = server(|mut conn: Conn| async move {
        let _ignored = conn.next().await.unwrap().unwrap();
        echo_server(conn).await;
    })
    .await;
    let client = RemotingClient::connect(addr).await.unwrap();
    let err = client
        .invoke(
            RemotingCommand::request(RequestCode::HeartBeat),
            SHORT_TIMEOUT,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::Timeout {
                code: 34,
                timeout: SHORT_TIMEOUT,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(client.pending_len(), 0, "timed-out waiter is removed");
    let resp = client
        .invoke(
            RemotingCommand::request(RequestCode::HeartBeat),
            CALL_TIMEOUT,
        )
        .await
        .unwrap();
    assert_eq!(resp.code, 0);
    assert!(!client.is_closed());
}

#[tokio::test]
async fn remoting_server_request_reaches_handler() {
    let (reply_tx, reply_rx) = oneshot::channel();
    let addr = server(|mut conn: Conn| async move {
        let mut notify = RemotingCommand::request(RequestCode::NotifyConsumerIdsChanged);
        notify.put_ext("consumerGroup", "CG");
        notify.mark_oneway();
        conn.send(notify).await.unwrap();
        let mut check = RemotingCommand::request(RequestCode::CheckTransactionState)
            .with_serialize_type(SerializeType::RocketMq);
        check.opaque = 500;
        conn.send(check).await.unwrap();
        // The client answers the check.
        let reply = conn.next().await.unwrap().unwrap();
        reply_tx.send(reply).unwrap();
        echo_server(conn).await;
    })
    .await;
    let (handler, mut requests) = mpsc::channel(8);
    let client = RemotingClient::connect_with_handler(addr, handler)
        .await
        .unwrap();

    let notify = tokio::time::timeout(CALL_TIMEOUT, requests.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(notify.code, RequestCode::NotifyConsumerIdsChanged.code());
    assert!(notify.is_oneway() && !notify.is_response());
    assert_eq!(notify.ext().req_str("consumerGroup"), Ok("CG"));

    let check = tokio::time::timeout(CALL_TIMEOUT, requests.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(check.code, RequestCode::CheckTransactionState.code());
    client
        .send_response(RemotingCommand::response_to(
            &check,
            ResponseCode::Success,
            None,
        ))
        .await
        .unwrap();
    let reply = tokio::time::timeout(CALL_TIMEOUT, reply_rx)
        .await
        .unwrap()
        .unwrap();
    assert!(reply.is_response());
    assert_eq!(reply.opaque, 500);
    assert_eq!(reply.serialize_type, SerializeType::RocketMq);

    // Requests and responses share the connection without mixing up.
    let resp = client
        .invoke(
            RemotingCommand::request(RequestCode::HeartBeat),
            CALL_TIMEOUT,
        )
        .await
        .unwrap();
    assert_eq!(resp.remark.as_deref(), Some("echo 34"));
}

#[tokio::test]
async fn remoting_server_close_fails_pending_invokes() {
    let addr = server(|mut conn: Conn| async move {
        let mut seen = 0;
        while seen < 2 {
            conn.next().await.unwrap().unwrap();
            seen += 1;
        }
        drop(conn);
    })
    .await;
    let client = RemotingClient::connect(addr).await.unwrap();
    let (a, b) = tokio::join!(
        client.invoke(
            RemotingCommand::request(RequestCode::PullMessage),
            CALL_TIMEOUT
        ),
        client.invoke(
            RemotingCommand::request(RequestCode::PullMessage),
            CALL_TIMEOUT
        ),
    );
    for result in [a, b] {
        let err = result.unwrap_err();
        assert!(matches!(err, ClientError::ConnectionClosed { .. }), "{err}");
    }
    assert!(client.is_closed());
    let err = client
        .invoke(
            RemotingCommand::request(RequestCode::HeartBeat),
            CALL_TIMEOUT,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::ConnectionClosed { .. }), "{err}");
    let err = client
        .invoke_oneway(RemotingCommand::request(RequestCode::HeartBeat))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::ConnectionClosed { .. }), "{err}");
    client.close().await;
}

#[tokio::test]
async fn remoting_oneway_and_close() {
    let (req_tx, req_rx) = oneshot::channel();
    let (eof_tx, eof_rx) = oneshot::channel();
    let addr = server(|mut conn: Conn| async move {
        req_tx.send(conn.next().await.unwrap().unwrap()).unwrap();
        eof_tx.send(conn.next().await.is_none()).unwrap();
    })
    .await;
    let client = RemotingClient::connect(addr).await.unwrap();
    client
        .invoke_oneway(RemotingCommand::request(RequestCode::UnregisterClient))
        .await
        .unwrap();
    let req = tokio::time::timeout(CALL_TIMEOUT, req_rx)
        .await
        .unwrap()
        .unwrap();
    assert!(req.is_oneway());
    assert_eq!(req.code, RequestCode::UnregisterClient.code());

    client.close().await;
    assert!(client.is_closed());
    let eof = tokio::time::timeout(CALL_TIMEOUT, eof_rx)
        .await
        .unwrap()
        .unwrap();
    assert!(eof, "server sees EOF after close");
}

#[tokio::test]
async fn remoting_connect_refused_is_io_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let err = RemotingClient::connect(addr).await.err().unwrap();
    assert!(matches!(err, ClientError::Io { .. }), "{err}");
    assert!(std::error::Error::source(&err).is_some());
}

#[tokio::test]
async fn remoting_unencodable_request_is_codec_error() {
    let addr = server(echo_server).await;
    let client = RemotingClient::connect(addr).await.unwrap();
    let req = RemotingCommand::request(200_050).with_serialize_type(SerializeType::RocketMq);
    let err = client.invoke(req, CALL_TIMEOUT).await.unwrap_err();
    assert!(matches!(err, ClientError::Codec { .. }), "{err}");
    assert_eq!(client.pending_len(), 0);
}
