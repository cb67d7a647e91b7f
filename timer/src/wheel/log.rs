//! The timer log (`timerlog/`): 52-byte units appended to files of
//! `mappedFileSizeTimerLog` bytes named by their 20-digit start offset.
//! A unit that does not fit in the rest of a file (with 16 bytes to
//! spare) is preceded by a 16-byte blank there and goes to the next file.
//! Written with positioned writes (no mapping); [`TimerLog::flush`] syncs.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::entry::UNIT_SIZE;
use crate::error::TimerError;

/// Bytes of the end-of-file blank.
pub const BLANK_SIZE: usize = 16;
/// Magic of the end-of-file blank: `0xBBCCDDEE ^ (1880681586 + 8)`.
pub const BLANK_MAGIC_CODE: i32 = (0xBBCC_DDEE_u32 ^ (1_880_681_586 + 8)) as i32;

/// The timer log's files.
#[derive(Debug)]
pub struct TimerLog {
    dir: PathBuf,
    file_size: i64,
    files: BTreeMap<i64, File>,
    /// Where the next unit goes.
    write_pos: i64,
    /// Files written since the last flush (start offsets).
    unsynced: Vec<i64>,
}

/// A position's place: its file's start offset and the offset inside it.
fn split(pos: i64, file_size: i64) -> (i64, i64) {
    let start = pos - pos.rem_euclid(file_size);
    (start, pos - start)
}

impl TimerLog {
    /// Opens the folder (creating it); the write position is the end of
    /// the last file until recovery sets it.
    pub fn open(dir: &Path, file_size: i64) -> Result<Self, TimerError> {
        rmq_common::meta_file::create_dir_all_durable(dir)
            .map_err(TimerError::io("create", dir))?;
        let mut files = BTreeMap::new();
        for e in std::fs::read_dir(dir).map_err(TimerError::io("list", dir))? {
            let e = e.map_err(TimerError::io("list", dir))?;
            let name = e.file_name();
            let Some(start) = name.to_str().and_then(|n| n.parse::<i64>().ok()) else {
                continue;
            };
            if start % file_size != 0 {
                return Err(TimerError::Corrupt {
                    path: e.path(),
                    what: format!("start offset is not a multiple of the file size {file_size}"),
                });
            }
            files.insert(start, open_rw(&e.path())?);
        }
        let mut log = Self {
            dir: dir.to_owned(),
            file_size,
            files,
            write_pos: 0,
            unsynced: Vec::new(),
        };
        if let Some((&start, f)) = log.files.iter().next_back() {
            let len = f
                .metadata()
                .map_err(TimerError::io("stat", log.path(start)))?
                .len();
            log.write_pos = start + i64::try_from(len).unwrap_or(0);
        }
        Ok(log)
    }

    fn path(&self, start: i64) -> PathBuf {
        self.dir.join(format!("{start:020}"))
    }

    /// Where the next unit goes.
    pub fn write_pos(&self) -> i64 {
        self.write_pos
    }

    /// The first position still held (the oldest file's start).
    pub fn min_pos(&self) -> i64 {
        self.files.keys().next().copied().unwrap_or(self.write_pos)
    }

    /// The position the next unit will get (a unit never straddles files).
    pub fn next_unit_pos(&self) -> i64 {
        let (start, within) = split(self.write_pos, self.file_size);
        if within + (UNIT_SIZE + BLANK_SIZE) as i64 > self.file_size {
            start + self.file_size
        } else {
            self.write_pos
        }
    }

    fn file(&mut self, start: i64) -> Result<&File, TimerError> {
        if !self.files.contains_key(&start) {
            let f = open_rw(&self.path(start))?;
            self.files.insert(start, f);
        }
        self.files.get(&start).ok_or_else(|| TimerError::Corrupt {
            path: self.dir.clone(),
            what: format!("file {start} vanished"),
        })
    }

    /// Appends `units` (each [`UNIT_SIZE`] bytes, the first at
    /// [`TimerLog::next_unit_pos`]), writing a blank where a file ends.
    pub fn append(&mut self, units: &[u8]) -> Result<(), TimerError> {
        let mut rest = units;
        while !rest.is_empty() {
            let (start, within) = split(self.write_pos, self.file_size);
            let room = self.file_size - within;
            if room < (UNIT_SIZE + BLANK_SIZE) as i64 {
                let mut blank = [0u8; BLANK_SIZE];
                blank[0..4].copy_from_slice(&(room as i32).to_be_bytes());
                blank[12..16].copy_from_slice(&BLANK_MAGIC_CODE.to_be_bytes());
                let path = self.path(start);
                self.file(start)?
                    .write_all_at(&blank, within as u64)
                    .map_err(TimerError::io("write", path))?;
                self.note_unsynced(start);
                self.write_pos = start + self.file_size;
                continue;
            }
            let fit = ((room as usize - BLANK_SIZE) / UNIT_SIZE).max(1);
            let n = fit.min(rest.len() / UNIT_SIZE);
            let (now, later) = rest.split_at(n * UNIT_SIZE);
            let path = self.path(start);
            self.file(start)?
                .write_all_at(now, within as u64)
                .map_err(TimerError::io("write", path))?;
            self.note_unsynced(start);
            self.write_pos += now.len() as i64;
            rest = later;
        }
        Ok(())
    }

    fn note_unsynced(&mut self, start: i64) {
        if !self.unsynced.contains(&start) {
            self.unsynced.push(start);
        }
    }

    /// Reads the unit at `pos`; `None` when its file is gone or short.
    pub fn read(&self, pos: i64) -> Result<Option<[u8; UNIT_SIZE]>, TimerError> {
        if pos < 0 || pos + UNIT_SIZE as i64 > self.write_pos {
            return Ok(None);
        }
        let (start, within) = split(pos, self.file_size);
        let Some(f) = self.files.get(&start) else {
            return Ok(None);
        };
        let mut u = [0u8; UNIT_SIZE];
        match f.read_exact_at(&mut u, within as u64) {
            Ok(()) => Ok(Some(u)),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
            Err(e) => Err(TimerError::io("read", self.path(start))(e)),
        }
    }

    /// Reads 16 bytes at `pos` and says whether they are a blank.
    pub fn is_blank(&self, pos: i64) -> Result<bool, TimerError> {
        let (start, within) = split(pos, self.file_size);
        let Some(f) = self.files.get(&start) else {
            return Ok(false);
        };
        let mut b = [0u8; BLANK_SIZE];
        match f.read_exact_at(&mut b, within as u64) {
            Ok(()) => Ok(i32::from_be_bytes([b[12], b[13], b[14], b[15]]) == BLANK_MAGIC_CODE),
            Err(_) => Ok(false),
        }
    }

    /// The file size, bytes.
    pub fn file_size(&self) -> i64 {
        self.file_size
    }

    /// Syncs every file written since the last flush; returns the position
    /// everything before which is durable.
    pub fn flush(&mut self) -> Result<i64, TimerError> {
        for start in std::mem::take(&mut self.unsynced) {
            if let Some(f) = self.files.get(&start) {
                f.sync_data()
                    .map_err(TimerError::io("sync", self.path(start)))?;
            }
        }
        Ok(self.write_pos)
    }

    /// Cuts the log at `end`: the file holding it is truncated there and
    /// every later file removed. Recovery calls it at the last good unit.
    pub fn truncate(&mut self, end: i64) -> Result<(), TimerError> {
        let (start, within) = split(end, self.file_size);
        let later: Vec<i64> = self.files.range(start + 1..).map(|(s, _)| *s).collect();
        for s in later {
            self.files.remove(&s);
            let p = self.path(s);
            std::fs::remove_file(&p).map_err(TimerError::io("remove", p))?;
        }
        if let Some(f) = self.files.get(&start) {
            f.set_len(within as u64)
                .map_err(TimerError::io("truncate", self.path(start)))?;
            f.sync_all()
                .map_err(TimerError::io("sync", self.path(start)))?;
        }
        self.write_pos = end;
        Ok(())
    }

    /// Start offsets of the files, oldest first, excluding the one written
    /// now.
    pub fn sealed_files(&self) -> Vec<i64> {
        let (current, _) = split(self.write_pos, self.file_size);
        self.files
            .keys()
            .copied()
            .filter(|s| *s < current)
            .collect()
    }

    /// The last unit of a full file that starts at `start`.
    pub fn last_unit_pos(&self, start: i64) -> i64 {
        let usable = self.file_size - BLANK_SIZE as i64;
        start + (usable / UNIT_SIZE as i64 - 1) * UNIT_SIZE as i64
    }

    /// Removes the file that starts at `start`.
    pub fn remove(&mut self, start: i64) -> Result<(), TimerError> {
        self.files.remove(&start);
        self.unsynced.retain(|s| *s != start);
        let p = self.path(start);
        std::fs::remove_file(&p).map_err(TimerError::io("remove", p))
    }

    /// Bytes the files hold.
    pub fn disk_bytes(&self) -> u64 {
        self.files
            .values()
            .filter_map(|f| f.metadata().ok())
            .map(|m| m.len())
            .sum()
    }
}

fn open_rw(path: &Path) -> Result<File, TimerError> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(TimerError::io("open", path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_magic_is_rocketmqs() {
        assert_eq!(BLANK_MAGIC_CODE, -875_286_124);
        assert_eq!(BLANK_MAGIC_CODE as u32, 0xCBD4_3194);
    }

    #[test]
    fn units_roll_to_the_next_file_after_a_blank() {
        let dir = tempfile::tempdir().unwrap();
        // Room for 2 units plus the blank, and 4 bytes to spare.
        let size = (2 * UNIT_SIZE + BLANK_SIZE + 4) as i64;
        let mut log = TimerLog::open(dir.path(), size).unwrap();
        let units = vec![7u8; 3 * UNIT_SIZE];
        assert_eq!(log.next_unit_pos(), 0);
        log.append(&units).unwrap();
        assert_eq!(log.write_pos(), size + UNIT_SIZE as i64);
        assert!(log.is_blank(2 * UNIT_SIZE as i64).unwrap());
        assert_eq!(log.read(size).unwrap(), Some([7u8; UNIT_SIZE]));
        assert_eq!(log.sealed_files(), vec![0]);
        log.flush().unwrap();
        drop(log);
        let log = TimerLog::open(dir.path(), size).unwrap();
        assert_eq!(log.write_pos(), size + UNIT_SIZE as i64);
        assert!(dir.path().join(format!("{size:020}")).exists());
    }
}
