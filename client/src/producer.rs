//! A route-aware producer, as RocketMQ's `DefaultMQProducer` behaves: it
//! asks a NameServer for a topic's route, spreads sends round-robin over
//! every writable queue of every broker, and when a send to a broker fails
//! it retries (`retryTimesWhenSendFailed`, 2) on a queue of another broker
//! and avoids the failed broker for a while (the latency-fault isolation),
//! so a dead broker costs at most one failed attempt per isolation period,
//! not lost sends. Routes are refreshed every `pollNameServerInterval` and
//! after a failure, so a broker the NameServer dropped disappears.
//!
//! Time (route age, isolation) comes from an injected [`Clock`].

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};
use rmq_common::time::Clock;
use tokio::sync::Mutex;

use rmq_common::remoting::body::{TopicRouteData, PERM_WRITE};

use crate::calls::{refused, send, OutMessage, SdkError, SendCode, SendResult};
use crate::remoting::{ClientError, RemotingClient};

/// Settings, with RocketMQ's defaults.
#[derive(Debug, Clone)]
pub struct ProducerOptions {
    /// Producer group.
    pub group: String,
    /// Extra attempts after a failed send (`retryTimesWhenSendFailed`).
    pub retry_times_when_send_failed: u32,
    /// Age after which a route is asked for again (`pollNameServerInterval`).
    pub route_refresh_ms: i64,
    /// How long a broker that failed a send is avoided.
    pub isolation_ms: i64,
    /// Time allowed to connect and, separately, for one answer
    /// (`sendMsgTimeout`).
    pub timeout: Duration,
}

impl Default for ProducerOptions {
    fn default() -> Self {
        Self {
            group: "rmq_producer_group".into(),
            retry_times_when_send_failed: 2,
            route_refresh_ms: 30_000,
            isolation_ms: 30_000,
            timeout: Duration::from_secs(3),
        }
    }
}

/// Why a send failed.
#[derive(Debug, thiserror::Error)]
pub enum ProducerError {
    /// The NameServer could not be asked.
    #[error("NameServer {addr}: {source}")]
    NameServer {
        /// The NameServer.
        addr: SocketAddr,
        /// The failure.
        #[source]
        source: SdkError,
    },
    /// The route has no writable queue on any broker.
    #[error("topic {0}: the route has no writable queue")]
    NoQueue(String),
    /// Every attempt failed; the last failure is kept.
    #[error("topic {topic}: {attempts} attempts failed, the last at broker {broker}: {last}")]
    AllFailed {
        /// Topic.
        topic: String,
        /// Attempts made.
        attempts: u32,
        /// Broker of the last attempt.
        broker: String,
        /// Its failure.
        #[source]
        last: SdkError,
    },
}

/// Where a send landed and what it took.
#[derive(Debug, Clone)]
pub struct Sent {
    /// The broker that stored it.
    pub broker_name: String,
    /// The broker's answer.
    pub result: SendResult,
    /// Attempts made (1 when the first one worked).
    pub attempts: u32,
}

#[derive(Debug, Clone)]
struct WriteQueue {
    broker_name: String,
    addr: SocketAddr,
    queue_id: i32,
}

#[derive(Debug)]
struct Route {
    fetched_ms: i64,
    queues: Vec<WriteQueue>,
}

#[derive(Default)]
struct State {
    namesrv: Option<RemotingClient>,
    routes: HashMap<String, Route>,
    conns: HashMap<SocketAddr, RemotingClient>,
    /// Broker name -> avoided until (ms).
    isolated: HashMap<String, i64>,
    next: usize,
}

/// A producer over one NameServer.
pub struct Producer {
    namesrv: SocketAddr,
    options: ProducerOptions,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field("namesrv", &self.namesrv)
            .field("group", &self.options.group)
            .finish_non_exhaustive()
    }
}

/// Codes after which RocketMQ's producer tries another broker.
fn worth_retrying(e: &SdkError) -> bool {
    match e {
        SdkError::Client(_) => true,
        SdkError::Refused { code, .. } => [
            ResponseCode::TopicNotExist,
            ResponseCode::ServiceNotAvailable,
            ResponseCode::SystemError,
            ResponseCode::SystemBusy,
            ResponseCode::NoPermission,
        ]
        .iter()
        .any(|c| c.code() == *code),
        SdkError::BadAnswer(_) => false,
    }
}

impl Producer {
    /// A producer that finds brokers through the NameServer at `namesrv`.
    pub fn new(namesrv: SocketAddr, options: ProducerOptions, clock: Arc<dyn Clock>) -> Self {
        Self {
            namesrv,
            options,
            clock,
            state: Mutex::new(State::default()),
        }
    }

    /// Sends one message to `topic`, failing over to other brokers.
    pub async fn send(&self, topic: &str, msg: OutMessage) -> Result<Sent, ProducerError> {
        let attempts_allowed = 1 + self.options.retry_times_when_send_failed;
        let mut last_failed: Option<String> = None;
        let mut last_error = None;
        for attempt in 1..=attempts_allowed {
            let queue = self.pick(topic, last_failed.as_deref()).await?;
            match self.send_to(&queue, topic, &msg).await {
                Ok(result) => {
                    return Ok(Sent {
                        broker_name: queue.broker_name,
                        result,
                        attempts: attempt,
                    })
                }
                Err(e) if worth_retrying(&e) => {
                    tracing::debug!(
                        broker = %queue.broker_name,
                        error = %e,
                        attempt,
                        "send failed; trying another broker"
                    );
                    self.isolate(&queue).await;
                    last_failed = Some(queue.broker_name.clone());
                    last_error = Some((queue.broker_name, e));
                }
                Err(e) => {
                    return Err(ProducerError::AllFailed {
                        topic: topic.to_owned(),
                        attempts: attempt,
                        broker: queue.broker_name,
                        last: e,
                    })
                }
            }
        }
        let (broker, last) = last_error.unwrap_or_else(|| {
            (
                String::new(),
                SdkError::BadAnswer("no attempt was made".into()),
            )
        });
        Err(ProducerError::AllFailed {
            topic: topic.to_owned(),
            attempts: attempts_allowed,
            broker,
            last,
        })
    }

    /// The brokers the cached route of `topic` names (after a refresh if
    /// it is stale).
    pub async fn route_brokers(&self, topic: &str) -> Result<Vec<String>, ProducerError> {
        let mut state = self.state.lock().await;
        self.fresh_route(&mut state, topic).await?;
        let mut names: Vec<String> = state.routes[topic]
            .queues
            .iter()
            .map(|q| q.broker_name.clone())
            .collect();
        names.dedup();
        Ok(names)
    }

    /// The next queue round-robin, skipping `avoid` and isolated brokers
    /// while any other broker has a queue.
    async fn pick(&self, topic: &str, avoid: Option<&str>) -> Result<WriteQueue, ProducerError> {
        let mut state = self.state.lock().await;
        self.fresh_route(&mut state, topic).await?;
        let now = self.clock.now_ms();
        state.isolated.retain(|_, until| *until > now);
        let State {
            routes,
            isolated,
            next,
            ..
        } = &mut *state;
        let queues = &routes[topic].queues;
        let usable = |q: &WriteQueue| {
            avoid != Some(q.broker_name.as_str()) && !isolated.contains_key(&q.broker_name)
        };
        let not_avoided = |q: &WriteQueue| avoid != Some(q.broker_name.as_str());
        let n = queues.len();
        for filter in [
            &usable as &dyn Fn(&WriteQueue) -> bool,
            &not_avoided,
            &|_| true,
        ] {
            for i in 0..n {
                let q = &queues[(*next + i) % n];
                if filter(q) {
                    *next = (*next + i + 1) % n;
                    return Ok(q.clone());
                }
            }
        }
        Err(ProducerError::NoQueue(topic.to_owned()))
    }

    async fn fresh_route(&self, state: &mut State, topic: &str) -> Result<(), ProducerError> {
        let now = self.clock.now_ms();
        let stale = state
            .routes
            .get(topic)
            .is_none_or(|r| now - r.fetched_ms >= self.options.route_refresh_ms);
        if !stale {
            return Ok(());
        }
        let route = self.lookup(state, topic).await.map_err(|source| {
            state.namesrv = None;
            ProducerError::NameServer {
                addr: self.namesrv,
                source,
            }
        })?;
        let queues = write_queues(&route);
        if queues.is_empty() {
            return Err(ProducerError::NoQueue(topic.to_owned()));
        }
        state.routes.insert(
            topic.to_owned(),
            Route {
                fetched_ms: now,
                queues,
            },
        );
        Ok(())
    }

    async fn lookup(&self, state: &mut State, topic: &str) -> Result<TopicRouteData, SdkError> {
        let client = match state.namesrv.take() {
            Some(c) if !c.is_closed() => c,
            _ => self.connect(self.namesrv).await?,
        };
        let mut req = RemotingCommand::request(RequestCode::GetRouteInfoByTopic);
        req.put_ext("topic", topic);
        let resp = client.invoke(req, self.options.timeout).await?;
        state.namesrv = Some(client);
        if resp.code != ResponseCode::Success.code() {
            return Err(refused(&resp));
        }
        rmq_common::json::from_slice(resp.body.as_deref().unwrap_or_default())
            .map_err(|e| SdkError::BadAnswer(format!("route of {topic}: {e}")))
    }

    async fn connect(&self, addr: SocketAddr) -> Result<RemotingClient, SdkError> {
        match tokio::time::timeout(self.options.timeout, RemotingClient::connect(addr)).await {
            Ok(r) => Ok(r?),
            Err(_) => Err(SdkError::Client(ClientError::Io {
                peer: addr,
                source: std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no connection within {:?}", self.options.timeout),
                ),
            })),
        }
    }

    async fn send_to(
        &self,
        queue: &WriteQueue,
        topic: &str,
        msg: &OutMessage,
    ) -> Result<SendResult, SdkError> {
        let cached = self.state.lock().await.conns.remove(&queue.addr);
        let client = match cached {
            Some(c) if !c.is_closed() => c,
            _ => self.connect(queue.addr).await?,
        };
        let sent = tokio::time::timeout(
            self.options.timeout,
            send(
                &client,
                SendCode::V2,
                &self.options.group,
                topic,
                queue.queue_id,
                std::slice::from_ref(msg),
            ),
        )
        .await
        .unwrap_or(Err(SdkError::Client(ClientError::Timeout {
            peer: queue.addr,
            code: RequestCode::SendMessageV2.code(),
            opaque: 0,
            timeout: self.options.timeout,
        })));
        if matches!(sent, Err(SdkError::Client(_))) {
            client.close().await;
        } else {
            self.state.lock().await.conns.insert(queue.addr, client);
        }
        sent
    }

    /// Avoids the queue's broker for the isolation period and has the
    /// route asked for again at the next send.
    async fn isolate(&self, queue: &WriteQueue) {
        let mut state = self.state.lock().await;
        let until = self.clock.now_ms() + self.options.isolation_ms;
        state.isolated.insert(queue.broker_name.clone(), until);
        for route in state.routes.values_mut() {
            route.fetched_ms = i64::MIN / 2;
        }
    }
}

/// Every writable queue of the route, brokers in route order; a broker
/// without a master address is left out.
fn write_queues(route: &TopicRouteData) -> Vec<WriteQueue> {
    let mut out = Vec::new();
    for qd in &route.queue_datas {
        if qd.perm & PERM_WRITE == 0 {
            continue;
        }
        let addr = route
            .broker_datas
            .iter()
            .find(|b| b.broker_name == qd.broker_name)
            .and_then(|b| b.broker_addrs.get(&0))
            .and_then(|a| a.parse::<SocketAddr>().ok());
        let Some(addr) = addr else { continue };
        out.extend((0..qd.write_queue_nums).map(|queue_id| WriteQueue {
            broker_name: qd.broker_name.clone(),
            addr,
            queue_id,
        }));
    }
    out
}
