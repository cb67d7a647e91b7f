//! Broker liveness, from BROKER_HEARTBEAT: each controller replica keeps
//! its own table (heartbeats are not replicated, as with RocketMQ's DLedger
//! controller). Times are given by the caller (an injected clock).

use std::collections::{BTreeMap, HashMap};

use crate::state::BrokerId;

/// RocketMQ's default heartbeat timeout (`controllerHeartBeatTimeoutMills`).
pub const DEFAULT_HEARTBEAT_TIMEOUT_MS: i64 = 10_000;

/// RocketMQ's default `brokerElectionPriority`: the lowest.
pub const DEFAULT_ELECTION_PRIORITY: i32 = i32::MAX;

/// What one heartbeat says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heartbeat {
    /// The broker's set.
    pub broker_name: String,
    /// Its id in the set.
    pub broker_id: BrokerId,
    /// Its client address.
    pub addr: String,
    /// The last epoch of its epoch file (-1: none).
    pub epoch: i32,
    /// Its CommitLog end (-1: unknown).
    pub max_offset: i64,
    /// Its confirm offset (-1: unknown).
    pub confirm_offset: i64,
    /// How long it counts as alive after this heartbeat, ms.
    pub timeout_ms: i64,
    /// Lower wins among equals (`brokerElectionPriority`).
    pub election_priority: i32,
}

/// A broker as the last heartbeats left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveInfo {
    /// The latest heartbeat's facts (epoch and offsets only move forward).
    pub last: Heartbeat,
    /// When it came, ms.
    pub seen_ms: i64,
    /// The connection it came over, if known: when that closes the broker
    /// is taken for dead at once (RocketMQ's `BrokerHousekeepingService`).
    pub channel: Option<u64>,
}

impl LiveInfo {
    /// Alive at `now_ms`.
    pub fn alive(&self, now_ms: i64) -> bool {
        self.seen_ms + self.last.timeout_ms >= now_ms
    }
}

/// The liveness table.
#[derive(Debug, Default)]
pub struct Liveness {
    brokers: HashMap<(String, BrokerId), LiveInfo>,
}

impl Liveness {
    /// Empty.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a heartbeat received at `now_ms`. The epoch and offsets it
    /// reports replace the known ones only if they are newer (a greater
    /// epoch, or the same epoch and a greater end), as in RocketMQ.
    pub fn heartbeat(&mut self, hb: Heartbeat, now_ms: i64) {
        self.heartbeat_on(hb, now_ms, None);
    }

    /// [`Liveness::heartbeat`] of a heartbeat that came over the connection
    /// `channel` (see [`Liveness::drop_channel`]).
    pub fn heartbeat_on(&mut self, hb: Heartbeat, now_ms: i64, channel: Option<u64>) {
        let key = (hb.broker_name.clone(), hb.broker_id);
        match self.brokers.get_mut(&key) {
            Some(info) => {
                info.channel = channel;
                let newer = hb.epoch > info.last.epoch
                    || (hb.epoch == info.last.epoch && hb.max_offset > info.last.max_offset);
                info.seen_ms = now_ms;
                info.last.addr = hb.addr;
                info.last.timeout_ms = hb.timeout_ms;
                info.last.election_priority = hb.election_priority;
                if newer {
                    info.last.epoch = hb.epoch;
                    info.last.max_offset = hb.max_offset;
                    info.last.confirm_offset = hb.confirm_offset;
                }
            }
            None => {
                self.brokers.insert(
                    key,
                    LiveInfo {
                        last: hb,
                        seen_ms: now_ms,
                        channel,
                    },
                );
            }
        }
    }

    /// What is known of a broker.
    pub fn get(&self, broker_name: &str, broker_id: BrokerId) -> Option<&LiveInfo> {
        self.brokers.get(&(broker_name.to_owned(), broker_id))
    }

    /// Alive at `now_ms`.
    pub fn alive(&self, broker_name: &str, broker_id: BrokerId, now_ms: i64) -> bool {
        self.get(broker_name, broker_id)
            .is_some_and(|i| i.alive(now_ms))
    }

    /// Drops the brokers whose heartbeats stopped before `now_ms` (past
    /// their timeout), returning them (set, id); the caller re-elects a
    /// set whose master is among them.
    pub fn expire(&mut self, now_ms: i64) -> Vec<(String, BrokerId)> {
        let dead: Vec<(String, BrokerId)> = self
            .brokers
            .iter()
            .filter(|(_, i)| !i.alive(now_ms))
            .map(|(k, _)| k.clone())
            .collect();
        for k in &dead {
            self.brokers.remove(k);
        }
        dead
    }

    /// The connection `channel` closed: the brokers whose latest heartbeat
    /// came over it are forgotten; returns them (set, id).
    pub fn drop_channel(&mut self, channel: u64) -> Vec<(String, BrokerId)> {
        let gone: Vec<(String, BrokerId)> = self
            .brokers
            .iter()
            .filter(|(_, i)| i.channel == Some(channel))
            .map(|(k, _)| k.clone())
            .collect();
        for k in &gone {
            self.brokers.remove(k);
        }
        gone
    }

    /// The brokers alive at `now_ms`, counted by set.
    pub fn alive_by_set(&self, now_ms: i64) -> BTreeMap<&str, usize> {
        let mut by_set = BTreeMap::new();
        for ((set, _), info) in &self.brokers {
            if info.alive(now_ms) {
                *by_set.entry(set.as_str()).or_insert(0) += 1;
            }
        }
        by_set
    }

    /// Forgets a broker at once.
    pub fn remove(&mut self, broker_name: &str, broker_id: BrokerId) -> bool {
        self.brokers
            .remove(&(broker_name.to_owned(), broker_id))
            .is_some()
    }
}
