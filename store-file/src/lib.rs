//! File-based storage: the mmap'd CommitLog with its flush services and
//! recovery, the classic file consume queue, the IndexFile, and the
//! checkpoint, abort and lock files of a store root.
#![deny(unsafe_code)]

pub mod commitlog;
pub mod cq;
pub mod epoch_file;
pub mod error;
pub mod index;
pub mod mapped_file;
pub mod root;

pub use commitlog::{AppendResult, CommitLog, FlushService, RecoverOptions, RecoveryReport};
pub use cq::FileConsumeQueueStore;
pub use error::StoreError;
pub use index::{IndexError, IndexService};
