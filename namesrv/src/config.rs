//! The NameServer's own settings, as GET_NAMESRV_CONFIG shows them and
//! UPDATE_NAMESRV_CONFIG changes them (mqadmin getNamesrvConfig /
//! updateNamesrvConfig), kept in `namesrv.properties` beside `kvConfig.json`.
//!
//! Java's rules: the answer is `key=value` lines; an update naming
//! `kvConfigPath` or `configStorePath` is refused whole with NO_PERMISSION
//! ("Can not update config path"); keys the NameServer does not know are
//! ignored. Beyond Java: a known key that cannot change while running
//! (`listenPort`) is refused by name rather than recorded without effect,
//! and a bad value is refused by name rather than dropped.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};

use rmq_common::remoting::ResponseCode;

use rmq_common::meta_file::write_properties;
use rmq_common::meta_file::MetaError;

/// Default of `namesrvBrokerExpiry`: a broker not heard from for this long
/// is dropped (brokers re-register every 30 s, so this is four missed
/// heartbeats), ms.
pub const BROKER_EXPIRY_MS: i64 = 120_000;

/// Where a NameServer keeps its files and how long brokers live unheard.
#[derive(Debug, Clone)]
pub struct NamesrvOptions {
    /// A broker silent for longer is dropped, ms.
    pub expiry_ms: i64,
    /// Whether a master's registration replaces its topics at start
    /// (`deleteTopicWithBrokerRegistration`; a value an update persisted
    /// wins).
    pub delete_with_registration: bool,
    /// Where `kvConfig.json` and `namesrv.properties` are kept; `None`
    /// keeps both in memory only (tests).
    pub files: Option<NamesrvFiles>,
    /// When set, broker registrations and the NameServer's writes must be
    /// signed by an admin account of this ACL (Java's NameServer checks
    /// nothing).
    pub acl: Option<std::sync::Arc<rmq_remoting::acl::Acl>>,
    /// TLS on the port (`None`: plain only).
    pub tls: Option<std::sync::Arc<rmq_remoting::tls::TlsServer>>,
}

/// The NameServer's two files (Java's `kvConfigPath` and
/// `configStorePath`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamesrvFiles {
    /// The KV table (`kvConfig.json`).
    pub kv_config: PathBuf,
    /// The settings UPDATE_NAMESRV_CONFIG changed (`namesrv.properties`).
    pub config_store: PathBuf,
}

impl NamesrvFiles {
    /// `kvConfig.json` and `namesrv.properties` in `dir`.
    pub fn in_dir(dir: &Path) -> Self {
        Self {
            kv_config: dir.join("kvConfig.json"),
            config_store: dir.join("namesrv.properties"),
        }
    }
}

impl NamesrvOptions {
    /// In memory only, with `expiry_ms`, no ACL.
    pub fn in_memory(expiry_ms: i64) -> Self {
        Self {
            expiry_ms,
            delete_with_registration: false,
            files: None,
            acl: None,
            tls: None,
        }
    }

    /// `kvConfig.json`'s path.
    pub fn kv_config_path(&self) -> Option<PathBuf> {
        self.files.as_ref().map(|f| f.kv_config.clone())
    }

    fn config_store_path(&self) -> Option<PathBuf> {
        self.files.as_ref().map(|f| f.config_store.clone())
    }
}

/// The key of the broker expiry.
const EXPIRY_KEY: &str = "namesrvBrokerExpiry";

/// The key of Java's `deleteTopicWithBrokerRegistration` (default false):
/// a master's registration then replaces its topics, so topics missing
/// from it leave the routes. Off, registrations only add and update, and
/// topics leave through DELETE_TOPIC_IN_NAMESRV (or the broker's expiry).
/// Incremental and split registrations need it off.
const DELETE_WITH_REGISTRATION_KEY: &str = "deleteTopicWithBrokerRegistration";
/// Shortest broker expiry accepted, ms.
const MIN_EXPIRY_MS: i64 = 1_000;

/// The settings, readable while requests change them.
#[derive(Debug)]
pub struct NamesrvConfig {
    expiry_ms: AtomicI64,
    delete_with_registration: std::sync::atomic::AtomicBool,
    listen_port: AtomicI64,
    kv_config_path: Option<PathBuf>,
    config_store_path: Option<PathBuf>,
}

/// An update refused: the code and the remark.
#[derive(Debug, PartialEq, Eq)]
pub struct ConfigRefusal {
    /// Response code.
    pub code: ResponseCode,
    /// Why.
    pub remark: String,
}

impl NamesrvConfig {
    /// `options`, with what an earlier UPDATE_NAMESRV_CONFIG persisted on
    /// top (a persisted value that no longer parses is logged and skipped).
    pub fn open(options: &NamesrvOptions) -> Self {
        let config = Self {
            expiry_ms: AtomicI64::new(options.expiry_ms),
            delete_with_registration: std::sync::atomic::AtomicBool::new(
                options.delete_with_registration,
            ),
            listen_port: AtomicI64::new(0),
            kv_config_path: options.kv_config_path(),
            config_store_path: options.config_store_path(),
        };
        if let Some(path) = &config.config_store_path {
            if let Ok(text) = std::fs::read_to_string(path) {
                for (k, v) in parse_properties(&text) {
                    let applied = match k.as_str() {
                        EXPIRY_KEY => {
                            parse_expiry(&v).map(|ms| config.expiry_ms.store(ms, Ordering::Relaxed))
                        }
                        DELETE_WITH_REGISTRATION_KEY => parse_flag(&k, &v)
                            .map(|on| config.delete_with_registration.store(on, Ordering::Relaxed)),
                        _ => Ok(()),
                    };
                    if let Err(e) = applied {
                        tracing::warn!(path = %path.display(), error = %e.remark, "persisted NameServer setting skipped");
                    }
                }
            }
        }
        config
    }

    /// The broker expiry now, ms.
    pub fn expiry_ms(&self) -> i64 {
        self.expiry_ms.load(Ordering::Relaxed)
    }

    /// Whether a master's registration replaces its topics
    /// (`deleteTopicWithBrokerRegistration`).
    pub fn delete_with_registration(&self) -> bool {
        self.delete_with_registration.load(Ordering::Relaxed)
    }

    /// Records the port the NameServer listens on.
    pub fn set_listen_port(&self, port: u16) {
        self.listen_port.store(i64::from(port), Ordering::Relaxed);
    }

    /// GET_NAMESRV_CONFIG's body: `key=value` lines.
    pub fn text(&self) -> String {
        let path = |p: &Option<PathBuf>| {
            p.as_deref()
                .map_or(String::new(), |p| p.display().to_string())
        };
        format!(
            "listenPort={}\n{EXPIRY_KEY}={}\n{DELETE_WITH_REGISTRATION_KEY}={}\nkvConfigPath={}\nconfigStorePath={}\n",
            self.listen_port.load(Ordering::Relaxed),
            self.expiry_ms(),
            self.delete_with_registration(),
            path(&self.kv_config_path),
            path(&self.config_store_path),
        )
    }

    /// UPDATE_NAMESRV_CONFIG: applies `body` (properties text) and writes
    /// the settings; all of it or none.
    pub fn update(&self, body: &str) -> Result<(), ConfigRefusal> {
        let props = parse_properties(body);
        let mut expiry = None;
        let mut delete_with_registration = None;
        for (k, v) in &props {
            match k.as_str() {
                "kvConfigPath" | "configStorePath" => {
                    return Err(ConfigRefusal {
                        code: ResponseCode::NoPermission,
                        remark: "Can not update config path".into(),
                    })
                }
                EXPIRY_KEY => expiry = Some(parse_expiry(v)?),
                DELETE_WITH_REGISTRATION_KEY => delete_with_registration = Some(parse_flag(k, v)?),
                "listenPort" => {
                    return Err(ConfigRefusal {
                        code: ResponseCode::SystemError,
                        remark: "listenPort cannot change while the NameServer runs: set it in \
                                 the configuration and restart"
                            .into(),
                    })
                }
                other => tracing::warn!(
                    key = other,
                    "UPDATE_NAMESRV_CONFIG: no such NameServer setting here; ignored (as Java does)"
                ),
            }
        }
        if let Some(ms) = expiry {
            self.expiry_ms.store(ms, Ordering::Relaxed);
        }
        if let Some(on) = delete_with_registration {
            self.delete_with_registration.store(on, Ordering::Relaxed);
        }
        self.persist().map_err(|e| ConfigRefusal {
            code: ResponseCode::SystemError,
            remark: e.to_string(),
        })
    }

    fn persist(&self) -> Result<(), MetaError> {
        match &self.config_store_path {
            Some(p) => write_properties(
                p,
                &format!(
                    "{EXPIRY_KEY}={}\n{DELETE_WITH_REGISTRATION_KEY}={}\n",
                    self.expiry_ms(),
                    self.delete_with_registration()
                ),
            ),
            None => Ok(()),
        }
    }

    /// Where the settings are kept, if anywhere.
    pub fn config_store_path(&self) -> Option<&Path> {
        self.config_store_path.as_deref()
    }
}

/// A flag as Java's properties take it (`true`/`false`, any case).
fn parse_flag(key: &str, v: &str) -> Result<bool, ConfigRefusal> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(ConfigRefusal {
            code: ResponseCode::SystemError,
            remark: format!("{key}={v}: must be true or false"),
        }),
    }
}

fn parse_expiry(v: &str) -> Result<i64, ConfigRefusal> {
    v.trim()
        .parse::<i64>()
        .ok()
        .filter(|ms| *ms >= MIN_EXPIRY_MS)
        .ok_or_else(|| ConfigRefusal {
            code: ResponseCode::SystemError,
            remark: format!(
                "{EXPIRY_KEY}={v}: must be a whole number of ms, at least {MIN_EXPIRY_MS}"
            ),
        })
}

/// `key=value` (or `key:value`) lines of a Java properties text; blank
/// lines and `#`/`!` comments skipped, keys and values trimmed.
pub fn parse_properties(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!'))
        .filter_map(|l| {
            let at = l.find(['=', ':'])?;
            Some((l[..at].trim().to_owned(), l[at + 1..].trim().to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_apply_persist_and_refuse_paths() {
        let dir = tempfile::tempdir().unwrap();
        let options = NamesrvOptions {
            files: Some(NamesrvFiles::in_dir(dir.path())),
            ..NamesrvOptions::in_memory(120_000)
        };
        let c = NamesrvConfig::open(&options);
        c.set_listen_port(9876);
        assert!(c.text().contains("namesrvBrokerExpiry=120000\n"));
        assert!(c.text().starts_with("listenPort=9876\n"));
        c.update("namesrvBrokerExpiry=30000\nunknownKey=1\n")
            .unwrap();
        assert_eq!(c.expiry_ms(), 30_000);
        let refused = c
            .update("kvConfigPath=/tmp/x\nnamesrvBrokerExpiry=5000")
            .unwrap_err();
        assert_eq!(refused.code, ResponseCode::NoPermission);
        assert_eq!(c.expiry_ms(), 30_000, "a refused update changes nothing");
        assert!(c
            .update("namesrvBrokerExpiry=5")
            .unwrap_err()
            .remark
            .contains("namesrvBrokerExpiry"));
        assert!(c
            .update("listenPort=1")
            .unwrap_err()
            .remark
            .contains("listenPort"));
        // A restart keeps the update.
        assert_eq!(NamesrvConfig::open(&options).expiry_ms(), 30_000);
    }
}
