//! Per-request series, RocketMQ 5.x's: `rocketmq_rpc_latency` (one
//! histogram observation per answered request, labelled with the request
//! and response codes as RocketMQ names them) and
//! `rocketmq_processor_watermark` (requests of each processor family being
//! handled now).
//!
//! The hot path does one read-locked map lookup keyed by plain integers
//! and one histogram observation; a label set is built (and its strings
//! allocated) only the first time a (request, response, long polling,
//! result) combination is seen.

use std::cell::Cell;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Instant;

use metrics::{Histogram, Label};
use parking_lot::RwLock;
use rmq_common::remoting::{RequestCode, ResponseCode};

use super::rocketmq_names as r;

/// Most label sets of `rocketmq_rpc_latency`: request codes come from
/// clients, so a client sending many unknown codes must not grow the map
/// (or the scrape) without bound. Known codes times the response codes
/// seen in practice stay far below it.
const RPC_SERIES_MAX: usize = 4096;

tokio::task_local! {
    /// Set by a handler that held its request (long polling).
    static SUSPENDED: Cell<bool>;
}

/// Marks the request being handled on this task as held for long polling
/// (RocketMQ's `is_long_polling`). Outside a request's scope it does
/// nothing.
pub fn mark_suspended() {
    let _ = SUSPENDED.try_with(|c| c.set(true));
}

/// Runs `f` (one request's handling) and says whether it was held.
pub async fn scope<F: Future>(f: F) -> (F::Output, bool) {
    SUSPENDED
        .scope(Cell::new(false), async move {
            let out = f.await;
            (out, SUSPENDED.with(Cell::get))
        })
        .await
}

/// RocketMQ's `result` label: how the answer left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RpcResult {
    /// Answered (handed to the connection's writer).
    Success,
    /// A oneway request: nothing is sent back.
    Oneway,
}

impl RpcResult {
    fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Oneway => "oneway",
        }
    }
}

/// The executors RocketMQ 5.3.3's `rocketmq_processor_watermark` reports,
/// by its `processor` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Processor {
    /// Sends, sends back, recalls.
    Send,
    /// Sends waiting for their store put.
    AsyncPut,
    /// PULL_MESSAGE and POP's reads.
    Pull,
    /// POP acks and invisible-time changes.
    Ack,
    /// QUERY_MESSAGE, VIEW_MESSAGE_BY_ID.
    QueryMessage,
    /// UNREGISTER_CLIENT, CHECK_CLIENT_CONFIG.
    ClientManager,
    /// HEART_BEAT.
    Heartbeat,
    /// LITE_PULL_MESSAGE.
    LitePull,
    /// END_TRANSACTION.
    Transaction,
    /// Consumer lists and offsets.
    ConsumerManager,
    /// Everything else.
    Admin,
    /// SEND_REPLY_MESSAGE(_V2).
    Reply,
}

impl Processor {
    /// Every family, in label order.
    pub const ALL: [Processor; 12] = [
        Self::Send,
        Self::AsyncPut,
        Self::Pull,
        Self::Ack,
        Self::QueryMessage,
        Self::ClientManager,
        Self::Heartbeat,
        Self::LitePull,
        Self::Transaction,
        Self::ConsumerManager,
        Self::Admin,
        Self::Reply,
    ];

    /// RocketMQ's label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Send => "send",
            Self::AsyncPut => "async_put",
            Self::Pull => "pull",
            Self::Ack => "ack",
            Self::QueryMessage => "query_message",
            Self::ClientManager => "client_manager",
            Self::Heartbeat => "heartbeat",
            Self::LitePull => "lite_pull",
            Self::Transaction => "transaction",
            Self::ConsumerManager => "consumer_manager",
            Self::Admin => "admin",
            Self::Reply => "reply",
        }
    }

    /// The family RocketMQ's broker runs `code` in (its
    /// `registerProcessor` calls); `None` for the load-balance codes,
    /// whose executor it does not report.
    pub fn of(code: RequestCode) -> Option<Self> {
        use RequestCode as C;
        Some(match code {
            C::SendMessage
            | C::SendMessageV2
            | C::SendBatchMessage
            | C::ConsumerSendMsgBack
            | C::RecallMessage => Self::Send,
            C::PullMessage | C::PeekMessage | C::PopMessage | C::Notification | C::PollingInfo => {
                Self::Pull
            }
            C::LitePullMessage => Self::LitePull,
            C::AckMessage | C::BatchAckMessage | C::ChangeMessageInvisibletime => Self::Ack,
            C::SendReplyMessage | C::SendReplyMessageV2 => Self::Reply,
            C::QueryMessage | C::ViewMessageById => Self::QueryMessage,
            C::HeartBeat => Self::Heartbeat,
            C::UnregisterClient | C::CheckClientConfig => Self::ClientManager,
            C::GetConsumerListByGroup | C::UpdateConsumerOffset | C::QueryConsumerOffset => {
                Self::ConsumerManager
            }
            C::EndTransaction => Self::Transaction,
            C::QueryAssignment | C::SetMessageRequestMode => return None,
            _ => Self::Admin,
        })
    }
}

/// Counts one request of a family while alive.
#[derive(Debug)]
pub struct Busy<'a>(&'a AtomicI64);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct RpcKey {
    request: i32,
    response: i32,
    long_polling: bool,
    result: RpcResult,
}

/// One broker's per-request meters.
#[derive(Debug)]
pub struct RpcMeters {
    /// `broker` plus RocketMQ's common labels.
    labels: Vec<Label>,
    latency: RwLock<HashMap<RpcKey, Histogram>>,
    /// The gRPC calls' series, by (rpc, status code), both named by
    /// `&'static` names (a bounded set).
    grpc: RwLock<HashMap<(&'static str, &'static str), Histogram>>,
    busy: [AtomicI64; Processor::ALL.len()],
}

/// RocketMQ's name of a code: the Java constant in lower case, or the
/// number for a code it does not name.
fn code_name(name: Option<&'static str>, code: i32) -> String {
    name.map_or_else(|| code.to_string(), str::to_ascii_lowercase)
}

impl RpcMeters {
    /// Meters labelled with `labels` (see `rocketmq::common_labels`).
    pub fn new(labels: Vec<Label>) -> Self {
        Self {
            labels,
            latency: RwLock::default(),
            grpc: RwLock::default(),
            busy: Default::default(),
        }
    }

    /// Counts a request of `code`'s family until the guard drops.
    pub fn busy(&self, code: Option<RequestCode>) -> Option<Busy<'_>> {
        code.and_then(Processor::of).map(|p| self.processor(p))
    }

    /// Counts one unit of `p` until the guard drops.
    pub fn processor(&self, p: Processor) -> Busy<'_> {
        let n = &self.busy[p as usize];
        n.fetch_add(1, Ordering::Relaxed);
        Busy(n)
    }

    /// Requests of each family being handled now.
    pub fn watermarks(&self) -> impl Iterator<Item = (Processor, i64)> + '_ {
        Processor::ALL
            .iter()
            .map(|p| (*p, self.busy[*p as usize].load(Ordering::Relaxed).max(0)))
    }

    /// Records one answered request that arrived at `started`.
    pub fn record(
        &self,
        request: i32,
        response: i32,
        long_polling: bool,
        result: RpcResult,
        started: Instant,
    ) {
        let ms = started.elapsed().as_millis() as f64;
        let key = RpcKey {
            request,
            response,
            long_polling,
            result,
        };
        if let Some(h) = self.latency.read().get(&key) {
            h.record(ms);
            return;
        }
        let mut map = self.latency.write();
        if map.len() >= RPC_SERIES_MAX && !map.contains_key(&key) {
            return;
        }
        map.entry(key)
            .or_insert_with(|| metrics::histogram!(r::RPC_LATENCY_MS, self.key_labels(&key)))
            .record(ms);
    }

    /// Records one answered gRPC call of `rpc` (its name in snake case,
    /// `send_message`) that ended with `code` (an `apache.rocketmq.v2.Code`
    /// name) and arrived at `started`: `protocol_type="grpc"`, the names
    /// in lower case as for remoting.
    pub fn record_grpc(&self, rpc: &'static str, code: &'static str, started: Instant) {
        let ms = started.elapsed().as_millis() as f64;
        if let Some(h) = self.grpc.read().get(&(rpc, code)) {
            h.record(ms);
            return;
        }
        let mut l = self.labels.clone();
        l.extend([
            Label::new("protocol_type", "grpc"),
            Label::new("request_code", rpc),
            Label::new("response_code", code.to_ascii_lowercase()),
            Label::new("is_long_polling", (rpc == "receive_message").to_string()),
            Label::new("result", RpcResult::Success.as_str()),
        ]);
        self.grpc
            .write()
            .entry((rpc, code))
            .or_insert_with(|| metrics::histogram!(r::RPC_LATENCY_MS, l))
            .record(ms);
    }

    fn key_labels(&self, k: &RpcKey) -> Vec<Label> {
        let request = RequestCode::from_i32(k.request).map(RequestCode::name);
        let response = ResponseCode::from_i32(k.response).map(ResponseCode::name);
        let mut l = self.labels.clone();
        l.extend([
            Label::new("protocol_type", "remoting"),
            Label::new("request_code", code_name(request, k.request)),
            Label::new("response_code", code_name(response, k.response)),
            Label::new("is_long_polling", k.long_polling.to_string()),
            Label::new("result", k.result.as_str()),
        ]);
        l
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_named_as_rocketmq_names_them() {
        let n = |c: RequestCode| code_name(Some(c.name()), c.code());
        assert_eq!(n(RequestCode::SendMessageV2), "send_message_v2");
        assert_eq!(n(RequestCode::PullMessage), "pull_message");
        assert_eq!(
            code_name(Some(ResponseCode::PullNotFound.name()), 19),
            "pull_not_found"
        );
        assert_eq!(code_name(None, 987_654), "987654");
    }

    #[test]
    fn families_follow_rocketmq_executors() {
        assert_eq!(
            Processor::of(RequestCode::PopMessage),
            Some(Processor::Pull)
        );
        assert_eq!(Processor::of(RequestCode::AckMessage), Some(Processor::Ack));
        assert_eq!(
            Processor::of(RequestCode::UpdateAndCreateTopic),
            Some(Processor::Admin)
        );
        assert_eq!(Processor::of(RequestCode::QueryAssignment), None);
    }

    #[tokio::test]
    async fn a_held_request_is_long_polling() {
        let ((), held) = scope(async { mark_suspended() }).await;
        assert!(held);
        let ((), held) = scope(async {}).await;
        assert!(!held);
        mark_suspended(); // outside a scope: nothing happens
    }
}
