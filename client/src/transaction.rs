//! A transactional producer: sends a half message, runs the local
//! transaction, ends it with commit/rollback/unknown, and answers the
//! broker's check-backs (CHECK_TRANSACTION_STATE) with a callback.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rmq_common::constants::property;
use rmq_common::message::record::RecordView;
use rmq_common::message::{decode_offset_msg_id, sysflag, MessageToStore};
use rmq_common::remoting::{
    end_state, CheckTransactionStateRequestHeader, EndTransactionRequestHeader, RemotingCommand,
    RequestCode, ResponseCode, SendMessageRequestHeader, SendMessageResponseHeader,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::calls::{call, refused, OutMessage, SdkError, SendResult, DEFAULT_TIMEOUT};
use crate::remoting::RemotingClient;

/// What the local transaction (or a check) decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalTxState {
    /// Deliver the message.
    Commit,
    /// Drop it.
    Rollback,
    /// Not decided yet: the broker will check back.
    Unknown,
}

impl LocalTxState {
    /// The `commitOrRollback` code.
    pub fn code(self) -> i32 {
        match self {
            Self::Commit => end_state::COMMIT,
            Self::Rollback => end_state::ROLLBACK,
            Self::Unknown => end_state::UNKNOWN,
        }
    }
}

/// A half message the broker asks about.
#[derive(Debug, Clone)]
pub struct CheckedHalf {
    /// The transaction id (the half's UNIQ_KEY).
    pub transaction_id: String,
    /// The half as stored (topic is the half topic; REAL_TOPIC says where
    /// it goes).
    pub message: MessageToStore,
    /// Checks so far, this one included.
    pub check_times: i32,
}

/// Answers a check-back.
pub type CheckCallback = Arc<dyn Fn(&CheckedHalf) -> LocalTxState + Send + Sync>;

/// A producer of one group on one broker connection.
pub struct TransactionProducer {
    client: Arc<RemotingClient>,
    group: String,
    checker: JoinHandle<()>,
}

impl std::fmt::Debug for TransactionProducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransactionProducer")
            .field("group", &self.group)
            .finish_non_exhaustive()
    }
}

/// Makes client-side unique ids (UNIQ_KEY) for half messages.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

fn new_uniq_key() -> String {
    format!(
        "{:016X}{:08X}{:08X}",
        rmq_common::time::now_ms(),
        std::process::id(),
        NEXT_ID.fetch_add(1, Ordering::Relaxed)
    )
}

impl TransactionProducer {
    /// Connects, registers the group with a heartbeat, and answers checks
    /// with `check`.
    pub async fn connect(
        addr: SocketAddr,
        group: &str,
        client_id: &str,
        check: CheckCallback,
    ) -> Result<Self, SdkError> {
        let (tx, rx) = mpsc::channel(64);
        let client = Arc::new(RemotingClient::connect_with_handler(addr, tx).await?);
        let body = serde_json::json!({
            "clientID": client_id,
            "producerDataSet": [{"groupName": group}],
            "consumerDataSet": [],
        });
        call(
            &client,
            RemotingCommand::request(RequestCode::HeartBeat)
                .with_body(body.to_string().into_bytes()),
        )
        .await?;
        let checker = tokio::spawn(answer_checks(
            rx,
            Arc::clone(&client),
            group.to_owned(),
            check,
        ));
        Ok(Self {
            client,
            group: group.to_owned(),
            checker,
        })
    }

    /// Sends a half message to `topic`/`queue_id`, runs `local` on the send
    /// result, and ends the transaction with its answer. Returns the send
    /// result and the answer.
    pub async fn send(
        &self,
        topic: &str,
        queue_id: i32,
        msg: &OutMessage,
        local: impl FnOnce(&SendResult) -> LocalTxState,
    ) -> Result<(SendResult, LocalTxState), SdkError> {
        let (result, uniq) = self.send_half(topic, queue_id, msg).await?;
        let state = local(&result);
        let (_, commit_log_offset) =
            decode_offset_msg_id(&result.msg_id).map_err(|e| SdkError::BadAnswer(e.to_string()))?;
        let header = EndTransactionRequestHeader {
            producer_group: self.group.clone(),
            tran_state_table_offset: result.queue_offset,
            commit_log_offset,
            commit_or_rollback: state.code(),
            from_transaction_check: false,
            msg_id: uniq.clone(),
            transaction_id: Some(uniq),
        };
        self.end(&header).await?;
        Ok((result, state))
    }

    /// Sends only the half; returns the send result and the transaction id.
    pub async fn send_half(
        &self,
        topic: &str,
        queue_id: i32,
        msg: &OutMessage,
    ) -> Result<(SendResult, String), SdkError> {
        let uniq = new_uniq_key();
        let mut props = msg.properties();
        props.insert(property::TRANSACTION_PREPARED, "true");
        props.insert(property::PRODUCER_GROUP, self.group.as_str());
        props.insert(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, uniq.as_str());
        let props = props
            .encode()
            .map_err(|e| SdkError::BadAnswer(e.to_string()))?;
        let header = SendMessageRequestHeader {
            producer_group: self.group.clone(),
            topic: topic.to_owned(),
            default_topic: rmq_common::constants::AUTO_CREATE_TOPIC.to_owned(),
            default_topic_queue_nums: 4,
            queue_id,
            sys_flag: sysflag::TRANSACTION_PREPARED_TYPE,
            born_timestamp: rmq_common::time::now_ms(),
            flag: 0,
            properties: Some(String::from_utf8_lossy(&props).into_owned()),
            reconsume_times: 0,
            unit_mode: false,
            max_reconsume_times: None,
            batch: false,
            broker_name: None,
        };
        let req = RemotingCommand::request(RequestCode::SendMessageV2)
            .with_ext_fields(header.to_ext_v2())
            .with_body(msg.body.clone());
        let resp = self.client.invoke(req, DEFAULT_TIMEOUT).await?;
        if resp.code != i32::from(ResponseCode::Success) {
            return Err(refused(&resp));
        }
        let h = SendMessageResponseHeader::from_ext(&resp.ext())
            .map_err(|e| SdkError::BadAnswer(e.to_string()))?;
        if h.transaction_id.as_deref() != Some(uniq.as_str()) {
            return Err(SdkError::BadAnswer(format!(
                "send answer carries transactionId {:?}, not {uniq}",
                h.transaction_id
            )));
        }
        Ok((
            SendResult {
                code: resp.code,
                msg_id: h.msg_id,
                queue_id: h.queue_id,
                queue_offset: h.queue_offset,
            },
            uniq,
        ))
    }

    /// Sends END_TRANSACTION and waits for the answer (real clients send it
    /// oneway; waiting surfaces refusals).
    pub async fn end(&self, header: &EndTransactionRequestHeader) -> Result<(), SdkError> {
        let req =
            RemotingCommand::request(RequestCode::EndTransaction).with_ext_fields(header.to_ext());
        call(&self.client, req).await.map(|_| ())
    }

    /// The connection (for raw requests in tests).
    pub fn client(&self) -> &RemotingClient {
        &self.client
    }

    /// Closes the connection; the broker forgets this producer.
    pub async fn close(self) {
        self.client.close().await;
        self.checker.abort();
    }
}

/// Answers every CHECK_TRANSACTION_STATE with an END_TRANSACTION marked
/// `fromTransactionCheck`, naming the offsets of the half in the body.
async fn answer_checks(
    mut rx: mpsc::Receiver<RemotingCommand>,
    client: Arc<RemotingClient>,
    group: String,
    check: CheckCallback,
) {
    while let Some(cmd) = rx.recv().await {
        if cmd.code != i32::from(RequestCode::CheckTransactionState) {
            continue;
        }
        let Ok(h) = CheckTransactionStateRequestHeader::from_ext(&cmd.ext()) else {
            continue;
        };
        let body = cmd.body.as_deref().unwrap_or_default();
        let Ok(view) = RecordView::parse(body, true) else {
            continue;
        };
        let uniq = view
            .property(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
            .map(|u| u.into_owned())
            .or(h.msg_id.clone())
            .unwrap_or_default();
        let half = CheckedHalf {
            transaction_id: h.transaction_id.clone().unwrap_or_else(|| uniq.clone()),
            message: view.to_message(),
            check_times: view
                .property(property::TRANSACTION_CHECK_TIMES)
                .and_then(|t| t.parse().ok())
                .unwrap_or(0),
        };
        let state = check(&half);
        let end = EndTransactionRequestHeader {
            producer_group: group.clone(),
            tran_state_table_offset: view.queue_offset(),
            commit_log_offset: view.physical_offset(),
            commit_or_rollback: state.code(),
            from_transaction_check: true,
            msg_id: uniq,
            transaction_id: h.transaction_id,
        };
        let req =
            RemotingCommand::request(RequestCode::EndTransaction).with_ext_fields(end.to_ext());
        if let Err(e) = client.invoke_oneway(req).await {
            tracing::debug!(error = %e, "could not answer a transaction check");
        }
    }
}
