//! Headers of `END_TRANSACTION` (37, producer to broker) and
//! `CHECK_TRANSACTION_STATE` (39, broker to producer).

use std::collections::BTreeMap;

use super::{put, put_opt};
use crate::remoting::ext_fields::{ExtFields, HeaderError};

/// `commitOrRollback` values (the transaction type bits of `sysFlag`).
pub mod end_state {
    /// The producer does not know yet; nothing changes.
    pub const UNKNOWN: i32 = 0;
    /// Deliver the half message.
    pub const COMMIT: i32 = 8;
    /// Drop the half message.
    pub const ROLLBACK: i32 = 12;
}

/// `EndTransactionRequestHeader`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndTransactionRequestHeader {
    /// `producerGroup`: must match the half's PGROUP.
    pub producer_group: String,
    /// `tranStateTableOffset`: the half's queue offset in the half topic.
    pub tran_state_table_offset: i64,
    /// `commitLogOffset`: where the half record starts.
    pub commit_log_offset: i64,
    /// `commitOrRollback`: see [`end_state`].
    pub commit_or_rollback: i32,
    /// `fromTransactionCheck`: the answer to a check-back.
    pub from_transaction_check: bool,
    /// `msgId`: the half's client id (UNIQ_KEY) or offsetMsgId.
    pub msg_id: String,
    /// `transactionId`.
    pub transaction_id: Option<String>,
}

impl EndTransactionRequestHeader {
    /// Reads the header from `extFields`.
    pub fn from_ext(ext: &ExtFields<'_>) -> Result<Self, HeaderError> {
        Ok(Self {
            producer_group: ext.req_str("producerGroup")?.trim().to_owned(),
            tran_state_table_offset: ext.req_i64("tranStateTableOffset")?,
            commit_log_offset: ext.req_i64("commitLogOffset")?,
            commit_or_rollback: ext.req_i32("commitOrRollback")?,
            from_transaction_check: ext.get_bool("fromTransactionCheck")?.unwrap_or(false),
            msg_id: ext.req_str("msgId")?.to_owned(),
            transaction_id: ext
                .get_str("transactionId")
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        })
    }

    /// The fields under their Java names.
    pub fn to_ext(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        put(&mut m, "producerGroup", &self.producer_group);
        put(&mut m, "tranStateTableOffset", self.tran_state_table_offset);
        put(&mut m, "commitLogOffset", self.commit_log_offset);
        put(&mut m, "commitOrRollback", self.commit_or_rollback);
        put(&mut m, "fromTransactionCheck", self.from_transaction_check);
        put(&mut m, "msgId", &self.msg_id);
        put_opt(&mut m, "transactionId", self.transaction_id.as_ref());
        m
    }
}

/// `CheckTransactionStateRequestHeader`; the command's body is the half
/// record (V1 layout), whose queue and CommitLog offsets the producer echoes
/// in its END_TRANSACTION.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckTransactionStateRequestHeader {
    /// `tranStateTableOffset`.
    pub tran_state_table_offset: i64,
    /// `commitLogOffset`.
    pub commit_log_offset: i64,
    /// `msgId`: the client id (UNIQ_KEY).
    pub msg_id: Option<String>,
    /// `transactionId`.
    pub transaction_id: Option<String>,
    /// `offsetMsgId`.
    pub offset_msg_id: Option<String>,
    /// `topic` (5.x): the half's topic, `RMQ_SYS_TRANS_HALF_TOPIC`.
    pub topic: Option<String>,
    /// `bname` (5.x, `RpcRequestHeader`): the checking broker's name.
    pub broker_name: Option<String>,
}

impl CheckTransactionStateRequestHeader {
    /// Reads the header from `extFields`.
    pub fn from_ext(ext: &ExtFields<'_>) -> Result<Self, HeaderError> {
        let opt = |k: &str| ext.get_str(k).filter(|s| !s.is_empty()).map(str::to_owned);
        Ok(Self {
            tran_state_table_offset: ext.req_i64("tranStateTableOffset")?,
            commit_log_offset: ext.req_i64("commitLogOffset")?,
            msg_id: opt("msgId"),
            transaction_id: opt("transactionId"),
            offset_msg_id: opt("offsetMsgId"),
            topic: opt("topic"),
            broker_name: opt("bname"),
        })
    }

    /// The fields under their Java names.
    pub fn to_ext(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        put(&mut m, "tranStateTableOffset", self.tran_state_table_offset);
        put(&mut m, "commitLogOffset", self.commit_log_offset);
        put_opt(&mut m, "msgId", self.msg_id.as_ref());
        put_opt(&mut m, "transactionId", self.transaction_id.as_ref());
        put_opt(&mut m, "offsetMsgId", self.offset_msg_id.as_ref());
        put_opt(&mut m, "topic", self.topic.as_ref());
        put_opt(&mut m, "bname", self.broker_name.as_ref());
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let e = EndTransactionRequestHeader {
            producer_group: "pg".into(),
            tran_state_table_offset: 3,
            commit_log_offset: 4096,
            commit_or_rollback: end_state::COMMIT,
            from_transaction_check: true,
            msg_id: "ID".into(),
            transaction_id: Some("T".into()),
        };
        let m = e.to_ext();
        assert_eq!(
            EndTransactionRequestHeader::from_ext(&ExtFields::new(&m)).unwrap(),
            e
        );
        let c = CheckTransactionStateRequestHeader {
            tran_state_table_offset: 1,
            commit_log_offset: 2,
            msg_id: Some("U".into()),
            transaction_id: None,
            offset_msg_id: Some("O".into()),
            topic: Some("RMQ_SYS_TRANS_HALF_TOPIC".into()),
            broker_name: Some("broker-a".into()),
        };
        let m = c.to_ext();
        assert_eq!(m["bname"], "broker-a");
        assert_eq!(
            CheckTransactionStateRequestHeader::from_ext(&ExtFields::new(&m)).unwrap(),
            c
        );
    }
}
