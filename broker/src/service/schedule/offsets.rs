//! Per-level progress of the schedule service, persisted as RocketMQ's
//! `config/delayOffset.json` (`{"offsetTable":{"<level>":<queue offset>}}`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};

use crate::error::MetaError;
use serde::{Deserialize, Serialize};

use crate::meta::{read_json, write_json};

/// `config/delayOffset.json`.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct DelayOffsetFile {
    pub(crate) offset_table: BTreeMap<i32, i64>,
}

/// The next schedule-queue offset to deliver, per level.
#[derive(Debug)]
pub struct DelayOffsetTable {
    path: PathBuf,
    /// Index = level - 1.
    offsets: Vec<AtomicI64>,
}

impl DelayOffsetTable {
    /// Loads `<root>/config/delayOffset.json` for `max_level` levels; levels
    /// the file does not name start at 0, levels beyond `max_level` (the
    /// table shrank) are dropped with a warning.
    pub fn open(root: &Path, max_level: i32) -> Result<Self, MetaError> {
        let path = root.join("config").join("delayOffset.json");
        let file: DelayOffsetFile = read_json(&path)?.unwrap_or_default();
        let offsets: Vec<AtomicI64> = (1..=max_level)
            .map(|level| AtomicI64::new(file.offset_table.get(&level).copied().unwrap_or(0)))
            .collect();
        for (level, offset) in &file.offset_table {
            if *level < 1 || *level > max_level {
                tracing::warn!(
                    level,
                    offset,
                    max_level,
                    "delayOffset.json names a level the messageDelayLevel table does not have; ignored"
                );
            }
        }
        Ok(Self { path, offsets })
    }

    /// Next offset of `level` (0 for an unknown level).
    pub fn get(&self, level: i32) -> i64 {
        self.slot(level).map_or(0, |s| s.load(Ordering::Acquire))
    }

    /// Records that `level` continues at `offset`.
    pub fn set(&self, level: i32, offset: i64) {
        if let Some(s) = self.slot(level) {
            s.store(offset, Ordering::Release);
        }
    }

    /// Writes the table atomically.
    pub fn persist(&self) -> Result<(), MetaError> {
        let file = DelayOffsetFile {
            offset_table: (1..)
                .zip(self.offsets.iter())
                .map(|(level, o)| (level, o.load(Ordering::Acquire)))
                .collect(),
        };
        write_json(&self.path, &file)
    }

    fn slot(&self, level: i32) -> Option<&AtomicI64> {
        let i = usize::try_from(level).ok()?.checked_sub(1)?;
        self.offsets.get(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_ignores_unknown_levels() {
        let dir = tempfile::tempdir().unwrap();
        let t = DelayOffsetTable::open(dir.path(), 3).unwrap();
        assert_eq!(t.get(2), 0);
        t.set(2, 7);
        t.set(9, 1);
        t.persist().unwrap();
        let text = std::fs::read_to_string(dir.path().join("config/delayOffset.json")).unwrap();
        assert!(text.contains("\"offsetTable\""), "{text}");
        let t = DelayOffsetTable::open(dir.path(), 2).unwrap();
        assert_eq!(t.get(2), 7);
        assert_eq!(t.get(3), 0);
    }
}
