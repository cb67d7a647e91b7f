//! Who becomes master (RocketMQ 5.3.3's `DefaultElectPolicy`): a live
//! member of the SyncStateSet, and only with `enableElectUncleanMaster`
//! any live member. A live old master keeps the role unless another is
//! designated; otherwise the most advanced wins: greater epoch, then
//! greater CommitLog end, then lower `brokerElectionPriority`.

use std::cmp::Reverse;
use std::collections::BTreeSet;

use crate::alive::Liveness;
use crate::state::{BrokerId, BrokerSet};

/// What an election may choose from.
#[derive(Debug, Clone, Copy)]
pub struct Ballot<'a> {
    /// The set.
    pub set: &'a BrokerSet,
    /// Liveness as this replica knows it.
    pub live: &'a Liveness,
    /// Now, ms.
    pub now_ms: i64,
    /// `enableElectUncleanMaster`: members outside the SyncStateSet may win
    /// (what they lack of the old master's log is lost).
    pub unclean: bool,
    /// A designated winner (mqadmin `electMaster -b`).
    pub preferred: Option<BrokerId>,
}

/// The winner, if any; the old master when it stays.
pub fn elect(b: &Ballot<'_>) -> Option<BrokerId> {
    let in_sync = pick(b, &b.set.sync_state_set);
    if in_sync.is_some() || !b.unclean {
        return in_sync;
    }
    let all: BTreeSet<BrokerId> = b.set.members.keys().copied().collect();
    pick(b, &all)
}

fn pick(b: &Ballot<'_>, from: &BTreeSet<BrokerId>) -> Option<BrokerId> {
    let name = b.set.name.as_str();
    let alive: Vec<BrokerId> = from
        .iter()
        .copied()
        .filter(|id| b.live.alive(name, *id, b.now_ms))
        .collect();
    if let Some(old) = b.set.master {
        if alive.contains(&old) && b.preferred.is_none_or(|p| p == old) {
            return Some(old);
        }
    }
    if let Some(p) = b.preferred {
        return alive.contains(&p).then_some(p);
    }
    alive.into_iter().min_by_key(|id| {
        let info = b.live.get(name, *id).map(|i| &i.last);
        (
            Reverse(info.map_or(-1, |l| l.epoch)),
            Reverse(info.map_or(-1, |l| l.max_offset)),
            info.map_or(i32::MAX, |l| l.election_priority),
            *id,
        )
    })
}
