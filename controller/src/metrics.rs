//! The controller's own metrics, recorded through the `metrics` facade:
//! whatever recorder the process installed (the broker's Prometheus one)
//! shows them, and with none they cost nothing.
//!
//! They mirror Apache RocketMQ 5.3.3's controller metrics
//! (`ControllerMetricsConstant`: `election_total` by `election_result`,
//! `request_total` and `request_latency` by `request_type`, `role`,
//! `active_broker_num` by cluster and broker set) under this project's
//! `rmq_controller_` names, plus the time an election took. Every series
//! carries the replica's `address`, `group` and `peer_id` (Apache's
//! labels), so replicas side by side in one process are told apart.

use std::time::Duration;

use metrics::{counter, gauge, histogram, Label};
use rmq_common::remoting::ResponseCode;

use crate::alive::Liveness;
use crate::ops::Trigger;
use crate::server::settings::{peer_name, ControllerSettings};
use crate::state::ReplicaState;
use crate::wire::ControllerCode;

/// Metric names.
pub mod names {
    /// Elections decided, by `trigger` and `result` (Apache's
    /// `election_total`), with `cluster` and `broker_set`.
    pub const ELECTIONS_TOTAL: &str = "rmq_controller_elections_total";
    /// Seconds from the controller noticing a set needs a master (the
    /// election request arriving, or the scan finding the master dead) to
    /// the new master being applied, by `trigger`.
    pub const ELECTION_SECONDS: &str = "rmq_controller_election_seconds";
    /// 1 while this replica leads its Raft group, else 0 (Apache's `role`).
    pub const IS_LEADER: &str = "rmq_controller_is_leader";
    /// Brokers alive by their heartbeats, by `cluster` and `broker_set`
    /// (Apache's `active_broker_num`).
    pub const ACTIVE_BROKERS: &str = "rmq_controller_active_brokers";
    /// Controller requests answered, by `request_type` and `status`
    /// (Apache's `request_total`).
    pub const REQUESTS_TOTAL: &str = "rmq_controller_requests_total";
    /// Time to answer a controller request, by `request_type` (Apache's
    /// `request_latency`, in seconds here).
    pub const REQUEST_SECONDS: &str = "rmq_controller_request_seconds";
}

/// Registers the HELP text of every controller series with the
/// installed recorder (once, after installing it).
pub fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        names::ELECTIONS_TOTAL,
        "Controller: elections decided, by trigger (broker, admin, scan) and result."
    );
    describe_histogram!(
        names::ELECTION_SECONDS,
        "Controller: seconds from a set needing a master to the new master applied."
    );
    describe_gauge!(
        names::IS_LEADER,
        "Controller: 1 while this replica leads its Raft group, else 0."
    );
    describe_gauge!(
        names::ACTIVE_BROKERS,
        "Controller: brokers alive by their heartbeats, per broker set."
    );
    describe_counter!(
        names::REQUESTS_TOTAL,
        "Controller: requests answered, by request type and status."
    );
    describe_histogram!(
        names::REQUEST_SECONDS,
        "Controller: time to answer a request, by request type."
    );
}

/// Buckets of [`names::ELECTION_SECONDS`], seconds: a heartbeat timeout
/// and the 3 s between election tries put most elections between 10 ms
/// and a minute.
pub const ELECTION_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// How often the gauges are set again (the broker's recorder drops a
/// gauge not set for 30 s).
pub const GAUGE_REFRESH: Duration = Duration::from_secs(5);

/// `request_type` of a code that is not the controller's.
const OTHER_REQUEST: &str = "OTHER";

/// Who started an election.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionTrigger {
    /// A broker asked, for itself (or without naming one).
    Broker,
    /// An operator designated the new master (mqadmin electMaster).
    Admin,
    /// The controller's scan found the master dead.
    Scan,
}

impl ElectionTrigger {
    /// The trigger of an election request.
    pub fn of_request(trigger: Trigger) -> Self {
        match trigger {
            Trigger::Designate(_) => Self::Admin,
            Trigger::Broker(_) | Trigger::Controller => Self::Broker,
        }
    }

    /// The `trigger` label value.
    pub fn label(self) -> &'static str {
        match self {
            Self::Broker => "broker",
            Self::Admin => "admin",
            Self::Scan => "scan",
        }
    }
}

/// How an election ended (Apache's `ElectionResult`, and `failed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionResult {
    /// A new master (and a new master epoch).
    NewMasterElected,
    /// The master is alive: nothing changed.
    KeepCurrentMaster,
    /// Nobody could be elected.
    NoMasterElected,
    /// The decision was not committed (leadership lost, Raft failed).
    Failed,
}

impl ElectionResult {
    /// The result an election answer with `code` reports; `None` for an
    /// answer that is not an election's outcome (a set that is not
    /// registered, a bad request), which Apache does not count either.
    pub fn of_code(code: i32) -> Option<Self> {
        match ResponseCode::from_i32(code)? {
            ResponseCode::Success => Some(Self::NewMasterElected),
            ResponseCode::ControllerMasterStillExist => Some(Self::KeepCurrentMaster),
            ResponseCode::ControllerMasterNotAvailable
            | ResponseCode::ControllerElectMasterFailed => Some(Self::NoMasterElected),
            ResponseCode::ControllerNotLeader | ResponseCode::SystemError => Some(Self::Failed),
            _ => None,
        }
    }

    /// The `result` label value.
    pub fn label(self) -> &'static str {
        match self {
            Self::NewMasterElected => "new_master_elected",
            Self::KeepCurrentMaster => "keep_current_master",
            Self::NoMasterElected => "no_master_elected",
            Self::Failed => "failed",
        }
    }
}

/// Seconds from `from_ms` to `to_ms` (0 if the clock went back).
pub fn seconds_between(from_ms: i64, to_ms: i64) -> f64 {
    // Milliseconds of an election fit an f64 exactly.
    let ms = to_ms.saturating_sub(from_ms).max(0) as f64;
    ms / 1000.0
}

/// One replica's metric handles: its identifying labels.
#[derive(Debug, Clone)]
pub struct ControllerMetrics {
    base: Vec<Label>,
    address: String,
}

impl ControllerMetrics {
    /// The metrics of the replica `settings` describe.
    pub fn new(settings: &ControllerSettings) -> Self {
        let address = settings
            .peers
            .get(&settings.id)
            .cloned()
            .unwrap_or_default();
        Self {
            base: vec![
                Label::new("address", address.clone()),
                Label::new("group", settings.group.clone()),
                Label::new("peer_id", peer_name(&settings.names, settings.id)),
            ],
            address,
        }
    }

    /// The text every series of this replica contains
    /// (`address="host:port"`), to pick them out of a process's scrape.
    pub fn needle(&self) -> String {
        format!("address=\"{}\"", self.address)
    }

    fn labels(&self, more: &[(&'static str, &str)]) -> Vec<Label> {
        let mut labels = self.base.clone();
        labels.extend(more.iter().map(|(k, v)| Label::new(*k, (*v).to_owned())));
        labels
    }

    /// Counts an election of `broker_set` that ended with `result`.
    pub fn election(
        &self,
        cluster: &str,
        broker_set: &str,
        trigger: ElectionTrigger,
        result: ElectionResult,
    ) {
        counter!(
            names::ELECTIONS_TOTAL,
            self.labels(&[
                ("cluster", cluster),
                ("broker_set", broker_set),
                ("trigger", trigger.label()),
                ("result", result.label()),
            ])
        )
        .increment(1);
    }

    /// Records a new master applied `seconds` after it was needed.
    pub fn elected_in(&self, trigger: ElectionTrigger, seconds: f64) {
        histogram!(
            names::ELECTION_SECONDS,
            self.labels(&[("trigger", trigger.label())])
        )
        .record(seconds);
    }

    /// Counts a controller request of `code` answered with `resp_code`
    /// after `elapsed`.
    pub fn request(&self, code: i32, resp_code: i32, elapsed: Duration) {
        let kind = ControllerCode::from_i32(code).map_or(OTHER_REQUEST, ControllerCode::name);
        let status = if resp_code == ResponseCode::Success.code() {
            "success"
        } else {
            "failed"
        };
        counter!(
            names::REQUESTS_TOTAL,
            self.labels(&[("request_type", kind), ("status", status)])
        )
        .increment(1);
        histogram!(
            names::REQUEST_SECONDS,
            self.labels(&[("request_type", kind)])
        )
        .record(elapsed.as_secs_f64());
    }

    /// Sets the gauges: leadership, and the brokers alive at `now_ms` in
    /// every set known to `state` or heard from.
    pub fn gauges(&self, is_leader: bool, state: &ReplicaState, live: &Liveness, now_ms: i64) {
        gauge!(names::IS_LEADER, self.base.clone()).set(if is_leader { 1.0 } else { 0.0 });
        let mut alive = live.alive_by_set(now_ms);
        for set in state.sets() {
            let n = alive.remove(set.name.as_str()).unwrap_or(0);
            self.active_brokers(&set.cluster, &set.name, n);
        }
        // Brokers heard from whose set is not registered yet.
        for (name, n) in alive {
            self.active_brokers("", name, n);
        }
    }

    fn active_brokers(&self, cluster: &str, broker_set: &str, n: usize) {
        // Broker counts fit an f64 exactly.
        let n = n as f64;
        gauge!(
            names::ACTIVE_BROKERS,
            self.labels(&[("cluster", cluster), ("broker_set", broker_set)])
        )
        .set(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn election_answers_map_to_apaches_results() {
        use ResponseCode as C;
        let of = |c: C| ElectionResult::of_code(c.code());
        assert_eq!(of(C::Success), Some(ElectionResult::NewMasterElected));
        assert_eq!(
            of(C::ControllerMasterStillExist),
            Some(ElectionResult::KeepCurrentMaster)
        );
        assert_eq!(
            of(C::ControllerMasterNotAvailable),
            Some(ElectionResult::NoMasterElected)
        );
        assert_eq!(
            of(C::ControllerElectMasterFailed),
            Some(ElectionResult::NoMasterElected)
        );
        assert_eq!(of(C::ControllerNotLeader), Some(ElectionResult::Failed));
        assert_eq!(of(C::ControllerBrokerNeedToBeRegistered), None);
        assert_eq!(ElectionResult::of_code(-12345), None);
    }

    #[test]
    fn seconds_between_is_never_negative() {
        assert!((seconds_between(1_000, 3_500) - 2.5).abs() < 1e-9);
        assert!(seconds_between(3_500, 1_000).abs() < 1e-9);
    }
}
