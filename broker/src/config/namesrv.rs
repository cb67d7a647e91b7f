//! `rmq-broker --namesrv-only -c namesrv.conf`: the file Apache RocketMQ's
//! NameServer reads, read the way its `NamesrvStartup -c` reads it.
//!
//! Java applies namesrv.conf to `NamesrvConfig`, `NettyServerConfig`,
//! `NettyClientConfig` and (with `enableControllerInNamesrv`)
//! `ControllerConfig`. So, before the file becomes [`Settings`]:
//!
//! - `listenPort` is the NameServer's port (this process serves no
//!   broker), the same setting as our `namesrvListenPort`; the two may both
//!   be given only with one value;
//! - `bindAddress` is where it listens (`brokerIP1` when absent);
//! - of `NamesrvConfig`'s keys, `kvConfigPath`, `configStorePath` and
//!   `deleteTopicWithBrokerRegistration` are applied; the others are taken
//!   and not used (named in the start-up warning, as unused broker keys
//!   are);
//! - a `NamesrvConfig` key the controller has too (`configStorePath`,
//!   `scanNotActiveBrokerInterval`, `configBlackList`, `rocketmqHome`,
//!   `enableControllerInNamesrv`) also goes to the controller, as Java
//!   applies the file to both; the NameServer and the controller then share
//!   the `configStorePath` file, each rewriting only its own keys;
//! - every other key is read as in broker.conf (ACL, TLS, metrics,
//!   `namesrvBrokerExpiry`, the controller's keys...).

use std::collections::BTreeMap;
use std::path::PathBuf;

use rmq_common::ConfigError;

use super::namesrv_keys::NAMESRV_KEYS;

/// The NameServer's own keys from namesrv.conf that are not broker keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamesrvKeys {
    /// `bindAddress`: the address to listen on (`None`: `brokerIP1`).
    pub bind_address: Option<String>,
    /// `kvConfigPath` (`None`: `<storePathRootDir>/namesrv/kvConfig.json`).
    pub kv_config_path: Option<PathBuf>,
    /// `configStorePath` (`None`:
    /// `<storePathRootDir>/namesrv/namesrv.properties`).
    pub config_store_path: Option<PathBuf>,
    /// `deleteTopicWithBrokerRegistration` (Java's default: false).
    pub delete_topic_with_broker_registration: bool,
}

/// namesrv.conf's pairs, split by [`split`].
pub(super) struct Split {
    /// What [`super::Settings::from_pairs`] reads (with `listenPort`
    /// renamed `namesrvListenPort`).
    pub rest: Vec<(String, String)>,
    /// The NameServer's own keys.
    pub keys: NamesrvKeys,
    /// The `NamesrvConfig` keys taken and not used.
    pub unused: BTreeMap<String, String>,
}

/// Splits namesrv.conf's pairs ([`Split`]).
pub(super) fn split(pairs: Vec<(String, String)>) -> Result<Split, ConfigError> {
    let mut rest = Vec::with_capacity(pairs.len());
    let mut keys = NamesrvKeys::default();
    let mut unused = BTreeMap::new();
    let mut port: Option<(String, String)> = None;
    for (key, value) in pairs {
        let lower = key.to_ascii_lowercase();
        if lower == "listenport" || lower == "namesrvlistenport" {
            if let Some((k, v)) = &port {
                if !k.eq_ignore_ascii_case(&key) && v.trim() != value.trim() {
                    return Err(ConfigError::new(
                        key.clone(),
                        format!(
                            "`{k}={v}` and `{key}={value}` name two ports for the NameServer \
                             (with --namesrv-only both mean its port): give one"
                        ),
                    ));
                }
            }
            port = Some((key, value.clone()));
            rest.push(("namesrvListenPort".to_owned(), value));
            continue;
        }
        if lower == "bindaddress" {
            value
                .trim()
                .parse::<std::net::IpAddr>()
                .map_err(|_| ConfigError::new(key, format!("{value:?} is not an IP address")))?;
            keys.bind_address = Some(value.trim().to_owned());
            continue;
        }
        let Some(java) = NAMESRV_KEYS
            .iter()
            .find(|k| k.key.eq_ignore_ascii_case(&key))
        else {
            rest.push((key, value));
            continue;
        };
        let shared = super::controller_key(&lower).is_some();
        if shared {
            rest.push((key.clone(), value.clone()));
        }
        match java.key {
            "kvConfigPath" => keys.kv_config_path = Some(path(&key, &value)?),
            "configStorePath" => keys.config_store_path = Some(path(&key, &value)?),
            k @ "deleteTopicWithBrokerRegistration" => {
                keys.delete_topic_with_broker_registration =
                    rmq_controller::config::parse_flag(k, &value)
                        .map_err(|e| ConfigError::new(e.key(), e.to_string()))?;
            }
            other if !shared => {
                unused.insert(other.to_owned(), value);
            }
            _ => {}
        }
    }
    Ok(Split { rest, keys, unused })
}

fn path(key: &str, value: &str) -> Result<PathBuf, ConfigError> {
    let v = value.trim();
    if v.is_empty() {
        return Err(ConfigError::new(key.to_owned(), "an empty path"));
    }
    Ok(PathBuf::from(v))
}
