//! Appending units: idempotent put, fillers for a late first unit and for
//! holes.

use std::sync::atomic::Ordering;

use rmq_common::cq::{CqError, CqPut};

use super::queue::{QueueHandle, QueueState};
use super::unit::{blanks, RawUnit, UNIT, UNIT_I64};
use super::{corrupt, Env};

/// Blank units written per append while filling (64,000 bytes).
const BLANK_CHUNK_UNITS: usize = 3_200;

/// Whether a put wrote its unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PutOutcome {
    /// Written at its queue offset.
    Appended,
    /// Already present (a replay); nothing written.
    Skipped,
}

/// Rejects units that the file format cannot represent.
pub(crate) fn validate(p: &CqPut) -> Result<(), CqError> {
    let unit = RawUnit {
        phy: p.phy_offset,
        size: p.size,
        tags: p.tags_code,
    };
    if !unit.is_valid() || unit.is_blank() {
        return Err(CqError::InvalidArgument(format!(
            "unit of {}/{} at queue offset {}: CommitLog offset {} size {} cannot be stored",
            p.topic, p.queue_id, p.queue_offset, p.phy_offset, p.size
        )));
    }
    // The byte position of the unit must fit an i64.
    if p.queue_offset < 0 || p.queue_offset > i64::MAX / UNIT_I64 - 1 {
        return Err(CqError::InvalidArgument(format!(
            "queue offset {} of {}/{} is out of range",
            p.queue_offset, p.topic, p.queue_id
        )));
    }
    Ok(())
}

impl QueueHandle {
    /// Appends one (validated) unit unless it is a replay; same rules as the
    /// in-memory model.
    pub(crate) fn put_unit(
        &self,
        st: &mut QueueState,
        p: &CqPut,
        env: &Env,
    ) -> Result<PutOutcome, CqError> {
        let end = p.phy_offset.saturating_add(i64::from(p.size));
        if end <= st.max_phy_end {
            self.note_replay(st, p.queue_offset);
            return Ok(PutOutcome::Skipped);
        }
        if st.is_empty() {
            if st.segments.is_empty() || p.queue_offset != st.max {
                self.restart_at(st, p.queue_offset, env)?;
            }
            st.min = p.queue_offset;
        } else if p.queue_offset < st.max {
            self.note_replay(st, p.queue_offset);
            return Ok(PutOutcome::Skipped);
        } else if p.queue_offset > st.max {
            tracing::warn!(
                topic = %self.key.topic,
                queue_id = self.key.queue_id,
                expected = st.max,
                got = p.queue_offset,
                "consume queue hole; filling it with blank units"
            );
            self.append_blanks(st, p.queue_offset - st.max, env)?;
        }
        let unit = RawUnit {
            phy: p.phy_offset,
            size: p.size,
            tags: p.tags_code,
        };
        self.append_raw(st, &unit.encode(), env)?;
        st.last_phy = p.phy_offset;
        st.max_phy_end = end;
        self.dirty.store(true, Ordering::Release);
        self.recovered.store(false, Ordering::Release);
        Ok(PutOutcome::Appended)
    }

    /// A replayed unit is already in the files, but after a restart it may
    /// only be in the page cache; the next flush must sync it before the
    /// dispatched checkpoint moves past it.
    fn note_replay(&self, st: &QueueState, queue_offset: i64) {
        if !self.recovered.load(Ordering::Acquire) || st.segments.is_empty() {
            return;
        }
        let at = queue_offset.clamp(st.files_lo(), st.max.max(st.files_lo() + 1) - 1);
        self.resync_from.fetch_min(at * UNIT_I64, Ordering::AcqRel);
    }

    /// Starts the (empty) queue over at offset `k`: removes its files, creates
    /// the one holding `k` and fills the units before `k` in it with blanks
    /// (RocketMQ's `fillPreBlank`); earlier files are not created.
    fn restart_at(&self, st: &mut QueueState, k: i64, env: &Env) -> Result<(), CqError> {
        if !st.segments.is_empty() {
            tracing::warn!(
                topic = %self.key.topic,
                queue_id = self.key.queue_id,
                old_max = st.max,
                new_first = k,
                "empty consume queue restarts at another offset; removing its files"
            );
            env.min_dirty.store(true, Ordering::Release);
        }
        // Front first, so a crash leaves a contiguous suffix.
        while let Some(seg) = st.segments.pop_front() {
            self.destroy_segment(seg, env)?;
        }
        let byte = k * UNIT_I64;
        let start = byte - byte % self.file_size;
        self.create_segment(st, start, env)?;
        st.min = start / UNIT_I64;
        st.max = st.min;
        st.last_phy = -1;
        st.max_phy_end = -1;
        st.min_pred = None;
        self.append_blanks(st, k - st.max, env)?;
        st.min = k;
        Ok(())
    }

    /// Appends `count` blank units at `max`.
    fn append_blanks(&self, st: &mut QueueState, count: i64, env: &Env) -> Result<(), CqError> {
        let mut left = usize::try_from(count).unwrap_or(0);
        let chunk = blanks(left.min(BLANK_CHUNK_UNITS));
        while left > 0 {
            let n = left.min(BLANK_CHUNK_UNITS);
            self.append_raw(st, &chunk[..n * UNIT], env)?;
            left -= n;
        }
        Ok(())
    }

    /// Appends whole encoded units at `max`, creating segments as they fill,
    /// and advances `max`.
    fn append_raw(&self, st: &mut QueueState, mut data: &[u8], env: &Env) -> Result<(), CqError> {
        while !data.is_empty() {
            let byte = st.max * UNIT_I64;
            let file = match st.segments.back() {
                Some(last) if byte < last.start + self.file_size => {
                    self.map_segment(st, st.segments.len() - 1, env)?
                }
                _ => self.create_segment(st, byte - byte % self.file_size, env)?,
            };
            let pos = usize::try_from(byte - file.file_from_offset()).map_err(|_| {
                corrupt(file.path(), format!("unit byte {byte} is before the file"))
            })?;
            if file.wrote_position() != pos {
                return Err(corrupt(
                    file.path(),
                    format!(
                        "write position {} but the next unit goes at {pos}",
                        file.wrote_position()
                    ),
                ));
            }
            let n = data.len().min(file.remaining());
            let (now, rest) = data.split_at(n);
            if file.append(now).is_none() {
                return Err(corrupt(
                    file.path(),
                    format!("{n} bytes do not fit at {pos}"),
                ));
            }
            st.max += (n / UNIT) as i64;
            data = rest;
        }
        Ok(())
    }
}
