//! The scan every replica runs each `scanNotActiveBrokerInterval`: expire
//! brokers whose heartbeats stopped and, on the leader, elect a new master
//! for every set whose master is not alive (RocketMQ's `onBrokerInactive`
//! and inactive-master scan, facts 7.4).

use std::sync::Arc;

use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

use crate::ops::{self, Trigger};
use crate::server::service::ControllerService;
use crate::state::BrokerId;

/// What one scan did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanOutcome {
    /// Brokers dropped from liveness: (set, id).
    pub expired: Vec<(String, BrokerId)>,
    /// Elections committed: (set, new master or none).
    pub elected: Vec<(String, Option<BrokerId>)>,
}

impl ControllerService {
    /// One scan now.
    pub async fn scan_once(&self) -> ScanOutcome {
        let now_ms = self.now_ms();
        let mut outcome = ScanOutcome {
            expired: self.live.lock().expire(now_ms),
            ..ScanOutcome::default()
        };
        for (set, id) in &outcome.expired {
            tracing::info!(broker_name = %set, broker_id = id, "broker heartbeat expired");
        }
        if !self.raft.is_leader() {
            return outcome;
        }
        let _turn = self.decide.lock().await;
        if self.confirm_leader().await.is_err() {
            return outcome;
        }
        let orphans: Vec<String> = {
            let state = self.raft.state();
            let live = self.live.lock();
            state
                .sets()
                .filter(|s| !s.master.is_some_and(|m| live.alive(&s.name, m, now_ms)))
                .map(|s| s.name.clone())
                .collect()
        };
        for name in orphans {
            let decision = self.decide_now(now_ms, |state, now| {
                ops::elect_master(
                    state,
                    now,
                    self.settings.elect_unclean_master,
                    &name,
                    Trigger::Controller,
                )
            });
            let Some(event) = decision.event else {
                continue;
            };
            let new_master = match &event {
                crate::Event::ElectMaster { new_master, .. } => *new_master,
                _ => None,
            };
            match self.raft.propose(event).await {
                Ok(_) => {
                    tracing::info!(broker_name = %name, ?new_master, "controller elected a master");
                    outcome.elected.push((name, new_master));
                }
                Err(e) => {
                    tracing::warn!(broker_name = %name, error = %e, "controller election not committed");
                }
            }
        }
        outcome
    }
}

/// Runs [`ControllerService::scan_once`] every scan interval, and at
/// once when a broker's connection closes, until `cancel`.
pub async fn scan_loop(service: Arc<ControllerService>, cancel: CancellationToken) {
    let mut tick = tokio::time::interval(service.settings.scan_interval());
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // The first tick is immediate; nothing can have expired yet.
    tick.tick().await;
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            _ = tick.tick() => {}
            () = service.scan_now.notified() => {}
        }
        tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            _ = service.scan_once() => {}
        }
    }
    tracing::debug!("controller scan stopped");
}
