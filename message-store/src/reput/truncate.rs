//! Dispatch around a runtime truncation of the CommitLog: paused (the pass
//! lock), drained, both backends cut, the log cut, positions moved back.

use std::time::Duration;

use rmq_store_file::StoreError;

use super::shadow::Shadow;
use super::Dispatcher;

/// Longest wait for a backend to write what dispatch handed it before a
/// truncation.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

impl Dispatcher {
    /// With dispatch paused and drained: removes every unit at or past
    /// `offset` from the serving backend and the shadow, runs `cut_log`,
    /// and moves every dispatch position back to at most `offset`, so the
    /// records appended there later are dispatched afresh. The positions
    /// move back even when `cut_log` fails: reput then dispatches again
    /// whatever the log still holds past `offset`.
    pub(crate) fn truncate_to(
        &self,
        offset: i64,
        cut_log: impl FnOnce() -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let _pass = self.pass_lock.lock();
        let parsed = self.parse_from.get();
        if !self.wait_reput_to(parsed, DRAIN_TIMEOUT) {
            return Err(match self.failure() {
                Some(reason) => StoreError::Poisoned { reason },
                None => StoreError::DispatchStalled {
                    parsed,
                    written: self.reput_from(),
                },
            });
        }
        let shadow = self.shadow.lock().take().map(|s| {
            let from = s.written_to();
            let lane = s.lane_metrics();
            (s.stop("truncating the CommitLog"), from, lane)
        });
        let cut = self
            .cq()
            .truncate_from_phy(offset)
            .and_then(|()| match &shadow {
                Some((cq, _, _)) => cq.truncate_from_phy(offset),
                None => Ok(()),
            })
            .map_err(StoreError::from)
            .and_then(|()| cut_log());
        let back = parsed.min(offset);
        self.parse_from.set(back);
        {
            let _published = self.visible.progress.lock();
            if self.visible.offset.get() > back {
                self.visible.offset.set(back);
            }
        }
        if let Some((cq, from, lane)) = shadow {
            let restarted = Shadow::start(self, cq, from.min(offset), lane)?;
            *self.shadow.lock() = Some(restarted);
        }
        cut
    }
}
