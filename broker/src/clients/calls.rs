//! Requests the broker sends to a client and waits for: the client answers
//! on the same connection with a response frame carrying the request's
//! opaque, which the server hands to [`ClientCalls::answered`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rmq_common::remoting::RemotingCommand;
use tokio::sync::oneshot;

use rmq_remoting::{ConnId, Connection};

/// Why a call to a client got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The connection is gone or would not take the request.
    #[error("the connection to {0} is closed")]
    Closed(std::net::SocketAddr),
    /// No answer in time.
    #[error("{peer} did not answer within {timeout:?}")]
    Timeout {
        /// The client.
        peer: std::net::SocketAddr,
        /// The wait.
        timeout: Duration,
    },
}

/// Calls in flight, by connection and opaque.
#[derive(Debug, Default)]
pub struct ClientCalls {
    next_opaque: AtomicI32,
    pending: Mutex<HashMap<(ConnId, i32), oneshot::Sender<RemotingCommand>>>,
}

impl ClientCalls {
    /// No calls.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sends `cmd` to the client on `conn` and waits up to `timeout` for
    /// its answer.
    pub async fn call(
        &self,
        conn: &Arc<Connection>,
        mut cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, CallError> {
        // Opaques of the broker's own requests count from i32::MIN / 2 up,
        // away from the small ones of the broker's other requests.
        let opaque =
            i32::MIN / 2 + (self.next_opaque.fetch_add(1, Ordering::Relaxed) & 0x3FFF_FFFF);
        cmd.opaque = opaque;
        let key = (conn.id, opaque);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().insert(key, tx);
        let _forget = Forget { calls: self, key };
        if conn.is_closed() || !conn.send_async(cmd).await {
            return Err(CallError::Closed(conn.peer));
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Err(CallError::Closed(conn.peer)),
            Err(_) => Err(CallError::Timeout {
                peer: conn.peer,
                timeout,
            }),
        }
    }

    /// A response frame from `conn`: completes the call it answers (a
    /// late or unknown answer is dropped).
    pub fn answered(&self, conn: ConnId, resp: RemotingCommand) {
        if let Some(tx) = self.pending.lock().remove(&(conn, resp.opaque)) {
            let _ = tx.send(resp);
        }
    }

    /// `conn` closed: its calls end at once.
    pub fn connection_closed(&self, conn: ConnId) {
        self.pending.lock().retain(|(c, _), _| *c != conn);
    }

    /// Calls waiting for an answer.
    pub fn in_flight(&self) -> usize {
        self.pending.lock().len()
    }
}

/// Removes a call's entry however the call ends.
struct Forget<'a> {
    calls: &'a ClientCalls,
    key: (ConnId, i32),
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.calls.pending.lock().remove(&self.key);
    }
}
