//! RocketMQ 5.x's auto-switch HA wire format (controller mode; raw TCP on
//! the HA port, integers big-endian; `docs/controller-facts.md` section 8).
//! Unlike 4.9's (`wire`), each frame starts with the sender's state, and
//! the two directions have their own layouts:
//!
//! - slave to master: a 16-byte handshake (state 1, `isSyncFromLastFile`
//!   and `isAsyncLearner` as 2-byte flags, the slave's controller broker
//!   id), then 12-byte offset reports (state 2, the slave's CommitLog end);
//! - master to slave: a handshake (state 1, body size, the master's
//!   CommitLog end, its last epoch; the body is every epoch entry as
//!   epoch `i32` + start `i64`), then transfer frames of a 36-byte header
//!   (state 2, body size, the body's CommitLog offset, the epoch that wrote
//!   it and that epoch's start, the master's confirm offset) and that many
//!   CommitLog bytes; a body of 0 bytes is a heartbeat.

/// The connection states, as their ordinals travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum HaState {
    /// Not connected.
    Ready = 0,
    /// Exchanging handshakes.
    Handshake = 1,
    /// Streaming the log.
    Transfer = 2,
    /// Paused.
    Suspend = 3,
    /// Closing.
    Shutdown = 4,
}

impl HaState {
    /// The state with this ordinal.
    pub fn from_i32(v: i32) -> Option<Self> {
        Some(match v {
            0 => Self::Ready,
            1 => Self::Handshake,
            2 => Self::Transfer,
            3 => Self::Suspend,
            4 => Self::Shutdown,
            _ => return None,
        })
    }
}

/// Bytes of a slave's handshake.
pub const SLAVE_HANDSHAKE_LEN: usize = 16;
/// Bytes of a slave's offset report.
pub const SLAVE_REPORT_LEN: usize = 12;
/// Bytes of the master's handshake header.
pub const MASTER_HANDSHAKE_LEN: usize = 20;
/// Bytes of one epoch entry in the master's handshake body.
pub const EPOCH_ENTRY_LEN: usize = 12;
/// Bytes of a transfer header.
pub const TRANSFER_HEADER_LEN: usize = 36;
/// Most epoch entries a Java slave reads from one handshake.
pub const MAX_HANDSHAKE_ENTRIES: usize = 1000;

/// Why bytes are not a frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SwitchWireError {
    /// The state field holds no known state.
    #[error("auto-switch HA frame with unknown state {0}")]
    UnknownState(i32),
    /// A frame of a state that does not belong here.
    #[error("auto-switch HA frame in state {0:?} where {1} was expected")]
    Unexpected(HaState, &'static str),
    /// A body size below 0, not a whole number of entries, or too large.
    #[error("auto-switch HA frame with a bad body size {0}")]
    BadSize(i32),
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    let mut v = [0u8; 4];
    v.copy_from_slice(&b[at..at + 4]);
    i32::from_be_bytes(v)
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(v)
}

/// What a slave sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlaveFrame {
    /// Its handshake.
    Handshake {
        /// Start from the master's last segment when empty.
        sync_from_last_file: bool,
        /// It never joins the SyncStateSet.
        async_learner: bool,
        /// Its controller broker id.
        broker_id: i64,
    },
    /// Its CommitLog end.
    Report {
        /// The offset.
        offset: i64,
    },
}

impl SlaveFrame {
    /// The frame's bytes.
    pub fn encode(self) -> Vec<u8> {
        match self {
            Self::Handshake {
                sync_from_last_file,
                async_learner,
                broker_id,
            } => {
                let mut out = Vec::with_capacity(SLAVE_HANDSHAKE_LEN);
                out.extend_from_slice(&(HaState::Handshake as i32).to_be_bytes());
                out.extend_from_slice(&i16::from(sync_from_last_file).to_be_bytes());
                out.extend_from_slice(&i16::from(async_learner).to_be_bytes());
                out.extend_from_slice(&broker_id.to_be_bytes());
                out
            }
            Self::Report { offset } => {
                let mut out = Vec::with_capacity(SLAVE_REPORT_LEN);
                out.extend_from_slice(&(HaState::Transfer as i32).to_be_bytes());
                out.extend_from_slice(&offset.to_be_bytes());
                out
            }
        }
    }

    /// The first frame in `buf` and its length; `Ok(None)` until it is
    /// complete. As Java, nothing is read before 12 bytes are there.
    pub fn decode(buf: &[u8]) -> Result<Option<(Self, usize)>, SwitchWireError> {
        if buf.len() < SLAVE_REPORT_LEN {
            return Ok(None);
        }
        let state = i32_at(buf, 0);
        match HaState::from_i32(state) {
            Some(HaState::Handshake) => {
                if buf.len() < SLAVE_HANDSHAKE_LEN {
                    return Ok(None);
                }
                let flag = |at: usize| buf[at] != 0 || buf[at + 1] != 0;
                Ok(Some((
                    Self::Handshake {
                        sync_from_last_file: flag(4),
                        async_learner: flag(6),
                        broker_id: i64_at(buf, 8),
                    },
                    SLAVE_HANDSHAKE_LEN,
                )))
            }
            Some(HaState::Transfer) => Ok(Some((
                Self::Report {
                    offset: i64_at(buf, 4),
                },
                SLAVE_REPORT_LEN,
            ))),
            Some(other) => Err(SwitchWireError::Unexpected(
                other,
                "a handshake or a report",
            )),
            None => Err(SwitchWireError::UnknownState(state)),
        }
    }
}

/// The master's handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MasterHandshake {
    /// The master's CommitLog end.
    pub max_offset: i64,
    /// Its last epoch.
    pub last_epoch: i32,
    /// Its epoch entries: (epoch, start).
    pub entries: Vec<(i32, i64)>,
}

/// A transfer header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferHeader {
    /// Body bytes that follow.
    pub size: i32,
    /// CommitLog offset of the body's first byte (the next one, for a
    /// heartbeat).
    pub offset: i64,
    /// The epoch that wrote the body.
    pub epoch: i32,
    /// Where that epoch starts.
    pub epoch_start: i64,
    /// The master's confirm offset.
    pub confirm_offset: i64,
}

/// What a master sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MasterFrame {
    /// Its handshake.
    Handshake(MasterHandshake),
    /// A transfer header; its body follows on the wire.
    Transfer(TransferHeader),
}

impl MasterHandshake {
    /// The frame's bytes, header and body.
    pub fn encode(&self) -> Vec<u8> {
        let entries = &self.entries[..self.entries.len().min(MAX_HANDSHAKE_ENTRIES)];
        let size = entries.len() * EPOCH_ENTRY_LEN;
        let mut out = Vec::with_capacity(MASTER_HANDSHAKE_LEN + size);
        out.extend_from_slice(&(HaState::Handshake as i32).to_be_bytes());
        out.extend_from_slice(&(size as i32).to_be_bytes());
        out.extend_from_slice(&self.max_offset.to_be_bytes());
        out.extend_from_slice(&self.last_epoch.to_be_bytes());
        for (epoch, start) in entries {
            out.extend_from_slice(&epoch.to_be_bytes());
            out.extend_from_slice(&start.to_be_bytes());
        }
        out
    }
}

impl TransferHeader {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; TRANSFER_HEADER_LEN] {
        let mut out = [0u8; TRANSFER_HEADER_LEN];
        out[0..4].copy_from_slice(&(HaState::Transfer as i32).to_be_bytes());
        out[4..8].copy_from_slice(&self.size.to_be_bytes());
        out[8..16].copy_from_slice(&self.offset.to_be_bytes());
        out[16..20].copy_from_slice(&self.epoch.to_be_bytes());
        out[20..28].copy_from_slice(&self.epoch_start.to_be_bytes());
        out[28..36].copy_from_slice(&self.confirm_offset.to_be_bytes());
        out
    }
}

impl MasterFrame {
    /// The first frame in `buf` and the bytes of it read; a transfer's body
    /// is not included (its `size` bytes follow). `Ok(None)` until it is
    /// complete.
    pub fn decode(buf: &[u8]) -> Result<Option<(Self, usize)>, SwitchWireError> {
        if buf.len() < 4 {
            return Ok(None);
        }
        let state = i32_at(buf, 0);
        match HaState::from_i32(state) {
            Some(HaState::Handshake) => {
                if buf.len() < MASTER_HANDSHAKE_LEN {
                    return Ok(None);
                }
                let size = i32_at(buf, 4);
                let body = usize::try_from(size)
                    .ok()
                    .filter(|s| {
                        s % EPOCH_ENTRY_LEN == 0 && *s <= MAX_HANDSHAKE_ENTRIES * EPOCH_ENTRY_LEN
                    })
                    .ok_or(SwitchWireError::BadSize(size))?;
                if buf.len() < MASTER_HANDSHAKE_LEN + body {
                    return Ok(None);
                }
                let entries = buf[MASTER_HANDSHAKE_LEN..MASTER_HANDSHAKE_LEN + body]
                    .chunks_exact(EPOCH_ENTRY_LEN)
                    .map(|e| (i32_at(e, 0), i64_at(e, 4)))
                    .collect();
                Ok(Some((
                    Self::Handshake(MasterHandshake {
                        max_offset: i64_at(buf, 8),
                        last_epoch: i32_at(buf, 16),
                        entries,
                    }),
                    MASTER_HANDSHAKE_LEN + body,
                )))
            }
            Some(HaState::Transfer) => {
                if buf.len() < TRANSFER_HEADER_LEN {
                    return Ok(None);
                }
                let size = i32_at(buf, 4);
                if size < 0 {
                    return Err(SwitchWireError::BadSize(size));
                }
                Ok(Some((
                    Self::Transfer(TransferHeader {
                        size,
                        offset: i64_at(buf, 8),
                        epoch: i32_at(buf, 16),
                        epoch_start: i64_at(buf, 20),
                        confirm_offset: i64_at(buf, 28),
                    }),
                    TRANSFER_HEADER_LEN,
                )))
            }
            Some(other) => Err(SwitchWireError::Unexpected(
                other,
                "a handshake or a transfer",
            )),
            None => Err(SwitchWireError::UnknownState(state)),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_slave_handshake_and_report_byte_for_byte() {
        let h = SlaveFrame::Handshake {
            sync_from_last_file: true,
            async_learner: false,
            broker_id: 2,
        };
        let bytes = h.encode();
        assert_eq!(
            bytes,
            [0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
            "state 1, flags as shorts, id"
        );
        assert_eq!(SlaveFrame::decode(&bytes).unwrap(), Some((h, 16)));
        let r = SlaveFrame::Report { offset: 0x0102 };
        let bytes = r.encode();
        assert_eq!(bytes, [0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!(SlaveFrame::decode(&bytes).unwrap(), Some((r, 12)));
        // Incomplete, then unknown or misplaced states.
        assert_eq!(SlaveFrame::decode(&bytes[..11]).unwrap(), None);
        let mut bad = bytes.clone();
        bad[3] = 9;
        assert_eq!(
            SlaveFrame::decode(&bad),
            Err(SwitchWireError::UnknownState(9))
        );
        bad[3] = 0;
        assert!(matches!(
            SlaveFrame::decode(&bad),
            Err(SwitchWireError::Unexpected(HaState::Ready, _))
        ));
    }

    #[test]
    fn a_master_handshake_carries_every_epoch_entry() {
        let h = MasterHandshake {
            max_offset: 4096,
            last_epoch: 3,
            entries: vec![(1, 0), (3, 1024)],
        };
        let bytes = h.encode();
        assert_eq!(bytes.len(), 20 + 24);
        assert_eq!(&bytes[0..8], &[0, 0, 0, 1, 0, 0, 0, 24]);
        assert_eq!(&bytes[16..20], &[0, 0, 0, 3]);
        assert_eq!(&bytes[32..44], &[0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 4, 0]);
        assert_eq!(
            MasterFrame::decode(&bytes).unwrap(),
            Some((MasterFrame::Handshake(h), 44))
        );
        assert_eq!(MasterFrame::decode(&bytes[..40]).unwrap(), None);
        let mut odd = bytes.clone();
        odd[7] = 23;
        assert_eq!(MasterFrame::decode(&odd), Err(SwitchWireError::BadSize(23)));
    }

    #[test]
    fn a_transfer_header_is_36_bytes_in_javas_order() {
        let t = TransferHeader {
            size: 5,
            offset: 1 << 40,
            epoch: 2,
            epoch_start: 7,
            confirm_offset: 9,
        };
        let bytes = t.encode();
        assert_eq!(&bytes[0..8], &[0, 0, 0, 2, 0, 0, 0, 5]);
        assert_eq!(&bytes[8..16], &(1i64 << 40).to_be_bytes());
        assert_eq!(&bytes[16..20], &[0, 0, 0, 2]);
        assert_eq!(&bytes[20..28], &7i64.to_be_bytes());
        assert_eq!(&bytes[28..36], &9i64.to_be_bytes());
        assert_eq!(
            MasterFrame::decode(&bytes).unwrap(),
            Some((MasterFrame::Transfer(t), 36))
        );
        assert_eq!(MasterFrame::decode(&bytes[..35]).unwrap(), None);
    }
}
