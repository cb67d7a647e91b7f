//! The scans every replica runs (facts 7.4): each
//! `scanNotActiveBrokerInterval`, drop brokers whose heartbeats stopped
//! (and, on the leader, re-elect at once a set whose master was dropped:
//! RocketMQ's `onBrokerInactive`); each `scanInactiveMasterInterval`, on
//! the leader, re-elect every set whose master is not alive and which has
//! a live member (`scanInactiveMasterAndTriggerReelect`). A closed
//! heartbeat connection runs both at once. Each controller-triggered
//! election is tried up to `electMasterMaxRetryCount` times, the tries
//! 3 s apart (`triggerElectMaster`), until one elects a master.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rmq_common::remoting::ResponseCode;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::metrics::{seconds_between, ElectionResult, ElectionTrigger};
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

/// Whether a try is followed by another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<T> {
    /// Done: no more tries.
    Stop(T),
    /// Failed: try again, if tries are left.
    Again(T),
}

/// Runs `attempt` up to `tries` times (at least once), each bounded by
/// `spacing` (a try that takes longer counts as failed, `timed_out`), the
/// tries starting `spacing` apart, until one says [`Step::Stop`]; the
/// results of every try, in order.
pub async fn with_retries<T, F, Fut>(
    tries: u32,
    spacing: Duration,
    timed_out: T,
    mut attempt: F,
) -> Vec<T>
where
    T: Clone,
    F: FnMut() -> Fut,
    Fut: Future<Output = Step<T>>,
{
    let mut out = Vec::new();
    let mut next_at = Instant::now();
    for _ in 0..tries.max(1) {
        tokio::time::sleep_until(next_at).await;
        next_at = Instant::now() + spacing;
        match tokio::time::timeout(spacing, attempt()).await {
            Ok(Step::Stop(t)) => {
                out.push(t);
                break;
            }
            Ok(Step::Again(t)) => out.push(t),
            Err(_) => out.push(timed_out.clone()),
        }
    }
    out
}

/// How one try of a controller-triggered election ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tried {
    /// Committed: the set's new master, or none (nobody could be elected
    /// and the dead master was cleared).
    Committed(Option<BrokerId>),
    /// Nothing was committed.
    Nothing,
}

impl ControllerService {
    /// Drops the brokers whose heartbeats stopped; which.
    fn expire(&self) -> Vec<(String, BrokerId)> {
        let expired = self.live.lock().expire(self.now_ms());
        for (set, id) in &expired {
            tracing::info!(broker_name = %set, broker_id = id, "broker heartbeat expired");
        }
        expired
    }

    /// The sets the leader should elect for now: the master is not alive,
    /// and either one is still named or a member is alive.
    fn orphans(&self) -> Vec<String> {
        let now_ms = self.now_ms();
        let state = self.raft.state();
        let live = self.live.lock();
        state
            .sets()
            .filter(|s| !s.master.is_some_and(|m| live.alive(&s.name, m, now_ms)))
            .filter(|s| {
                s.master.is_some() || s.members.keys().any(|id| live.alive(&s.name, *id, now_ms))
            })
            .map(|s| s.name.clone())
            .collect()
    }

    /// One try of a controller-triggered election of `name`, whose master
    /// was found missing at `noticed_ms`.
    async fn try_elect(&self, name: &str, noticed_ms: i64) -> Step<Tried> {
        if !self.raft.is_leader() {
            return Step::Stop(Tried::Nothing);
        }
        let _turn = self.decide.lock().await;
        if self.confirm_leader().await.is_err() {
            return Step::Stop(Tried::Nothing);
        }
        let unclean = self.runtime.elect_unclean_master();
        let decision = self.decide_now(self.now_ms(), |state, now| {
            ops::elect_master(state, now, unclean, name, Trigger::Controller)
        });
        let cluster = self.raft.state().set(name).map(|s| s.cluster.clone());
        let count = |result| {
            let cluster = cluster.as_deref().unwrap_or_default();
            self.metrics
                .election(cluster, name, ElectionTrigger::Scan, result);
        };
        let elected = match decision.answer {
            Ok(e) if e.code == ResponseCode::Success => Some(e),
            // The master is alive after all (MASTER_STILL_EXIST).
            Ok(_) => {
                count(ElectionResult::KeepCurrentMaster);
                return Step::Stop(Tried::Nothing);
            }
            // The set is gone.
            Err(r) if r.code == ResponseCode::ControllerBrokerNeedToBeRegistered => {
                return Step::Stop(Tried::Nothing)
            }
            // Nobody to elect now (MASTER_NOT_AVAILABLE).
            Err(_) => None,
        };
        let committed = match decision.event {
            None => Tried::Nothing,
            Some(event) => match self.raft.propose(event).await {
                Ok(_) => Tried::Committed(elected.as_ref().and_then(|e| e.view.master)),
                Err(e) => {
                    count(ElectionResult::Failed);
                    tracing::warn!(broker_name = %name, error = %e, "controller election not committed");
                    return Step::Again(Tried::Nothing);
                }
            },
        };
        match elected {
            Some(e) => {
                count(ElectionResult::NewMasterElected);
                let took = seconds_between(noticed_ms, self.now_ms());
                self.metrics.elected_in(ElectionTrigger::Scan, took);
                tracing::info!(broker_name = %name, new_master = ?e.view.master, master_epoch = e.view.master_epoch, took_s = took, "controller elected a master");
                self.after_election(name, &e);
                Step::Stop(committed)
            }
            None => {
                count(ElectionResult::NoMasterElected);
                tracing::warn!(broker_name = %name, "controller found no member to elect");
                Step::Again(committed)
            }
        }
    }

    /// A controller-triggered election of `name` with its retries; what
    /// was committed, if anything.
    async fn elect_with_retries(&self, name: &str, noticed_ms: i64) -> Option<Option<BrokerId>> {
        let tries = with_retries(
            self.runtime.elect_master_max_retry_count(),
            Duration::from_millis(self.settings.elect_retry_pause_ms.max(1)),
            Tried::Nothing,
            || self.try_elect(name, noticed_ms),
        )
        .await;
        // A committed master wins over an earlier committed "none".
        tries.iter().rev().find_map(|t| match t {
            Tried::Committed(m) => Some(*m),
            Tried::Nothing => None,
        })
    }

    /// On the leader, elects for every set without a live master.
    async fn reelect(&self) -> Vec<(String, Option<BrokerId>)> {
        if !self.raft.is_leader() {
            return Vec::new();
        }
        let mut elected = Vec::new();
        let noticed_ms = self.now_ms();
        for name in self.orphans() {
            if let Some(m) = self.elect_with_retries(&name, noticed_ms).await {
                elected.push((name, m));
            }
        }
        elected
    }

    /// One scan now: expiry, then (on the leader) the elections.
    pub async fn scan_once(&self) -> ScanOutcome {
        let expired = self.expire();
        ScanOutcome {
            expired,
            elected: self.reelect().await,
        }
    }
}

/// Runs the scans until `cancel`: expiry each `scanNotActiveBrokerInterval`
/// (and the elections when it dropped someone), the elections each
/// `scanInactiveMasterInterval`, both when a broker's connection closes.
/// The intervals are read again after every pass and after an
/// UPDATE_CONTROLLER_CONFIG.
pub async fn scan_loop(service: Arc<ControllerService>, cancel: CancellationToken) {
    let mut last_expiry = Instant::now();
    let mut last_election = Instant::now();
    loop {
        let rt = &service.runtime;
        let expiry_at = last_expiry + rt.scan_not_active_interval();
        let election_at = last_election + rt.scan_inactive_master_interval();
        let woken = tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            () = service.scan_now.notified() => true,
            () = rt.changed.notified() => continue,
            () = tokio::time::sleep_until(expiry_at.min(election_at)) => false,
        };
        let now = Instant::now();
        let pass = async {
            let mut elect = woken || now >= election_at;
            if woken || now >= expiry_at {
                last_expiry = now;
                elect |= !service.expire().is_empty();
            }
            if elect {
                last_election = now;
                service.reelect().await;
            }
        };
        tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            () = pass => {}
        }
    }
    tracing::debug!("controller scan stopped");
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPACING: Duration = Duration::from_secs(3);

    /// Tries stop at the first success, at most `tries` of them, 3 s apart
    /// (paused time: the elapsed time is exact).
    #[tokio::test(start_paused = true)]
    async fn tries_until_one_succeeds_three_seconds_apart() {
        let start = Instant::now();
        let mut n = 0;
        let got = with_retries(3, SPACING, -1, || {
            n += 1;
            let k = n;
            async move {
                if k == 2 {
                    Step::Stop(k)
                } else {
                    Step::Again(k)
                }
            }
        })
        .await;
        assert_eq!(got, vec![1, 2]);
        assert_eq!(start.elapsed(), SPACING);

        let start = Instant::now();
        let got = with_retries(3, SPACING, -1, || async { Step::Again(0) }).await;
        assert_eq!(got, vec![0, 0, 0]);
        assert_eq!(start.elapsed(), 2 * SPACING);
    }

    /// A try that hangs counts as failed at the spacing, and the next one
    /// starts then.
    #[tokio::test(start_paused = true)]
    async fn a_hung_try_times_out_and_is_retried() {
        let start = Instant::now();
        let mut n = 0;
        let got = with_retries(2, SPACING, -1, || {
            n += 1;
            let k = n;
            async move {
                if k == 1 {
                    std::future::pending::<()>().await;
                }
                Step::Stop(k)
            }
        })
        .await;
        assert_eq!(got, vec![-1, 2]);
        assert_eq!(start.elapsed(), SPACING);
    }
}
