//! Recovery of the wheel after a restart or a crash: replay the timer-log
//! units written after the checkpoint's log position into the wheel, cut
//! the log at the first unit that is not whole, and empty any slot that
//! still points past the cut (units the disk lost).

use super::checkpoint::TimerCheckpoint;
use super::log::{TimerLog, BLANK_SIZE};
use super::slots::{Slot, Wheel};
use crate::entry::{decode_unit, UNIT_SIZE};
use crate::error::TimerError;

/// What recovery did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Recovery {
    /// Units replayed into the wheel.
    pub replayed: u64,
    /// The log's end after recovery.
    pub end: i64,
    /// Slots emptied because they pointed past the end.
    pub dropped_slots: usize,
}

pub fn recover(
    wheel: &mut Wheel,
    log: &mut TimerLog,
    ckpt: Option<&TimerCheckpoint>,
) -> Result<Recovery, TimerError> {
    let file_size = log.file_size();
    let precision = wheel.precision();
    let from = ckpt
        .map_or(0, |c| c.last_timer_log_flush_pos)
        .clamp(log.min_pos(), log.write_pos().max(log.min_pos()));
    let mut out = Recovery::default();
    let mut pos = from;
    while pos < log.write_pos() {
        let within = pos.rem_euclid(file_size);
        if within + (UNIT_SIZE + BLANK_SIZE) as i64 > file_size {
            if !log.is_blank(pos)? {
                break;
            }
            pos += file_size - within;
            continue;
        }
        let Some((e, _prev)) = log.read(pos)?.and_then(|u| decode_unit(&u)) else {
            break;
        };
        if e.slot_ms.rem_euclid(precision) != 0 {
            break;
        }
        let time = e.slot_ms / precision;
        let slot = wheel.get(e.slot_ms);
        let updated = if slot.time != time || slot.last_pos < 0 {
            Some(Slot {
                time,
                first_pos: pos,
                last_pos: pos,
                num: e.counts() as i32,
                magic: 0,
            })
        } else if slot.last_pos < pos {
            Some(Slot {
                last_pos: pos,
                num: slot.num.saturating_add(e.counts() as i32),
                ..slot
            })
        } else {
            None
        };
        if let Some(s) = updated {
            wheel.set(&s);
            out.replayed += 1;
        }
        pos += UNIT_SIZE as i64;
    }
    if pos < log.write_pos() {
        tracing::warn!(
            end = pos,
            written = log.write_pos(),
            "timer log cut at its last whole unit"
        );
        log.truncate(pos)?;
    }
    out.end = log.write_pos();
    let read_ms = ckpt.map_or(0, |c| c.last_read_time_ms);
    for s in wheel.beyond(read_ms, out.end) {
        tracing::error!(
            slot_time = s.time,
            last_pos = s.last_pos,
            log_end = out.end,
            "timer slot points past the timer log's end (lost on disk); emptied"
        );
        wheel.set(&Slot::empty(s.time));
        out.dropped_slots += 1;
    }
    Ok(out)
}
