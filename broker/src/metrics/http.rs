//! The `/metrics` endpoint: a minimal HTTP/1.1 responder (GET only, one
//! request per connection), enough for Prometheus and curl.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use rmq_remoting::server::accept_until;

/// Longest a client may take to send its request head.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest request head read.
const MAX_HEAD: usize = 8 * 1024;

/// Serves `render()` at `GET /metrics` until `cancel`.
pub async fn serve_metrics(
    listener: TcpListener,
    render: Arc<dyn Fn() -> String + Send + Sync>,
    cancel: CancellationToken,
    tracker: TaskTracker,
) {
    accept_until(&listener, &cancel, "metrics", |stream, _| {
        let render = Arc::clone(&render);
        tracker.spawn(async move {
            if let Err(e) = answer(stream, render).await {
                tracing::debug!(error = %e, "metrics request failed");
            }
        });
    })
    .await;
}

async fn answer(
    mut stream: TcpStream,
    render: Arc<dyn Fn() -> String + Send + Sync>,
) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    let read = tokio::time::timeout(READ_TIMEOUT, async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        Ok::<(), std::io::Error>(())
    })
    .await;
    if read.is_err() {
        return Ok(());
    }
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (status, content_type, body) = if method != "GET" {
        (
            "405 Method Not Allowed",
            "text/plain",
            "GET only\n".to_owned(),
        )
    } else if path == "/metrics" || path.starts_with("/metrics?") {
        let render = Arc::clone(&render);
        let body = tokio::task::spawn_blocking(move || render())
            .await
            .unwrap_or_default();
        ("200 OK", "text/plain; version=0.0.4; charset=utf-8", body)
    } else {
        ("404 Not Found", "text/plain", "try /metrics\n".to_owned())
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}
