//! The HELP text of every series, registered once with the recorder (so
//! `promtool check metrics` finds each described).

use super::names as n;

/// What kind of series a name is.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    Counter,
    Gauge,
    Histogram,
}

use Kind::{Counter as C, Gauge as G, Histogram as H};

/// (kind, name, help) of every series served through the recorder.
const HELP: &[(Kind, &str, &str)] = &[
    (
        G,
        n::DISPATCH_BEHIND_BYTES,
        "CommitLog bytes appended but not yet dispatched to the serving consume queue.",
    ),
    (
        G,
        n::DISPATCH_BEHIND_SECONDS,
        "Age of the oldest record not yet dispatched.",
    ),
    (
        H,
        n::DISPATCH_DELAY_SECONDS,
        "Per record: time from store to readable in a consume-queue backend.",
    ),
    (
        G,
        n::REPUT_FROM_OFFSET,
        "CommitLog offset the serving consume queue has been dispatched to.",
    ),
    (
        G,
        n::COMMITLOG_MAX_OFFSET,
        "CommitLog offset just past the last record.",
    ),
    (
        G,
        n::COMMITLOG_MIN_OFFSET,
        "Lowest CommitLog offset still stored.",
    ),
    (C, n::PUT_MESSAGES_TOTAL, "Messages stored, by topic class."),
    (
        H,
        n::PUT_LATENCY_SECONDS,
        "Store put latency (append plus flush / replication wait).",
    ),
    (C, n::GET_MESSAGES_TOTAL, "Messages returned by pulls."),
    (H, n::GET_LATENCY_SECONDS, "Store get latency."),
    (H, n::FLUSH_LATENCY_SECONDS, "CommitLog flush pass latency."),
    (
        H,
        n::CQ_WRITE_BATCH_SIZE,
        "Units per consume-queue write, per backend.",
    ),
    (
        H,
        n::CQ_WRITE_LATENCY_SECONDS,
        "Consume-queue write latency, hand-over to written, per backend.",
    ),
    (
        C,
        n::CQ_ENTRIES_TOTAL,
        "Units written to a consume-queue backend.",
    ),
    (
        G,
        n::CQ_SHADOW_LAG_BYTES,
        "CommitLog bytes the shadow consume queue has not written that the serving one has.",
    ),
    (
        G,
        n::CQ_DISPATCHED_OFFSET,
        "CommitLog offset a consume-queue backend has written up to.",
    ),
    (
        G,
        n::CQ_MEMORY_BYTES,
        "Memory a consume-queue backend holds (maps, memtables, block cache).",
    ),
    (
        G,
        n::CQ_DISK_BYTES,
        "Bytes a consume-queue backend's folder occupies on disk.",
    ),
    (G, n::CQ_QUEUES, "Queues a consume-queue backend knows."),
    (
        G,
        n::CQ_LMQ_QUEUES,
        "Light message queues (%LMQ%) a consume-queue backend knows.",
    ),
    (
        G,
        n::LMQ_OFFSETS_HELD,
        "Light message queues whose next offset the put path holds in memory.",
    ),
    (
        C,
        n::CQ_LMQ_ENTRIES_TOTAL,
        "Units written into light message queues (multi-dispatch), per backend.",
    ),
    (
        G,
        n::CQ_BEHIND_BYTES,
        "CommitLog bytes a consume-queue backend has not written yet.",
    ),
    (
        C,
        n::CQ_SHADOW_DROPPED_BATCHES_TOTAL,
        "Batches the shadow's queue dropped and it read from the CommitLog instead.",
    ),
    (
        H,
        n::CQ_READ_LATENCY_SECONDS,
        "Consume-queue read latency (serving backend).",
    ),
    (
        G,
        n::CQ_OPEN_FILES,
        "Files a consume-queue backend holds open.",
    ),
    (
        G,
        n::CQ_MAPPED_FILES,
        "Memory maps a consume-queue backend holds.",
    ),
    (G, n::ROCKSDB_MEMTABLE_BYTES, "RocksDB memtable bytes."),
    (
        G,
        n::ROCKSDB_PENDING_COMPACTION_BYTES,
        "RocksDB estimated bytes compaction still has to rewrite.",
    ),
    (
        G,
        n::ROCKSDB_RUNNING_COMPACTIONS,
        "RocksDB compactions running now.",
    ),
    (
        G,
        n::ROCKSDB_BLOCK_CACHE_USAGE_BYTES,
        "RocksDB block cache bytes in use.",
    ),
    (
        G,
        n::ROCKSDB_TABLE_READERS_BYTES,
        "RocksDB table readers' memory outside the block cache, estimated.",
    ),
    (
        G,
        n::ROCKSDB_WRITE_STALLED,
        "1 while RocksDB stalls or stops writes.",
    ),
    (
        G,
        n::CONSUMER_LAG_MESSAGES,
        "Messages not yet consumed per group and topic (the largest series; the rest as _other).",
    ),
    (
        G,
        n::SCHEDULE_PENDING,
        "Delayed messages waiting, per level.",
    ),
    (
        G,
        n::TIMER_BACKLOG,
        "Timer messages filed and not yet delivered, per timer store.",
    ),
    (
        G,
        n::TIMER_DUE_LAG_SECONDS,
        "Now minus the end of the next timer slot to deliver (0 when not due), per timer store.",
    ),
    (
        G,
        n::TIMER_ENQUEUE_LAG,
        "Timer-topic messages stored but not yet filed in the timer store.",
    ),
    (
        C,
        n::TIMER_DELIVERED_TOTAL,
        "Timer messages put into their real topics.",
    ),
    (
        C,
        n::TIMER_RECALLED_TOTAL,
        "Timer messages dropped because a recall named them.",
    ),
    (
        G,
        n::TIMER_DISK_BYTES,
        "Bytes the timer store holds on disk, per timer store.",
    ),
    (
        G,
        n::POP_IN_FLIGHT,
        "Popped messages neither acked nor revived yet, per POP-state form.",
    ),
    (C, n::POP_MESSAGES_TOTAL, "Messages handed out by POP."),
    (C, n::POP_ACKS_TOTAL, "Popped messages acked."),
    (
        C,
        n::POP_REVIVED_TOTAL,
        "Unacked popped messages brought back through retry topics.",
    ),
    (
        G,
        n::POP_REVIVE_DUE_LAG_SECONDS,
        "How late the oldest due pop is, seconds (0 when none is due).",
    ),
    (
        G,
        n::TRANSACTION_HALF_PENDING,
        "Half messages not yet committed or rolled back.",
    ),
    (
        C,
        n::TRANSACTION_CHECKS_TOTAL,
        "Transaction check-backs sent to producers.",
    ),
    (
        G,
        n::TOPIC_PUT_TPS,
        "Messages stored per second over the last minute, by topic.",
    ),
    (
        G,
        n::GROUP_GET_TPS,
        "Messages pulled per second over the last minute, by group and topic.",
    ),
    (
        G,
        n::PUT_MESSAGES_TODAY,
        "Messages stored since UTC midnight.",
    ),
    (
        G,
        n::PUT_MESSAGES_YESTERDAY,
        "Messages stored yesterday (UTC).",
    ),
    (
        G,
        n::GET_MESSAGES_TODAY,
        "Messages pulled since UTC midnight.",
    ),
    (
        G,
        n::GET_MESSAGES_YESTERDAY,
        "Messages pulled yesterday (UTC).",
    ),
    (G, n::HA_SLAVES, "Slaves connected to this master."),
    (
        G,
        n::HA_IS_MASTER,
        "1 while this broker is a master taking writes, else 0.",
    ),
    (
        G,
        n::CONTROLLER_MASTER_EPOCH,
        "Controller mode: the master epoch of this broker's role.",
    ),
    (
        G,
        n::CONTROLLER_SYNC_STATE_SET_SIZE,
        "Controller mode: members of the SyncStateSet, on the master.",
    ),
    (
        C,
        n::CONTROLLER_ROLE_CHANGES_TOTAL,
        "Controller mode: role changes this broker took.",
    ),
    (G, n::HA_IN_SYNC_SLAVES, "Slaves in sync with this master."),
    (
        G,
        n::HA_ACKED_OFFSET,
        "Highest CommitLog offset each slave acknowledged.",
    ),
    (
        G,
        n::HA_LAG_BYTES,
        "CommitLog bytes each slave has not acknowledged.",
    ),
    (
        G,
        n::HA_LAG_SECONDS,
        "Age of the oldest record each slave has not acknowledged.",
    ),
    (
        C,
        n::HA_SENT_BYTES_TOTAL,
        "CommitLog bytes streamed to slaves.",
    ),
    (G, n::CONNECTIONS, "Client connections open."),
    (
        C,
        n::POISON_MESSAGES_TOTAL,
        "Stored messages a service passed over because it can never write them again.",
    ),
    (
        G,
        n::STORE_DISK_USED_RATIO,
        "Used fraction of the store's file system.",
    ),
    (G, n::OPEN_FILES, "Open file descriptors of the process."),
    (G, n::MEMORY_MAPS, "Memory maps of the process."),
    (
        G,
        n::PROCESS_RESIDENT_BYTES,
        "Resident memory of the process.",
    ),
];

/// Registers every description with the installed recorder.
pub(super) fn describe_all() {
    for (kind, name, help) in HELP.iter().chain(super::rocketmq_help::HELP) {
        match kind {
            C => metrics::describe_counter!(*name, *help),
            G => metrics::describe_gauge!(*name, *help),
            H => metrics::describe_histogram!(*name, *help),
        }
    }
    // An embedded or standalone controller replica's series.
    rmq_controller::metrics::describe();
}
