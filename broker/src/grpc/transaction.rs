//! Transactions over gRPC. A 5.x client ends a transaction by its topic,
//! message id and transaction id only, while the broker's END_TRANSACTION
//! needs where the half message is (its CommitLog and queue offsets). So,
//! as Apache's proxy does (`TransactionService`), the broker remembers
//! each half it stores for a gRPC producer, and each half it checks back
//! through a telemetry stream, until the client ends it or it expires.

use std::collections::HashMap;

use parking_lot::Mutex;
use rmq_common::remoting::{RemotingCommand, RequestCode};
use rmq_grpc::pb;

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
