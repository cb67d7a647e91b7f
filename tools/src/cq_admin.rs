//! `rmq-admin cq ...`: the broker's consume-queue backends, serving and
//! shadow: status, verify, add-shadow, serve (the flip) and drop-shadow.
//! Each returns the text it prints.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use rmq_client::{self as sdk, Connector, SdkError};
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};
use serde_json::Value;

/// Verify reads every queue of both backends; it may take a while.
const VERIFY_TIMEOUT: Duration = Duration::from_secs(600);
/// A flip waits for both backends to reach one position (10 s each at most).
const CHANGE_TIMEOUT: Duration = Duration::from_secs(60);

async fn ask(
    conn: &Connector,
    broker: SocketAddr,
    req: RemotingCommand,
    timeout: Duration,
) -> Result<Value, SdkError> {
    let c = conn.connect(broker).await?;
    let resp = c.invoke(req, timeout).await?;
    if resp.code != i32::from(ResponseCode::Success) {
        return Err(SdkError::Refused {
            code: resp.code,
            remark: resp.remark.clone().unwrap_or_default(),
        });
    }
    Ok(serde_json::from_slice(resp.body.as_deref().unwrap_or(b"null")).unwrap_or(Value::Null))
}

/// The backends as a table: engine, role, written-to offset, bytes behind
/// the CommitLog, dropped batches, queues, failure.
pub fn status_table(rows: &Value) -> String {
    let mut out = format!(
        "{:<8} {:<8} {:>16} {:>14} {:>8} {:>8}  {}\n",
        "backend", "role", "writtenTo", "behindBytes", "dropped", "queues", "failure"
    );
    for r in rows.as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "{:<8} {:<8} {:>16} {:>14} {:>8} {:>8}  {}",
            r["backend"].as_str().unwrap_or("?"),
            r["role"].as_str().unwrap_or("?"),
            r["writtenTo"],
            r["behindBytes"],
            r["droppedBatches"],
            r["queues"],
            r["failure"].as_str().unwrap_or("-"),
        );
    }
    out
}

/// RMQ_CQ_STATUS.
pub async fn status(conn: &Connector, broker: SocketAddr) -> Result<String, SdkError> {
    let req = RemotingCommand::request(RequestCode::RmqCqStatus);
    Ok(status_table(
        &ask(conn, broker, req, sdk::DEFAULT_TIMEOUT).await?,
    ))
}

/// RMQ_CQ_ADD_SHADOW.
pub async fn add_shadow(
    conn: &Connector,
    broker: SocketAddr,
    backend: &str,
) -> Result<String, SdkError> {
    let req = sdk::request(RequestCode::RmqCqAddShadow, &[("backend", backend.into())]);
    let rows = ask(conn, broker, req, CHANGE_TIMEOUT).await?;
    Ok(format!(
        "{backend} added as the shadow; it is built from the CommitLog in the background\n{}",
        status_table(&rows)
    ))
}

/// RMQ_CQ_SERVE.
pub async fn serve(
    conn: &Connector,
    broker: SocketAddr,
    backend: &str,
) -> Result<String, SdkError> {
    let req = sdk::request(RequestCode::RmqCqServe, &[("backend", backend.into())]);
    let rows = ask(conn, broker, req, CHANGE_TIMEOUT).await?;
    Ok(format!("{backend} now serves\n{}", status_table(&rows)))
}

/// RMQ_CQ_DROP_SHADOW.
pub async fn drop_shadow(conn: &Connector, broker: SocketAddr) -> Result<String, SdkError> {
    let req = RemotingCommand::request(RequestCode::RmqCqDropShadow);
    let v = ask(conn, broker, req, CHANGE_TIMEOUT).await?;
    Ok(match v["dropped"].as_str() {
        Some(b) => format!("shadow {b} dropped and its files removed\n"),
        None => "there was no shadow\n".to_owned(),
    })
}

/// What a verify found, as the broker answered it (JSON).
pub async fn verify_report(
    conn: &Connector,
    broker: SocketAddr,
    every: u64,
    max_differences: u32,
) -> Result<Value, SdkError> {
    let req = sdk::request(
        RequestCode::RmqCqVerify,
        &[
            ("every", every.to_string()),
            ("maxDifferences", max_differences.to_string()),
        ],
    );
    ask(conn, broker, req, VERIFY_TIMEOUT).await
}

/// Differences a verify report lists, and how many in all.
fn differences(r: &Value) -> (u64, u64) {
    let listed = r["differences"].as_array().map_or(0, Vec::len) as u64;
    (listed, listed + r["moreDifferences"].as_u64().unwrap_or(0))
}

/// Whether a verify report found the backends equal.
pub fn verify_equal(r: &Value) -> bool {
    r["differences"].is_array() && r["moreDifferences"].is_u64() && differences(r).1 == 0
}

/// A verify report as text: the verdict, what was compared, and the first
/// differences.
pub fn verify_text(r: &Value) -> String {
    let (listed, total) = differences(r);
    let mut out = format!(
        "{} (serving {}, shadow {}): {} queues, {} units compared (1 in {}), below CommitLog offset {}\n",
        if verify_equal(r) { "EQUAL" } else { "DIFFERENT" },
        r["serving"].as_str().unwrap_or("?"),
        r["shadow"].as_str().unwrap_or("?"),
        r["queues"],
        r["unitsCompared"],
        r["every"],
        r["bound"],
    );
    if total > 0 {
        let _ = writeln!(out, "{total} differences; the first {listed}:");
    }
    for d in r["differences"].as_array().into_iter().flatten() {
        let at = d["offset"]
            .as_i64()
            .map_or(String::new(), |o| format!(" at offset {o}"));
        let _ = writeln!(
            out,
            "  {}:{} {}{at}: serving {} | shadow {}",
            d["topic"].as_str().unwrap_or("?"),
            d["queueId"],
            d["what"].as_str().unwrap_or("?"),
            d["serving"].as_str().unwrap_or("?"),
            d["shadow"].as_str().unwrap_or("?"),
        );
    }
    out
}
