//! What RocketMQ 5.x's controller mode needs from the store
//! (`docs/controller-facts.md` sections 6.6, 8.5, 8.6, 8.8):
//!
//! - [`MessageStore::truncate_to`]: cut the CommitLog at a record boundary
//!   at runtime, with the consume queues of both backends, the dispatch
//!   positions, the put path's offset tables and the epoch file following.
//!   A slave does it before following a master whose log diverged.
//! - The confirm offset: with [`DispatchBound::ConfirmOffset`], reput
//!   dispatches only whole records ending at or before it, so what the
//!   in-sync replicas have not acknowledged is not consumable. Persisted in
//!   the checkpoint file at byte 32, as Java's `confirmPhyOffset`.
//! - The epoch file (`epochFileCheckpoint`), owned here: its head follows
//!   retention, its tail follows truncation, and
//!   [`MessageStore::become_master`] records a new master epoch.
//!
//! A store opens with [`DispatchBound::LogEnd`] (today's behaviour); the
//! broker's controller-mode code sets the bound once it knows its role.

use std::sync::atomic::Ordering;
use std::time::Duration;

use rmq_store_file::epoch_file::EpochEntry;
use rmq_store_file::StoreError;

use super::MessageStore;

/// How far reput dispatches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatchBound {
    /// To the CommitLog's end (not controller mode, `readUnCommitted`, or
    /// a master whose SyncStateSet is only itself or that does not wait
    /// for all of it).
    LogEnd,
    /// To the confirm offset: whole records ending at or before it.
    ConfirmOffset,
}

impl MessageStore {
    /// Cuts the CommitLog at `offset`, which must be a record boundary in
    /// `[min, max]` ([`StoreError::TruncateOutOfRange`],
    /// [`StoreError::NotRecordBoundary`] otherwise; nothing changes then).
    /// Dispatch is paused meanwhile; both consume-queue backends lose their
    /// units at or past `offset`; the put path's queue offsets are rebuilt
    /// from the consume queue; the confirm offset drops to at most `offset`;
    /// epoch entries starting at or past it go. Readers holding bytes of the
    /// cut records keep them; later reads do not see them. IndexFile entries
    /// of cut records stay, harmless: a key query re-reads each hit and
    /// drops one whose record does not start there or does not match.
    pub fn truncate_to(&self, offset: i64) -> Result<(), StoreError> {
        self.ensure_running()?;
        self.commit_log.check_record_boundary(offset)?;
        // No flip, add or drop of a backend meanwhile.
        let _backends = self.cq_change.lock();
        self.dispatcher
            .truncate_to(offset, || self.commit_log.truncate_to(offset))?;
        if let Some(index) = &self.index {
            index.rewind(offset);
        }
        if self.confirm.get() > offset {
            self.store_confirm(offset);
        }
        self.epochs.lock().truncate_suffix(offset)?;
        self.rebuild_queue_offsets()?;
        tracing::warn!(
            offset,
            reput_from = self.dispatcher.reput_from(),
            "store truncated"
        );
        Ok(())
    }

    /// Chooses how far reput dispatches.
    pub fn set_dispatch_bound(&self, bound: DispatchBound) {
        self.confirm_bound
            .store(bound == DispatchBound::ConfirmOffset, Ordering::Release);
        self.apply_confirm_limit();
    }

    /// How far reput dispatches.
    pub fn dispatch_bound(&self) -> DispatchBound {
        if self.confirm_bound.load(Ordering::Acquire) {
            DispatchBound::ConfirmOffset
        } else {
            DispatchBound::LogEnd
        }
    }

    /// Sets the confirm offset (it may go down); persisted with the next
    /// checkpoint flush.
    pub fn set_confirm_offset(&self, offset: i64) {
        self.store_confirm(offset);
    }

    /// The confirm offset: the stored value under
    /// [`DispatchBound::ConfirmOffset`], else the CommitLog's end (as
    /// Java's `getConfirmOffset` answers a master that waits for no one).
    pub fn confirm_offset(&self) -> i64 {
        match self.dispatch_bound() {
            DispatchBound::ConfirmOffset => self.confirm.get(),
            DispatchBound::LogEnd => self.max_phy_offset(),
        }
    }

    /// The stored confirm offset, whatever the bound (Java's
    /// `getConfirmOffsetDirectly`).
    pub fn confirm_offset_stored(&self) -> i64 {
        self.confirm.get()
    }

    /// Where reput stops now: the CommitLog's end, or under
    /// [`DispatchBound::ConfirmOffset`] the confirm offset if lower (a
    /// record crossing it waits).
    pub fn dispatch_end(&self) -> i64 {
        self.dispatcher.pass_end()
    }

    fn store_confirm(&self, offset: i64) {
        self.confirm.set(offset);
        self.checkpoint.set_confirm_offset(offset);
        self.apply_confirm_limit();
    }

    fn apply_confirm_limit(&self) {
        let limit = match self.dispatch_bound() {
            DispatchBound::ConfirmOffset => self.confirm.get(),
            DispatchBound::LogEnd => i64::MAX,
        };
        self.dispatcher.set_confirm_limit(limit);
    }

    /// The epoch entries, oldest first, the last ending at `i64::MAX`.
    pub fn epoch_entries(&self) -> Vec<EpochEntry> {
        self.epochs.lock().entries()
    }

    /// The epoch entries as (epoch, start), as a master's handshake sends
    /// them.
    pub fn epoch_pairs(&self) -> Vec<(i32, i64)> {
        self.epochs.lock().pairs().to_vec()
    }

    /// The newest epoch recorded (-1: none).
    pub fn last_epoch(&self) -> i32 {
        self.epochs.lock().last_epoch()
    }

    /// Records that `epoch` starts at `start` (a slave copying its master's
    /// entries); false when not above the last entry in both, as Java.
    pub fn append_epoch(&self, epoch: i32, start: i64) -> Result<bool, StoreError> {
        Ok(self.epochs.lock().append(epoch, start)?)
    }

    /// This store becomes the master of `epoch` (Java's
    /// `AutoSwitchHAService.changeToMaster`, store part): refused with
    /// [`StoreError::StaleEpoch`] below the last recorded epoch; a tail
    /// that is not a whole record (a slave's half-replicated one) is cut;
    /// entries of `epoch` and later are dropped and `(epoch, max offset)`
    /// appended; the confirm offset rises to that max offset (all of it is
    /// the set's log now); then waits (at most `timeout`) for dispatch to
    /// reach it, rebuilds the put path's queue offsets, and only then
    /// accepts writes. Returns where the epoch starts.
    ///
    /// One difference from Java: when the last entry starts at the max
    /// offset (its epoch wrote nothing), it is replaced by the new epoch
    /// instead of the new one being refused; a slave finds the same
    /// consistent point either way.
    pub fn become_master(&self, epoch: i32, timeout: Duration) -> Result<i64, StoreError> {
        self.ensure_running()?;
        let last = self.last_epoch();
        if epoch < last {
            return Err(StoreError::StaleEpoch { epoch, last });
        }
        let whole = self
            .commit_log
            .whole_records_end(self.dispatcher.parsed_to());
        if whole < self.max_phy_offset() {
            tracing::warn!(
                cut = whole,
                max = self.max_phy_offset(),
                "becoming master: cutting a tail that is not a whole record"
            );
            self.truncate_to(whole)?;
        }
        let start = self.max_phy_offset();
        {
            let mut epochs = self.epochs.lock();
            epochs.truncate_from_epoch(epoch)?;
            // An epoch that wrote nothing carries no information.
            if epochs.pairs().last().is_some_and(|&(_, s)| s >= start) {
                epochs.truncate_suffix(start)?;
            }
            epochs.append(epoch, start)?;
        }
        // Everything this replica holds is the set's log now: the old master
        // may have acknowledged all of it (its confirm offset reached this
        // replica later than the records). Dispatch all of it, and only then
        // let new messages take queue offsets, or they would take offsets
        // that records not yet dispatched hold.
        self.store_confirm(start);
        let end = self.dispatch_end();
        if !self.wait_dispatched_to(end, timeout) {
            return Err(StoreError::DispatchStalled {
                parsed: end,
                written: self.reput_from_offset(),
            });
        }
        self.rebuild_queue_offsets()?;
        self.replica_only.store(false, Ordering::Release);
        tracing::info!(epoch, start, "store is master of the epoch");
        Ok(start)
    }
}
