//! RocketMQ 5.x's series names, as its Prometheus exporter writes them
//! (OpenTelemetry Java 1.29: the instrument's name, then `_<unit>` when it
//! has one, so `rocketmq_rpc_latency` with unit milliseconds is served as
//! `rocketmq_rpc_latency_milliseconds`; histograms add `_bucket`, `_sum`
//! and `_count`). Checked against a scrape of Apache RocketMQ 5.3.3 by
//! `it::metrics_apache`.

/// CommitLog bytes not yet dispatched to the consume queue.
pub const STORAGE_DISPATCH_BEHIND_BYTES: &str = "rocketmq_storage_dispatch_behind_bytes";
/// CommitLog bytes not yet flushed.
pub const STORAGE_FLUSH_BEHIND_BYTES: &str = "rocketmq_storage_flush_behind_bytes";
/// Used bytes of the file system holding the store.
pub const STORAGE_SIZE_BYTES: &str = "rocketmq_storage_size_bytes";
/// Age of the oldest stored message.
pub const STORAGE_MESSAGE_RESERVE_TIME_MS: &str =
    "rocketmq_storage_message_reserve_time_milliseconds";
/// Messages stored, per topic.
pub const MESSAGES_IN_TOTAL: &str = "rocketmq_messages_in_total";
/// Stored bytes, per topic.
pub const THROUGHPUT_IN_TOTAL: &str = "rocketmq_throughput_in_total";
/// Messages pulled, per topic and group.
pub const MESSAGES_OUT_TOTAL: &str = "rocketmq_messages_out_total";
/// Pulled bytes, per topic and group.
pub const THROUGHPUT_OUT_TOTAL: &str = "rocketmq_throughput_out_total";
/// Bytes per stored message, one observation per send (histogram, no
/// unit in the name, as RocketMQ writes it).
pub const MESSAGE_SIZE: &str = "rocketmq_message_size";
/// Time to create or update a topic (UPDATE_AND_CREATE_TOPIC), ms.
pub const TOPIC_CREATE_EXECUTION_TIME_MS: &str =
    "rocketmq_topic_create_execution_time_milliseconds";
/// Time to create or update a subscription group
/// (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP(_LIST)), ms.
pub const CONSUMER_GROUP_CREATE_EXECUTION_TIME_MS: &str =
    "rocketmq_consumer_group_create_execution_time_milliseconds";
/// Producer connections, by language, version and protocol.
pub const PRODUCER_CONNECTIONS: &str = "rocketmq_producer_connections";
/// Consumer connections, by group, language, version, consume mode and
/// protocol.
pub const CONSUMER_CONNECTIONS: &str = "rocketmq_consumer_connections";
/// Messages moved to a dead-letter topic, per group and topic.
pub const SEND_TO_DLQ_MESSAGES_TOTAL: &str = "rocketmq_send_to_dlq_messages_total";
/// Transactions committed, per real topic.
pub const COMMIT_MESSAGES_TOTAL: &str = "rocketmq_commit_messages_total";
/// Transactions rolled back, per real topic.
pub const ROLLBACK_MESSAGES_TOTAL: &str = "rocketmq_rollback_messages_total";
/// Time from a half message's birth to its commit (histogram). RocketMQ
/// declares the unit "ms" (so the exporter names it milliseconds) but
/// records whole seconds, with buckets in seconds; so does this broker.
pub const FINISH_MESSAGE_LATENCY_MS: &str = "rocketmq_finish_message_latency_milliseconds";
/// Half messages not yet committed or rolled back, per real topic.
pub const HALF_MESSAGES: &str = "rocketmq_half_messages";
/// Messages not yet consumed (committed), per group and topic.
pub const CONSUMER_LAG_MESSAGES: &str = "rocketmq_consumer_lag_messages";
/// Age of the oldest message not yet consumed, ms, per group and topic.
pub const CONSUMER_LAG_LATENCY_MS: &str = "rocketmq_consumer_lag_latency_milliseconds";
/// Messages pulled and not yet committed, per group and topic.
pub const CONSUMER_INFLIGHT_MESSAGES: &str = "rocketmq_consumer_inflight_messages";
/// Age of the oldest message not yet pulled, ms, per group and topic.
pub const CONSUMER_QUEUEING_LATENCY_MS: &str = "rocketmq_consumer_queueing_latency_milliseconds";
/// Messages stored and not yet pulled, per group and topic.
pub const CONSUMER_READY_MESSAGES: &str = "rocketmq_consumer_ready_messages";
/// Topics in the topic table.
pub const TOPIC_NUMBER: &str = "rocketmq_topic_number";
/// Subscription groups in the group table.
pub const CONSUMER_GROUP_NUMBER: &str = "rocketmq_consumer_group_number";
/// The broker's permission (`brokerPermission`: 2 write, 4 read).
pub const BROKER_PERMISSION: &str = "rocketmq_broker_permission";
/// Requests of each processor family being handled (RocketMQ: the queue
/// of that processor's thread pool), label `processor`.
pub const PROCESSOR_WATERMARK: &str = "rocketmq_processor_watermark";
/// Time from a request's arrival to its answer, ms, per request and
/// response code (histogram).
pub const RPC_LATENCY_MS: &str = "rocketmq_rpc_latency_milliseconds";
/// Timer-topic messages not yet filed.
pub const TIMER_ENQUEUE_LAG: &str = "rocketmq_timer_enqueue_lag";
/// Age of the oldest timer-topic message not yet filed, ms.
pub const TIMER_ENQUEUE_LATENCY_MS: &str = "rocketmq_timer_enqueue_latency_milliseconds";
/// Timer messages filed and not yet delivered.
pub const TIMER_DEQUEUE_LAG: &str = "rocketmq_timer_dequeue_lag";
/// How late timer delivery is, ms.
pub const TIMER_DEQUEUE_LATENCY_MS: &str = "rocketmq_timer_dequeue_latency_milliseconds";
/// Timers falling due within each bound of the next 24 h, label
/// `timer_bound_s`.
pub const TIMER_MESSAGE_SNAPSHOT: &str = "rocketmq_timer_message_snapshot";
/// Records written to POP state, by `revive_message_type` (CK, ACK).
pub const POP_REVIVE_IN_MESSAGE_TOTAL: &str = "rocketmq_pop_revive_in_message_total";
/// Messages revived into retry topics, by `put_status`.
pub const POP_REVIVE_RETRY_MESSAGES_TOTAL: &str = "rocketmq_pop_revive_retry_messages_total";
/// Revive-topic records not yet settled, per `queue_id` (RocketMQ gives
/// this count the unit milliseconds, hence the name).
pub const POP_REVIVE_LAG_MS: &str = "rocketmq_pop_revive_lag_milliseconds";
/// Age of the oldest unsettled revive-topic record, ms, per `queue_id`.
pub const POP_REVIVE_LATENCY_MS: &str = "rocketmq_pop_revive_latency_milliseconds";
/// Checkpoints held in memory before they are written (RocketMQ's POP
/// buffer-merge service; always 0 here, see the README).
pub const POP_CHECKPOINT_BUFFER_SIZE: &str = "rocketmq_pop_checkpoint_buffer_size";
/// Offsets held in that buffer (always 0 here).
pub const POP_OFFSET_BUFFER_SIZE: &str = "rocketmq_pop_offset_buffer_size";

/// RocketMQ's `rocketmq_message_size` buckets, bytes: 1 KiB, 4 KiB,
/// 512 KiB, 1 MiB, 2 MiB, 4 MiB.
pub const MESSAGE_SIZE_BUCKETS: &[f64] = &[
    1024.0,
    4096.0,
    524_288.0,
    1_048_576.0,
    2_097_152.0,
    4_194_304.0,
];
/// RocketMQ's `rocketmq_rpc_latency` buckets, ms.
pub const RPC_LATENCY_BUCKETS: &[f64] = &[1.0, 3.0, 5.0, 7.0, 10.0, 100.0, 1000.0, 2000.0, 3000.0];
/// RocketMQ's `rocketmq_topic_create_execution_time` (and consumer group
/// create) buckets, ms.
pub const TOPIC_CREATE_BUCKETS: &[f64] = &[10.0, 100.0, 1000.0, 3000.0, 5000.0];
/// RocketMQ's `rocketmq_finish_message_latency` buckets: 5 s, 1 min,
/// 10 min, 1 h, 12 h, 24 h, as the seconds it records.
pub const FINISH_MESSAGE_LATENCY_BUCKETS: &[f64] = &[5.0, 60.0, 600.0, 3600.0, 43_200.0, 86_400.0];
