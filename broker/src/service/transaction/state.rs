//! What the broker knows about half messages: which are resolved (an op
//! record exists), and how far the check-back walk and the op-queue scan
//! have got. Shared by END_TRANSACTION and the check service under one lock,
//! so a half is never resolved twice.

use std::collections::{BTreeMap, HashMap};

/// The half queue offsets an op record's body names: one number (what this
/// broker and 4.9 write) or, as 5.x batches them, a list `"o1,o2,"` (items
/// ended by commas, the last one optional). `None` when any item is not a
/// number (the op is then ignored, as a whole).
pub fn op_half_offsets(body: &[u8]) -> Option<Vec<i64>> {
    let text = std::str::from_utf8(body).ok()?;
    let items: Vec<&str> = text
        .split(',')
        .map(str::trim)
        .filter(|i| !i.is_empty())
        .collect();
    if items.is_empty() {
        return None;
    }
    items.iter().map(|i| i.parse::<i64>().ok()).collect()
}

/// Resolution state of the half queue.
#[derive(Debug, Default)]
pub struct TxState {
    /// Every half below this queue offset is done with: resolved, moved to
    /// the check-max topic, or re-appended for a later check.
    pub half_progress: i64,
    /// Next op-queue offset to read.
    pub op_read: i64,
    /// Ops read that resolve a half at or above `half_progress`:
    /// op queue offset -> half queue offset. Their lowest key bounds the
    /// op offset that may be persisted (they are re-read after a restart).
    pending_ops: BTreeMap<i64, i64>,
    /// Resolved half queue offsets at or above `half_progress`.
    resolved: BTreeMap<i64, i64>,
    /// Transaction ids (the half's UNIQ_KEY) resolved: copies of one half
    /// re-appended for checks share it, and only one may be resolved.
    resolved_ids: HashMap<String, i64>,
}

impl TxState {
    /// A state resuming at the persisted offsets.
    pub fn new(half_progress: i64, op_from: i64) -> Self {
        Self {
            half_progress,
            op_read: op_from,
            ..Self::default()
        }
    }

    /// Records an op (read from the op queue or just written).
    pub fn record_op(&mut self, op_offset: i64, half_offset: i64, uniq: Option<&str>) {
        if half_offset < self.half_progress {
            return;
        }
        // A 5.x op may resolve several halves: it stays pending until the
        // walk has passed the highest of them.
        let highest = self.pending_ops.entry(op_offset).or_insert(half_offset);
        *highest = (*highest).max(half_offset);
        self.resolved.insert(half_offset, op_offset);
        if let Some(id) = uniq.filter(|id| !id.is_empty()) {
            self.resolved_ids.insert(id.to_owned(), half_offset);
        }
    }

    /// Whether the half at `half_offset` (with transaction id `uniq`) is
    /// already resolved or passed by the check walk.
    pub fn is_done(&self, half_offset: i64, uniq: Option<&str>) -> bool {
        half_offset < self.half_progress
            || self.resolved.contains_key(&half_offset)
            || uniq.is_some_and(|id| self.resolved_ids.contains_key(id))
    }

    /// Moves the walk past `to` (exclusive) and forgets what lies below.
    pub fn advance_half(&mut self, to: i64) {
        if to <= self.half_progress {
            return;
        }
        self.half_progress = to;
        self.resolved = self.resolved.split_off(&to);
        self.pending_ops.retain(|_, half| *half >= to);
        self.resolved_ids.retain(|_, half| *half >= to);
    }

    /// The op offset safe to persist: every op below it resolves a half
    /// below `half_progress`, so a restart need not read it again.
    pub fn op_committed(&self) -> i64 {
        self.pending_ops
            .keys()
            .next()
            .copied()
            .unwrap_or(self.op_read)
            .min(self.op_read)
    }

    /// Resolved halves not yet passed by the walk.
    pub fn resolved_pending(&self) -> usize {
        self.resolved.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_bodies_single_and_5x_list() {
        assert_eq!(op_half_offsets(b"17"), Some(vec![17]));
        assert_eq!(op_half_offsets(b" 17\n"), Some(vec![17]));
        assert_eq!(op_half_offsets(b"3,9,12,"), Some(vec![3, 9, 12]));
        assert_eq!(op_half_offsets(b"3,9"), Some(vec![3, 9]));
        assert_eq!(op_half_offsets(b""), None);
        assert_eq!(op_half_offsets(b","), None);
        assert_eq!(op_half_offsets(b"3,x,"), None, "one bad item spoils the op");
        assert_eq!(op_half_offsets(&[0xff, b'1']), None);
    }

    #[test]
    fn a_list_op_stays_pending_until_its_highest_half_is_passed() {
        let mut s = TxState::new(0, 0);
        s.op_read = 1;
        for half in [9, 3, 5] {
            s.record_op(0, half, None);
        }
        assert!(s.is_done(3, None) && s.is_done(5, None) && s.is_done(9, None));
        assert!(!s.is_done(4, None));
        s.advance_half(6);
        assert_eq!(s.op_committed(), 0, "half 9 is not passed yet");
        s.advance_half(10);
        assert_eq!(s.op_committed(), 1);
    }

    #[test]
    fn resolution_by_offset_and_id_and_progress() {
        let mut s = TxState::new(10, 0);
        s.op_read = 3;
        s.record_op(0, 5, Some("a"));
        assert!(s.is_done(5, None), "below progress");
        s.record_op(1, 12, Some("b"));
        s.record_op(2, 15, None);
        assert!(s.is_done(12, None));
        assert!(s.is_done(30, Some("b")), "a re-appended copy of b");
        assert!(!s.is_done(13, Some("c")));
        assert_eq!(s.op_committed(), 1);
        s.advance_half(13);
        assert_eq!(s.op_committed(), 2);
        assert!(
            !s.is_done(30, Some("b")),
            "b's id is forgotten below progress"
        );
        s.advance_half(16);
        assert_eq!(s.op_committed(), 3);
        assert_eq!(s.resolved_pending(), 0);
    }
}
