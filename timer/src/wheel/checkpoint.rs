//! `config/timercheck`: seven big-endian i64 at fixed offsets in a
//! 4,096-byte file (RocketMQ 5.x's `TimerCheckpoint`). Written whole and
//! atomically (temporary file, sync, rename).

use std::path::Path;

use crate::error::TimerError;

/// Bytes of the file.
pub const CHECKPOINT_BYTES: usize = 4096;

/// The checkpoint's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimerCheckpoint {
    /// The next slot to deliver (dequeue read pointer), epoch ms.
    pub last_read_time_ms: i64,
    /// Timer-log position everything before which was flushed.
    pub last_timer_log_flush_pos: i64,
    /// Next timer-topic queue offset to file.
    pub last_timer_queue_offset: i64,
    /// The same, as the master sees it (equal here: no slave runs timers).
    pub master_timer_queue_offset: i64,
    /// dataVersion.stateVersion.
    pub state_version: i64,
    /// dataVersion.timestamp.
    pub timestamp: i64,
    /// dataVersion.counter.
    pub counter: i64,
}

impl TimerCheckpoint {
    /// The file's bytes.
    pub fn encode(&self) -> [u8; CHECKPOINT_BYTES] {
        let mut b = [0u8; CHECKPOINT_BYTES];
        for (i, v) in [
            self.last_read_time_ms,
            self.last_timer_log_flush_pos,
            self.last_timer_queue_offset,
            self.master_timer_queue_offset,
            self.state_version,
            self.timestamp,
            self.counter,
        ]
        .into_iter()
        .enumerate()
        {
            b[i * 8..i * 8 + 8].copy_from_slice(&v.to_be_bytes());
        }
        b
    }

    /// Reads a file body: at least the first four fields (32 bytes; the
    /// data version was added later and reads as 0 when absent).
    pub fn decode(b: &[u8]) -> Option<Self> {
        if b.len() < 32 {
            return None;
        }
        let at = |i: usize| {
            b.get(i * 8..i * 8 + 8).map_or(0, |s| {
                let mut x = [0u8; 8];
                x.copy_from_slice(s);
                i64::from_be_bytes(x)
            })
        };
        Some(Self {
            last_read_time_ms: at(0),
            last_timer_log_flush_pos: at(1),
            last_timer_queue_offset: at(2),
            master_timer_queue_offset: at(3),
            state_version: at(4),
            timestamp: at(5),
            counter: at(6),
        })
    }

    /// Reads `path`; `None` when it does not exist.
    pub fn load(path: &Path) -> Result<Option<Self>, TimerError> {
        match std::fs::read(path) {
            Ok(b) => Self::decode(&b)
                .map(Some)
                .ok_or_else(|| TimerError::Corrupt {
                    path: path.to_owned(),
                    what: format!("{} bytes, fewer than the 32 of a timer checkpoint", b.len()),
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(TimerError::io("read", path)(e)),
        }
    }

    /// Writes `path` atomically.
    pub fn store(&self, path: &Path) -> Result<(), TimerError> {
        if let Some(dir) = path.parent() {
            rmq_common::meta_file::create_dir_all_durable(dir)
                .map_err(TimerError::io("create", dir))?;
        }
        rmq_common::meta_file::write_atomically(path, &self.encode()).map_err(|e| TimerError::Io {
            op: e.step,
            path: e.path,
            source: e.source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_round_trips_and_old_files_read() {
        let c = TimerCheckpoint {
            last_read_time_ms: 1_000,
            last_timer_log_flush_pos: 520,
            last_timer_queue_offset: 7,
            master_timer_queue_offset: 7,
            state_version: 1,
            timestamp: 2,
            counter: 3,
        };
        let b = c.encode();
        assert_eq!(&b[16..24], &7i64.to_be_bytes());
        assert_eq!(TimerCheckpoint::decode(&b), Some(c));
        let old = TimerCheckpoint::decode(&b[..32]).unwrap();
        assert_eq!(old.counter, 0);
        assert_eq!(old.last_timer_queue_offset, 7);
        assert_eq!(TimerCheckpoint::decode(&b[..31]), None);
    }
}
