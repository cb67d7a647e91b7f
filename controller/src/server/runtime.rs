//! The settings UPDATE_CONTROLLER_CONFIG (1009) may change while a replica
//! runs, GET_CONTROLLER_CONFIG (1010)'s text of all of them, and where an
//! update is written (`configStorePath`). Facts 3.13: answered by any
//! replica, for that replica only; an update naming a black-listed key is
//! refused whole with NO_PERMISSION; keys that are not the controller's are
//! ignored.
//!
//! Beyond Java (as the NameServer's UPDATE_NAMESRV_CONFIG here): a value
//! that does not parse, and a key that cannot change while the replica
//! runs (its peers, id, group, folders), are refused by name rather than
//! taken without effect, and a refused update changes nothing (a failed
//! write of the file is answered SYSTEM_ERROR; the change holds in
//! memory). As Java, the
//! written file is not read back at start: it is the settings' record,
//! which an operator may use as the next `-c` file.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use rmq_common::meta_file::write_properties;
use rmq_common::remoting::ResponseCode;

use crate::config::{parse_flag, parse_interval_ms, parse_tries, ControllerConfigError, DLEDGER};
use crate::ops::Refusal;
use crate::server::settings::ControllerSettings;

/// Java's remark for a black-listed key.
pub const BLACK_LIST_REMARK: &str = "Can not update config in black list.";

/// Keys always black-listed, whatever `configBlackList` says.
const ALWAYS_BLACK: [&str; 3] = ["configBlackList", "configStorePath", "rocketmqHome"];

/// Keys of the controller that are fixed from start to stop.
const FIXED: [&str; 6] = [
    "controllerType",
    "controllerDLegerGroup",
    "controllerDLegerPeers",
    "controllerDLegerSelfId",
    "controllerStorePath",
    "listenPort",
];

/// One change an update asks for, parsed.
#[derive(Debug, Clone, Copy)]
enum Change {
    Unclean(bool),
    Notify(bool),
    ScanNotActive(u64),
    ScanInactiveMaster(u64),
    Retries(u32),
}

/// The changeable settings of one replica, and the rest as text.
#[derive(Debug)]
pub struct RuntimeConfig {
    elect_unclean_master: AtomicBool,
    notify_broker_role_changed: AtomicBool,
    scan_not_active_ms: AtomicU64,
    scan_inactive_master_ms: AtomicU64,
    elect_retries: AtomicU32,
    /// The fixed keys' `key=value` lines.
    fixed: Vec<(&'static str, String)>,
    black_list: Vec<String>,
    store_path: Option<PathBuf>,
    /// One update at a time, so the file holds the last one applied.
    update: parking_lot::Mutex<()>,
    /// Woken after an update, so the scan takes new intervals at once.
    pub changed: tokio::sync::Notify,
}

fn refuse(e: &ControllerConfigError) -> Refusal {
    Refusal {
        code: ResponseCode::SystemError,
        remark: e.to_string(),
    }
}

impl RuntimeConfig {
    /// The settings `s` starts with.
    pub fn new(s: &ControllerSettings) -> Self {
        let peers: Vec<String> = s
            .peers
            .iter()
            .map(|(id, addr)| format!("{}-{addr}", s.name_of(*id)))
            .collect();
        let port = s
            .peers
            .get(&s.id)
            .and_then(|a| a.rsplit_once(':'))
            .map_or(String::new(), |(_, p)| p.to_owned());
        let path = |p: &Option<PathBuf>| {
            p.as_ref()
                .map_or(String::new(), |p| p.display().to_string())
        };
        let fixed = vec![
            ("controllerType", DLEDGER.to_owned()),
            ("controllerDLegerGroup", s.group.clone()),
            ("controllerDLegerPeers", peers.join(";")),
            ("controllerDLegerSelfId", s.name_of(s.id)),
            ("controllerStorePath", s.store_dir.display().to_string()),
            ("configStorePath", path(&s.config_store_path)),
            ("configBlackList", s.config_black_list.join(";")),
            ("listenPort", port),
        ];
        Self {
            elect_unclean_master: AtomicBool::new(s.elect_unclean_master),
            notify_broker_role_changed: AtomicBool::new(s.notify_broker_role_changed),
            scan_not_active_ms: AtomicU64::new(s.scan_interval_ms.max(1)),
            scan_inactive_master_ms: AtomicU64::new(s.scan_inactive_master_interval_ms.max(1)),
            elect_retries: AtomicU32::new(s.elect_master_max_retry_count.max(1)),
            fixed,
            black_list: s.config_black_list.clone(),
            store_path: s.config_store_path.clone(),
            update: parking_lot::Mutex::new(()),
            changed: tokio::sync::Notify::new(),
        }
    }

    /// `enableElectUncleanMaster` now.
    pub fn elect_unclean_master(&self) -> bool {
        self.elect_unclean_master.load(Ordering::Relaxed)
    }

    /// `notifyBrokerRoleChanged` now.
    pub fn notify_broker_role_changed(&self) -> bool {
        self.notify_broker_role_changed.load(Ordering::Relaxed)
    }

    /// `scanNotActiveBrokerInterval` now.
    pub fn scan_not_active_interval(&self) -> Duration {
        Duration::from_millis(self.scan_not_active_ms.load(Ordering::Relaxed))
    }

    /// `scanInactiveMasterInterval` now.
    pub fn scan_inactive_master_interval(&self) -> Duration {
        Duration::from_millis(self.scan_inactive_master_ms.load(Ordering::Relaxed))
    }

    /// `electMasterMaxRetryCount` now.
    pub fn elect_master_max_retry_count(&self) -> u32 {
        self.elect_retries.load(Ordering::Relaxed)
    }

    /// GET_CONTROLLER_CONFIG's body: `key=value` lines, every setting.
    pub fn text(&self) -> String {
        let mut lines: Vec<(&str, String)> =
            self.fixed.iter().map(|(k, v)| (*k, v.clone())).collect();
        lines.extend([
            (
                "enableElectUncleanMaster",
                self.elect_unclean_master().to_string(),
            ),
            (
                "notifyBrokerRoleChanged",
                self.notify_broker_role_changed().to_string(),
            ),
            (
                "scanNotActiveBrokerInterval",
                self.scan_not_active_ms.load(Ordering::Relaxed).to_string(),
            ),
            (
                "scanInactiveMasterInterval",
                self.scan_inactive_master_ms
                    .load(Ordering::Relaxed)
                    .to_string(),
            ),
            (
                "electMasterMaxRetryCount",
                self.elect_master_max_retry_count().to_string(),
            ),
        ]);
        lines.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
    }

    fn black_listed(&self, key: &str) -> bool {
        ALWAYS_BLACK.contains(&key) || self.black_list.iter().any(|b| b == key)
    }

    /// UPDATE_CONTROLLER_CONFIG: applies `body` (properties text) and
    /// writes the settings to `configStorePath`; a refused update changes
    /// nothing. Blocking (it writes a file).
    pub fn update(&self, body: &str) -> Result<(), Refusal> {
        let pairs = rmq_common::properties::parse(body);
        if pairs.iter().any(|(k, _)| self.black_listed(k)) {
            return Err(Refusal {
                code: ResponseCode::NoPermission,
                remark: BLACK_LIST_REMARK.to_owned(),
            });
        }
        let mut changes = Vec::new();
        for (key, value) in &pairs {
            let change = match key.as_str() {
                "enableElectUncleanMaster" => Change::Unclean(
                    parse_flag("enableElectUncleanMaster", value).map_err(|e| refuse(&e))?,
                ),
                "notifyBrokerRoleChanged" => Change::Notify(
                    parse_flag("notifyBrokerRoleChanged", value).map_err(|e| refuse(&e))?,
                ),
                "scanNotActiveBrokerInterval" => Change::ScanNotActive(
                    parse_interval_ms("scanNotActiveBrokerInterval", value)
                        .map_err(|e| refuse(&e))?,
                ),
                "scanInactiveMasterInterval" => Change::ScanInactiveMaster(
                    parse_interval_ms("scanInactiveMasterInterval", value)
                        .map_err(|e| refuse(&e))?,
                ),
                "electMasterMaxRetryCount" => Change::Retries(
                    parse_tries("electMasterMaxRetryCount", value).map_err(|e| refuse(&e))?,
                ),
                k if FIXED.contains(&k) => {
                    return Err(Refusal {
                        code: ResponseCode::SystemError,
                        remark: format!(
                            "{k} cannot change while the controller runs: set it in the \
                             configuration and restart"
                        ),
                    })
                }
                other => {
                    tracing::warn!(
                        key = other,
                        "UPDATE_CONTROLLER_CONFIG: not a setting of this controller; ignored"
                    );
                    continue;
                }
            };
            changes.push(change);
        }
        let _one = self.update.lock();
        for change in changes {
            match change {
                Change::Unclean(on) => self.elect_unclean_master.store(on, Ordering::Relaxed),
                Change::Notify(on) => self.notify_broker_role_changed.store(on, Ordering::Relaxed),
                Change::ScanNotActive(ms) => self.scan_not_active_ms.store(ms, Ordering::Relaxed),
                Change::ScanInactiveMaster(ms) => {
                    self.scan_inactive_master_ms.store(ms, Ordering::Relaxed)
                }
                Change::Retries(n) => self.elect_retries.store(n, Ordering::Relaxed),
            }
        }
        self.changed.notify_one();
        tracing::info!(update = %body.trim(), "controller settings updated");
        match &self.store_path {
            Some(path) => write_properties(path, &self.text()).map_err(|e| Refusal {
                code: ResponseCode::SystemError,
                remark: e.to_string(),
            }),
            None => Ok(()),
        }
    }
}
