//! Reading units: `get` through mappings, and scans and binary searches for
//! maintenance, which use an existing mapping or `pread` so that they do not
//! churn the mapping budget.

use std::fs::File;
use std::os::unix::fs::FileExt;

use rmq_common::cq::{Boundary, CqError, CqUnit, StoreTimeSource};

use super::queue::{QueueHandle, QueueState};
use super::unit::{RawUnit, UNIT, UNIT_I64};
use super::{corrupt, io_err, Env};

/// Units read by the first step of a linear scan: most scans are binary
/// search probes that stop at the first unit.
const SCAN_FIRST_UNITS: i64 = 4;
/// Most units read per step of a linear scan (inside holes).
const SCAN_CHUNK_UNITS: i64 = 256;

impl QueueHandle {
    /// Appends the encoded units `[from, from + count)` (which must lie in
    /// the files) to `buf`, through an existing mapping or with `pread`:
    /// maintenance scans over many queues must not churn the mapping budget.
    pub(crate) fn read_raw(
        &self,
        st: &QueueState,
        from: i64,
        count: i64,
        buf: &mut Vec<u8>,
    ) -> Result<(), CqError> {
        let mut i = from;
        let end = from.saturating_add(count);
        while i < end {
            let byte = i * UNIT_I64;
            let idx = st
                .index_of(byte, self.file_size)
                .ok_or_else(|| corrupt(&self.dir, format!("unit {i} is outside the files")))?;
            let seg_start = st.segments.get(idx).map_or(0, |s| s.start);
            let pos = byte - seg_start;
            let n = (end - i).min((self.file_size - pos) / UNIT_I64);
            let len = (n * UNIT_I64) as usize;
            match st.segments.get(idx).and_then(|seg| seg.mapped()) {
                Some(file) => {
                    let bytes = file.slice(pos as usize, len).ok_or_else(|| {
                        corrupt(
                            file.path(),
                            format!("units {i}.. are beyond the write position"),
                        )
                    })?;
                    buf.extend_from_slice(bytes);
                }
                None => {
                    let path = self.path(seg_start);
                    let f = File::open(&path).map_err(io_err("open", &path))?;
                    let old = buf.len();
                    buf.resize(old + len, 0);
                    f.read_exact_at(&mut buf[old..], pos as u64)
                        .map_err(io_err("read", &path))?;
                }
            }
            i += n;
        }
        Ok(())
    }

    /// One unit (in the files).
    pub(crate) fn unit_at(&self, st: &QueueState, at: i64) -> Result<RawUnit, CqError> {
        let mut buf = Vec::with_capacity(UNIT);
        self.read_raw(st, at, 1, &mut buf)?;
        RawUnit::decode(&buf).ok_or_else(|| corrupt(&self.dir, format!("short read of unit {at}")))
    }

    /// The first record unit in `[from, hi)`.
    pub(crate) fn next_record(
        &self,
        st: &QueueState,
        from: i64,
        hi: i64,
    ) -> Result<Option<(i64, RawUnit)>, CqError> {
        let mut buf = Vec::new();
        let mut i = from;
        let mut step = SCAN_FIRST_UNITS;
        while i < hi {
            let n = (hi - i).min(step);
            step = (step * 8).min(SCAN_CHUNK_UNITS);
            buf.clear();
            self.read_raw(st, i, n, &mut buf)?;
            for (k, c) in buf.chunks_exact(UNIT).enumerate() {
                match RawUnit::decode(c) {
                    Some(u) if !u.is_blank() => return Ok(Some((i + k as i64, u))),
                    _ => {}
                }
            }
            i += n;
        }
        Ok(None)
    }

    /// The last record unit in `[lo, from]`.
    pub(crate) fn prev_record(
        &self,
        st: &QueueState,
        from: i64,
        lo: i64,
    ) -> Result<Option<(i64, RawUnit)>, CqError> {
        let mut buf = Vec::new();
        let mut hi = from + 1;
        let mut step = SCAN_FIRST_UNITS;
        while hi > lo {
            let start = (hi - step).max(lo);
            step = (step * 8).min(SCAN_CHUNK_UNITS);
            buf.clear();
            self.read_raw(st, start, hi - start, &mut buf)?;
            for (k, c) in buf.chunks_exact(UNIT).enumerate().rev() {
                match RawUnit::decode(c) {
                    Some(u) if !u.is_blank() => return Ok(Some((start + k as i64, u))),
                    _ => {}
                }
            }
            hi = start;
        }
        Ok(None)
    }

    /// The first record unit in `[lo, hi)` for which `pred` holds, or `hi`.
    /// `pred` must be monotone over the records (false..., then true...), as
    /// CommitLog offsets and store times are in log order. Blank units are
    /// stepped over, so a probe costs a scan only inside a hole.
    pub(crate) fn partition_point(
        &self,
        st: &QueueState,
        lo: i64,
        hi: i64,

        mut pred: impl FnMut(&RawUnit) -> bool,
    ) -> Result<i64, CqError> {
        let (mut a, mut b) = (lo, hi);
        // Invariant: every record before `a` fails `pred`; the first position
        // whose next record passes (or that has none) is in `[a, b]`.
        while a < b {
            let mid = a + (b - a) / 2;
            match self.next_record(st, mid, hi)? {
                Some((j, u)) if !pred(&u) => a = j + 1,
                _ => b = mid,
            }
        }
        Ok(match self.next_record(st, a, hi)? {
            Some((j, u)) if pred(&u) => j,
            _ => hi,
        })
    }

    /// Up to `max_count` units from `from`, stopping at a blank unit (a
    /// hole), as the model stops at a missing offset.
    pub(crate) fn get(
        &self,
        st: &QueueState,
        from: i64,
        max_count: usize,
        env: &Env,
        out: &mut Vec<CqUnit>,
    ) -> Result<(), CqError> {
        CqError::check_not_compacted(&self.key.topic, self.key.queue_id, from, st.min)?;
        let end = from
            .saturating_add(i64::try_from(max_count).unwrap_or(i64::MAX))
            .min(st.max);
        let mut i = from;
        // Straight from each mapping into `out`: no intermediate buffer.
        while i < end {
            let byte = i * UNIT_I64;
            let idx = st
                .index_of(byte, self.file_size)
                .ok_or_else(|| corrupt(&self.dir, format!("unit {i} is outside the files")))?;
            let file = self.map_segment(st, idx, env)?;
            let pos = byte - file.file_from_offset();
            let n = (end - i).min((self.file_size - pos) / UNIT_I64);
            let bytes = file
                .slice(pos as usize, (n * UNIT_I64) as usize)
                .ok_or_else(|| {
                    corrupt(
                        file.path(),
                        format!("units {i}.. are beyond the write position"),
                    )
                })?;
            for (k, c) in bytes.chunks_exact(UNIT).enumerate() {
                match RawUnit::decode(c) {
                    Some(u) if !u.is_blank() => out.push(CqUnit {
                        queue_offset: i + k as i64,
                        phy_offset: u.phy,
                        size: u.size,
                        tags_code: u.tags,
                    }),
                    _ => return Ok(()),
                }
            }
            i += n;
        }
        Ok(())
    }

    /// Queue offset for a store time (see the trait). Records whose time the
    /// source cannot read count as stored before any time (they lie below
    /// the CommitLog's min offset).
    pub(crate) fn offset_by_time(
        &self,
        st: &QueueState,
        ts: i64,
        boundary: Boundary,
        times: &dyn StoreTimeSource,
    ) -> Result<i64, CqError> {
        let time = |u: &RawUnit| times.store_time(u.phy, u.size).unwrap_or(i64::MIN);
        if st.is_empty() {
            return Ok(st.min);
        }
        match boundary {
            Boundary::Lower => self.partition_point(st, st.min, st.max, |u| time(u) >= ts),
            Boundary::Upper => {
                let after = self.partition_point(st, st.min, st.max, |u| time(u) > ts)?;
                Ok(self
                    .prev_record(st, after - 1, st.min)?
                    .map_or(st.min, |(j, _)| j))
            }
        }
    }
}
