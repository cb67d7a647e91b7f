//! This broker's own consume-queue backend codes (`rmq-admin cq ...`):
//! RMQ_CQ_STATUS, RMQ_CQ_VERIFY, RMQ_CQ_ADD_SHADOW, RMQ_CQ_SERVE and
//! RMQ_CQ_DROP_SHADOW. Answers are JSON bodies.

use std::sync::Arc;

use rmq_common::config::CqBackend;
use rmq_common::remoting::header::{CqBackendRequestHeader, CqVerifyRequestHeader};
use rmq_common::remoting::ResponseCode;
use serde::Serialize;

use super::{blocking, json_success, Handled, Refusal};
use rmq_store::{BackendStatus, CqAdminError, MessageStore, VerifyError, VerifyOptions};

/// One backend in a status answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusRow {
    backend: String,
    role: &'static str,
    written_to: i64,
    behind_bytes: i64,
    dropped_batches: u64,
    failure: Option<String>,
    queues: u64,
    open_files: u64,
    mapped_files: u64,
}

impl From<BackendStatus> for StatusRow {
    fn from(s: BackendStatus) -> Self {
        Self {
            backend: s.backend.to_string(),
            role: s.role.as_str(),
            written_to: s.written_to,
            behind_bytes: s.behind_bytes,
            dropped_batches: s.dropped_batches,
            failure: s.failure,
            queues: s.stats.queues,
            open_files: s.stats.open_files,
            mapped_files: s.stats.mapped_files,
        }
    }
}

/// The backends' status rows.
fn status_rows(store: &MessageStore) -> Vec<StatusRow> {
    store.cq_status().into_iter().map(Into::into).collect()
}

/// RMQ_CQ_STATUS.
pub(crate) fn status(store: &MessageStore) -> Handled {
    json_success(&status_rows(store))
}

/// RMQ_CQ_VERIFY.
pub(crate) async fn verify(store: &Arc<MessageStore>, h: CqVerifyRequestHeader) -> Handled {
    let every = h.every.unwrap_or(1);
    if every < 1 {
        return Err(Refusal::new(
            ResponseCode::SystemError,
            format!("every must be at least 1 (1 compares every unit), got {every}"),
        ));
    }
    let max_differences = h.max_differences.unwrap_or(20).max(1);
    let opts = VerifyOptions {
        every: every as u64,
        max_differences: max_differences as usize,
    };
    let store = Arc::clone(store);
    let report = blocking(move || store.verify_consume_queues(opts))
        .await?
        .map_err(|e| match e {
            VerifyError::NoShadow => Refusal::new(ResponseCode::SystemError, e.to_string()),
            VerifyError::Store(e) => {
                Refusal::new(ResponseCode::SystemError, format!("verify failed: {e}"))
            }
        })?;
    json_success(&report)
}

/// RMQ_CQ_ADD_SHADOW.
pub(crate) async fn add_shadow(store: &Arc<MessageStore>, h: CqBackendRequestHeader) -> Handled {
    let backend = backend_field(&h.backend)?;
    let s = Arc::clone(store);
    blocking(move || s.add_shadow(backend))
        .await?
        .map_err(refusal)?;
    json_success(&status_rows(store))
}

/// RMQ_CQ_SERVE.
pub(crate) async fn serve(store: &Arc<MessageStore>, h: CqBackendRequestHeader) -> Handled {
    let backend = backend_field(&h.backend)?;
    let s = Arc::clone(store);
    blocking(move || s.serve(backend)).await?.map_err(refusal)?;
    json_success(&status_rows(store))
}

/// RMQ_CQ_DROP_SHADOW.
pub(crate) async fn drop_shadow(store: &Arc<MessageStore>) -> Handled {
    let store = Arc::clone(store);
    let dropped = blocking(move || store.drop_shadow())
        .await?
        .map_err(refusal)?;
    json_success(&serde_json::json!({ "dropped": dropped.map(|b| b.to_string()) }))
}

/// The `backend` field: file or rocksdb (RocketMQ's names accepted).
fn backend_field(name: &str) -> Result<CqBackend, Refusal> {
    match name.trim().to_ascii_lowercase().as_str() {
        "file" | "default" => Ok(CqBackend::File),
        "rocksdb" | "defaultrocksdb" => Ok(CqBackend::Rocksdb),
        _ => Err(Refusal::new(
            ResponseCode::SystemError,
            format!("backend must be file or rocksdb, got {name:?}"),
        )),
    }
}

fn refusal(e: CqAdminError) -> Refusal {
    Refusal::new(ResponseCode::SystemError, e.to_string())
}
