//! Unresolved half messages per real topic (RocketMQ 5.x's
//! `rocketmq_half_messages`). RocketMQ keeps the counts as a table of its
//! own: +1 when a half is stored, -1 when it is committed, rolled back or
//! given up after its last check, written to a file every few seconds.
//! This broker keeps the same running counts but stores nothing: at start
//! it derives them from the half queue itself (every half the check walk
//! has not passed and no op resolves, a transaction counted once however
//! many check copies it has), so they survive a restart and a crash
//! without drifting.

use std::collections::{HashMap, HashSet};

use parking_lot::Mutex;
use rmq_common::constants::{property, TRANS_HALF_TOPIC};
use rmq_common::cq::CqError;
use rmq_common::message::record::RecordView;
use rmq_store::MessageStore;
use rmq_store_file::StoreError;

use super::state::TxState;

/// Most topics counted (RocketMQ's `metricsOtelCardinalityLimit`); halves
/// of further topics are not counted.
const MAX_TOPICS: usize = crate::metrics::rocketmq::CARDINALITY_LIMIT;

/// Units read at a time by the start-up scan.
const SCAN_BATCH: usize = 256;

/// Unresolved halves by real topic.
#[derive(Debug, Default)]
pub struct HalfCounts {
    by_topic: Mutex<HashMap<String, i64>>,
}

impl HalfCounts {
    /// Counts from a start-up scan.
    pub fn from_counts(counts: HashMap<String, i64>) -> Self {
        Self {
            by_topic: Mutex::new(counts),
        }
    }

    /// Adds `delta` to `topic`'s count (never below 0: a half stored
    /// before the scan's end and resolved after is not counted twice the
    /// other way).
    pub fn add(&self, topic: &str, delta: i64) {
        let mut map = self.by_topic.lock();
        if let Some(n) = map.get_mut(topic) {
            *n = (*n + delta).max(0);
        } else if delta > 0 && map.len() < MAX_TOPICS {
            map.insert(topic.to_owned(), delta);
        }
    }

    /// Every counted topic and its count (0 once all its halves are
    /// resolved, as RocketMQ keeps reporting it).
    pub fn snapshot(&self) -> Vec<(String, i64)> {
        self.by_topic
            .lock()
            .iter()
            .map(|(t, n)| (t.clone(), *n))
            .collect()
    }
}

/// Counts the unresolved halves of the half queue from the check walk's
/// progress to its end, by REAL_TOPIC: a half the state resolves is left
/// out, and copies of one transaction (its UNIQ_KEY) count once.
pub(super) fn scan(
    store: &MessageStore,
    state: &TxState,
) -> Result<HashMap<String, i64>, StoreError> {
    let max = store.max_offset_in_queue(TRANS_HALF_TOPIC, 0)?;
    let mut next = state.half_progress;
    let mut counts: HashMap<String, i64> = HashMap::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut units = Vec::with_capacity(SCAN_BATCH);
    while next < max {
        units.clear();
        match store
            .consume_queue()
            .get(TRANS_HALF_TOPIC, 0, next, SCAN_BATCH, &mut units)
        {
            Ok(()) => {}
            Err(CqError::Compacted { min_offset, .. }) if min_offset > next => {
                next = min_offset;
                continue;
            }
            Err(e) => return Err(e.into()),
        }
        let Some(last) = units.last().map(|u| u.queue_offset) else {
            break;
        };
        for unit in &units {
            let Some(bytes) = store.record_at(unit.phy_offset).map(|s| s.bytes().to_vec()) else {
                continue;
            };
            let Ok(view) = RecordView::parse(&bytes, false) else {
                continue;
            };
            let uniq = view
                .property(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
                .map(|u| u.into_owned());
            if state.is_done(unit.queue_offset, uniq.as_deref()) {
                continue;
            }
            if let Some(id) = uniq {
                if !seen.insert(id) {
                    continue;
                }
            }
            let Some(topic) = view.property(property::REAL_TOPIC) else {
                continue;
            };
            if counts.len() < MAX_TOPICS || counts.contains_key(topic.as_ref()) {
                *counts.entry(topic.into_owned()).or_default() += 1;
            }
        }
        next = last + 1;
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_go_up_and_down_and_stay_at_zero() {
        let c = HalfCounts::default();
        c.add("T", 1);
        c.add("T", 1);
        c.add("U", 1);
        c.add("T", -1);
        c.add("U", -1);
        c.add("U", -1);
        c.add("V", -1);
        let mut s = c.snapshot();
        s.sort();
        assert_eq!(s, vec![("T".to_owned(), 1), ("U".to_owned(), 0)]);
    }
}
