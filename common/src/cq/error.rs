//! The typed error of every consume-queue backend.

/// Why a consume-queue operation failed.
#[derive(Debug, thiserror::Error)]
pub enum CqError {
    /// The requested offset is below the queue's min offset.
    #[error("offset {requested} of {topic}/{queue_id} was compacted; min offset is {min_offset}")]
    Compacted {
        /// Topic.
        topic: String,
        /// Queue.
        queue_id: i32,
        /// The offset asked for.
        requested: i64,
        /// The lowest readable offset.
        min_offset: i64,
    },
    /// File I/O failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, with the path.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Stored data does not have the expected shape.
    #[error("corrupt consume queue: {detail}")]
    Corrupt {
        /// What is wrong, and where.
        detail: String,
    },
    /// The storage engine reported an error.
    #[error("{context}: {source}")]
    Engine {
        /// What was being done.
        context: String,
        /// The engine's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A previous write failed; the backend refuses writes until restarted
    /// and recovered.
    #[error("consume queue refuses writes after an earlier failure: {reason}")]
    Poisoned {
        /// The earlier failure.
        reason: String,
    },
    /// A caller passed something out of range.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The backend was closed.
    #[error("consume queue store is closed")]
    Closed,
}

impl CqError {
    /// [`CqError::Compacted`] when `from` is below the queue's `min_offset`:
    /// the rule every backend's `get` applies first.
    pub fn check_not_compacted(
        topic: &str,
        queue_id: i32,
        from: i64,
        min_offset: i64,
    ) -> Result<(), Self> {
        if from < min_offset {
            return Err(Self::Compacted {
                topic: topic.to_owned(),
                queue_id,
                requested: from,
                min_offset,
            });
        }
        Ok(())
    }

    /// An I/O error with its context.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}
