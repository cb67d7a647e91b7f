//! Errors of the file store.

use std::path::PathBuf;

use rmq_common::cq::CqError;
use rmq_common::message::RecordError;
use rmq_common::names::NameError;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The message cannot be stored as it is (RocketMQ's MESSAGE_ILLEGAL).
    #[error("message illegal: {reason}")]
    MessageIllegal {
        /// What is wrong with it.
        reason: String,
    },
    /// A replicated chunk does not start where this log ends: the logs
    /// diverged (or the slave fell behind what the master still has).
    #[error(
        "replicated chunk at CommitLog offset {offset} does not continue this log, which ends at \
         {local_end}: the master and this slave diverged"
    )]
    ReplicaGap {
        /// Where this log ends.
        local_end: i64,
        /// Where the chunk starts.
        offset: i64,
    },
    /// The topic name breaks the naming rules.
    #[error(transparent)]
    IllegalName(#[from] NameError),
    /// The message could not be encoded.
    #[error("message cannot be encoded: {0}")]
    Encode(#[source] RecordError),
    /// File I/O failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, with the path.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Stored data is damaged somewhere other than a torn tail; the store
    /// refuses to start rather than cut good data after it.
    #[error("corrupt store file {path} at log offset {offset}: {detail}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// CommitLog offset of the damage.
        offset: i64,
        /// What was found.
        detail: String,
    },
    /// Another process holds the store root.
    #[error("store root {path} is locked by another process (its `lock` file is held)")]
    Locked {
        /// The lock file.
        path: PathBuf,
    },
    /// An earlier write or flush failed; writes are refused until a restart
    /// recovers the tail.
    #[error("store refuses writes after an earlier failure: {reason}")]
    Poisoned {
        /// The earlier failure.
        reason: String,
    },
    /// The flush covering a SYNC_FLUSH append did not finish in time. The
    /// message is stored and will be flushed; only the wait ended.
    #[error("flush to offset {offset} did not complete within {timeout_ms} ms")]
    FlushTimeout {
        /// End offset of the message waited for.
        offset: i64,
        /// The wait.
        timeout_ms: u64,
    },
    /// The consume-queue backend failed.
    #[error(transparent)]
    ConsumeQueue(#[from] CqError),
    /// The IndexFile failed.
    #[error(transparent)]
    Index(#[from] crate::index::IndexError),
    /// A configuration value cannot be used.
    #[error(transparent)]
    Config(#[from] rmq_common::ConfigError),
    /// The store's disk is fuller than `diskSpaceWarningLevelRatio`: writes
    /// are refused until space is freed (reads go on).
    #[error("disk full: the store's disk is {used_pct:.1}% used, above diskSpaceWarningLevelRatio {limit_pct}%; writes are refused until space is freed")]
    DiskFull {
        /// Disk use when last read, percent.
        used_pct: f64,
        /// The configured limit, percent.
        limit_pct: u32,
    },
    /// A runtime truncation asked for an offset outside the CommitLog.
    #[error("cannot truncate the CommitLog to {offset}: it holds [{min}, {max})")]
    TruncateOutOfRange {
        /// The offset asked for.
        offset: i64,
        /// The CommitLog's min offset.
        min: i64,
        /// Its max offset.
        max: i64,
    },
    /// A runtime truncation asked for an offset inside a record.
    #[error("cannot truncate the CommitLog to {offset}: not a record boundary (the record around it starts at {record_start})")]
    NotRecordBoundary {
        /// The offset asked for.
        offset: i64,
        /// Where the record holding it starts (or where parsing stopped).
        record_start: i64,
    },
    /// Dispatch did not finish writing what it parsed in time (a runtime
    /// truncation waits for it).
    #[error("the consume queue did not catch up with dispatch (parsed to {parsed}, written to {written})")]
    DispatchStalled {
        /// Where dispatch parsed to.
        parsed: i64,
        /// What the backend has written.
        written: i64,
    },
    /// A master epoch older than the newest in the epoch file.
    #[error("master epoch {epoch} is older than the epoch file's last epoch {last}")]
    StaleEpoch {
        /// The epoch asked for.
        epoch: i32,
        /// The newest one recorded.
        last: i32,
    },
    /// The epoch file (`epochFileCheckpoint`) cannot be read or written.
    #[error(transparent)]
    EpochFile(#[from] crate::epoch_file::EpochFileError),
    /// The store is shut down.
    #[error("store is shut down")]
    ShutDown,
    /// This store only takes what its master streams (a slave).
    #[error("service not available now: this broker is a slave (messages are put to its master)")]
    Slave,
    /// File consume queue: more light message queues exist than
    /// `maxLmqConsumeQueueNum` allows, so multi-dispatch sends and LMQ pulls
    /// are refused (RocketMQ's LMQ_CONSUME_QUEUE_NUM_EXCEEDED).
    #[error("[LMQ_CONSUME_QUEUE_NUM_EXCEEDED]broker config enableLmq and enableMultiDispatch, lmq consumeQueue num exceed maxLmqConsumeQueueNum config num: {count} LMQ queues, maxLmqConsumeQueueNum {max}")]
    LmqQueueNumExceeded {
        /// LMQ queues in the file consume queue.
        count: u64,
        /// `maxLmqConsumeQueueNum`.
        max: u32,
    },
}

impl StoreError {
    /// An I/O error with its context.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}

/// A failed atomic write as an I/O error naming its step and file.
impl From<rmq_common::meta_file::AtomicWriteError> for StoreError {
    fn from(e: rmq_common::meta_file::AtomicWriteError) -> Self {
        Self::io(format!("{} {}", e.step, e.path.display()), e.source)
    }
}

/// Result with [`StoreError`].
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
