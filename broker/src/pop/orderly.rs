//! Orderly (FIFO) POP: no checkpoint, no retry topic. Per (topic, group,
//! queue) the last pop's offsets are remembered; while one of them is
//! unacked and still invisible the queue hands out nothing more, and when
//! its invisible time ends the same messages come again (with their
//! delivery count) from the committed offset, which moves only as acks
//! arrive. Kept in `config/consumerOrderInfo.json` as RocketMQ 5.x does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::error::MetaError;
use crate::meta::persist::{Generations, PersistTable, Snapshot};

/// One queue's last orderly pop (RocketMQ's `OrderInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderInfo {
    /// When it was popped.
    #[serde(rename = "popTime")]
    pub pop_time: i64,
    /// Its invisible time.
    #[serde(rename = "i")]
    pub invisible_time: i64,
    /// Offsets handed out: the first, then differences from it.
    #[serde(rename = "o")]
    pub offsets: Vec<i64>,
    /// Offset → next visible time (set by a change of invisible time).
    #[serde(rename = "ot", default)]
    pub next_visible: BTreeMap<i64, i64>,
    /// Offset → earlier deliveries.
    #[serde(rename = "oc", default)]
    pub counts: BTreeMap<i64, i32>,
    /// Last update.
    #[serde(rename = "l", default)]
    pub last_update: i64,
    /// Acked indexes.
    #[serde(rename = "cm", default)]
    pub commit_mask: u64,
    /// Receive attempt of the last pop.
    #[serde(rename = "a", default, skip_serializing_if = "Option::is_none")]
    pub attempt_id: Option<String>,
}

impl OrderInfo {
    /// The absolute offsets.
    pub fn absolute(&self) -> Vec<i64> {
        match self.offsets.split_first() {
            None => Vec::new(),
            Some((first, rest)) => std::iter::once(*first)
                .chain(rest.iter().map(|d| first + d))
                .collect(),
        }
    }

    fn blocked(&self, now: i64, attempt: Option<&str>) -> bool {
        if attempt.is_some() && attempt == self.attempt_id.as_deref() {
            return false;
        }
        self.absolute().iter().enumerate().any(|(i, o)| {
            self.commit_mask & (1 << i) == 0
                && self
                    .next_visible
                    .get(o)
                    .copied()
                    .unwrap_or(self.pop_time + self.invisible_time)
                    > now
        })
    }
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct OrderFile {
    /// `topic@group` → queue → info.
    table: BTreeMap<String, BTreeMap<i32, OrderInfo>>,
}

/// What an orderly ack did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderAck {
    /// The offset is below the committed one, or the pop is not the
    /// queue's last: nothing to do.
    Ignored,
    /// The offset was not handed out by the queue's last pop.
    NotPopped,
    /// Acked; the consumer offset moves to this.
    Commit(i64),
}

/// Every FIFO group's queues.
#[derive(Debug)]
pub struct OrderTable {
    path: PathBuf,
    state: Mutex<OrderFile>,
    generations: Generations,
}

fn key(topic: &str, group: &str) -> String {
    format!("{topic}@{group}")
}

impl OrderTable {
    /// Loads `config/consumerOrderInfo.json` under `root`.
    pub fn open(root: &Path) -> Result<Self, MetaError> {
        let path = root.join("config").join("consumerOrderInfo.json");
        let file = crate::meta::read_json(&path)?.unwrap_or_default();
        Ok(Self {
            path,
            state: Mutex::new(file),
            generations: Generations::default(),
        })
    }

    /// Whether the queue may not hand out anything now.
    pub fn blocked(
        &self,
        topic: &str,
        group: &str,
        queue_id: i32,
        now: i64,
        attempt: Option<&str>,
    ) -> bool {
        self.state
            .lock()
            .table
            .get(&key(topic, group))
            .and_then(|q| q.get(&queue_id))
            .is_some_and(|i| i.blocked(now, attempt))
    }

    /// Records a pop of `offsets`; returns each offset's earlier deliveries.
    #[allow(clippy::too_many_arguments)]
    pub fn popped(
        &self,
        topic: &str,
        group: &str,
        queue_id: i32,
        pop_time: i64,
        invisible_time: i64,
        offsets: &[i64],
        attempt: Option<&str>,
    ) -> Vec<(i64, i32)> {
        let mut s = self.state.lock();
        let queues = s.table.entry(key(topic, group)).or_default();
        let old = queues.remove(&queue_id).unwrap_or_default();
        let same_attempt = attempt.is_some() && attempt == old.attempt_id.as_deref();
        let before = old.absolute();
        let mut counts = BTreeMap::new();
        for o in offsets {
            let c = old.counts.get(o).copied().unwrap_or(0);
            let c = if before.contains(o) && !same_attempt {
                c + 1
            } else {
                c
            };
            if c > 0 {
                counts.insert(*o, c);
            }
        }
        let first = offsets.first().copied().unwrap_or(0);
        let info = OrderInfo {
            pop_time,
            invisible_time,
            offsets: offsets
                .iter()
                .enumerate()
                .map(|(i, o)| if i == 0 { *o } else { o - first })
                .collect(),
            next_visible: BTreeMap::new(),
            counts: counts.clone(),
            last_update: pop_time,
            commit_mask: 0,
            attempt_id: attempt.map(str::to_owned),
        };
        queues.insert(queue_id, info);
        drop(s);
        self.generations.mark();
        offsets
            .iter()
            .map(|o| (*o, counts.get(o).copied().unwrap_or(0)))
            .collect()
    }

    /// Acks `offset` of the pop at `pop_time`.
    pub fn ack(
        &self,
        topic: &str,
        group: &str,
        queue_id: i32,
        pop_time: i64,
        offset: i64,
    ) -> OrderAck {
        let acked = self.with_last_pop(topic, group, queue_id, pop_time, |info| {
            let all = info.absolute();
            let i = all.iter().position(|o| *o == offset)?;
            info.commit_mask |= 1 << i;
            Some(
                (0..all.len())
                    .find(|i| info.commit_mask & (1 << i) == 0)
                    .map_or_else(|| all.last().map_or(offset + 1, |l| l + 1), |i| all[i]),
            )
        });
        match acked {
            None => OrderAck::Ignored,
            Some(None) => OrderAck::NotPopped,
            Some(Some(next)) => {
                self.generations.mark();
                OrderAck::Commit(next)
            }
        }
    }

    /// Runs `f` on the queue's last pop if it was popped at `pop_time`.
    fn with_last_pop<R>(
        &self,
        topic: &str,
        group: &str,
        queue_id: i32,
        pop_time: i64,
        f: impl FnOnce(&mut OrderInfo) -> R,
    ) -> Option<R> {
        let mut s = self.state.lock();
        s.table
            .get_mut(&key(topic, group))
            .and_then(|q| q.get_mut(&queue_id))
            .filter(|info| info.pop_time == pop_time)
            .map(f)
    }

    /// Hides `offset` again until `until`, if the pop is the queue's last.
    pub fn change_invisible(
        &self,
        topic: &str,
        group: &str,
        queue_id: i32,
        pop_time: i64,
        offset: i64,
        until: i64,
    ) -> bool {
        let changed = self
            .with_last_pop(topic, group, queue_id, pop_time, |info| {
                info.next_visible.insert(offset, until);
            })
            .is_some();
        if changed {
            self.generations.mark();
        }
        changed
    }

    /// Forgets a queue's pops (an admin offset reset).
    pub fn clear(&self, topic: &str, group: &str) {
        self.state.lock().table.remove(&key(topic, group));
        self.generations.mark();
    }
}

impl PersistTable for OrderTable {
    fn path(&self) -> &Path {
        &self.path
    }

    fn generations(&self) -> &Generations {
        &self.generations
    }

    fn encode_snapshot(&self) -> Result<Snapshot, MetaError> {
        let (snapshot, generation) = {
            let s = self.state.lock();
            (s.clone(), self.generations.current())
        };
        Ok(Snapshot {
            bytes: crate::meta::encode_json(&self.path, &snapshot)?,
            generation,
            cut: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_is_blocked_until_acked_or_visible_again() {
        let dir = tempfile::tempdir().unwrap();
        let t = OrderTable::open(dir.path()).unwrap();
        assert!(!t.blocked("T", "G", 0, 0, None));
        let counts = t.popped("T", "G", 0, 1000, 10_000, &[5, 6], None);
        assert_eq!(counts, vec![(5, 0), (6, 0)]);
        assert!(t.blocked("T", "G", 0, 5000, None));
        assert!(!t.blocked("T", "G", 0, 11_001, None));
        assert_eq!(t.ack("T", "G", 0, 1000, 5), OrderAck::Commit(6));
        assert!(t.blocked("T", "G", 0, 5000, None));
        assert_eq!(t.ack("T", "G", 0, 1000, 9), OrderAck::NotPopped);
        assert_eq!(t.ack("T", "G", 0, 999, 6), OrderAck::Ignored);
        assert_eq!(t.ack("T", "G", 0, 1000, 6), OrderAck::Commit(7));
        assert!(!t.blocked("T", "G", 0, 5000, None));
        // Delivered again after its invisible time: counted.
        t.popped("T", "G", 1, 1000, 10, &[0], None);
        let again = t.popped("T", "G", 1, 2000, 10, &[0, 1], None);
        assert_eq!(again, vec![(0, 1), (1, 0)]);
        assert!(t.change_invisible("T", "G", 1, 2000, 0, 99_999));
        assert!(t.blocked("T", "G", 1, 50_000, None));
        // The same receive attempt gets the same messages again.
        t.popped("T", "G", 2, 1000, 10_000, &[3], Some("a1"));
        assert!(!t.blocked("T", "G", 2, 2000, Some("a1")));
        assert!(t.blocked("T", "G", 2, 2000, Some("a2")));
    }
}
