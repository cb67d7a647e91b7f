//! The broker settings UPDATE_BROKER_CONFIG (mqadmin updateBrokerConfig)
//! may change while the broker runs, read by the request paths on every
//! request. An update is checked whole before any of it applies: a key
//! that is not a setting, or one that only takes effect at start, is
//! refused by name. Applied values are kept in
//! `<storePathRootDir>/config/broker.runtime.properties` and laid over the
//! configuration at the next start, as Java rewrites its config file.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

use rmq_common::remoting::body::{PERM_READ, PERM_WRITE};

use crate::config::{KeyUse, Settings};
use crate::error::MetaError;
use crate::meta::write_bytes;
use rmq_namesrv::config::parse_properties;

/// The keys an update may change.
pub const RUNTIME_KEYS: [&str; 5] = [
    "brokerPermission",
    "longPollingEnable",
    "shortPollingTimeMills",
    "maxReconsumeTimes",
    "storeReplyMessageEnable",
];

/// The runtime-changeable settings.
#[derive(Debug)]
pub struct RuntimeConfig {
    broker_permission: AtomicI32,
    long_polling_enable: AtomicBool,
    short_polling_time_ms: AtomicU64,
    max_reconsume_times: AtomicI32,
    store_reply_message_enable: AtomicBool,
    path: PathBuf,
}

/// Why an update was refused; nothing of it applied.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum UpdateError {
    /// Not a setting of this broker.
    #[error("updateBrokerConfig: `{0}` is not a setting of this broker")]
    Unknown(String),
    /// A RocketMQ 5.3.3 key this broker takes from broker.conf but has no
    /// behaviour for.
    #[error(
        "updateBrokerConfig: `{0}` is a RocketMQ 5.3.3 setting this broker does not use; \
         nothing was changed"
    )]
    NotUsedHere(String),
    /// A setting read once at start.
    #[error(
        "updateBrokerConfig: `{0}` cannot change while the broker runs: set it in broker.conf \
         (or with --set) and restart; keys that can change now: {keys}",
        keys = RUNTIME_KEYS.join(", ")
    )]
    NotAtRuntime(String),
    /// A value the setting cannot take.
    #[error("updateBrokerConfig: {0}")]
    Invalid(String),
    /// The update could not be written down.
    #[error("updateBrokerConfig: {0}")]
    Persist(String),
}

impl RuntimeConfig {
    /// The values of `settings`, with what earlier updates kept under
    /// `root` laid over them (a kept value no longer valid is logged and
    /// skipped).
    pub fn open(settings: &Settings, root: &Path) -> Self {
        let b = &settings.broker;
        let config = Self {
            broker_permission: AtomicI32::new(b.broker_permission),
            long_polling_enable: AtomicBool::new(b.long_polling_enable),
            short_polling_time_ms: AtomicU64::new(b.short_polling_time_ms),
            max_reconsume_times: AtomicI32::new(b.max_reconsume_times),
            store_reply_message_enable: AtomicBool::new(b.store_reply_message_enable),
            path: root.join("config").join("broker.runtime.properties"),
        };
        if let Ok(text) = std::fs::read_to_string(&config.path) {
            for (k, v) in parse_properties(&text) {
                match check(&k, &v) {
                    Ok(change) => config.apply(&change),
                    Err(e) => {
                        tracing::warn!(path = %config.path.display(), error = %e, "kept runtime setting skipped")
                    }
                }
            }
            tracing::info!(path = %config.path.display(), "runtime settings from earlier updates applied");
        }
        config
    }

    /// UPDATE_BROKER_CONFIG: checks every `key=value` of `body`, then
    /// applies and keeps them all; returns whether `brokerPermission`
    /// changed (the NameServers must hear of it).
    pub fn update(&self, body: &str) -> Result<bool, UpdateError> {
        let changes: Vec<Change> = parse_properties(body)
            .iter()
            .map(|(k, v)| check(k, v))
            .collect::<Result<_, _>>()?;
        let before = self.broker_permission();
        for change in &changes {
            self.apply(change);
        }
        self.persist()
            .map_err(|e| UpdateError::Persist(e.to_string()))?;
        Ok(before != self.broker_permission())
    }

    fn apply(&self, change: &Change) {
        match *change {
            Change::Permission(v) => self.broker_permission.store(v, Ordering::Relaxed),
            Change::LongPolling(v) => self.long_polling_enable.store(v, Ordering::Relaxed),
            Change::ShortPolling(v) => self.short_polling_time_ms.store(v, Ordering::Relaxed),
            Change::MaxReconsume(v) => self.max_reconsume_times.store(v, Ordering::Relaxed),
            Change::StoreReply(v) => self.store_reply_message_enable.store(v, Ordering::Relaxed),
        }
    }

    /// The current values, by key.
    pub fn pairs(&self) -> [(&'static str, String); 5] {
        [
            ("brokerPermission", self.broker_permission().to_string()),
            ("longPollingEnable", self.long_polling_enable().to_string()),
            (
                "shortPollingTimeMills",
                self.short_polling_time_ms().to_string(),
            ),
            ("maxReconsumeTimes", self.max_reconsume_times().to_string()),
            (
                "storeReplyMessageEnable",
                self.store_reply_message_enable().to_string(),
            ),
        ]
    }

    /// The current values as `key=value` lines.
    pub fn text(&self) -> String {
        self.pairs()
            .iter()
            .map(|(k, v)| format!("{k}={v}\n"))
            .collect()
    }

    fn persist(&self) -> Result<(), MetaError> {
        write_bytes(&self.path, self.text().as_bytes())
    }

    /// `brokerPermission`: whether the broker takes sends (2) and pulls (4).
    pub fn broker_permission(&self) -> i32 {
        self.broker_permission.load(Ordering::Relaxed)
    }

    /// Whether sends are taken.
    pub fn writable(&self) -> bool {
        self.broker_permission() & PERM_WRITE != 0
    }

    /// Whether pulls are served.
    pub fn readable(&self) -> bool {
        self.broker_permission() & PERM_READ != 0
    }

    /// `longPollingEnable`.
    pub fn long_polling_enable(&self) -> bool {
        self.long_polling_enable.load(Ordering::Relaxed)
    }

    /// `shortPollingTimeMills`.
    pub fn short_polling_time_ms(&self) -> u64 {
        self.short_polling_time_ms.load(Ordering::Relaxed)
    }

    /// `maxReconsumeTimes`.
    pub fn max_reconsume_times(&self) -> i32 {
        self.max_reconsume_times.load(Ordering::Relaxed)
    }

    /// `storeReplyMessageEnable`.
    pub fn store_reply_message_enable(&self) -> bool {
        self.store_reply_message_enable.load(Ordering::Relaxed)
    }
}

/// One checked change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Permission(i32),
    LongPolling(bool),
    ShortPolling(u64),
    MaxReconsume(i32),
    StoreReply(bool),
}

/// One `key=value` checked: a runtime key, with a value the broker's own
/// configuration checks accept.
fn check(key: &str, value: &str) -> Result<Change, UpdateError> {
    let canonical = match Settings::key_use(key) {
        KeyUse::Ours(name) => name,
        KeyUse::NotUsed(java) => return Err(UpdateError::NotUsedHere(java.to_owned())),
        KeyUse::Unknown => return Err(UpdateError::Unknown(key.to_owned())),
    };
    if !RUNTIME_KEYS.contains(&canonical.as_str()) {
        return Err(UpdateError::NotAtRuntime(canonical));
    }
    let s = Settings::from_pairs([(canonical.clone(), value.to_owned())])
        .map_err(|e| UpdateError::Invalid(e.to_string()))?;
    let b = &s.broker;
    Ok(match canonical.as_str() {
        "brokerPermission" => Change::Permission(b.broker_permission),
        "longPollingEnable" => Change::LongPolling(b.long_polling_enable),
        "shortPollingTimeMills" => Change::ShortPolling(b.short_polling_time_ms),
        "maxReconsumeTimes" => Change::MaxReconsume(b.max_reconsume_times),
        _ => Change::StoreReply(b.store_reply_message_enable),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_keys_apply_and_persist_others_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings::default();
        let c = RuntimeConfig::open(&settings, dir.path());
        assert!(c.writable() && c.readable());
        assert!(c.update("brokerPermission=4\nmaxReconsumeTimes=3").unwrap());
        assert!(!c.writable() && c.readable());
        assert_eq!(c.max_reconsume_times(), 3);
        assert!(
            !c.update("maxReconsumeTimes=5").unwrap(),
            "permission unchanged"
        );
        let e = c
            .update("maxReconsumeTimes=7\nflushDiskType=SYNC_FLUSH")
            .unwrap_err();
        assert!(e.to_string().contains("flushDiskType"), "{e}");
        assert_eq!(
            c.max_reconsume_times(),
            5,
            "a refused update applies nothing"
        );
        let e = c.update("noSuchKey=1").unwrap_err();
        assert_eq!(e, UpdateError::Unknown("noSuchKey".into()));
        let e = c
            .update("maxReconsumeTimes=9\nsendMessageThreadPoolNums=4")
            .unwrap_err();
        assert_eq!(
            e,
            UpdateError::NotUsedHere("sendMessageThreadPoolNums".into())
        );
        assert!(e.to_string().contains("sendMessageThreadPoolNums"), "{e}");
        assert_eq!(c.max_reconsume_times(), 5, "nothing of it applied");
        // A 5.3.3 name of one of our settings is that setting.
        let e = c.update("warmMapedFileEnable=true").unwrap_err();
        assert_eq!(e, UpdateError::NotAtRuntime("warmMappedFileEnable".into()));
        assert!(matches!(
            c.update("longPollingEnable=maybe"),
            Err(UpdateError::Invalid(_))
        ));
        let again = RuntimeConfig::open(&settings, dir.path());
        assert_eq!(
            (again.broker_permission(), again.max_reconsume_times()),
            (4, 5)
        );
    }
}
