//! The broker id a controller gave this broker, kept across restarts as
//! RocketMQ 5.3.3 keeps it: `{storePathRootDir}/brokerIdentity` holds
//! `cluster#brokerName#brokerId`, and while an id is being applied for,
//! `brokerIdentity-temp` holds `cluster#brokerName#brokerId#checkCode`
//! (the check code is `brokerIP1:listenPort;millis`, which lets a broker
//! that crashed mid-apply apply the same id again). Java's files are read
//! unchanged; ours are written through a temp file, fsynced and renamed.

use std::io::Write;
use std::path::{Path, PathBuf};

/// File name of the identity.
pub const IDENTITY_FILE: &str = "brokerIdentity";
/// File name of the identity being applied for.
pub const TEMP_SUFFIX: &str = "-temp";

/// What is wrong with an identity file.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The text is not `cluster#name#id[#code]`.
    #[error("{path}: {text:?} is not cluster#brokerName#brokerId{more}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What it holds.
        text: String,
        /// `#checkCode` for the temp file.
        more: &'static str,
    },
    /// The file belongs to another broker set.
    #[error(
        "{path} names cluster {cluster:?} broker {name:?}, this broker is {want_cluster:?} \
         {want_name:?}: the store folder belongs to another broker"
    )]
    OtherBroker {
        /// The file.
        path: PathBuf,
        /// Its cluster.
        cluster: String,
        /// Its broker name.
        name: String,
        /// The configured cluster.
        want_cluster: String,
        /// The configured broker name.
        want_name: String,
    },
}

/// An id, and the check code it was applied with (temp file only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// `brokerClusterName`.
    pub cluster: String,
    /// `brokerName`.
    pub broker_name: String,
    /// The controller's id for this broker (1 or more).
    pub broker_id: i64,
    /// `brokerIP1:listenPort;millis` (temp file only).
    pub check_code: Option<String>,
}

/// The two identity files of one store.
#[derive(Debug, Clone)]
pub struct IdentityFiles {
    path: PathBuf,
    temp: PathBuf,
}

impl IdentityFiles {
    /// The files under `store_root`.
    pub fn new(store_root: &Path) -> Self {
        let path = store_root.join(IDENTITY_FILE);
        let temp = store_root.join(format!("{IDENTITY_FILE}{TEMP_SUFFIX}"));
        Self { path, temp }
    }

    /// The id, if one was given; checked against the configured names.
    pub fn load(&self, cluster: &str, name: &str) -> Result<Option<Identity>, IdentityError> {
        read(&self.path, false, cluster, name)
    }

    /// The id being applied for, if any.
    pub fn load_temp(&self, cluster: &str, name: &str) -> Result<Option<Identity>, IdentityError> {
        read(&self.temp, true, cluster, name)
    }

    /// Records the id about to be applied for.
    pub fn save_temp(&self, id: &Identity) -> Result<(), IdentityError> {
        let code = id.check_code.as_deref().unwrap_or_default();
        let text = format!("{}#{}#{}#{code}", id.cluster, id.broker_name, id.broker_id);
        write(&self.temp, &text)
    }

    /// Records the id the controller accepted and forgets the temp file.
    pub fn save(&self, id: &Identity) -> Result<(), IdentityError> {
        let text = format!("{}#{}#{}", id.cluster, id.broker_name, id.broker_id);
        write(&self.path, &text)?;
        self.clear_temp()
    }

    /// Forgets the id being applied for.
    pub fn clear_temp(&self) -> Result<(), IdentityError> {
        match std::fs::remove_file(&self.temp) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(IdentityError::Io {
                path: self.temp.clone(),
                source: e,
            }),
            _ => Ok(()),
        }
    }
}

fn read(
    path: &Path,
    temp: bool,
    want_cluster: &str,
    want_name: &str,
) -> Result<Option<Identity>, IdentityError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(IdentityError::Io {
                path: path.to_owned(),
                source,
            })
        }
    };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(None);
    }
    let malformed = || IdentityError::Malformed {
        path: path.to_owned(),
        text: trimmed.to_owned(),
        more: if temp { "#checkCode" } else { "" },
    };
    let parts: Vec<&str> = trimmed.splitn(4, '#').collect();
    let need = if temp { 4 } else { 3 };
    if parts.len() < need {
        return Err(malformed());
    }
    let broker_id: i64 = parts[2].trim().parse().map_err(|_| malformed())?;
    if parts[0] != want_cluster || parts[1] != want_name {
        return Err(IdentityError::OtherBroker {
            path: path.to_owned(),
            cluster: parts[0].to_owned(),
            name: parts[1].to_owned(),
            want_cluster: want_cluster.to_owned(),
            want_name: want_name.to_owned(),
        });
    }
    Ok(Some(Identity {
        cluster: parts[0].to_owned(),
        broker_name: parts[1].to_owned(),
        broker_id,
        check_code: temp.then(|| parts[3].to_owned()),
    }))
}

fn write(path: &Path, text: &str) -> Result<(), IdentityError> {
    let io = |source| IdentityError::Io {
        path: path.to_owned(),
        source,
    };
    if let Some(dir) = path.parent() {
        rmq_common::meta_file::create_dir_all_durable(dir).map_err(io)?;
    }
    let tmp = path.with_extension("writing");
    let mut f = std::fs::File::create(&tmp).map_err(io)?;
    f.write_all(text.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(io)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: i64, code: Option<&str>) -> Identity {
        Identity {
            cluster: "c".into(),
            broker_name: "b".into(),
            broker_id: n,
            check_code: code.map(str::to_owned),
        }
    }

    #[test]
    fn temp_then_applied_round_trip_in_java_text() {
        let dir = tempfile::tempdir().unwrap();
        let files = IdentityFiles::new(dir.path());
        assert_eq!(files.load("c", "b").unwrap(), None);
        files.save_temp(&id(2, Some("127.0.0.1:10911;17"))).unwrap();
        let text = std::fs::read_to_string(dir.path().join("brokerIdentity-temp")).unwrap();
        assert_eq!(text, "c#b#2#127.0.0.1:10911;17");
        assert_eq!(
            files.load_temp("c", "b").unwrap(),
            Some(id(2, Some("127.0.0.1:10911;17")))
        );
        files.save(&id(2, None)).unwrap();
        let text = std::fs::read_to_string(dir.path().join("brokerIdentity")).unwrap();
        assert_eq!(text, "c#b#2");
        assert_eq!(files.load_temp("c", "b").unwrap(), None);
        assert_eq!(files.load("c", "b").unwrap(), Some(id(2, None)));
    }

    #[test]
    fn another_sets_file_and_bad_text_are_named_errors() {
        let dir = tempfile::tempdir().unwrap();
        let files = IdentityFiles::new(dir.path());
        std::fs::write(dir.path().join("brokerIdentity"), "c#other#1").unwrap();
        let e = files.load("c", "b").unwrap_err().to_string();
        assert!(e.contains("another broker") && e.contains("other"), "{e}");
        std::fs::write(dir.path().join("brokerIdentity"), "c#b#x").unwrap();
        let e = files.load("c", "b").unwrap_err().to_string();
        assert!(e.contains("is not cluster#brokerName#brokerId"), "{e}");
        std::fs::write(dir.path().join("brokerIdentity-temp"), "c#b#3").unwrap();
        let e = files.load_temp("c", "b").unwrap_err().to_string();
        assert!(e.contains("#checkCode"), "{e}");
    }
}
