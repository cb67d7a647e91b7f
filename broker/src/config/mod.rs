//! Broker configuration: RocketMQ's `BrokerConfig` keys plus the store's
//! `MessageStoreConfig` keys, in one broker.conf (properties or TOML), each
//! overridable by the environment (`RMQ_<key>`, any case) and by `--set
//! key=value`. A key of ours (or one of ours under RocketMQ 5.3.3's name)
//! is applied, and a bad value is an error that names the key; any other
//! 5.3.3 key is taken and not used ([`java`]); a key neither knows is an
//! error that names it.

pub mod java;
mod java_keys;
pub mod namesrv;
mod namesrv_keys;

use std::collections::BTreeMap;
use std::path::Path;

use rmq_common::{ConfigError, StoreConfig};
use rmq_remoting::tls::TlsSettings;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Prefix of environment overrides, e.g. `RMQ_LISTENPORT=10912`.
pub const ENV_PREFIX: &str = "RMQ_";

/// The broker's own settings (the store's are in [`StoreConfig`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct BrokerConfig {
    /// Name of this broker (master and slaves share it).
    pub broker_name: String,
    /// Cluster the broker registers in.
    pub broker_cluster_name: String,
    /// 0 for a master.
    pub broker_id: i64,
    /// Address clients are told to connect to.
    #[serde(rename = "brokerIP1")]
    pub broker_ip1: String,
    /// Address a master takes slaves on and tells them (with the NameServers)
    /// to connect to for replication (`haServerAddr`); empty: brokerIP1.
    #[serde(rename = "brokerIP2")]
    pub broker_ip2: String,
    /// Remoting port for clients (0 picks a free one).
    pub listen_port: u16,
    /// RocketMQ's second ("fast", "VIP") remoting port, serving the same
    /// requests: 0 is listenPort - 2 as Java opens it (where a Java slave
    /// copies its master's topics and offsets, and clients with
    /// `vipChannelEnabled` send); -1 opens none. With listenPort 0 both are
    /// picked so that this one is the other minus 2.
    pub fast_listen_port: i32,
    /// NameServers to register with (`host:port;host:port`). Empty: the
    /// embedded NameServer only.
    pub namesrv_addr: String,
    /// Port of the embedded NameServer (0 picks a free one, -1 disables it).
    pub namesrv_listen_port: i32,
    /// Port of the gRPC API of RocketMQ 5.x's SDKs (`apache.rocketmq.v2`,
    /// the key and default of Apache RocketMQ's proxy; 0 picks a free one,
    /// -1 disables it).
    pub grpc_server_port: i32,
    /// Create unknown topics on first send.
    pub auto_create_topic_enable: bool,
    /// Queues of an auto-created topic (also capped by the client's request).
    pub default_topic_queue_nums: i32,
    /// Interval of the registration heartbeat to NameServers.
    #[serde(rename = "registerNameServerPeriod")]
    pub register_name_server_period_ms: u64,
    /// Send the REGISTER_BROKER body compressed (RocketMQ's form) even when
    /// it is small; past 1 MiB of JSON it is compressed anyway.
    pub compressed_register: bool,
    /// A client connection silent this long is dropped from the client tables.
    #[serde(rename = "channelNotActiveInterval")]
    pub channel_not_active_interval_ms: u64,
    /// Interval at which consumer offsets are persisted.
    #[serde(rename = "flushConsumerOffsetInterval")]
    pub flush_consumer_offset_interval_ms: u64,
    /// Hold pulls that find nothing until a message arrives (long polling).
    pub long_polling_enable: bool,
    /// Wait of a suspended pull when long polling is off.
    #[serde(rename = "shortPollingTimeMills")]
    pub short_polling_time_ms: u64,
    /// Requests one connection may have in flight before it is read no more.
    pub max_in_flight_per_connection: u32,
    /// Request body bytes one connection may hold in flight before it is
    /// read no more.
    pub max_buffered_bytes_per_connection: u64,
    /// The embedded or standalone NameServer drops a broker that has not
    /// registered for this long, ms (RocketMQ: 120 s).
    #[serde(rename = "namesrvBrokerExpiry")]
    pub namesrv_broker_expiry_ms: i64,
    /// Prometheus endpoint port (0 picks a free one, -1 disables it).
    pub metrics_port: i32,
    /// Retries a consumer group gets before a message goes to its DLQ, when
    /// the client's send-back does not say (RocketMQ's `retryMaxTimes`).
    pub max_reconsume_times: i32,
    /// Log filter when `RUST_LOG` is unset (`info`, `debug`,
    /// `info,rmq_broker::processor=debug`, ...).
    pub log_level: String,
    /// A half message younger than this is not checked back.
    #[serde(rename = "transactionTimeOut")]
    pub transaction_time_out_ms: u64,
    /// Check-backs of one half before it goes to TRANS_CHECK_MAX_TIME_TOPIC.
    pub transaction_check_max: i32,
    /// Interval of the transaction check walk.
    #[serde(rename = "transactionCheckInterval")]
    pub transaction_check_interval_ms: u64,
    /// Consumers may filter by SQL92 expressions over message properties
    /// (RocketMQ's `enablePropertyFilter`, off by default as there).
    pub enable_property_filter: bool,
    /// A reply (SEND_REPLY_MESSAGE) is also stored in the cluster's reply
    /// topic, besides being pushed to its requester (RocketMQ's default).
    pub store_reply_message_enable: bool,
    /// RECALL_MESSAGE is served (RocketMQ 5.x, off by default as there).
    pub recall_message_enable: bool,
    /// Whether the broker takes sends (2) and serves pulls (4); the topics
    /// it registers carry this perm when it is not read-write (6). A drain
    /// sets it to 4 (mqadmin updateBrokerConfig -k brokerPermission -v 4).
    pub broker_permission: i32,
    /// A consumer group seen for the first time (heartbeat or pull) gets a
    /// subscription group with the defaults; when off, only groups made
    /// with updateSubGroup may consume.
    pub auto_create_subscription_group: bool,
    /// With `enableLmq`, keep stats and metric series per light message
    /// queue; off (RocketMQ 5.3.3's default), every `%LMQ%…` topic or
    /// group is counted under the one name `%LMQ%`.
    pub enable_lmq_stats: bool,
    /// ASYNC_MASTER (default), SYNC_MASTER or SLAVE.
    pub broker_role: crate::ha::BrokerRole,
    /// Port slaves connect to for replication: 0 is listenPort + 1 (a free
    /// port when listenPort is 0), -1 takes no slaves.
    pub ha_listen_port: i32,
    /// A slave's master HA address (`host:port`); empty: as the NameServer
    /// names it.
    pub ha_master_address: String,
    /// A slave reports, and a master sends an empty frame, after this much
    /// silence, ms.
    #[serde(rename = "haSendHeartbeatInterval")]
    pub ha_send_heartbeat_interval_ms: u64,
    /// An HA link silent this long is dropped, ms.
    #[serde(rename = "haHousekeepingInterval")]
    pub ha_housekeeping_interval_ms: u64,
    /// Most CommitLog bytes per HA frame.
    pub ha_transfer_batch_size: u32,
    /// A slave whose acknowledged offset is this many bytes behind (or more)
    /// is not in sync: SYNC_MASTER answers SLAVE_NOT_AVAILABLE (RocketMQ's
    /// haSlaveFallbehindMax).
    pub ha_max_gap_not_in_sync: i64,
    /// How long a SYNC_MASTER put waits for a slave before
    /// FLUSH_SLAVE_TIMEOUT, ms.
    #[serde(rename = "slaveTimeout")]
    pub slave_timeout_ms: u64,
    /// Consumers may be sent to a slave: pull answers suggest the group's
    /// `brokerId` (or `whichBrokerWhenConsumeSlowly` when the consumer is
    /// far behind) instead of always the master (RocketMQ's default: off).
    pub slave_read_enable: bool,
    /// A slave corrects a pull's offset (PULL_OFFSET_MOVED) instead of
    /// answering PULL_RETRY_IMMEDIATELY (RocketMQ's default: off).
    pub offset_check_in_slave: bool,
    /// Every request must be signed by an account of `aclFile` and be
    /// allowed by its permissions (RocketMQ's plain ACL).
    pub acl_enable: bool,
    /// The plain_acl.yml (relative paths: from the working directory).
    pub acl_file: String,
    /// How often the ACL file is looked at for changes, ms.
    #[serde(rename = "aclReloadInterval")]
    pub acl_reload_interval_ms: u64,
    /// The account this broker signs its own requests with (to its
    /// NameServers and, as a slave, to its master), as RocketMQ 5 names it:
    /// `{"accessKey":"...","secretKey":"..."}`; blank: unsigned.
    pub inner_client_authentication_credentials: String,
    /// TLS on the broker's and NameServer's ports: disabled | permissive |
    /// enforcing (RocketMQ's `tls.server.mode`); see `remoting::tls`.
    pub tls_mode: String,
    /// Server certificate chain, PEM (`tls.server.certPath`).
    pub tls_server_cert_path: String,
    /// Its private key, unencrypted PEM (`tls.server.keyPath`).
    pub tls_server_key_path: String,
    /// Refused when set: encrypted keys are not read.
    pub tls_server_key_password: String,
    /// none | optional | require (`tls.server.need.client.auth`).
    pub tls_server_need_client_auth: String,
    /// Client certificates are checked against `tlsServerTrustCertPath`.
    pub tls_server_auth_client: bool,
    /// CA of client certificates (`tls.server.trustCertPath`).
    pub tls_server_trust_cert_path: String,
    /// Without a certificate, TLS uses a self-signed one made at start.
    pub tls_test_mode_enable: bool,
    /// The broker's own connections use TLS (always when enforcing).
    pub tls_enable: bool,
    /// Those connections check the server against `tlsClientTrustCertPath`.
    pub tls_client_auth_server: bool,
    /// CA of the servers this broker connects to.
    pub tls_client_trust_cert_path: String,
    /// Certificate this broker shows when asked.
    pub tls_client_cert_path: String,
    /// Its key.
    pub tls_client_key_path: String,
    /// A RocketMQ tls.properties whose `tls.*` keys override the above.
    pub tls_config_file: String,
    /// POP consumption (RocketMQ 5.x).
    #[serde(flatten)]
    pub pop: crate::pop::PopConfig,
    /// What the gRPC API takes from Apache's proxy settings.
    #[serde(flatten)]
    pub grpc: crate::grpc::GrpcConfig,
    /// RocketMQ 5.x controller mode (automatic failover).
    #[serde(flatten)]
    pub controller: crate::replicas::ControllerModeConfig,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        Self {
            broker_name: "broker-a".into(),
            broker_cluster_name: "DefaultCluster".into(),
            store_reply_message_enable: true,
            recall_message_enable: false,
            broker_permission: 6,
            auto_create_subscription_group: true,
            enable_lmq_stats: false,
            broker_role: crate::ha::BrokerRole::AsyncMaster,
            ha_listen_port: 0,
            ha_master_address: String::new(),
            ha_send_heartbeat_interval_ms: 5_000,
            ha_housekeeping_interval_ms: 20_000,
            ha_transfer_batch_size: 32 * 1024,
            ha_max_gap_not_in_sync: 256 * 1024 * 1024,
            slave_timeout_ms: 3_000,
            slave_read_enable: false,
            offset_check_in_slave: false,
            acl_enable: false,
            acl_file: "conf/plain_acl.yml".into(),
            acl_reload_interval_ms: 5_000,
            inner_client_authentication_credentials: String::new(),
            tls_mode: "disabled".into(),
            tls_server_cert_path: String::new(),
            tls_server_key_path: String::new(),
            tls_server_key_password: String::new(),
            tls_server_need_client_auth: "none".into(),
            tls_server_auth_client: false,
            tls_server_trust_cert_path: String::new(),
            tls_test_mode_enable: true,
            tls_enable: false,
            tls_client_auth_server: false,
            tls_client_trust_cert_path: String::new(),
            tls_client_cert_path: String::new(),
            tls_client_key_path: String::new(),
            tls_config_file: String::new(),
            pop: crate::pop::PopConfig::default(),
            grpc: crate::grpc::GrpcConfig::default(),
            controller: crate::replicas::ControllerModeConfig::default(),
            broker_id: 0,
            broker_ip1: "127.0.0.1".into(),
            broker_ip2: String::new(),
            listen_port: 10911,
            fast_listen_port: 0,
            namesrv_addr: String::new(),
            namesrv_listen_port: 9876,
            grpc_server_port: 8081,
            auto_create_topic_enable: true,
            default_topic_queue_nums: 8,
            register_name_server_period_ms: 30_000,
            compressed_register: false,
            channel_not_active_interval_ms: 120_000,
            flush_consumer_offset_interval_ms: 5_000,
            long_polling_enable: true,
            short_polling_time_ms: 1_000,
            max_in_flight_per_connection: 256,
            max_buffered_bytes_per_connection: 64 * 1024 * 1024,
            namesrv_broker_expiry_ms: rmq_namesrv::BROKER_EXPIRY_MS,
            metrics_port: 5557,
            max_reconsume_times: 16,
            log_level: "info".into(),
            transaction_time_out_ms: 6_000,
            transaction_check_max: 15,
            transaction_check_interval_ms: 60_000,
            enable_property_filter: false,
        }
    }
}

impl BrokerConfig {
    fn validate_ha(&self) -> Result<(), ConfigError> {
        use crate::ha::BrokerRole;
        self.controller.validate()?;
        // In controller mode the controller gives the id and the role
        // (RocketMQ's example broker.conf says brokerId=-1, SLAVE).
        if !self.controller.enable_controller_mode
            && (self.broker_role == BrokerRole::Slave) != (self.broker_id > 0)
        {
            return Err(ConfigError::new(
                "brokerId",
                format!(
                    "{} with brokerRole {:?}: a slave's brokerId is 1 or more, a master's 0",
                    self.broker_id, self.broker_role
                ),
            ));
        }
        if !(-1..=65535).contains(&self.ha_listen_port) {
            return Err(ConfigError::new(
                "haListenPort",
                format!("{} is not a port", self.ha_listen_port),
            ));
        }
        if self.ha_transfer_batch_size == 0 || self.ha_transfer_batch_size > 4 * 1024 * 1024 {
            return Err(ConfigError::new(
                "haTransferBatchSize",
                "must be 1 to 4194304 bytes",
            ));
        }
        if self.ha_send_heartbeat_interval_ms == 0
            || self.ha_housekeeping_interval_ms <= self.ha_send_heartbeat_interval_ms
        {
            return Err(ConfigError::new(
                "haHousekeepingInterval",
                "must be above haSendHeartbeatInterval, which must be above 0",
            ));
        }
        Ok(())
    }

    /// The address the HA port binds and is advertised on: `brokerIP2`,
    /// else `brokerIP1`.
    pub fn ha_ip(&self) -> &str {
        if self.broker_ip2.trim().is_empty() {
            &self.broker_ip1
        } else {
            self.broker_ip2.trim()
        }
    }

    /// The HA port to bind once the broker port is bound on
    /// `broker_port`: `haListenPort`; for 0, the broker port + 1, or a
    /// free port when the broker port itself was free (`listenPort=0`);
    /// `None` for -1 (no HA port).
    pub fn ha_port(&self, broker_port: u16) -> Option<u16> {
        match u16::try_from(self.ha_listen_port) {
            Ok(0) if self.listen_port == 0 => Some(0),
            Ok(0) => Some(broker_port.saturating_add(1)),
            Ok(p) => Some(p),
            Err(_) => None,
        }
    }

    /// The HA links' timings and sizes.
    pub fn ha_settings(&self) -> crate::ha::HaSettings {
        crate::ha::HaSettings {
            heartbeat: std::time::Duration::from_millis(self.ha_send_heartbeat_interval_ms),
            housekeeping: std::time::Duration::from_millis(self.ha_housekeeping_interval_ms),
            batch_bytes: self.ha_transfer_batch_size as usize,
        }
    }

    /// The credentials of `innerClientAuthenticationCredentials`.
    pub fn inner_credentials(&self) -> Result<Option<rmq_common::acl::Credentials>, ConfigError> {
        rmq_common::acl::Credentials::from_json(&self.inner_client_authentication_credentials)
            .map_err(|e| ConfigError::new("innerClientAuthenticationCredentials", e))
    }

    /// Checks the values; the error names the key.
    fn validate_permission(&self) -> Result<(), ConfigError> {
        if !(0..=15).contains(&self.broker_permission) {
            return Err(ConfigError::new(
                "brokerPermission",
                format!("{} is not a perm (0..=15)", self.broker_permission),
            ));
        }
        Ok(())
    }

    /// The TLS settings these keys name, with `tlsConfigFile`'s keys
    /// applied over them; the error names the key at fault.
    pub fn tls_settings(&self) -> Result<TlsSettings, ConfigError> {
        let raw: Vec<(&'static str, String)> = vec![
            ("tlsMode", self.tls_mode.clone()),
            ("tlsServerCertPath", self.tls_server_cert_path.clone()),
            ("tlsServerKeyPath", self.tls_server_key_path.clone()),
            ("tlsServerKeyPassword", self.tls_server_key_password.clone()),
            (
                "tlsServerNeedClientAuth",
                self.tls_server_need_client_auth.clone(),
            ),
            (
                "tlsServerAuthClient",
                self.tls_server_auth_client.to_string(),
            ),
            (
                "tlsServerTrustCertPath",
                self.tls_server_trust_cert_path.clone(),
            ),
            ("tlsTestModeEnable", self.tls_test_mode_enable.to_string()),
            ("tlsEnable", self.tls_enable.to_string()),
            (
                "tlsClientAuthServer",
                self.tls_client_auth_server.to_string(),
            ),
            (
                "tlsClientTrustCertPath",
                self.tls_client_trust_cert_path.clone(),
            ),
            ("tlsClientCertPath", self.tls_client_cert_path.clone()),
            ("tlsClientKeyPath", self.tls_client_key_path.clone()),
        ];
        TlsSettings::from_keys(raw, &self.tls_config_file)
    }

    /// Checks the values; the error names the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_permission()?;
        self.inner_credentials()?;
        self.tls_settings()?;
        self.validate_ha()?;
        rmq_common::names::validate_group(&self.broker_name)
            .map_err(|e| ConfigError::new("brokerName", e.to_string()))?;
        rmq_common::names::validate_group(&self.broker_cluster_name)
            .map_err(|e| ConfigError::new("brokerClusterName", e.to_string()))?;
        if self.broker_ip1.parse::<std::net::IpAddr>().is_err() {
            return Err(ConfigError::new(
                "brokerIP1",
                format!("{:?} is not an IP address", self.broker_ip1),
            ));
        }
        if !self.broker_ip2.trim().is_empty()
            && self.broker_ip2.trim().parse::<std::net::IpAddr>().is_err()
        {
            return Err(ConfigError::new(
                "brokerIP2",
                format!("{:?} is not an IP address", self.broker_ip2),
            ));
        }
        if !(1..=1024).contains(&self.default_topic_queue_nums) {
            return Err(ConfigError::new(
                "defaultTopicQueueNums",
                "must be within 1..=1024",
            ));
        }
        if !(-1..=65535).contains(&self.fast_listen_port) {
            return Err(ConfigError::new(
                "fastListenPort",
                format!(
                    "{} is not a port (-1: none, 0: listenPort - 2)",
                    self.fast_listen_port
                ),
            ));
        }
        if self.fast_listen_port == 0 && (1..=2).contains(&self.listen_port) {
            return Err(ConfigError::new(
                "fastListenPort",
                format!(
                    "0 means listenPort - 2, and listenPort is {}: set a port or -1",
                    self.listen_port
                ),
            ));
        }
        if !(-1..=65535).contains(&self.namesrv_listen_port) {
            return Err(ConfigError::new(
                "namesrvListenPort",
                "must be -1 (off), 0 (any) or a port",
            ));
        }
        if !(-1..=65535).contains(&self.grpc_server_port) {
            return Err(ConfigError::new(
                "grpcServerPort",
                format!("{} is not a port", self.grpc_server_port),
            ));
        }
        self.grpc
            .validate()
            .map_err(|(key, why)| ConfigError::new(key, why))?;
        if !(-1..=65535).contains(&self.metrics_port) {
            return Err(ConfigError::new(
                "metricsPort",
                "must be -1 (off), 0 (any) or a port",
            ));
        }
        for addr in self.namesrv_addrs() {
            if addr.parse::<std::net::SocketAddr>().is_err() {
                return Err(ConfigError::new(
                    "namesrvAddr",
                    format!("{addr:?} is not host:port"),
                ));
            }
        }
        if self.register_name_server_period_ms < 1000 {
            return Err(ConfigError::new(
                "registerNameServerPeriod",
                "must be at least 1000 ms",
            ));
        }
        if !(0..=10_000).contains(&self.max_reconsume_times) {
            return Err(ConfigError::new(
                "maxReconsumeTimes",
                "must be within 0..=10000",
            ));
        }
        if tracing_subscriber::EnvFilter::try_new(&self.log_level).is_err() {
            return Err(ConfigError::new(
                "logLevel",
                format!(
                    "{:?} is not a log filter such as info or debug",
                    self.log_level
                ),
            ));
        }
        if !(1..=1_000).contains(&self.transaction_check_max) {
            return Err(ConfigError::new(
                "transactionCheckMax",
                "must be within 1..=1000",
            ));
        }
        if self.transaction_check_interval_ms < 10 {
            return Err(ConfigError::new(
                "transactionCheckInterval",
                "must be at least 10 ms",
            ));
        }
        if self.namesrv_broker_expiry_ms < 1_000 {
            return Err(ConfigError::new(
                "namesrvBrokerExpiry",
                "must be at least 1000 ms",
            ));
        }
        if self.max_buffered_bytes_per_connection == 0 {
            return Err(ConfigError::new(
                "maxBufferedBytesPerConnection",
                "must be positive",
            ));
        }
        if self.max_in_flight_per_connection == 0 {
            return Err(ConfigError::new(
                "maxInFlightPerConnection",
                "must be positive",
            ));
        }
        Ok(())
    }

    /// The NameServer addresses of `namesrvAddr`.
    pub fn namesrv_addrs(&self) -> Vec<String> {
        self.namesrv_addr
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

/// Everything the broker process is configured with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    /// Broker keys.
    pub broker: BrokerConfig,
    /// Store keys.
    pub store: StoreConfig,
    /// RocketMQ 5.3.3 keys that were given and that this broker does not
    /// use, by their 5.3.3 name, with the value as given (never parsed).
    pub unused: BTreeMap<String, String>,
    /// The controller's keys (Apache's `ControllerConfig` and
    /// `enableControllerInNamesrv`), by their Apache name, with the value
    /// as given, in order; read by [`Settings::controller_config`].
    pub controller: Vec<(String, String)>,
    /// The NameServer's own keys of a namesrv.conf
    /// ([`Settings::load_namesrv`]; defaults otherwise).
    pub namesrv: namesrv::NamesrvKeys,
}

/// What a broker.conf key is to this broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyUse {
    /// One of our settings (by its name here).
    Ours(String),
    /// A RocketMQ 5.3.3 key this broker takes and does not use (its 5.3.3
    /// name).
    NotUsed(&'static str),
    /// Not a key of this broker nor of RocketMQ 5.3.3.
    Unknown,
}

/// Where raw `key=value` settings come from, in increasing precedence.
#[derive(Debug, Default)]
pub struct Sources<'a> {
    /// A broker.conf (`.conf`/`.properties`/`.ini`) or `.toml` file.
    pub file: Option<&'a Path>,
    /// Environment variables (all of them; only `RMQ_*` are read).
    pub env: Vec<(String, String)>,
    /// `--set key=value` arguments.
    pub overrides: Vec<String>,
}

impl Settings {
    /// The name of the setting `key` (matched as [`Settings::from_pairs`]
    /// matches keys), if it is one of ours.
    pub fn canonical_key(key: &str) -> Option<String> {
        match Self::key_use(key) {
            KeyUse::Ours(name) => Some(name),
            _ => None,
        }
    }

    /// What `key` is to this broker (matched as [`Settings::from_pairs`]
    /// matches keys).
    pub fn key_use(key: &str) -> KeyUse {
        let (Ok(broker), Ok(store)) = (
            to_object(&BrokerConfig::default()),
            to_object(&StoreConfig::default()),
        ) else {
            return KeyUse::Unknown;
        };
        match resolve(&broker, &store, key) {
            Resolved::Broker(k) | Resolved::Store(k) => KeyUse::Ours(k),
            Resolved::NotUsed(k) | Resolved::Controller(k) => KeyUse::NotUsed(k),
            Resolved::Unknown => KeyUse::Unknown,
        }
    }

    /// Logs, in one warning line, every 5.3.3 key given that this broker
    /// does not use (nothing when there is none).
    pub fn warn_unused(&self) {
        if let Some(line) = self.unused_line() {
            tracing::warn!("{line}");
        }
    }

    /// The text of [`Settings::warn_unused`]'s line.
    pub fn unused_line(&self) -> Option<String> {
        if self.unused.is_empty() {
            return None;
        }
        let names: Vec<&str> = self.unused.keys().map(String::as_str).collect();
        Some(format!(
            "{} RocketMQ 5.3.3 keys are not used here (taken and ignored): {}",
            names.len(),
            names.join(", ")
        ))
    }

    /// The embedded controller's configuration when
    /// `enableControllerInNamesrv` is true (Apache's NameServer reads the
    /// same file into its `ControllerConfig`); `None` when it is not.
    pub fn controller_config(
        &self,
    ) -> Result<
        Option<rmq_controller::config::ControllerConfig>,
        rmq_controller::config::ControllerConfigError,
    > {
        use rmq_controller::config::{parse_flag, ControllerConfig, ENABLE_IN_NAMESRV};
        let enabled = self
            .controller
            .iter()
            .rev()
            .find(|(k, _)| k == ENABLE_IN_NAMESRV)
            .map_or(Ok(false), |(_, v)| parse_flag(ENABLE_IN_NAMESRV, v))?;
        if !enabled {
            return Ok(None);
        }
        ControllerConfig::from_pairs(&self.controller, &crate::controller::home()).map(Some)
    }

    /// Loads and validates settings from `sources`.
    pub fn load(sources: &Sources<'_>) -> Result<Self, ConfigError> {
        Self::from_pairs(raw_pairs(sources)?)
    }

    /// Loads and validates the settings of a NameServer alone
    /// (`--namesrv-only`) from `sources`, whose file may be Apache
    /// RocketMQ's namesrv.conf as it is ([`namesrv`]).
    pub fn load_namesrv(sources: &Sources<'_>) -> Result<Self, ConfigError> {
        let split = namesrv::split(raw_pairs(sources)?)?;
        let mut settings = Self::from_pairs(split.rest)?;
        settings.namesrv = split.keys;
        settings.unused.extend(split.unused);
        Ok(settings)
    }

    /// Builds settings from raw pairs (keys matched without regard to case).
    pub fn from_pairs(
        pairs: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let mut broker = to_object(&BrokerConfig::default())?;
        let mut store = to_object(&StoreConfig::default())?;
        let mut unused = BTreeMap::new();
        let mut controller = Vec::new();
        // Our keys set under another name: errors about them name the key
        // as it was written.
        let mut written: BTreeMap<String, String> = BTreeMap::new();
        for (key, value) in pairs {
            let (obj, field) = match resolve(&broker, &store, &key) {
                Resolved::Broker(field) => (&mut broker, field),
                Resolved::Store(field) => (&mut store, field),
                Resolved::NotUsed(java) => {
                    // A key both Apache's broker and its controller have
                    // (`configBlackList`) goes to both.
                    if let Some(k) = controller_key(&key.to_ascii_lowercase()) {
                        controller.push((k.to_owned(), value.clone()));
                    }
                    unused.insert(java.to_owned(), value);
                    continue;
                }
                Resolved::Controller(apache) => {
                    controller.push((apache.to_owned(), value));
                    continue;
                }
                Resolved::Unknown => {
                    return Err(ConfigError::new(
                        key.clone(),
                        format!(
                            "unknown config key `{key}`: not a setting of this broker \
                             nor of RocketMQ 5.3.3"
                        ),
                    ));
                }
            };
            if !key.eq_ignore_ascii_case(&field) {
                written.insert(field.clone(), key.clone());
            }
            let coerced = coerce(&obj[&field], &value).ok_or_else(|| {
                named(
                    ConfigError::new(field.clone(), format!("{value:?} is not a valid value")),
                    &written,
                )
            })?;
            obj.insert(field, coerced);
        }
        let name = |e: ConfigError| named(e, &written);
        let broker: BrokerConfig = from_object(broker).map_err(name)?;
        let store: StoreConfig = from_object(store).map_err(name)?;
        broker.validate().map_err(name)?;
        store.validate().map_err(name)?;
        let settings = Self {
            broker,
            store,
            unused,
            controller,
            namesrv: namesrv::NamesrvKeys::default(),
        };
        // A bad controller key fails the start, as a bad broker key does.
        settings
            .controller_config()
            .map_err(|e| ConfigError::new(e.key(), e.to_string()))?;
        Ok(settings)
    }
}

/// The file's pairs, then the environment's, then `--set`'s.
fn raw_pairs(sources: &Sources<'_>) -> Result<Vec<(String, String)>, ConfigError> {
    let mut raw = Vec::new();
    if let Some(path) = sources.file {
        raw.extend(read_file(path)?);
    }
    for (k, v) in &sources.env {
        if let Some(key) = k.strip_prefix(ENV_PREFIX) {
            raw.push((key.to_owned(), v.clone()));
        }
    }
    for o in &sources.overrides {
        let (k, v) = o
            .split_once('=')
            .ok_or_else(|| ConfigError::new("--set", format!("{o:?} is not key=value")))?;
        raw.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    Ok(raw)
}

/// Where a key goes.
enum Resolved {
    /// A field of [`BrokerConfig`] (its serde name).
    Broker(String),
    /// A field of [`StoreConfig`] (its serde name).
    Store(String),
    /// A 5.3.3 key without behaviour here.
    NotUsed(&'static str),
    /// A key of the controller (its Apache name).
    Controller(&'static str),
    /// Neither.
    Unknown,
}

/// Our keys first (by name, then by their other names), then RocketMQ
/// 5.3.3's; all without regard to case.
fn resolve(broker: &Object, store: &Object, key: &str) -> Resolved {
    let lower = key.to_ascii_lowercase();
    let lower = alias(&lower)
        .or_else(|| java::same_setting(&lower).map(str::to_ascii_lowercase))
        .unwrap_or(lower);
    if let Some(k) = find_key(broker, &lower) {
        return Resolved::Broker(k);
    }
    if let Some(k) = find_key(store, &lower) {
        return Resolved::Store(k);
    }
    match (java::java_key(key), controller_key(&lower)) {
        (Some(java), _) => Resolved::NotUsed(java),
        (None, Some(k)) => Resolved::Controller(k),
        (None, None) => Resolved::Unknown,
    }
}

/// The controller key `lower` names (Apache's spelling), if any.
fn controller_key(lower: &str) -> Option<&'static str> {
    rmq_controller::config::KEYS
        .iter()
        .find(|k| k.eq_ignore_ascii_case(lower))
        .copied()
}

/// An error about a field that was set under another name names that name.
fn named(e: ConfigError, written: &BTreeMap<String, String>) -> ConfigError {
    match written.get(e.key.as_ref()) {
        Some(key) => ConfigError::new(key.clone(), format!("{} (as `{}`)", e.reason, e.key)),
        None => e,
    }
}

/// Keys accepted under another name (lower case): RocketMQ's older names,
/// and its TLS properties (`tls.server.mode`, ...) for the `tls*` keys.
fn alias(lower: &str) -> Option<String> {
    match lower {
        "storetype" => Some("consumequeuestore".into()),
        "haslavefallbehindmax" => Some("hamaxgapnotinsync".into()),
        _ => rmq_remoting::tls::JAVA_KEYS
            .iter()
            .find(|(java, _)| java.eq_ignore_ascii_case(lower))
            .map(|(_, ours)| ours.to_ascii_lowercase()),
    }
}

fn read_file(path: &Path) -> Result<Vec<(String, String)>, ConfigError> {
    let format = match path.extension().and_then(|e| e.to_str()) {
        Some("toml") => config::FileFormat::Toml,
        _ => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| ConfigError::new("--config", format!("{}: {e}", path.display())))?;
            return Ok(rmq_common::properties::parse(&text));
        }
    };
    let built = config::Config::builder()
        .add_source(config::File::new(&path.to_string_lossy(), format))
        .build()
        .map_err(|e| ConfigError::new("--config", format!("{}: {e}", path.display())))?;
    let map: BTreeMap<String, config::Value> = built
        .try_deserialize()
        .map_err(|e| ConfigError::new("--config", format!("{}: {e}", path.display())))?;
    let mut out = Vec::with_capacity(map.len());
    for (k, v) in map {
        flatten(k, v, &mut out)?;
    }
    Ok(out)
}

/// A dotted key (`tls.server.mode=...`) comes back from the parser as
/// nested tables: joined again with dots.
fn flatten(
    key: String,
    value: config::Value,
    out: &mut Vec<(String, String)>,
) -> Result<(), ConfigError> {
    if let config::ValueKind::Table(t) = value.kind {
        for (k, v) in t {
            flatten(format!("{key}.{k}"), v, out)?;
        }
        return Ok(());
    }
    let s = value
        .into_string()
        .map_err(|e| ConfigError::new("--config", format!("key `{key}`: {e}")))?;
    out.push((key, s));
    Ok(())
}

type Object = serde_json::Map<String, Value>;

fn to_object<T: Serialize>(v: &T) -> Result<Object, ConfigError> {
    match serde_json::to_value(v) {
        Ok(Value::Object(o)) => Ok(o),
        _ => Err(ConfigError::new(
            "(internal)",
            "config defaults are not an object",
        )),
    }
}

fn from_object<T: for<'de> Deserialize<'de>>(o: Object) -> Result<T, ConfigError> {
    rmq_common::json::from_value(Value::Object(o)).map_err(|e| {
        let key = e.path();
        if key.is_empty() {
            ConfigError::new("(config)", e.reason())
        } else {
            ConfigError::new(key, e.reason().to_owned())
        }
    })
}

fn find_key(obj: &Object, lower: &str) -> Option<String> {
    obj.keys()
        .find(|k| k.to_ascii_lowercase() == lower)
        .cloned()
}

/// Parses `value` as the JSON type of the field's default.
fn coerce(default: &Value, value: &str) -> Option<Value> {
    let v = value.trim();
    match default {
        Value::Bool(_) => match v.to_ascii_lowercase().as_str() {
            "true" | "1" => Some(Value::Bool(true)),
            "false" | "0" => Some(Value::Bool(false)),
            _ => None,
        },
        // A default of 0 or more does not make a key unsigned
        // (`metricsPort=-1`); the field's own type decides, in `from_object`.
        Value::Number(n) if n.is_u64() => v
            .parse::<u64>()
            .ok()
            .map(Value::from)
            .or_else(|| v.parse::<i64>().ok().map(Value::from)),
        Value::Number(n) if n.is_i64() => v.parse::<i64>().ok().map(Value::from),
        Value::Number(_) => v.parse::<f64>().ok().map(Value::from),
        _ => Some(Value::String(value.to_owned())),
    }
}

#[cfg(test)]
mod tests;
