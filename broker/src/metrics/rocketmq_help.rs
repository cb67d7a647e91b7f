//! The HELP text of RocketMQ 5.x's series (the names are in
//! `rocketmq_names`).

use super::describe::Kind::{self, Counter as C, Gauge as G, Histogram as H};
use super::rocketmq_names as r;

/// (kind, name, help) of every RocketMQ 5.x series.
pub(super) const HELP: &[(Kind, &str, &str)] = &[
    (G, r::STORAGE_DISPATCH_BEHIND_BYTES, "Broker dispatch behind bytes (RocketMQ 5.x)."),
    (G, r::STORAGE_FLUSH_BEHIND_BYTES, "Broker flush behind bytes (RocketMQ 5.x)."),
    (G, r::STORAGE_SIZE_BYTES, "Broker storage size: used bytes of the store's file system (RocketMQ 5.x)."),
    (G, r::STORAGE_MESSAGE_RESERVE_TIME_MS, "Broker message reserve time: age of the oldest stored message (RocketMQ 5.x)."),
    (C, r::MESSAGES_IN_TOTAL, "Total number of incoming messages (RocketMQ 5.x)."),
    (C, r::THROUGHPUT_IN_TOTAL, "Total traffic of incoming messages, bytes (RocketMQ 5.x)."),
    (C, r::MESSAGES_OUT_TOTAL, "Total number of outgoing messages (RocketMQ 5.x)."),
    (C, r::THROUGHPUT_OUT_TOTAL, "Total traffic of outgoing messages, bytes (RocketMQ 5.x)."),
    (H, r::MESSAGE_SIZE, "Size of each stored message, bytes, one observation per send (RocketMQ 5.x)."),
    (H, r::TOPIC_CREATE_EXECUTION_TIME_MS, "Time to create or update a topic, milliseconds (RocketMQ 5.x)."),
    (H, r::CONSUMER_GROUP_CREATE_EXECUTION_TIME_MS, "Time to create or update a subscription group, milliseconds (RocketMQ 5.x)."),
    (G, r::PRODUCER_CONNECTIONS, "Producer connections (RocketMQ 5.x; protocol_type grpc for this broker's own gRPC clients)."),
    (G, r::CONSUMER_CONNECTIONS, "Consumer connections (RocketMQ 5.x; protocol_type grpc for this broker's own gRPC clients)."),
    (C, r::SEND_TO_DLQ_MESSAGES_TOTAL, "Consumer send to DLQ messages (RocketMQ 5.x)."),
    (C, r::COMMIT_MESSAGES_TOTAL, "Total number of commit messages (RocketMQ 5.x)."),
    (C, r::ROLLBACK_MESSAGES_TOTAL, "Total number of rollback messages (RocketMQ 5.x)."),
    (H, r::FINISH_MESSAGE_LATENCY_MS, "Transaction finish latency: half message born to commit, in whole seconds as RocketMQ 5.x records it."),
    (G, r::HALF_MESSAGES, "Half messages not yet committed or rolled back, per real topic (RocketMQ 5.x)."),
    (G, r::CONSUMER_LAG_MESSAGES, "Consumer lag messages (RocketMQ 5.x)."),
    (G, r::CONSUMER_LAG_LATENCY_MS, "Consumer lag time: age of the oldest message not consumed, milliseconds (RocketMQ 5.x)."),
    (G, r::CONSUMER_INFLIGHT_MESSAGES, "Consumer inflight messages: pulled and not yet committed (RocketMQ 5.x)."),
    (G, r::CONSUMER_QUEUEING_LATENCY_MS, "Consumer queueing time: age of the oldest message not pulled, milliseconds (RocketMQ 5.x)."),
    (G, r::CONSUMER_READY_MESSAGES, "Consumer ready messages: stored and not yet pulled (RocketMQ 5.x)."),
    (G, r::TOPIC_NUMBER, "Active topic number (RocketMQ 5.x)."),
    (G, r::CONSUMER_GROUP_NUMBER, "Active subscription group number (RocketMQ 5.x)."),
    (G, r::BROKER_PERMISSION, "Broker permission (RocketMQ 5.x)."),
    (G, r::PROCESSOR_WATERMARK, "Requests of each processor family being handled now (RocketMQ 5.x: its thread pool's queue)."),
    (H, r::RPC_LATENCY_MS, "Rpc latency: request arrival to answer, milliseconds (RocketMQ 5.x)."),
    (G, r::TIMER_ENQUEUE_LAG, "Timer enqueue messages lag (RocketMQ 5.x)."),
    (G, r::TIMER_ENQUEUE_LATENCY_MS, "Timer enqueue latency, milliseconds (RocketMQ 5.x)."),
    (G, r::TIMER_DEQUEUE_LAG, "Timer dequeue messages lag: filed and not yet delivered (RocketMQ 5.x)."),
    (G, r::TIMER_DEQUEUE_LATENCY_MS, "Timer dequeue latency, milliseconds (RocketMQ 5.x)."),
    (G, r::TIMER_MESSAGE_SNAPSHOT, "Timer message distribution snapshot: timers due within each bound, next 24 h (RocketMQ 5.x)."),
    (C, r::POP_REVIVE_IN_MESSAGE_TOTAL, "POP checkpoint and ack records written (RocketMQ 5.x)."),
    (C, r::POP_REVIVE_RETRY_MESSAGES_TOTAL, "POP messages revived into retry topics (RocketMQ 5.x)."),
    (G, r::POP_REVIVE_LAG_MS, "Revive-topic records not yet settled (RocketMQ 5.x)."),
    (G, r::POP_REVIVE_LATENCY_MS, "Age of the oldest unsettled revive record, milliseconds (RocketMQ 5.x)."),
    (G, r::POP_CHECKPOINT_BUFFER_SIZE, "POP checkpoints buffered in memory before being written: none here (RocketMQ 5.x)."),
    (G, r::POP_OFFSET_BUFFER_SIZE, "POP offsets buffered in memory: none here (RocketMQ 5.x)."),
];
