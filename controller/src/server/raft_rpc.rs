//! Raft's RPCs on the controller's port: three private request codes (in a
//! range RocketMQ does not use) whose bodies are the JSON of openraft's
//! request types; the answer's body is the JSON of the node's
//! `Result<response, RaftError>`. [`super::TcpTransport`] sends them, the
//! controller's own request handler answers them.

use rmq_common::remoting::{RemotingCommand, ResponseCode};
use serde::Serialize;

use crate::raft::types::Raft;

/// Log replication and heartbeats (openraft `AppendEntriesRequest`).
pub const APPEND_ENTRIES: i32 = 56001;
/// A candidate's vote request (openraft `VoteRequest`).
pub const VOTE: i32 = 56002;
/// One snapshot chunk (openraft `InstallSnapshotRequest`).
pub const INSTALL_SNAPSHOT: i32 = 56003;

/// Whether `code` is one of the Raft RPCs.
pub fn is_raft_code(code: i32) -> bool {
    matches!(code, APPEND_ENTRIES | VOTE | INSTALL_SNAPSHOT)
}

fn to_json<T: Serialize>(value: &T) -> Result<Vec<u8>, String> {
    serde_json::to_vec(value).map_err(|e| format!("encoding the raft answer: {e}"))
}

/// Hands a Raft RPC to `raft` and answers with its result; `None` if
/// `req` is not a Raft RPC. A body that does not decode is answered
/// SYSTEM_ERROR naming why.
pub async fn answer(raft: &Raft, req: &RemotingCommand) -> Option<RemotingCommand> {
    let body = req.body.as_deref().unwrap_or_default();
    let out = match req.code {
        APPEND_ENTRIES => match serde_json::from_slice(body) {
            Ok(rpc) => to_json(&raft.append_entries(rpc).await),
            Err(e) => Err(format!("append entries body: {e}")),
        },
        VOTE => match serde_json::from_slice(body) {
            Ok(rpc) => to_json(&raft.vote(rpc).await),
            Err(e) => Err(format!("vote body: {e}")),
        },
        INSTALL_SNAPSHOT => match serde_json::from_slice(body) {
            Ok(rpc) => to_json(&raft.install_snapshot(rpc).await),
            Err(e) => Err(format!("install snapshot body: {e}")),
        },
        _ => return None,
    };
    Some(match out {
        Ok(body) => RemotingCommand::response_to(req, ResponseCode::Success, None).with_body(body),
        Err(why) => RemotingCommand::response_to(req, ResponseCode::SystemError, Some(why)),
    })
}
