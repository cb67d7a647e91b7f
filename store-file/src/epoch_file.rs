//! The epoch file of RocketMQ 5.x's controller mode
//! (`{storePathRootDir}/epochFileCheckpoint`, Java's `EpochFileCache`):
//! which master epoch wrote which part of the CommitLog, one entry per
//! epoch with the offset where its records start. A slave that joins a new
//! master compares both files and truncates its log to the end of the last
//! epoch they share ([`consistent_point`]).
//!
//! The text is Java's, so a store moves between implementations:
//!
//! ```text
//! <number of entries>
//! <crc32 of the entry lines, separators included, & 0x7FFFFFFF; 0: unchecked>
//! <epoch>-<startOffset>
//! ...
//! ```
//!
//! Each change rewrites the file: the previous text goes to `<file>.bak`
//! first, the new one to `<file>.tmp`, renamed over the file. A reader
//! falls back to `.bak` when the file is missing, empty or fails its count
//! or CRC check.

use std::path::{Path, PathBuf};

/// The file's name under the store root.
pub const EPOCH_FILE_NAME: &str = "epochFileCheckpoint";

/// One epoch's part of the CommitLog: `[start, end)`; the last entry's end
/// is `i64::MAX` (it is still being written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    /// The master epoch.
    pub epoch: i32,
    /// Where its first record starts.
    pub start: i64,
    /// Where the next epoch's starts.
    pub end: i64,
}

/// Why the epoch file cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum EpochFileError {
    /// Neither the file nor its `.bak` copy holds a valid list.
    #[error("epoch file {path} and its .bak are unreadable: {reason}")]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What was wrong with each.
        reason: String,
    },
    /// Removing it (the list became empty) failed.
    #[error("cannot remove epoch file {path}: {source}")]
    Remove {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Writing it failed (the error names the file and the step).
    #[error(transparent)]
    Write(#[from] rmq_common::meta_file::AtomicWriteError),
}

/// The epoch file and its entries.
#[derive(Debug)]
pub struct EpochFile {
    path: PathBuf,
    /// (epoch, start), strictly increasing in both.
    entries: Vec<(i32, i64)>,
}

impl EpochFile {
    /// Opens `root/epochFileCheckpoint` (none yet: no entries).
    pub fn open(root: &Path) -> Result<Self, EpochFileError> {
        let path = root.join(EPOCH_FILE_NAME);
        let entries = match read_one(&path) {
            Ok(Some(e)) if !e.is_empty() => e,
            first => match read_one(&bak(&path)) {
                Ok(Some(e)) => e,
                Ok(None) => match first {
                    Ok(e) => e.unwrap_or_default(),
                    Err(reason) => {
                        return Err(EpochFileError::Damaged { path, reason });
                    }
                },
                Err(bak_reason) => {
                    let reason = match first {
                        Err(r) => format!("{r}; .bak: {bak_reason}"),
                        Ok(_) => format!("empty; .bak: {bak_reason}"),
                    };
                    return Err(EpochFileError::Damaged { path, reason });
                }
            },
        };
        Ok(Self { path, entries })
    }

    /// Every entry, with its end.
    pub fn entries(&self) -> Vec<EpochEntry> {
        with_ends(&self.entries, i64::MAX)
    }

    /// The last epoch (-1: none, as a Java broker reports it).
    pub fn last_epoch(&self) -> i32 {
        self.entries.last().map_or(-1, |e| e.0)
    }

    /// The entry holding `offset`, if any.
    pub fn entry_at(&self, offset: i64) -> Option<EpochEntry> {
        self.entries()
            .into_iter()
            .find(|e| e.start <= offset && offset < e.end)
    }

    /// Records that `epoch` starts at `start`; false (nothing written) unless
    /// both are above the last entry's, as Java refuses it.
    pub fn append(&mut self, epoch: i32, start: i64) -> Result<bool, EpochFileError> {
        if self
            .entries
            .last()
            .is_some_and(|&(e, s)| epoch <= e || start <= s)
        {
            return Ok(false);
        }
        self.entries.push((epoch, start));
        self.persist()?;
        Ok(true)
    }

    /// The log was cut at `offset`: entries starting at or past it go.
    pub fn truncate_suffix(&mut self, offset: i64) -> Result<(), EpochFileError> {
        let before = self.entries.len();
        self.entries.retain(|&(_, s)| s < offset);
        if self.entries.len() != before {
            self.persist()?;
        }
        Ok(())
    }

    /// Entries of `epoch` and later go (Java's `truncateSuffixByEpoch`: a
    /// broker becoming master of `epoch` again rewrites it).
    pub fn truncate_from_epoch(&mut self, epoch: i32) -> Result<(), EpochFileError> {
        let before = self.entries.len();
        self.entries.retain(|&(e, _)| e < epoch);
        if self.entries.len() != before {
            self.persist()?;
        }
        Ok(())
    }

    /// The entries as (epoch, start), as the master's handshake sends them.
    pub fn pairs(&self) -> &[(i32, i64)] {
        &self.entries
    }

    /// The log's head was deleted up to `min_offset`: entries that end at
    /// or before it go (the one holding it stays).
    pub fn truncate_prefix(&mut self, min_offset: i64) -> Result<(), EpochFileError> {
        let keep: Vec<(i32, i64)> = self
            .entries()
            .into_iter()
            .filter(|e| e.end > min_offset)
            .map(|e| (e.epoch, e.start))
            .collect();
        if keep.len() != self.entries.len() {
            self.entries = keep;
            self.persist()?;
        }
        Ok(())
    }

    fn persist(&self) -> Result<(), EpochFileError> {
        // Java leaves the old file when the list becomes empty, so its
        // entries come back at the next start; here the file and its .bak
        // go (no file reads as no entries, in both implementations).
        if self.entries.is_empty() {
            for p in [bak(&self.path), self.path.clone()] {
                match std::fs::remove_file(&p) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(source) => return Err(EpochFileError::Remove { path: p, source }),
                }
            }
            return Ok(());
        }
        if let Ok(previous) = std::fs::read(&self.path) {
            rmq_common::meta_file::write_atomically(&bak(&self.path), &previous)?;
        }
        rmq_common::meta_file::write_atomically(&self.path, render(&self.entries).as_bytes())?;
        Ok(())
    }
}

fn bak(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".bak");
    PathBuf::from(p)
}

/// The entries with their ends; the last ends at `last_end`.
fn with_ends(entries: &[(i32, i64)], last_end: i64) -> Vec<EpochEntry> {
    entries
        .iter()
        .enumerate()
        .map(|(i, &(epoch, start))| EpochEntry {
            epoch,
            start,
            end: entries.get(i + 1).map_or(last_end, |n| n.1),
        })
        .collect()
}

/// Java's CRC of the entry lines: CRC-32 masked to 31 bits.
fn crc(lines: &str) -> i64 {
    i64::from(crc32fast::hash(lines.as_bytes()) & 0x7FFF_FFFF)
}

/// The file's text.
pub fn render(entries: &[(i32, i64)]) -> String {
    let lines: String = entries.iter().map(|(e, s)| format!("{e}-{s}\n")).collect();
    format!("{}\n{}\n{lines}", entries.len(), crc(&lines))
}

/// Parses the file's text: `Ok(None)` when there is no file; `Err` names
/// what is wrong.
fn read_one(path: &Path) -> Result<Option<Vec<(i32, i64)>>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    parse(&text).map(Some)
}

/// Parses the text of an epoch file.
pub fn parse(text: &str) -> Result<Vec<(i32, i64)>, String> {
    let mut lines = text.lines();
    let count: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or("the first line is not an entry count")?;
    let expected: i64 = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or("the second line is not a CRC")?;
    let mut body = String::new();
    let mut entries = Vec::new();
    for line in lines {
        body.push_str(line);
        body.push('\n');
        let parsed = line
            .split_once('-')
            .and_then(|(e, s)| Some((e.trim().parse().ok()?, s.trim().parse().ok()?)));
        match parsed {
            Some(entry) => entries.push(entry),
            None if line.trim().is_empty() => {}
            None => return Err(format!("{line:?} is not <epoch>-<startOffset>")),
        }
    }
    if entries.len() != count {
        return Err(format!(
            "{count} entries announced, {} found",
            entries.len()
        ));
    }
    if expected != 0 && crc(&body) != expected {
        return Err(format!("CRC {expected} announced, {} found", crc(&body)));
    }
    Ok(entries)
}

/// Where a slave's log and its new master's agree up to: the end of the
/// newest epoch both have with the same start, each side's end bounded by
/// its log end (`local_max`, `master_max`). `None`: no common epoch (the
/// slave cannot follow this master without losing what it has).
pub fn consistent_point(
    local: &[(i32, i64)],
    local_max: i64,
    master: &[(i32, i64)],
    master_max: i64,
) -> Option<i64> {
    let theirs = with_ends(master, master_max);
    with_ends(local, local_max).iter().rev().find_map(|mine| {
        theirs
            .iter()
            .find(|t| t.epoch == mine.epoch && t.start == mine.start)
            .map(|t| mine.end.min(t.end))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_text_is_javas() {
        // CRC-32 of "1-0\n2-4096\n" masked to 31 bits, computed apart
        // (Python's zlib.crc32(...) & 0x7FFFFFFF).
        assert_eq!(render(&[(1, 0), (2, 4096)]), "2\n1694929738\n1-0\n2-4096\n");
        // One whose CRC has the top bit set (2512056663 unmasked).
        assert_eq!(render(&[(1, 0), (3, 2000)]), "2\n364573015\n1-0\n3-2000\n");
        assert_eq!(
            parse("2\n1694929738\n1-0\n2-4096\n").unwrap(),
            [(1, 0), (2, 4096)]
        );
        // A CRC of 0 is not checked; a wrong count or CRC is named.
        assert_eq!(parse("1\n0\n3-7\n").unwrap(), [(3, 7)]);
        assert!(parse("3\n0\n3-7\n")
            .unwrap_err()
            .contains("3 entries announced"));
        assert!(parse("1\n5\n3-7\n").unwrap_err().contains("CRC 5"));
        assert!(parse("1\n0\nx\n").unwrap_err().contains("\"x\""));
        assert!(parse("").is_err());
    }

    #[test]
    fn entries_only_move_forward_and_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = EpochFile::open(dir.path()).unwrap();
        assert_eq!(f.last_epoch(), -1);
        assert!(f.append(1, 0).unwrap());
        assert!(f.append(2, 100).unwrap());
        assert!(!f.append(2, 200).unwrap(), "same epoch");
        assert!(!f.append(3, 100).unwrap(), "same start");
        assert!(f.append(4, 300).unwrap());
        let f = EpochFile::open(dir.path()).unwrap();
        assert_eq!(f.last_epoch(), 4);
        let e = f.entries();
        assert_eq!(
            (e[0].start, e[0].end, e[1].end, e[2].end),
            (0, 100, 300, i64::MAX)
        );
        assert_eq!(f.entry_at(150).unwrap().epoch, 2);
    }

    #[test]
    fn a_damaged_file_falls_back_to_its_bak_and_both_damaged_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = EpochFile::open(dir.path()).unwrap();
        f.append(1, 0).unwrap();
        f.append(2, 100).unwrap(); // .bak now holds [1-0]
        let path = dir.path().join(EPOCH_FILE_NAME);
        std::fs::write(&path, "2\n99\n1-0\n2-100\n").unwrap();
        let f = EpochFile::open(dir.path()).unwrap();
        assert_eq!(f.last_epoch(), 1, "the .bak's entries");
        std::fs::write(bak(&path), "garbage").unwrap();
        let e = EpochFile::open(dir.path()).unwrap_err();
        assert!(e.to_string().contains(EPOCH_FILE_NAME), "{e}");
    }

    #[test]
    fn truncation_keeps_what_the_log_still_holds() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = EpochFile::open(dir.path()).unwrap();
        for (e, s) in [(1, 0), (2, 100), (3, 200)] {
            f.append(e, s).unwrap();
        }
        f.truncate_prefix(150).unwrap();
        assert_eq!(f.entries()[0].epoch, 2, "epoch 1 ended before 150");
        f.truncate_suffix(200).unwrap();
        assert_eq!(f.last_epoch(), 2);
        f.append(5, 300).unwrap();
        f.truncate_from_epoch(5).unwrap();
        assert_eq!(f.pairs(), [(2, 100)]);
        assert_eq!(EpochFile::open(dir.path()).unwrap().last_epoch(), 2);
        // Emptied: no file, so a reopen finds no entries either.
        f.truncate_suffix(0).unwrap();
        assert_eq!(EpochFile::open(dir.path()).unwrap().last_epoch(), -1);
    }

    #[test]
    fn a_slave_keeps_the_newest_epoch_it_shares_with_its_master() {
        // Both wrote epoch 1 and 2 from the same starts; the slave, master
        // of epoch 3 for a while, wrote 3 from 500, the new master 4 from
        // 400: they agree up to 400.
        let slave = [(1, 0), (2, 100), (3, 500)];
        let master = [(1, 0), (2, 100), (4, 400)];
        assert_eq!(consistent_point(&slave, 700, &master, 900), Some(400));
        // A slave behind its master keeps everything it has.
        assert_eq!(
            consistent_point(&[(1, 0), (2, 100)], 150, &master, 900),
            Some(150)
        );
        // A shared epoch with another start is not shared.
        assert_eq!(consistent_point(&[(1, 5)], 150, &master, 900), None);
    }
}
