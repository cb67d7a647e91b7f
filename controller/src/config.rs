//! A controller replica's configuration, read from Apache RocketMQ 5.3.3's
//! own keys (`ControllerConfig`, `docs/controller-facts.md` 7.6), so an
//! Apache `controller.conf` or a NameServer's `namesrv.conf` with
//! `enableControllerInNamesrv=true` starts this controller unchanged.
//!
//! As Java's `MixAll.properties2Object`: a key is the setter's name in
//! lower camel case, matched exactly, and keys that are not the
//! controller's are ignored (one file may hold the NameServer's keys too).
//! Where this is stricter than Java: a value that does not parse is an
//! error naming the key and the value (Java logs it and keeps the
//! default), and so are a missing or unknown `controllerDLegerSelfId` and
//! a malformed `controllerDLegerPeers`.
//!
//! Peer ids and Raft node ids: `controllerDLegerPeers` names replicas by
//! strings (`n0-127.0.0.1:9878;n1-...`); the Raft group numbers them by the
//! ids' byte order, from 0 ([`Peer::node`]). Every replica derives the same
//! numbers from the same set of ids whatever order the file lists them in,
//! and the usual `n0`, `n1`, `n2` become 0, 1, 2. The Raft group keeps the
//! membership it formed with, so the set of ids must not change after the
//! first start (as with DLedger, membership changes are not supported).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::raft::NodeId;
use crate::server::ControllerSettings;

/// `controllerType`'s default and the only implementation here.
pub const DLEDGER: &str = "DLedger";
/// `controllerType` of Apache's JRaft controller, refused here.
pub const JRAFT: &str = "jRaft";

/// The keys of Java's `ControllerConfig` (and `enableControllerInNamesrv`,
/// NamesrvConfig's switch for the embedded controller), for a caller that
/// must tell them from its own keys.
pub const KEYS: &[&str] = &[
    "controllerType",
    "controllerDLegerGroup",
    "controllerDLegerPeers",
    "controllerDLegerSelfId",
    "controllerStorePath",
    "enableElectUncleanMaster",
    "notifyBrokerRoleChanged",
    "scanNotActiveBrokerInterval",
    "scanInactiveMasterInterval",
    "electMasterMaxRetryCount",
    "configStorePath",
    "configBlackList",
    "metricsExporterType",
    "metricsPromExporterPort",
    "metricsPromExporterHost",
    // Java's keys without an effect here (taken and ignored).
    "rocketmqHome",
    "controllerThreadPoolNums",
    "controllerRequestThreadPoolQueueCapacity",
    "mappedFileSize",
    "processReadEvent",
    "metricsGrpcExporterTarget",
    "metricsGrpcExporterHeader",
    "metricGrpcExporterTimeOutInMills",
    "metricGrpcExporterIntervalInMills",
    "metricLoggingExporterIntervalInMills",
    "metricsLabel",
    "metricsInDelta",
    ENABLE_IN_NAMESRV,
];

/// NamesrvConfig's key that starts a controller inside the NameServer.
pub const ENABLE_IN_NAMESRV: &str = "enableControllerInNamesrv";

/// `metricsPromExporterPort`'s default.
pub const DEFAULT_PROM_EXPORTER_PORT: u16 = 5557;

/// `metricsExporterType`: where the controller's metrics go (Java's
/// `MetricsExporterType`). Only [`MetricsExporter::Prom`] is served here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetricsExporter {
    /// No metrics endpoint (Java's default).
    #[default]
    Disable,
    /// OTLP over gRPC: not served here.
    OtlpGrpc,
    /// A Prometheus endpoint on `metricsPromExporterHost:Port`.
    Prom,
    /// Periodic log lines: not served here.
    Log,
}

impl MetricsExporter {
    /// The value of `metricsExporterType`: Java's enum name or its number
    /// (Java takes both through its setters' overloads).
    pub fn parse(value: &str) -> Result<Self, ControllerConfigError> {
        Ok(match value.trim() {
            "DISABLE" | "0" => Self::Disable,
            "OTLP_GRPC" | "1" => Self::OtlpGrpc,
            "PROM" | "2" => Self::Prom,
            "LOG" | "3" => Self::Log,
            _ => {
                return Err(ControllerConfigError::invalid(
                    "metricsExporterType",
                    value,
                    "is not DISABLE, OTLP_GRPC, PROM or LOG",
                ))
            }
        })
    }
}

/// `configBlackList`'s default.
pub const DEFAULT_CONFIG_BLACK_LIST: &str = "configBlackList;configStorePath";

/// A configuration that cannot start a controller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControllerConfigError {
    /// A key without a default is not set.
    #[error("config key `{key}` is required")]
    Missing {
        /// The key.
        key: &'static str,
    },
    /// A key's value cannot be used.
    #[error("config key `{key}`: {value:?} {reason}")]
    Invalid {
        /// The key.
        key: &'static str,
        /// The value as given.
        value: String,
        /// Why not.
        reason: String,
    },
}

impl ControllerConfigError {
    fn invalid(key: &'static str, value: &str, reason: impl Into<String>) -> Self {
        Self::Invalid {
            key,
            value: value.to_owned(),
            reason: reason.into(),
        }
    }

    /// The key at fault.
    pub fn key(&self) -> &'static str {
        match self {
            Self::Missing { key } | Self::Invalid { key, .. } => key,
        }
    }
}

/// One replica of `controllerDLegerPeers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// Its id as the file names it (`n0`).
    pub id: String,
    /// Its Raft node id: the id's place in the ids' byte order, from 0.
    pub node: NodeId,
    /// Where it serves controller requests and Raft (`host:port`).
    pub addr: String,
}

/// Java's `ControllerConfig`, the keys this controller uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerConfig {
    /// `controllerDLegerGroup` (Java has no default; ours is `group1`, the
    /// name in Apache's example files).
    pub group: String,
    /// `controllerDLegerPeers`, in the order given.
    pub peers: Vec<Peer>,
    /// `controllerDLegerSelfId`.
    pub self_id: String,
    /// `controllerStorePath`: the Raft log's folder (default
    /// `${HOME}/DLedgerController`).
    pub store_path: PathBuf,
    /// `enableElectUncleanMaster`.
    pub enable_elect_unclean_master: bool,
    /// `notifyBrokerRoleChanged`.
    pub notify_broker_role_changed: bool,
    /// `scanNotActiveBrokerInterval`, ms.
    pub scan_not_active_broker_interval_ms: u64,
    /// `scanInactiveMasterInterval`, ms.
    pub scan_inactive_master_interval_ms: u64,
    /// `electMasterMaxRetryCount`: tries of one controller-triggered
    /// election.
    pub elect_master_max_retry_count: u32,
    /// `configStorePath`: where UPDATE_CONTROLLER_CONFIG writes the
    /// settings (default `${HOME}/controller/controller.properties`).
    pub config_store_path: PathBuf,
    /// `configBlackList`: keys UPDATE_CONTROLLER_CONFIG refuses, `;`-separated.
    pub config_black_list: String,
    /// `metricsExporterType`.
    pub metrics_exporter_type: MetricsExporter,
    /// `metricsPromExporterHost` (empty: every interface, as Java).
    pub metrics_prom_exporter_host: String,
    /// `metricsPromExporterPort`.
    pub metrics_prom_exporter_port: u16,
}

/// The value of `key` in `pairs` (the last one given wins).
fn last<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.trim())
}

/// A flag: `true` or `false`, any case.
pub fn parse_flag(key: &'static str, value: &str) -> Result<bool, ControllerConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(ControllerConfigError::invalid(
            key,
            value,
            "is not true or false",
        )),
    }
}

/// An interval: a whole number of ms, at least 1.
pub fn parse_interval_ms(key: &'static str, value: &str) -> Result<u64, ControllerConfigError> {
    value
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|ms| *ms >= 1)
        .ok_or_else(|| {
            ControllerConfigError::invalid(key, value, "is not a whole number of ms >= 1")
        })
}

/// A count of tries: 1 or more.
pub fn parse_tries(key: &'static str, value: &str) -> Result<u32, ControllerConfigError> {
    value
        .trim()
        .parse::<u32>()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| ControllerConfigError::invalid(key, value, "is not a whole number >= 1"))
}

/// `controllerDLegerPeers`: `id-host:port` entries separated by `;`.
pub fn parse_peers(value: &str) -> Result<Vec<Peer>, ControllerConfigError> {
    const KEY: &str = "controllerDLegerPeers";
    let mut named = Vec::new();
    for entry in value.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let Some((id, addr)) = entry.split_once('-') else {
            return Err(ControllerConfigError::invalid(
                KEY,
                value,
                format!("has {entry:?}, not id-host:port"),
            ));
        };
        let (id, addr) = (id.trim(), addr.trim());
        let port_ok = addr.rsplit_once(':').is_some_and(|(host, port)| {
            !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0)
        });
        if id.is_empty() || !port_ok {
            return Err(ControllerConfigError::invalid(
                KEY,
                value,
                format!("has {entry:?}, not id-host:port"),
            ));
        }
        named.push((id.to_owned(), addr.to_owned()));
    }
    if named.is_empty() {
        return Err(ControllerConfigError::invalid(KEY, value, "names no peer"));
    }
    // Node ids by the ids' byte order: the same on every replica.
    let mut order: BTreeMap<&str, NodeId> = BTreeMap::new();
    for (id, _) in &named {
        if order.insert(id.as_str(), 0).is_some() {
            return Err(ControllerConfigError::invalid(
                KEY,
                value,
                format!("names {id:?} twice"),
            ));
        }
    }
    for (node, n) in order.values_mut().zip(0..) {
        *node = n;
    }
    Ok(named
        .iter()
        .map(|(id, addr)| Peer {
            id: id.clone(),
            node: order[id.as_str()],
            addr: addr.clone(),
        })
        .collect())
}

impl ControllerConfig {
    /// The configuration `pairs` give (a later pair wins; keys that are
    /// not the controller's are ignored), with `home` standing for Java's
    /// `user.home` in the defaults.
    pub fn from_pairs(
        pairs: &[(String, String)],
        home: &Path,
    ) -> Result<Self, ControllerConfigError> {
        let get = |k: &str| last(pairs, k);
        let controller_type = get("controllerType").unwrap_or(DLEDGER);
        if controller_type != DLEDGER {
            let reason = if controller_type == JRAFT {
                "is not served here: this controller runs its own Raft under the DLedger \
                 keys; set controllerType=DLedger (or leave it out) with \
                 controllerDLegerGroup, controllerDLegerPeers and controllerDLegerSelfId"
            } else {
                "is not a controller type (DLedger or jRaft)"
            };
            return Err(ControllerConfigError::invalid(
                "controllerType",
                controller_type,
                reason,
            ));
        }
        let peers_text = get("controllerDLegerPeers").ok_or(ControllerConfigError::Missing {
            key: "controllerDLegerPeers",
        })?;
        let peers = parse_peers(peers_text)?;
        let self_id = get("controllerDLegerSelfId")
            .filter(|s| !s.is_empty())
            .ok_or(ControllerConfigError::Missing {
                key: "controllerDLegerSelfId",
            })?;
        if !peers.iter().any(|p| p.id == self_id) {
            return Err(ControllerConfigError::invalid(
                "controllerDLegerSelfId",
                self_id,
                format!("is not among controllerDLegerPeers ({peers_text})"),
            ));
        }
        let path = |k: &str, default: PathBuf| {
            get(k)
                .filter(|p| !p.is_empty())
                .map_or(default, PathBuf::from)
        };
        let interval = |k: &'static str| {
            get(k).map_or(Ok(crate::server::settings::DEFAULT_SCAN_INTERVAL_MS), |v| {
                parse_interval_ms(k, v)
            })
        };
        let flag =
            |k: &'static str, default: bool| get(k).map_or(Ok(default), |v| parse_flag(k, v));
        Ok(Self {
            group: get("controllerDLegerGroup")
                .filter(|g| !g.is_empty())
                .unwrap_or(crate::server::settings::DEFAULT_GROUP)
                .to_owned(),
            self_id: self_id.to_owned(),
            store_path: path(
                "controllerStorePath",
                home.join(format!("{DLEDGER}Controller")),
            ),
            enable_elect_unclean_master: flag("enableElectUncleanMaster", false)?,
            notify_broker_role_changed: flag("notifyBrokerRoleChanged", true)?,
            scan_not_active_broker_interval_ms: interval("scanNotActiveBrokerInterval")?,
            scan_inactive_master_interval_ms: interval("scanInactiveMasterInterval")?,
            elect_master_max_retry_count: get("electMasterMaxRetryCount")
                .map_or(Ok(3), |v| parse_tries("electMasterMaxRetryCount", v))?,
            config_store_path: path(
                "configStorePath",
                home.join("controller").join("controller.properties"),
            ),
            config_black_list: get("configBlackList")
                .unwrap_or(DEFAULT_CONFIG_BLACK_LIST)
                .to_owned(),
            metrics_exporter_type: get("metricsExporterType")
                .map_or(Ok(MetricsExporter::Disable), MetricsExporter::parse)?,
            metrics_prom_exporter_host: get("metricsPromExporterHost")
                .unwrap_or_default()
                .to_owned(),
            metrics_prom_exporter_port: get("metricsPromExporterPort").map_or(
                Ok(DEFAULT_PROM_EXPORTER_PORT),
                |v| {
                    v.parse::<u16>().map_err(|_| {
                        ControllerConfigError::invalid(
                            "metricsPromExporterPort",
                            v,
                            "is not a port (0 to 65535)",
                        )
                    })
                },
            )?,
            peers,
        })
    }

    /// Where the Prometheus endpoint listens (`host:port`), when
    /// `metricsExporterType` is PROM.
    pub fn prom_endpoint(&self) -> Option<String> {
        if self.metrics_exporter_type != MetricsExporter::Prom {
            return None;
        }
        let host = match self.metrics_prom_exporter_host.as_str() {
            "" => "0.0.0.0",
            h => h,
        };
        Some(format!("{host}:{}", self.metrics_prom_exporter_port))
    }

    /// This replica's entry of the peers.
    pub fn me(&self) -> Option<&Peer> {
        self.peers.iter().find(|p| p.id == self.self_id)
    }

    /// The settings a [`crate::server::ControllerServer`] starts with.
    pub fn settings(&self) -> Result<ControllerSettings, ControllerConfigError> {
        let me = self.me().ok_or_else(|| {
            ControllerConfigError::invalid(
                "controllerDLegerSelfId",
                &self.self_id,
                "is not among controllerDLegerPeers",
            )
        })?;
        let peers = self
            .peers
            .iter()
            .map(|p| (p.node, p.addr.clone()))
            .collect();
        let mut s = ControllerSettings::new(me.node, peers, self.store_path.clone());
        s.names = self.peers.iter().map(|p| (p.node, p.id.clone())).collect();
        s.group.clone_from(&self.group);
        s.scan_interval_ms = self.scan_not_active_broker_interval_ms;
        s.scan_inactive_master_interval_ms = self.scan_inactive_master_interval_ms;
        s.elect_unclean_master = self.enable_elect_unclean_master;
        s.notify_broker_role_changed = self.notify_broker_role_changed;
        s.elect_master_max_retry_count = self.elect_master_max_retry_count;
        s.config_store_path = Some(self.config_store_path.clone());
        s.config_black_list = self
            .config_black_list
            .split(';')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(str::to_owned)
            .collect();
        Ok(s)
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
