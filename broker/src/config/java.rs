//! Apache RocketMQ 5.3.3's broker.conf keys (the table in `java_keys.rs`,
//! generated from its sources by `scripts/java-config-keys.py`) and how
//! this broker treats each one:
//!
//! - a key that is one of ours (same name) is applied as ours;
//! - a key that is one of our settings under another name
//!   ([`SAME_SETTING`]) is applied as that setting;
//! - every other key of the table is taken and not used: its value is not
//!   even parsed (Java swallows a malformed value too), and the broker
//!   names all of them in one warning line at start-up;
//! - a key that neither the table nor our settings know is refused.

use super::java_keys::JAVA_KEYS;

/// The Java class whose setter takes a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JavaClass {
    /// `org.apache.rocketmq.common.BrokerIdentity` (BrokerConfig's superclass).
    BrokerIdentity,
    /// `org.apache.rocketmq.common.BrokerConfig`.
    BrokerConfig,
    /// `org.apache.rocketmq.remoting.netty.NettyServerConfig`.
    NettyServerConfig,
    /// `org.apache.rocketmq.remoting.netty.NettyClientConfig`.
    NettyClientConfig,
    /// `org.apache.rocketmq.store.config.MessageStoreConfig`.
    MessageStoreConfig,
    /// `org.apache.rocketmq.auth.config.AuthConfig`.
    AuthConfig,
    /// `org.apache.rocketmq.common.namesrv.NamesrvConfig` (namesrv.conf
    /// only; the table in `namesrv_keys.rs`).
    NamesrvConfig,
}

/// One key of one class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JavaKey {
    /// The key as broker.conf spells it.
    pub key: &'static str,
    /// The class whose setter takes it.
    pub class: JavaClass,
    /// The setter's parameter type (`int | String` when overloaded).
    pub java_type: &'static str,
    /// The field's initializer as the source writes it (empty: none).
    pub default_expr: &'static str,
    /// The value the field starts with, as text; `None` when it depends on
    /// the machine (processor count, local address, home directory) or is
    /// a null String.
    pub default: Option<&'static str>,
}

/// 5.3.3 keys that are one of our settings under another name: (Java key,
/// our key). Keys spelled the same are ours without being listed.
pub const SAME_SETTING: &[(&str, &str)] = &[
    // MessageStoreConfig's spelling of warming up new CommitLog segments.
    ("warmMapedFileEnable", "warmMappedFileEnable"),
    // NettyClientConfig: the broker's own connections use TLS.
    ("useTLS", "tlsEnable"),
    // BrokerConfig: the port of the Prometheus endpoint.
    ("metricsPromExporterPort", "metricsPort"),
];

/// The 5.3.3 key `key` names, matched without regard to case (as every
/// key here is): its spelling in the table.
pub fn java_key(key: &str) -> Option<&'static str> {
    JAVA_KEYS
        .iter()
        .find(|k| k.key.eq_ignore_ascii_case(key))
        .map(|k| k.key)
}

/// Our name for the 5.3.3 key `key` when it is one of our settings under
/// another name.
pub fn same_setting(key: &str) -> Option<&'static str> {
    SAME_SETTING
        .iter()
        .find(|(java, _)| java.eq_ignore_ascii_case(key))
        .map(|(_, ours)| *ours)
}

/// Every row of the table (one per class and key).
pub fn all() -> &'static [JavaKey] {
    JAVA_KEYS
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    #[test]
    fn the_table_holds_the_442_keys_of_5_3_3() {
        let distinct: BTreeSet<&str> = JAVA_KEYS.iter().map(|k| k.key).collect();
        assert_eq!(distinct.len(), 442);
        assert_eq!(
            JAVA_KEYS.len(),
            445,
            "listenPort and the two water marks twice"
        );
        // No two keys differ only by case: matching without case is safe.
        let lower: BTreeSet<String> = distinct.iter().map(|k| k.to_ascii_lowercase()).collect();
        assert_eq!(lower.len(), distinct.len());
        let mut per_class: BTreeMap<String, usize> = BTreeMap::new();
        for k in JAVA_KEYS {
            *per_class.entry(format!("{:?}", k.class)).or_default() += 1;
        }
        let count = |c: &str| per_class.get(c).copied().unwrap_or(0);
        assert_eq!(count("BrokerConfig") + count("BrokerIdentity"), 203);
        assert_eq!(count("MessageStoreConfig"), 178);
        assert_eq!(count("NettyServerConfig"), 18);
        assert_eq!(count("NettyClientConfig"), 20);
        assert_eq!(count("AuthConfig"), 26);
    }

    #[test]
    fn known_rows() {
        let row = |key: &str, class: JavaClass| {
            *JAVA_KEYS
                .iter()
                .find(|k| k.key == key && k.class == class)
                .unwrap_or_else(|| panic!("{key} of {class:?}"))
        };
        let r = row("brokerRole", JavaClass::MessageStoreConfig);
        assert_eq!((r.java_type, r.default), ("String", Some("ASYNC_MASTER")));
        let r = row("metricsExporterType", JavaClass::BrokerConfig);
        assert_eq!((r.java_type, r.default), ("int | String", Some("DISABLE")));
        assert_eq!(
            row("listenPort", JavaClass::BrokerConfig).default,
            Some("6888")
        );
        assert_eq!(
            row("listenPort", JavaClass::NettyServerConfig).default,
            Some("0")
        );
        assert_eq!(
            row("mappedFileSizeConsumeQueue", JavaClass::MessageStoreConfig).default,
            Some("6000000")
        );
        assert_eq!(
            row("brokerPermission", JavaClass::BrokerConfig).default,
            Some("6")
        );
        assert_eq!(
            row("inBrokerContainer", JavaClass::BrokerIdentity).default,
            Some("false")
        );
        assert_eq!(
            row("scanAvailableNameSrv", JavaClass::NettyClientConfig).java_type,
            "boolean"
        );
        assert_eq!(
            row("storePathCommitLog", JavaClass::MessageStoreConfig).default,
            None
        );
        // Fields without a setter are not keys.
        for not_a_key in [
            "isBrokerContainer",
            "timerEnableDisruptor",
            "timerWarmEnable",
        ] {
            assert_eq!(java_key(not_a_key), None, "{not_a_key}");
        }
        // The keys that stopped this broker's start before.
        for k in [
            "storePathCommitLog",
            "brokerIP2",
            "sendMessageThreadPoolNums",
            "transientStorePoolEnable",
            "warmMapedFileEnable",
            "useReentrantLockWhenPutMessage",
            "osPageCacheBusyTimeOutMills",
        ] {
            assert_eq!(java_key(&k.to_ascii_uppercase()), Some(k));
        }
    }

    #[test]
    fn same_setting_names_are_5_3_3_keys() {
        for (java, _) in SAME_SETTING {
            assert_eq!(java_key(java), Some(*java));
        }
        assert_eq!(
            same_setting("WARMMAPEDFILEENABLE"),
            Some("warmMappedFileEnable")
        );
    }
}
