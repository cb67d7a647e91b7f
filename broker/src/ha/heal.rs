//! A slave's check, before it follows (4.x HA), that its CommitLog is a
//! prefix of its master's, and the cut back to the last record the two
//! share when it is not.
//!
//! A power cut of both can leave the slave holding bytes its master never
//! synced; the master then writes other records at those offsets. The 4.x
//! HA protocol carries offsets only, so records are compared over the
//! master's request port: VIEW_MESSAGE_BY_ID answers the raw record at a
//! CommitLog offset, on this broker and on Apache RocketMQ's alike. Bytes
//! the slave took from its master are its master's record bytes, so a
//! record is shared when the master's starts with the slave's (the slave
//! may hold part of its last one).
//!
//! Two logs agree up to one point and differ after it. The search finds
//! the newest segment whose first record is shared, then the last shared
//! record in it by bisection over its record starts: a few requests, not
//! one per record. What lies past that record is cut
//! (`MessageStore::truncate_to`: the consume queues of both backends
//! follow). No shared record at all is an error, and nothing is cut.

use std::sync::Arc;
use std::time::Duration;

use rmq_client::RemotingClient;
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};
use rmq_store::MessageStore;
use rmq_store_file::StoreError;

/// Longest one question to the master may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// What the check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agreement {
    /// Every byte of the slave's log is the master's.
    Prefix,
    /// The slave's log was cut from `from` back to `to`, the end of the
    /// last record it shares with the master.
    Cut { from: i64, to: i64 },
}

/// Why the check could not finish.
#[derive(Debug, thiserror::Error)]
pub enum HealError {
    #[error("reaching the master at {master}: {reason}")]
    Unreachable { master: String, reason: String },
    #[error("asking the master at {master} for its record at {offset}: {reason}")]
    Ask {
        master: String,
        offset: i64,
        reason: String,
    },
    #[error(
        "no record this slave holds ({min}..{end}) matches the master's at {master}: the logs \
         share nothing retained here; nothing was cut (empty this slave's store to make it follow)"
    )]
    NothingShared { master: String, min: i64, end: i64 },
    #[error("cutting the CommitLog back to {to}: {source}")]
    Cut { to: i64, source: StoreError },
    #[error("the store's worker stopped: {0}")]
    Worker(String),
}

/// Compares the local log with the master's that `master` (at `addr`)
/// serves and cuts what it does not share.
pub async fn agree(
    store: &Arc<MessageStore>,
    master: &RemotingClient,
    addr: &str,
) -> Result<Agreement, HealError> {
    let log = store.commit_log();
    let end = store.max_phy_offset();
    let bases: Vec<i64> = log
        .segments()
        .snapshot()
        .iter()
        .map(|s| s.file_from_offset())
        .filter(|b| *b < end)
        .collect();
    let Some(&min) = bases.first() else {
        return Ok(Agreement::Prefix);
    };
    let ask = Asker {
        store,
        master,
        addr,
    };
    let mut shared_base = None;
    for &base in bases.iter().rev() {
        let Some(held) = log.record_held(base) else {
            continue;
        };
        if ask.shared((base, held)).await? {
            shared_base = Some(base);
            break;
        }
    }
    let Some(base) = shared_base else {
        return Err(HealError::NothingShared {
            master: addr.to_owned(),
            min,
            end,
        });
    };
    let records = {
        let store = Arc::clone(store);
        tokio::task::spawn_blocking(move || store.commit_log().records_from(base))
            .await
            .map_err(|e| HealError::Worker(e.to_string()))?
    };
    // records[lo] is shared; records[hi] (or past the list) is not.
    let (mut lo, mut hi) = (0, records.len());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ask.shared(records[mid]).await? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let (start, held) = records[lo];
    let to = start + held as i64;
    if to >= end {
        return Ok(Agreement::Prefix);
    }
    tracing::warn!(
        master = addr,
        from = end,
        to,
        "this slave's CommitLog holds records its master does not: cutting it back to the last \
         record they share"
    );
    let cut = Arc::clone(store);
    tokio::task::spawn_blocking(move || cut.truncate_to(to))
        .await
        .map_err(|e| HealError::Worker(e.to_string()))?
        .map_err(|source| HealError::Cut { to, source })?;
    Ok(Agreement::Cut { from: end, to })
}

/// Compares local records with the master's.
struct Asker<'a> {
    store: &'a MessageStore,
    master: &'a RemotingClient,
    addr: &'a str,
}

impl Asker<'_> {
    /// Whether the master's record at `start` begins with the `held` bytes
    /// the local log has there.
    async fn shared(&self, (start, held): (i64, usize)) -> Result<bool, HealError> {
        let Some(theirs) = self.master_record(start).await? else {
            return Ok(false);
        };
        let ours = self.store.commit_log().select(start, held);
        Ok(ours.is_some_and(|o| theirs.starts_with(o.bytes())))
    }

    /// The master's record at `offset`, if one starts there.
    async fn master_record(&self, offset: i64) -> Result<Option<bytes::Bytes>, HealError> {
        let failed = |reason: String| HealError::Ask {
            master: self.addr.to_owned(),
            offset,
            reason,
        };
        let mut req = RemotingCommand::request(RequestCode::ViewMessageById);
        req.put_ext("offset", offset);
        let resp = self
            .master
            .invoke(req, CALL_TIMEOUT)
            .await
            .map_err(|e| failed(e.to_string()))?;
        // Both brokers answer SYSTEM_ERROR "can not find message by the
        // offset" where no record of theirs starts.
        if resp.code == ResponseCode::SystemError.code() {
            return Ok(None);
        }
        if resp.code != ResponseCode::Success.code() {
            return Err(failed(format!(
                "answered {}: {}",
                resp.code,
                resp.remark.unwrap_or_default()
            )));
        }
        Ok(Some(resp.body.unwrap_or_default()))
    }
}
