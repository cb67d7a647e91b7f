//! File-based storage: the mmap'd CommitLog with its flush services and
//! recovery, the classic file consume queue, the IndexFile, and the
//! checkpoint, abort and lock files of a store root.
#![deny(unsafe_code)]

pub mod mapped_file;
pub mod cq;
pub mod index;
