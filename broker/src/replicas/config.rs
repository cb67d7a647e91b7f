//! The broker.conf keys of controller mode, with RocketMQ 5.3.3's names and
//! defaults (`BrokerConfig`; `docs/controller-facts.md` 6.9).

use rmq_common::ConfigError;
use serde::{Deserialize, Serialize};

/// Controller-mode settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ControllerModeConfig {
    /// Take the role and the broker id from a controller and replicate with
    /// RocketMQ 5.x's auto-switch protocol (`brokerRole` and `brokerId`
    /// are then only where the broker starts from).
    pub enable_controller_mode: bool,
    /// The controllers, `host:port;host:port`.
    pub controller_addr: String,
    /// Resolve `controllerAddr` (one `host:port`) to every address the host
    /// name has, keeping the port.
    pub fetch_controller_addr_by_dns_lookup: bool,
    /// How often the controller leader's address is asked for, ms.
    #[serde(rename = "syncControllerMetadataPeriod")]
    pub sync_controller_metadata_period_ms: u64,
    /// How often the set's master and epochs are asked for, ms.
    #[serde(rename = "syncBrokerMetadataPeriod")]
    pub sync_broker_metadata_period_ms: u64,
    /// How often a master checks its SyncStateSet for slaves to drop, ms.
    #[serde(rename = "checkSyncStateSetPeriod")]
    pub check_sync_state_set_period_ms: u64,
    /// The controller counts this broker dead this long after its last
    /// heartbeat, ms.
    #[serde(rename = "controllerHeartBeatTimeoutMills")]
    pub controller_heartbeat_timeout_ms: u64,
    /// Heartbeat period to the controllers, ms.
    #[serde(rename = "brokerHeartbeatInterval")]
    pub broker_heartbeat_interval_ms: u64,
    /// A heartbeat send gives up after this long, ms.
    #[serde(rename = "sendHeartbeatTimeoutMillis")]
    pub send_heartbeat_timeout_ms: u64,
    /// Among equally caught-up replicas, the lowest priority is elected.
    pub broker_election_priority: i32,
    /// A send is answered once every member of the SyncStateSet has it,
    /// and consumers see only what every member has (the confirm offset);
    /// off (Java's default), the master answers alone.
    pub all_ack_in_sync_state_set: bool,
    /// A slave behind the master this long leaves the SyncStateSet, ms.
    #[serde(rename = "haMaxTimeSlaveNotCatchup")]
    pub ha_max_time_slave_not_catchup_ms: u64,
    /// Consumers read past the confirm offset.
    #[serde(rename = "readUnCommitted")]
    pub read_uncommitted: bool,
    /// A master with fewer in-sync replicas refuses sends that wait for
    /// replicas ("in-sync replicas not enough").
    pub min_in_sync_replicas: usize,
}

impl Default for ControllerModeConfig {
    fn default() -> Self {
        Self {
            enable_controller_mode: false,
            controller_addr: String::new(),
            fetch_controller_addr_by_dns_lookup: false,
            sync_controller_metadata_period_ms: 10_000,
            sync_broker_metadata_period_ms: 5_000,
            check_sync_state_set_period_ms: 5_000,
            controller_heartbeat_timeout_ms: 10_000,
            broker_heartbeat_interval_ms: 1_000,
            send_heartbeat_timeout_ms: 1_000,
            broker_election_priority: i32::MAX,
            all_ack_in_sync_state_set: false,
            ha_max_time_slave_not_catchup_ms: 15_000,
            read_uncommitted: false,
            min_in_sync_replicas: 1,
        }
    }
}

impl ControllerModeConfig {
    /// The controller addresses of `controllerAddr`, as written.
    pub fn controller_addrs(&self) -> Vec<String> {
        self.controller_addr
            .split(';')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// Checks the values; the error names the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !self.enable_controller_mode {
            return Ok(());
        }
        let addrs = self.controller_addrs();
        if addrs.is_empty() {
            return Err(ConfigError::new(
                "controllerAddr",
                "enableControllerMode needs at least one controller (host:port;host:port)",
            ));
        }
        for a in &addrs {
            let ok = a
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
            if !ok {
                return Err(ConfigError::new(
                    "controllerAddr",
                    format!("{a:?} is not host:port"),
                ));
            }
        }
        if self.fetch_controller_addr_by_dns_lookup && addrs.len() != 1 {
            return Err(ConfigError::new(
                "controllerAddr",
                "fetchControllerAddrByDnsLookup takes one host:port",
            ));
        }
        for (key, v) in [
            (
                "syncControllerMetadataPeriod",
                self.sync_controller_metadata_period_ms,
            ),
            (
                "syncBrokerMetadataPeriod",
                self.sync_broker_metadata_period_ms,
            ),
            (
                "checkSyncStateSetPeriod",
                self.check_sync_state_set_period_ms,
            ),
            ("brokerHeartbeatInterval", self.broker_heartbeat_interval_ms),
            ("sendHeartbeatTimeoutMillis", self.send_heartbeat_timeout_ms),
            (
                "haMaxTimeSlaveNotCatchup",
                self.ha_max_time_slave_not_catchup_ms,
            ),
        ] {
            if v == 0 {
                return Err(ConfigError::new(key, "must be above 0 ms"));
            }
        }
        if self.controller_heartbeat_timeout_ms <= self.broker_heartbeat_interval_ms {
            return Err(ConfigError::new(
                "controllerHeartBeatTimeoutMills",
                format!(
                    "{} ms is not above brokerHeartbeatInterval ({} ms): the controller \
                     would count the broker dead between heartbeats",
                    self.controller_heartbeat_timeout_ms, self.broker_heartbeat_interval_ms
                ),
            ));
        }
        Ok(())
    }
}
