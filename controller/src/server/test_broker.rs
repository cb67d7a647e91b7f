//! A broker as the tests play it: plain remoting calls, in the order and
//! with the headers a RocketMQ 5.3.3 broker in controller mode sends.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rmq_client::RemotingClient;
use rmq_common::remoting::{RemotingCommand, ResponseCode};

use crate::wire::SyncStateSetBody;

/// Broker → controller sync calls wait this long (facts 1).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(3);

/// One broker of a set.
pub struct FakeBroker {
    /// Its cluster.
    pub cluster: String,
    /// Its set (brokerName).
    pub name: String,
    /// Its client address (`brokerIP1:listenPort`).
    pub addr: String,
}

/// Sends `cmd` and waits for the answer.
pub async fn call(to: &RemotingClient, cmd: RemotingCommand) -> RemotingCommand {
    to.invoke(cmd, CALL_TIMEOUT).await.unwrap()
}

/// Connects to `addr`.
pub async fn connect(addr: SocketAddr) -> RemotingClient {
    RemotingClient::connect(addr).await.unwrap()
}

/// GET_METADATA_INFO's header.
pub async fn metadata(to: &RemotingClient) -> RemotingCommand {
    call(to, RemotingCommand::request(1005)).await
}

/// Polls `cond` until it holds or `within` passes.
pub async fn eventually<F, Fut>(within: Duration, what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    while !cond().await {
        assert!(Instant::now() < deadline, "not within {within:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The answer's response code.
pub fn code(resp: &RemotingCommand) -> ResponseCode {
    ResponseCode::from_i32(resp.code).unwrap()
}

/// A header field the answer must carry.
pub fn ext<'a>(resp: &'a RemotingCommand, k: &str) -> &'a str {
    resp.ext_fields
        .get(k)
        .map(String::as_str)
        .unwrap_or_else(|| panic!("no {k} in {resp:?}"))
}

/// A numeric header field the answer must carry.
pub fn ext_i64(resp: &RemotingCommand, k: &str) -> i64 {
    ext(resp, k).parse().unwrap()
}

impl FakeBroker {
    /// A broker of `name` in DefaultCluster serving at `addr`.
    pub fn new(name: &str, addr: &str) -> Self {
        Self {
            cluster: "DefaultCluster".into(),
            name: name.into(),
            addr: addr.into(),
        }
    }

    fn req(&self, code: i32) -> RemotingCommand {
        let mut r = RemotingCommand::request(code);
        r.put_ext("clusterName", &self.cluster);
        r.put_ext("brokerName", &self.name);
        r
    }

    /// CONTROLLER_GET_NEXT_BROKER_ID.
    pub async fn next_broker_id(&self, to: &RemotingClient) -> RemotingCommand {
        call(to, self.req(1012)).await
    }

    /// Its `registerCheckCode`: `<addr>;<ms>`.
    pub fn check_code(&self) -> String {
        format!("{};{}", self.addr, 1_700_000_000_000i64)
    }

    /// CONTROLLER_APPLY_BROKER_ID.
    pub async fn apply_broker_id(&self, to: &RemotingClient, id: i64) -> RemotingCommand {
        let mut r = self.req(1013);
        r.put_ext("appliedBrokerId", id);
        r.put_ext("registerCheckCode", self.check_code());
        call(to, r).await
    }

    /// CONTROLLER_REGISTER_BROKER.
    pub async fn register(&self, to: &RemotingClient, id: i64) -> RemotingCommand {
        let mut r = self.req(1003);
        r.put_ext("brokerId", id);
        r.put_ext("brokerAddress", &self.addr);
        r.put_ext("invokeTime", 1);
        call(to, r).await
    }

    /// A oneway heartbeat, alive for `timeout_ms` after it arrives.
    pub async fn heartbeat(&self, to: &RemotingClient, id: i64, timeout_ms: i64) {
        let mut r = self.req(904);
        r.put_ext("brokerAddr", &self.addr);
        r.put_ext("brokerId", id);
        r.put_ext("epoch", -1);
        r.put_ext("maxOffset", 0);
        r.put_ext("confirmOffset", 0);
        r.put_ext("heartbeatTimeoutMills", timeout_ms);
        r.put_ext("electionPriority", i32::MAX);
        to.invoke_oneway(r).await.unwrap();
    }

    /// CONTROLLER_ELECT_MASTER for itself.
    pub async fn elect(&self, to: &RemotingClient, id: i64) -> RemotingCommand {
        let mut r = self.req(1002);
        r.put_ext("brokerId", id);
        r.put_ext("designateElect", false);
        r.put_ext("invokeTime", 1);
        call(to, r).await
    }

    /// CONTROLLER_GET_REPLICA_INFO.
    pub async fn replica_info(&self, to: &RemotingClient) -> RemotingCommand {
        call(to, self.req(1004)).await
    }

    /// CONTROLLER_ALTER_SYNC_STATE_SET as the master `master`.
    pub async fn alter(
        &self,
        to: &RemotingClient,
        master: i64,
        master_epoch: i32,
        body: &SyncStateSetBody,
    ) -> RemotingCommand {
        let mut r = self.req(1001);
        r.put_ext("masterBrokerId", master);
        r.put_ext("masterEpoch", master_epoch);
        r.put_ext("invokeTime", 1);
        call(to, r.with_body(serde_json::to_vec(body).unwrap())).await
    }
}
