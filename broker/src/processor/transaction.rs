//! END_TRANSACTION: the producer's commit, rollback or "unknown" for a half
//! message. Clients send it oneway, so a refusal is also logged.

use std::sync::Arc;

use rmq_common::remoting::{EndTransactionRequestHeader, ResponseCode};

use super::parts::SendPath;
use super::{blocking, success, Handled, Refusal};
use crate::service::transaction::{EndError, EndOutcome};

/// END_TRANSACTION.
pub(crate) async fn end(path: &Arc<SendPath>, h: EndTransactionRequestHeader) -> Handled {
    let (tx, host) = (Arc::clone(&path.transactions), path.store_host);
    let header = h.clone();
    match blocking(move || tx.end(&header, host)).await? {
        Ok(EndOutcome::Committed(a, half)) => {
            tracing::debug!(group = %h.producer_group, half = h.tran_state_table_offset,
                real_offset = a.phy_offset, from_check = h.from_transaction_check, "transaction committed");
            let now = path.store.clock().now_ms();
            path.rocketmq
                .outcomes
                .committed(&half.topic, half.born_ms, now);
            Ok(success())
        }
        Ok(EndOutcome::RolledBack(half)) => {
            tracing::debug!(group = %h.producer_group, half = h.tran_state_table_offset,
                from_check = h.from_transaction_check, "transaction rolled back");
            path.rocketmq.outcomes.rolled_back(&half.topic);
            Ok(success())
        }
        Ok(EndOutcome::Unknown) => Ok(success()),
        Err(EndError::Store(e)) => Err(e.into()),
        Err(e) => {
            tracing::warn!(group = %h.producer_group, half = h.tran_state_table_offset,
                commit_log_offset = h.commit_log_offset, reason = %e, "END_TRANSACTION refused");
            Err(Refusal::new(ResponseCode::SystemError, e.to_string()))
        }
    }
}
