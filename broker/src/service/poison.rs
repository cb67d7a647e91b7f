//! Where the services put what they can never write: a stored message that
//! the schedule service or the transaction check walk must write again but
//! cannot (its real topic is illegal, it would be over maxMessageSize, ...).
//! Such a message is passed over so that the ones behind it keep moving;
//! it is logged once, counted, and described by one JSON line in
//! `<storePathRootDir>/poison/<service>.jsonl`, with its CommitLog offset
//! and offset message id, so an operator can read the message itself with
//! `mqadmin queryMsgById` while the CommitLog still holds it.
//!
//! The file stops growing at [`MAX_FILE_BYTES`] (one error line says so);
//! the count goes on.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use serde::Serialize;

/// Largest poison file; past it entries are only counted and logged.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// One message passed over.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoisonEntry {
    /// When it was passed over, ms since the epoch.
    pub time_ms: i64,
    /// CommitLog offset of the stored message.
    pub commit_log_offset: i64,
    /// Its offset message id (for `mqadmin queryMsgById`), when known.
    pub offset_msg_id: Option<String>,
    /// Where it was: the schedule topic's level queue or the half queue.
    pub queue: String,
    /// Its queue offset there.
    pub queue_offset: i64,
    /// The topic it was meant for, when known.
    pub target_topic: Option<String>,
    /// Why it can never be written.
    pub reason: String,
}

/// The poison record of one service.
#[derive(Debug)]
pub struct PoisonLog {
    service: &'static str,
    path: PathBuf,
    file: Mutex<Option<File>>,
    written: AtomicU64,
    count: AtomicU64,
}

impl PoisonLog {
    /// The record of `service` under `root` (the file is created on the
    /// first entry).
    pub fn new(root: &Path, service: &'static str) -> Self {
        let path = root.join("poison").join(format!("{service}.jsonl"));
        let written = std::fs::metadata(&path).map_or(0, |m| m.len());
        Self {
            service,
            path,
            file: Mutex::new(None),
            written: AtomicU64::new(written),
            count: AtomicU64::new(0),
        }
    }

    /// Messages passed over since start.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records a message passed over: an error line, the count, and a line
    /// in the file while it is under its bound.
    pub fn record(&self, entry: &PoisonEntry) {
        self.count.fetch_add(1, Ordering::Relaxed);
        tracing::error!(
            service = self.service,
            queue = %entry.queue,
            queue_offset = entry.queue_offset,
            commit_log_offset = entry.commit_log_offset,
            offset_msg_id = entry.offset_msg_id.as_deref().unwrap_or(""),
            target_topic = entry.target_topic.as_deref().unwrap_or(""),
            reason = %entry.reason,
            file = %self.path.display(),
            "stored message can never be written again; passed over"
        );
        if let Err(e) = self.append(entry) {
            tracing::error!(file = %self.path.display(), error = %e, "writing the poison record failed");
        }
    }

    fn append(&self, entry: &PoisonEntry) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(entry).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let mut file = self.file.lock();
        let before = self.written.load(Ordering::Relaxed);
        if before >= MAX_FILE_BYTES {
            return Ok(());
        }
        if before + line.len() as u64 > MAX_FILE_BYTES {
            self.written.store(MAX_FILE_BYTES, Ordering::Relaxed);
            tracing::error!(file = %self.path.display(), max_bytes = MAX_FILE_BYTES,
                "poison record is full; further entries are only counted and logged");
            return Ok(());
        }
        if file.is_none() {
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            *file = Some(
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&self.path)?,
            );
        }
        if let Some(f) = file.as_mut() {
            f.write_all(&line)?;
            f.sync_data()?;
        }
        self.written.fetch_add(line.len() as u64, Ordering::Relaxed);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: i64) -> PoisonEntry {
        PoisonEntry {
            time_ms: 1,
            commit_log_offset: i,
            offset_msg_id: Some("0A".into()),
            queue: "SCHEDULE_TOPIC_XXXX:2".into(),
            queue_offset: i,
            target_topic: Some("Orders".into()),
            reason: "too large".into(),
        }
    }

    #[test]
    fn entries_are_json_lines_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let log = PoisonLog::new(dir.path(), "schedule");
        log.record(&entry(7));
        log.record(&entry(8));
        assert_eq!(log.count(), 2);
        let text = std::fs::read_to_string(log.path()).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1]["commitLogOffset"], 8);
        assert_eq!(lines[0]["targetTopic"], "Orders");
        // A restart keeps appending to the same file.
        let again = PoisonLog::new(dir.path(), "schedule");
        again.record(&entry(9));
        assert_eq!(
            std::fs::read_to_string(log.path()).unwrap().lines().count(),
            3
        );
    }
}
