//! One-shot client calls over the real protocol: send, pull, send-back,
//! offsets and the generic request/answer.

use std::net::SocketAddr;
use std::time::Duration;

use rmq_common::constants::property;
use rmq_common::message::batch::{encode_batch, BatchItem};
use rmq_common::message::record::RecordView;
use rmq_common::message::{MessageToStore, Properties};
use rmq_common::remoting::{
    pull_sys_flag, ConsumerSendMsgBackRequestHeader, PullMessageRequestHeader,
    PullMessageResponseHeader, RemotingCommand, RequestCode, ResponseCode,
    SendMessageRequestHeader, SendMessageResponseHeader,
};

use crate::remoting::{ClientError, RemotingClient};

/// Default wait for an answer.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum SdkError {
    /// Transport failure.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The broker answered with an error code.
    #[error("broker answered {code}: {remark}")]
    Refused {
        /// Response code.
        code: i32,
        /// Remark.
        remark: String,
    },
    /// The answer could not be decoded.
    #[error("bad answer: {0}")]
    BadAnswer(String),
}

pub(crate) fn refused(resp: &RemotingCommand) -> SdkError {
    SdkError::Refused {
        code: resp.code,
        remark: resp.remark.clone().unwrap_or_default(),
    }
}

/// A message to send.
#[derive(Debug, Clone, Default)]
pub struct OutMessage {
    /// Body.
    pub body: Vec<u8>,
    /// Tag, if any.
    pub tags: Option<String>,
    /// Keys, if any.
    pub keys: Vec<String>,
    /// Other properties.
    pub properties: Vec<(String, String)>,
}

impl OutMessage {
    pub(crate) fn properties(&self) -> Properties {
        let mut p: Properties = self.properties.iter().cloned().collect();
        if let Some(t) = &self.tags {
            p.insert(property::TAGS, t.as_str());
        }
        if !self.keys.is_empty() {
            p.insert(property::KEYS, self.keys.join(" "));
        }
        p
    }
}

/// Which send request to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendCode {
    /// SEND_MESSAGE with long field names.
    V1,
    /// SEND_MESSAGE_V2 with the short names.
    V2,
}

/// Where a message landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendResult {
    /// Response code (0 or FLUSH_DISK_TIMEOUT).
    pub code: i32,
    /// offsetMsgId (comma-joined for batches).
    pub msg_id: String,
    /// Queue.
    pub queue_id: i32,
    /// Queue offset of the (first) message.
    pub queue_offset: i64,
}

/// A pull's answer.
#[derive(Debug, Clone)]
pub struct PullResult {
    /// Response code.
    pub code: i32,
    /// Next offset to pull from.
    pub next_begin_offset: i64,
    /// Queue min.
    pub min_offset: i64,
    /// Queue max.
    pub max_offset: i64,
    /// Decoded messages.
    pub messages: Vec<MessageToStore>,
    /// Queue offsets of the messages.
    pub queue_offsets: Vec<i64>,
    /// Store timestamps of the messages.
    pub store_timestamps: Vec<i64>,
    /// CommitLog offsets of the messages (what a send-back names).
    pub phy_offsets: Vec<i64>,
}

/// Sends one message (or a batch when `msgs` has several).
pub async fn send(
    client: &RemotingClient,
    code: SendCode,
    group: &str,
    topic: &str,
    queue_id: i32,
    msgs: &[OutMessage],
) -> Result<SendResult, SdkError> {
    let batch = msgs.len() > 1;
    let header = SendMessageRequestHeader {
        producer_group: group.to_owned(),
        topic: topic.to_owned(),
        default_topic: rmq_common::constants::AUTO_CREATE_TOPIC.to_owned(),
        default_topic_queue_nums: 4,
        queue_id,
        sys_flag: 0,
        born_timestamp: rmq_common::time::now_ms(),
        flag: 0,
        properties: if batch {
            None
        } else {
            msgs.first()
                .map(|m| {
                    m.properties()
                        .encode()
                        .map(|b| String::from_utf8_lossy(&b).into_owned())
                })
                .transpose()
                .map_err(|e| SdkError::BadAnswer(e.to_string()))?
        },
        reconsume_times: 0,
        unit_mode: false,
        max_reconsume_times: None,
        batch,
        broker_name: None,
    };
    let (req_code, ext) = match (code, batch) {
        (_, true) => (RequestCode::SendBatchMessage, header.to_ext_v2()),
        (SendCode::V1, false) => (RequestCode::SendMessage, header.to_ext()),
        (SendCode::V2, false) => (RequestCode::SendMessageV2, header.to_ext_v2()),
    };
    let body = if batch {
        let items: Result<Vec<BatchItem>, _> = msgs
            .iter()
            .map(|m| {
                m.properties().encode().map(|p| BatchItem {
                    flag: 0,
                    body: m.body.clone(),
                    properties: p,
                })
            })
            .collect();
        encode_batch(&items.map_err(|e| SdkError::BadAnswer(e.to_string()))?)
    } else {
        msgs.first().map(|m| m.body.clone()).unwrap_or_default()
    };
    let req = RemotingCommand::request(req_code)
        .with_ext_fields(ext)
        .with_body(body);
    let resp = client.invoke(req, DEFAULT_TIMEOUT).await?;
    // As the Java client: a flush or slave timeout still stored the
    // message (the code says which wait fell short).
    let stored = [
        ResponseCode::Success,
        ResponseCode::FlushDiskTimeout,
        ResponseCode::FlushSlaveTimeout,
        ResponseCode::SlaveNotAvailable,
    ];
    if !stored.iter().any(|c| resp.code == i32::from(*c)) {
        return Err(refused(&resp));
    }
    let h = SendMessageResponseHeader::from_ext(&resp.ext())
        .map_err(|e| SdkError::BadAnswer(e.to_string()))?;
    Ok(SendResult {
        code: resp.code,
        msg_id: h.msg_id,
        queue_id: h.queue_id,
        queue_offset: h.queue_offset,
    })
}

/// Pull options.
#[derive(Debug, Clone)]
pub struct PullRequest {
    /// Consumer group.
    pub group: String,
    /// Topic.
    pub topic: String,
    /// Queue.
    pub queue_id: i32,
    /// First offset wanted.
    pub offset: i64,
    /// Most messages.
    pub max_msgs: i32,
    /// Subscription expression sent with the request (`None`: use the
    /// group's heartbeat subscription).
    pub subscription: Option<String>,
    /// Hold the pull this long when nothing is there (long polling).
    pub suspend: Option<Duration>,
    /// Offset to commit with the pull.
    pub commit_offset: Option<i64>,
}

impl PullRequest {
    /// A pull of up to `max_msgs` messages of every tag (`*`), neither held
    /// nor committing; set the other fields with struct update syntax.
    pub fn new(
        group: impl Into<String>,
        topic: impl Into<String>,
        queue_id: i32,
        offset: i64,
        max_msgs: i32,
    ) -> Self {
        Self {
            group: group.into(),
            topic: topic.into(),
            queue_id,
            offset,
            max_msgs,
            subscription: Some("*".into()),
            suspend: None,
            commit_offset: None,
        }
    }
}

/// Pulls messages.
pub async fn pull(client: &RemotingClient, p: &PullRequest) -> Result<PullResult, SdkError> {
    let mut sys_flag = 0;
    if p.subscription.is_some() {
        sys_flag |= pull_sys_flag::SUBSCRIPTION;
    }
    if p.suspend.is_some() {
        sys_flag |= pull_sys_flag::SUSPEND;
    }
    if p.commit_offset.is_some() {
        sys_flag |= pull_sys_flag::COMMIT_OFFSET;
    }
    let suspend_ms = p.suspend.map_or(0, |d| d.as_millis() as i64);
    let header = PullMessageRequestHeader {
        consumer_group: p.group.clone(),
        topic: p.topic.clone(),
        queue_id: p.queue_id,
        queue_offset: p.offset,
        max_msg_nums: p.max_msgs,
        sys_flag,
        commit_offset: p.commit_offset.unwrap_or(-1),
        suspend_timeout_millis: suspend_ms,
        subscription: p.subscription.clone(),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        max_msg_bytes: None,
    };
    let req = RemotingCommand::request(RequestCode::PullMessage).with_ext_fields(header.to_ext());
    let resp = client
        .invoke(req, DEFAULT_TIMEOUT + p.suspend.unwrap_or_default())
        .await?;
    let ok = [
        ResponseCode::Success,
        ResponseCode::PullNotFound,
        ResponseCode::PullRetryImmediately,
        ResponseCode::PullOffsetMoved,
    ]
    .iter()
    .any(|c| i32::from(*c) == resp.code);
    if !ok {
        return Err(refused(&resp));
    }
    let h = PullMessageResponseHeader::from_ext(&resp.ext())
        .map_err(|e| SdkError::BadAnswer(e.to_string()))?;
    let mut result = PullResult {
        code: resp.code,
        next_begin_offset: h.next_begin_offset,
        min_offset: h.min_offset,
        max_offset: h.max_offset,
        messages: Vec::new(),
        queue_offsets: Vec::new(),
        store_timestamps: Vec::new(),
        phy_offsets: Vec::new(),
    };
    let body = resp.body.as_deref().unwrap_or_default();
    let mut pos = 0;
    while pos < body.len() {
        let v = RecordView::parse(&body[pos..], true)
            .map_err(|e| SdkError::BadAnswer(format!("record at {pos}: {e}")))?;
        result.messages.push(v.to_message());
        result.queue_offsets.push(v.queue_offset());
        result.store_timestamps.push(v.store_timestamp());
        result.phy_offsets.push(v.physical_offset());
        pos += v.total_size();
    }
    Ok(result)
}

/// Hands a failed message back (CONSUMER_SEND_MSG_BACK) for a retry or the
/// dead-letter queue.
pub async fn send_back(
    client: &RemotingClient,
    header: &ConsumerSendMsgBackRequestHeader,
) -> Result<(), SdkError> {
    let req =
        RemotingCommand::request(RequestCode::ConsumerSendMsgBack).with_ext_fields(header.to_ext());
    call(client, req).await.map(|_| ())
}

/// Asks for a queue's min or max offset (GET_MIN_OFFSET / GET_MAX_OFFSET).
pub async fn queue_offset(
    client: &RemotingClient,
    code: RequestCode,
    topic: &str,
    queue_id: i32,
) -> Result<i64, SdkError> {
    let ext = [
        ("topic", topic.to_owned()),
        ("queueId", queue_id.to_string()),
    ];
    let resp = call(client, request(code, &ext)).await?;
    resp.ext()
        .req_i64("offset")
        .map_err(|e| SdkError::BadAnswer(e.to_string()))
}

/// Stores a group's consume progress on one queue (UPDATE_CONSUMER_OFFSET).
pub async fn commit_offset(
    client: &RemotingClient,
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
) -> Result<(), SdkError> {
    let ext = [
        ("consumerGroup", group.to_owned()),
        ("topic", topic.to_owned()),
        ("queueId", queue_id.to_string()),
        ("commitOffset", offset.to_string()),
    ];
    call(client, request(RequestCode::UpdateConsumerOffset, &ext))
        .await
        .map(|_| ())
}

/// Sends a request and returns the answer if it is SUCCESS.
pub async fn call(
    client: &RemotingClient,
    req: RemotingCommand,
) -> Result<RemotingCommand, SdkError> {
    let resp = client.invoke(req, DEFAULT_TIMEOUT).await?;
    if resp.code != i32::from(ResponseCode::Success) {
        return Err(refused(&resp));
    }
    Ok(resp)
}

/// A request with `ext` fields.
pub fn request(code: RequestCode, ext: &[(&str, String)]) -> RemotingCommand {
    let mut req = RemotingCommand::request(code);
    for (k, v) in ext {
        req.put_ext(*k, v);
    }
    req
}

/// Connects to a broker or NameServer.
pub async fn connect(addr: SocketAddr) -> Result<RemotingClient, SdkError> {
    Ok(RemotingClient::connect(addr).await?)
}
