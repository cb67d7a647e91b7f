//! Small files written whole and atomically: the JSON tables the broker,
//! the store and the NameServer keep (`config/topics.json`,
//! `config/cqBackends.json`, `kvConfig.json`, ...). A write goes to a
//! temporary file, is synced, renamed over the old one, and the folder is
//! synced, so a crash leaves the old file or the new one, never a mix.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One step of [`write_atomically`] failed.
#[derive(Debug, thiserror::Error)]
#[error("{step} {}: {source}", path.display())]
pub struct AtomicWriteError {
    /// `create`, `write`, `sync`, `rename to` or `sync folder`.
    pub step: &'static str,
    /// The file (or folder) the step was on.
    pub path: PathBuf,
    /// The I/O error.
    #[source]
    pub source: std::io::Error,
}

/// Writes `data` to `path` through `path.tmp`: create, write, fsync,
/// rename, then fsync the folder so the rename itself is durable.
pub fn write_atomically(path: &Path, data: &[u8]) -> Result<(), AtomicWriteError> {
    let tmp = path.with_extension("tmp");
    let fail = |step, path: &Path| {
        let path = path.to_owned();
        move |source| AtomicWriteError { step, path, source }
    };
    let mut f = File::create(&tmp).map_err(fail("create", &tmp))?;
    f.write_all(data).map_err(fail("write", &tmp))?;
    f.sync_all().map_err(fail("sync", &tmp))?;
    std::fs::rename(&tmp, path).map_err(fail("rename to", path))?;
    if let Some(dir) = path.parent() {
        sync_dir(dir)?;
    }
    Ok(())
}

/// Makes a folder's entries (created, renamed, removed files) durable.
pub fn sync_dir(dir: &Path) -> Result<(), AtomicWriteError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| AtomicWriteError {
            step: "sync folder",
            path: dir.to_owned(),
            source,
        })
}

/// Makes `path`'s entry in its folder durable: fsyncs the folder holding
/// it (the current folder for a bare name).
pub fn sync_parent(path: &Path) -> std::io::Result<()> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    File::open(parent.unwrap_or(Path::new(".")))?.sync_all()
}

/// `std::fs::create_dir_all` that also makes each folder it creates
/// durable: after making a folder it fsyncs the folder holding it, so a
/// power cut cannot take away a folder whose files were synced (a strict
/// file system, ext4 without `auto_da_alloc` among them, keeps a new entry
/// only once its folder is synced). Folders that already exist are left
/// as they are.
pub fn create_dir_all_durable(dir: &Path) -> std::io::Result<()> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(d) = at.filter(|d| !d.as_os_str().is_empty() && !d.is_dir()) {
        missing.push(d);
        at = d.parent();
    }
    for d in missing.into_iter().rev() {
        match std::fs::create_dir(d) {
            Ok(()) => {}
            // Another thread made it first; syncing its parent again is
            // harmless and covers that thread's window.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && d.is_dir() => {}
            Err(e) => return Err(e),
        }
        sync_parent(d)?;
    }
    Ok(())
}

/// A meta file (`config/topics.json`, `consumerOffset.json`,
/// `subscriptionGroup.json`, `delayOffset.json`) could not be read or
/// written.
#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    /// The file exists but is not the JSON it should hold.
    #[error("meta file {path} is not valid: {source}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What the parser found.
        #[source]
        source: crate::json::JsonError,
    },
    /// Reading it, or creating its folder, failed.
    #[error("cannot {action} meta file {path}: {source}")]
    Io {
        /// `read` or `create the folder of`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Writing it (temporary file, sync, rename) failed.
    #[error("cannot write meta file {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The write's error.
        #[source]
        source: AtomicWriteError,
    },
    /// A journal line other than the last is damaged.
    #[error("meta journal {path} is damaged at line {line}: {why}")]
    Journal {
        /// The journal file.
        path: PathBuf,
        /// Its line, from 1.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// The table could not be encoded.
    #[error("cannot encode meta file {path}: {source}")]
    Encode {
        /// The file.
        path: PathBuf,
        /// The encoder's error.
        #[source]
        source: serde_json::Error,
    },
}

/// Reads a JSON file, or `None` if it does not exist.
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, MetaError> {
    match std::fs::read(path) {
        // Strict JSON first: the files this broker and Java's write are
        // plain JSON, and the strict decoder reads 100,000 topics several
        // times faster than the lenient one, which takes anything else.
        Ok(bytes) => serde_json::from_slice(&bytes)
            .or_else(|_| crate::json::from_slice(&bytes))
            .map(Some)
            .map_err(|source| MetaError::Invalid {
                path: path.to_owned(),
                source,
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(MetaError::Io {
            action: "read",
            path: path.to_owned(),
            source,
        }),
    }
}

/// Writes the `key=value` lines `ours` into the properties file at `path`
/// atomically, keeping the lines of another writer that set other keys
/// ([`crate::properties::merged`]).
pub fn write_properties(path: &Path, ours: &str) -> Result<(), MetaError> {
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(MetaError::Io {
                action: "read",
                path: path.to_owned(),
                source,
            })
        }
    };
    write_bytes(path, crate::properties::merged(&existing, ours).as_bytes())
}

/// Writes a JSON file atomically (temp file, fsync, rename).
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), MetaError> {
    write_bytes(path, &encode_json(path, value)?)
}

/// `value` as the JSON `path` holds (pretty, as RocketMQ writes it).
pub fn encode_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<Vec<u8>, MetaError> {
    serde_json::to_vec_pretty(value).map_err(|source| MetaError::Encode {
        path: path.to_owned(),
        source,
    })
}

/// Writes `bytes` to `path` atomically (temp file, fsync, rename, folder
/// fsync), creating its folder first.
pub fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), MetaError> {
    if let Some(dir) = path.parent() {
        create_dir_all_durable(dir).map_err(|source| MetaError::Io {
            action: "create the folder of",
            path: path.to_owned(),
            source,
        })?;
    }
    write_atomically(path, bytes).map_err(|source| MetaError::Write {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_table_reads_back_and_leaves_no_temporary_file() {
        let dir = std::env::temp_dir().join(format!("rmq-meta-file-{}", std::process::id()));
        let path = dir.join("sub").join("table.json");
        write_json(&path, &vec![1, 2, 3]).unwrap();
        assert_eq!(read_json::<Vec<i32>>(&path).unwrap(), Some(vec![1, 2, 3]));
        assert!(!path.with_extension("tmp").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_file_is_none_and_a_damaged_one_names_its_path() {
        let dir = std::env::temp_dir().join(format!("rmq-meta-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("table.json");
        assert!(read_json::<Vec<i32>>(&path).unwrap().is_none());
        std::fs::write(&path, b"[1, 2").unwrap();
        let err = read_json::<Vec<i32>>(&path).unwrap_err();
        assert!(matches!(err, MetaError::Invalid { .. }));
        assert!(err.to_string().contains("table.json"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_write_into_a_file_that_is_a_folder_names_the_step() {
        let dir = std::env::temp_dir().join(format!("rmq-meta-step-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("table.tmp")).unwrap();
        let err = write_bytes(&dir.join("table.json"), b"{}").unwrap_err();
        assert!(err.to_string().contains("create"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
