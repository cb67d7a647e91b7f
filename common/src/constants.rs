//! Names fixed by RocketMQ: system topics and message property keys.

/// Template topic for auto-created topics.
pub const AUTO_CREATE_TOPIC: &str = "TBW102";
/// Delayed messages wait here, queue id = delay level - 1.
pub const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";
/// Half (prepared) transactional messages.
pub const TRANS_HALF_TOPIC: &str = "RMQ_SYS_TRANS_HALF_TOPIC";
/// Op records resolving half messages.
pub const TRANS_OP_HALF_TOPIC: &str = "RMQ_SYS_TRANS_OP_HALF_TOPIC";
/// Halves that exhausted their check-backs.
pub const TRANS_CHECK_MAX_TIME_TOPIC: &str = "TRANS_CHECK_MAX_TIME_TOPIC";
/// Prefix of a consumer group's retry topic.
pub const RETRY_GROUP_TOPIC_PREFIX: &str = "%RETRY%";
/// Prefix of a consumer group's dead-letter topic.
pub const DLQ_GROUP_TOPIC_PREFIX: &str = "%DLQ%";
/// Topic that records consumer offset moves.
pub const OFFSET_MOVED_EVENT: &str = "OFFSET_MOVED_EVENT";
/// Topic of RocketMQ's benchmark tool (a system topic there).
pub const BENCHMARK_TOPIC: &str = "BenchmarkTest";
/// Default topic of message traces.
pub const TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";
/// Topic of the broker's self test.
pub const SELF_TEST_TOPIC: &str = "SELF_TEST_TOPIC";
/// Any topic starting with this is a system topic.
pub const SYSTEM_TOPIC_PREFIX: &str = "rmq_sys_";
/// Pseudo topic under which the RocksDB backend keeps its dispatch checkpoint.
pub const CHECKPOINT_TOPIC: &str = "CHECKPOINT_TOPIC";
/// Where timer messages wait (RocketMQ 5.x), queue 0.
pub const TIMER_TOPIC: &str = "rmq_sys_wheel_timer";
/// Prefix of a light message queue's name (`MixAll.LMQ_PREFIX`): such a
/// "topic" needs no topic config and has exactly one queue.
pub const LMQ_PREFIX: &str = "%LMQ%";
/// The one queue of a light message queue (`MixAll.LMQ_QUEUE_ID`).
pub const LMQ_QUEUE_ID: i32 = 0;

/// Message property keys (`MessageConst` in RocketMQ).
pub mod property {
    /// Space-separated business keys, indexed for query by key.
    pub const KEYS: &str = "KEYS";
    /// The tag; its Java hash code is the consume-queue tagsCode.
    pub const TAGS: &str = "TAGS";
    /// Delay level requested by the producer.
    pub const DELAY_TIME_LEVEL: &str = "DELAY";
    /// Whether the producer waits for the store (SYNC_FLUSH) to answer.
    pub const WAIT_STORE_MSG_OK: &str = "WAIT";
    /// Client-generated unique message id, indexed like a key.
    pub const UNIQ_CLIENT_MESSAGE_ID_KEYIDX: &str = "UNIQ_KEY";
    /// Original topic of a rewritten (delayed / transactional) message.
    pub const REAL_TOPIC: &str = "REAL_TOPIC";
    /// Original queue id of a rewritten message.
    pub const REAL_QUEUE_ID: &str = "REAL_QID";
    /// Store time (ms) a delayed message had when it entered the schedule
    /// topic; set on the copy delivered to the real topic, whose own store
    /// time is the delivery time. Not a RocketMQ key (clients ignore it).
    pub const ORIGIN_STORE_TIMESTAMP: &str = "ORIGIN_STORE_TIMESTAMP";
    /// "true" on a prepared transactional message.
    pub const TRANSACTION_PREPARED: &str = "TRAN_MSG";
    /// Producer group of a transactional message.
    pub const PRODUCER_GROUP: &str = "PGROUP";
    /// Topic a retried message was first sent to.
    pub const RETRY_TOPIC: &str = "RETRY_TOPIC";
    /// How many times the message was consumed again.
    pub const RECONSUME_TIME: &str = "RECONSUME_TIME";
    /// Retries allowed before the DLQ.
    pub const MAX_RECONSUME_TIMES: &str = "MAX_RECONSUME_TIMES";
    /// offsetMsgId of the message a retry copies.
    pub const ORIGIN_MESSAGE_ID: &str = "ORIGIN_MESSAGE_ID";
    /// How many check-backs a half message has had.
    pub const TRANSACTION_CHECK_TIMES: &str = "TRANSACTION_CHECK_TIMES";
    /// Seconds before the first check-back of a half message.
    pub const CHECK_IMMUNITY_TIME_IN_SECONDS: &str = "CHECK_IMMUNITY_TIME_IN_SECONDS";
    /// Queue offset of the half message in the half topic.
    pub const TRAN_PREPARED_QUEUE_OFFSET: &str = "TRAN_PREPARED_QUEUE_OFFSET";
    /// Transaction id chosen by the producer.
    pub const TRANSACTION_ID: &str = "__transactionId__";
    /// Queue min offset, set on pulled messages.
    pub const MIN_OFFSET: &str = "MIN_OFFSET";
    /// Queue max offset, set on pulled messages.
    pub const MAX_OFFSET: &str = "MAX_OFFSET";
    /// Cluster name of the broker.
    pub const CLUSTER: &str = "CLUSTER";
    /// Client id of a request's sender, where its reply is pushed.
    pub const REPLY_TO_CLIENT: &str = "REPLY_TO_CLIENT";
    /// When the broker pushed a reply to its requester, ms.
    pub const PUSH_REPLY_TIME: &str = "PUSH_REPLY_TIME";
    /// Timer: absolute delivery time, epoch ms (client).
    pub const TIMER_DELIVER_MS: &str = "TIMER_DELIVER_MS";
    /// Timer: delay from the broker's receive time, seconds (client).
    pub const TIMER_DELAY_SEC: &str = "TIMER_DELAY_SEC";
    /// Timer: delay from the broker's receive time, ms (client).
    pub const TIMER_DELAY_MS: &str = "TIMER_DELAY_MS";
    /// Timer: the slot time the broker filed the message under, epoch ms.
    pub const TIMER_OUT_MS: &str = "TIMER_OUT_MS";
    /// Timer: when the message entered the wheel (Long.MAX_VALUE if never).
    pub const TIMER_ENQUEUE_MS: &str = "TIMER_ENQUEUE_MS";
    /// Timer: when the message left the wheel.
    pub const TIMER_DEQUEUE_MS: &str = "TIMER_DEQUEUE_MS";
    /// Timer: times the message was re-filed from a roll point.
    pub const TIMER_ROLL_TIMES: &str = "TIMER_ROLL_TIMES";
    /// Timer: marks a recall's delete marker; `<realTopic>+<uniqKey>`.
    pub const TIMER_DEL_UNIQKEY: &str = "TIMER_DEL_UNIQKEY";
    /// Trace context (set empty on a recall's marker).
    pub const TRACE_CONTEXT: &str = "TRACE_CONTEXT";
    /// Born timestamp as a property (a recall's marker).
    pub const BORN_TIMESTAMP: &str = "BORN_TIMESTAMP";
    /// Multi-dispatch: the comma-separated queues (`%LMQ%` names) a message
    /// is also dispatched into.
    pub const INNER_MULTI_DISPATCH: &str = "INNER_MULTI_DISPATCH";
    /// Multi-dispatch: the queue offset the message took in each queue of
    /// [`INNER_MULTI_DISPATCH`], in the same order, written by the broker.
    pub const INNER_MULTI_QUEUE_OFFSET: &str = "INNER_MULTI_QUEUE_OFFSET";
}
