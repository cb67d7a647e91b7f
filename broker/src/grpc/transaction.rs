//! Transactions over gRPC. A 5.x client ends a transaction by its topic,
//! message id and transaction id only, while the broker's END_TRANSACTION
//! needs where the half message is (its CommitLog and queue offsets). So,
//! as Apache's proxy does (`TransactionService`), the broker remembers
//! each half it stores for a gRPC producer, and each half it checks back
//! through a telemetry stream, until the client ends it or it expires.

use std::collections::HashMap;

use parking_lot::Mutex;
use rmq_common::constants::property;
use rmq_common::message::record::RecordView;
use rmq_common::remoting::{CheckTransactionStateRequestHeader, RemotingCommand, RequestCode};
use rmq_grpc::pb;

use super::convert::message_of_record;
use super::status::Failure;

/// How long a half is remembered without an end or a check-back.
pub(crate) const HALF_TTL_MS: i64 = 5 * 60 * 1000;
/// Most halves remembered; past it new ones are not (their end then waits
/// for the check-back, which remembers it again).
pub(crate) const MAX_HALVES: usize = 1_000_000;

/// Where a half message is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Half {
    pub commit_log_offset: i64,
    pub tran_state_table_offset: i64,
    pub expires_ms: i64,
}

/// Halves by (producer group, transaction id).
#[derive(Debug, Default)]
pub(crate) struct TransactionTable {
    halves: Mutex<HashMap<(String, String), Half>>,
}

impl TransactionTable {
    pub fn remember(&self, group: &str, transaction_id: &str, half: Half) {
        let mut m = self.halves.lock();
        if m.len() < MAX_HALVES || m.contains_key(&(group.to_owned(), transaction_id.to_owned())) {
            m.insert((group.to_owned(), transaction_id.to_owned()), half);
        }
    }

    pub fn take(&self, group: &str, transaction_id: &str) -> Option<Half> {
        self.halves
            .lock()
            .remove(&(group.to_owned(), transaction_id.to_owned()))
    }

    /// Forgets the halves expired at `now_ms`; how many.
    pub fn sweep(&self, now_ms: i64) -> usize {
        let mut m = self.halves.lock();
        let before = m.len();
        m.retain(|_, h| h.expires_ms > now_ms);
        before - m.len()
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.halves.lock().len()
    }
}

/// The END_TRANSACTION for a client's resolution of `half`; `None` for a
/// resolution that ends nothing (UNSPECIFIED: the check-back asks again).
pub(crate) fn end_command(
    req: &pb::EndTransactionRequest,
    group: &str,
    half: &Half,
) -> Option<RemotingCommand> {
    let state = match req.resolution() {
        pb::TransactionResolution::Commit => rmq_common::message::sysflag::TRANSACTION_COMMIT_TYPE,
        pb::TransactionResolution::Rollback => {
            rmq_common::message::sysflag::TRANSACTION_ROLLBACK_TYPE
        }
        pb::TransactionResolution::Unspecified => return None,
    };
    let mut cmd = RemotingCommand::request(RequestCode::EndTransaction);
    cmd.put_ext("producerGroup", group);
    cmd.put_ext("tranStateTableOffset", half.tran_state_table_offset);
    cmd.put_ext("commitLogOffset", half.commit_log_offset);
    cmd.put_ext("commitOrRollback", state);
    cmd.put_ext(
        "fromTransactionCheck",
        req.source() == pb::TransactionSource::SourceServerCheck,
    );
    cmd.put_ext("msgId", &req.message_id);
    cmd.put_ext("transactionId", &req.transaction_id);
    Some(cmd)
}

/// A check-back (`h`, the check body `view`) as a gRPC producer is told
/// it: the message under the topic of the check body, which is the half's
/// real topic (the header's `topic` is the half topic
/// `RMQ_SYS_TRANS_HALF_TOPIC`; a client shown that one ends the transaction
/// under it, where nothing is filed, and the check repeats forever), as
/// Apache's proxy does (`AbstractProxyRelayService` files it under the
/// message's topic). Also the half to remember and its producer group (the
/// topic for a gRPC producer, which has none).
pub(crate) fn recover(
    h: &CheckTransactionStateRequestHeader,
    view: &RecordView<'_>,
    now: i64,
) -> (String, Half, pb::RecoverOrphanedTransactionCommand) {
    let topic = view.topic();
    let group = view
        .property(property::PRODUCER_GROUP)
        .map_or_else(|| topic.to_owned(), |g| g.into_owned());
    let transaction_id = h
        .transaction_id
        .clone()
        .or_else(|| h.msg_id.clone())
        .unwrap_or_default();
    let half = Half {
        commit_log_offset: h.commit_log_offset,
        tran_state_table_offset: h.tran_state_table_offset,
        expires_ms: now + HALF_TTL_MS,
    };
    let command = pb::RecoverOrphanedTransactionCommand {
        message: Some(message_of_record(view, topic, None, now)),
        transaction_id,
    };
    (group, half, command)
}

/// INVALID_TRANSACTION_ID for a blank id.
pub(crate) fn check_id(id: &str) -> Result<(), Failure> {
    if id.trim().is_empty() {
        return Err(Failure::new(
            pb::Code::InvalidTransactionId,
            "transaction id cannot be empty",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn half(expires_ms: i64) -> Half {
        Half {
            commit_log_offset: 100,
            tran_state_table_offset: 3,
            expires_ms,
        }
    }

    #[test]
    fn remembered_until_taken_or_expired() {
        let t = TransactionTable::default();
        t.remember("T", "tx1", half(10));
        t.remember("T", "tx2", half(20));
        assert_eq!(t.take("T", "tx1"), Some(half(10)));
        assert_eq!(t.take("T", "tx1"), None);
        assert_eq!(t.sweep(20), 1);
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn a_check_back_shows_the_real_topic_not_the_half_topic() {
        use rmq_common::constants::TRANS_HALF_TOPIC;
        use rmq_common::message::record::{encode_record, RecordHeader};
        use rmq_common::message::MessageToStore;

        // A check body: the half under its real topic (see check_body).
        let mut m = MessageToStore::new("GrpcTxTopic", 1, "the body");
        m.properties
            .insert(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "U1");
        m.properties.insert(property::PRODUCER_GROUP, "GrpcTxTopic");
        m.properties.insert(property::REAL_TOPIC, "GrpcTxTopic");
        let header = RecordHeader {
            queue_offset: 7,
            physical_offset: 4096,
            store_timestamp: 1,
        };
        let body = encode_record(&m, header).unwrap();
        let view = RecordView::parse(&body, false).unwrap();
        let h = CheckTransactionStateRequestHeader {
            tran_state_table_offset: 7,
            commit_log_offset: 4096,
            msg_id: Some("U1".into()),
            transaction_id: Some("U1".into()),
            offset_msg_id: None,
            topic: Some(TRANS_HALF_TOPIC.into()),
            broker_name: None,
        };
        let (group, half, command) = recover(&h, &view, 10);
        let shown = command.message.unwrap().topic.unwrap().name;
        assert_eq!(
            (group.as_str(), shown.as_str()),
            ("GrpcTxTopic", "GrpcTxTopic")
        );
        assert_eq!(command.transaction_id, "U1");
        assert_eq!(
            (half.commit_log_offset, half.tran_state_table_offset),
            (4096, 7)
        );
        // Filed where the client's END_TRANSACTION (by the shown topic) looks.
        let t = TransactionTable::default();
        t.remember(&group, &command.transaction_id, half.clone());
        assert_eq!(t.take(&shown, "U1"), Some(half));
    }

    #[test]
    fn the_end_command_names_the_half() {
        let req = pb::EndTransactionRequest {
            message_id: "M".into(),
            transaction_id: "X".into(),
            resolution: pb::TransactionResolution::Rollback as i32,
            source: pb::TransactionSource::SourceServerCheck as i32,
            ..Default::default()
        };
        let cmd = end_command(&req, "T", &half(0)).unwrap();
        let ext = cmd.ext();
        assert_eq!(ext.get_str("commitOrRollback"), Some("12"));
        assert_eq!(ext.get_str("fromTransactionCheck"), Some("true"));
        assert_eq!(ext.get_str("commitLogOffset"), Some("100"));
        assert_eq!(ext.get_str("tranStateTableOffset"), Some("3"));
        let unspecified = pb::EndTransactionRequest::default();
        assert!(end_command(&unspecified, "T", &half(0)).is_none());
        assert_eq!(
            check_id(" ").unwrap_err().code,
            pb::Code::InvalidTransactionId
        );
    }
}
