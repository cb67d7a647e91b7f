//! The leader's side of a controller request: confirm leadership, decide
//! with [`crate::ops`] against the applied state and this replica's
//! liveness, append the decision's event and wait until it is applied,
//! then answer. One request at a time ([`ControllerService`]'s `decide`
//! lock), so each decides against the state the previous one left.

use openraft::error::{CheckIsLeaderError, RaftError};
use rmq_common::remoting::RemotingCommand;

use crate::metrics::{seconds_between, ElectionResult, ElectionTrigger};
use crate::ops::{self, Decision, Now};
use crate::raft::ProposeError;
use crate::server::answers;
use crate::server::service::ControllerService;
use crate::state::ReplicaState;
use crate::wire::{self, Request};

impl ControllerService {
    /// Confirms with a quorum that this replica still leads and waits
    /// until it applied everything committed before; the answer to send
    /// instead when it does not (CONTROLLER_NOT_LEADER).
    pub(super) async fn confirm_leader(&self) -> Result<(), RemotingCommand> {
        let timeout = self.settings.raft.propose_timeout();
        match tokio::time::timeout(timeout, self.raft.raft().ensure_linearizable()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(RaftError::APIError(CheckIsLeaderError::ForwardToLeader(_))))
            | Ok(Err(RaftError::APIError(CheckIsLeaderError::QuorumNotEnough(_)))) => {
                Err(answers::not_leader())
            }
            Ok(Err(e)) => Err(answers::system_error(format!(
                "leadership not confirmed: {e}"
            ))),
            Err(_) => Err(answers::system_error(format!(
                "leadership not confirmed within {timeout:?}"
            ))),
        }
    }

    /// Decides with `decide` against the applied state and this replica's
    /// liveness at `now_ms`.
    pub(super) fn decide_now<T>(
        &self,
        now_ms: i64,
        decide: impl FnOnce(&ReplicaState, Now<'_>) -> Decision<T>,
    ) -> Decision<T> {
        let live = self.live.lock();
        decide(
            &self.raft.state(),
            Now {
                live: &live,
                now_ms,
            },
        )
    }

    /// Appends the decision's event, if any, and waits until it is applied;
    /// then answers with `ok` or the refusal.
    pub(super) async fn commit<T>(
        &self,
        decision: Decision<T>,
        ok: impl FnOnce(T) -> RemotingCommand,
    ) -> RemotingCommand {
        if let Some(event) = decision.event {
            if let Err(e) = self.raft.propose(event).await {
                return match e {
                    ProposeError::NotLeader { .. } => answers::not_leader(),
                    e => answers::system_error(format!("the change was not committed: {e}")),
                };
            }
        }
        match decision.answer {
            Ok(t) => ok(t),
            Err(refusal) => wire::refusal(&refusal),
        }
    }

    /// Answers a request only the leader answers.
    pub(super) async fn on_leader(&self, req: Request) -> RemotingCommand {
        // When an election request arrived, for its time to elect.
        let arrived_ms = self.now_ms();
        let _turn = self.decide.lock().await;
        if let Err(resp) = self.confirm_leader().await {
            return resp;
        }
        let now_ms = self.now_ms();
        let unclean = self.runtime.elect_unclean_master();
        match req {
            Request::NextBrokerId {
                cluster,
                broker_name,
            } => {
                let id = ops::next_broker_id(&self.raft.state(), &broker_name);
                wire::next_broker_id(&cluster, &broker_name, id)
            }
            Request::ApplyBrokerId {
                cluster,
                broker_name,
                broker_id,
                check_code,
            } => {
                let d = ops::apply_broker_id(
                    &self.raft.state(),
                    &cluster,
                    &broker_name,
                    broker_id,
                    &check_code,
                );
                self.commit(d, |()| answers::applied(&cluster, &broker_name))
                    .await
            }
            Request::RegisterBroker {
                cluster,
                broker_name,
                broker_id,
                addr,
            } => {
                let d = self.decide_now(now_ms, |state, now| {
                    ops::register_broker(state, now, &broker_name, broker_id, &addr)
                });
                self.commit(d, |v| wire::master_view(&cluster, &broker_name, &v))
                    .await
            }
            Request::ElectMaster {
                cluster,
                broker_name,
                trigger,
            } => {
                let d = self.decide_now(now_ms, |state, now| {
                    ops::elect_master(state, now, unclean, &broker_name, trigger)
                });
                let resp = self
                    .commit(d, |e| {
                        self.after_election(&broker_name, &e);
                        wire::elected(&cluster, &broker_name, &e)
                    })
                    .await;
                let by = ElectionTrigger::of_request(trigger);
                if let Some(result) = ElectionResult::of_code(resp.code) {
                    self.metrics.election(&cluster, &broker_name, by, result);
                    if result == ElectionResult::NewMasterElected {
                        let took = seconds_between(arrived_ms, self.now_ms());
                        self.metrics.elected_in(by, took);
                    }
                }
                resp
            }
            Request::AlterSyncStateSet(alter) => {
                let d = self.decide_now(now_ms, |state, now| {
                    ops::alter_sync_state_set(state, now, &alter)
                });
                self.commit(d, |epoch| wire::altered(&alter.sync_state_set, epoch))
                    .await
            }
            Request::GetReplicaInfo { broker_name } => {
                let state = self.raft.state();
                match ops::replica_info(&state, &broker_name) {
                    Ok(v) => {
                        let cluster = state.set(&broker_name).map(|s| s.cluster.as_str());
                        wire::master_view(cluster.unwrap_or_default(), &broker_name, &v)
                    }
                    Err(refusal) => wire::refusal(&refusal),
                }
            }
            Request::GetSyncStateData { broker_names } => {
                let info = answers::sync_state_data(
                    &self.raft.state(),
                    &self.live.lock(),
                    now_ms,
                    &broker_names,
                );
                wire::sync_state_data(&info)
            }
            Request::CleanBrokerData {
                broker_name,
                ids,
                clean_living,
            } => {
                let d = self.decide_now(now_ms, |state, now| {
                    ops::clean_broker_data(state, now, &broker_name, ids.as_deref(), clean_living)
                });
                self.commit(d, |()| answers::success()).await
            }
            // Answered by any replica before a request gets here.
            Request::Heartbeat { .. }
            | Request::GetMetadataInfo
            | Request::GetControllerConfig
            | Request::UpdateControllerConfig { .. } => {
                answers::system_error("not a leader request")
            }
        }
    }
}
