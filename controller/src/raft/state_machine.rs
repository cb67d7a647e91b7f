//! The controller's state machine: applies each committed [`Event`] to the
//! [`ReplicaState`] that the rest of the controller reads through a
//! [`SharedState`].
//!
//! The state itself is not written on each apply. A snapshot (the state's
//! JSON with its last applied log id and membership) is kept in memory and
//! written to a file in the store folder (atomic replacement); at start
//! the state is loaded from that file and openraft replays the log after
//! it, so the log can be purged up to a snapshot. openraft decides when to
//! snapshot ([`crate::raft::RaftSettings::snapshot_every_logs`]).

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::storage::{RaftStateMachine, Snapshot, SnapshotMeta};
use openraft::{BasicNode, EntryPayload, RaftSnapshotBuilder, StorageIOError};
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};

use crate::raft::error::StoreError;
use crate::raft::record;
use crate::raft::types::{
    Applied, Entry, LogId, NodeId, StorageError, StoredMembership, TypeConfig,
};
use crate::state::ReplicaState;

/// The snapshot file's name in the store folder.
pub const SNAPSHOT_FILE: &str = "raft-snapshot";

/// The replicated state as the controller reads it: written only by the
/// state machine, in log order.
pub type SharedState = Arc<RwLock<ReplicaState>>;

type Meta = SnapshotMeta<NodeId, BasicNode>;

/// A snapshot as kept in memory and in its file.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct StoredSnapshot {
    meta: Meta,
    /// The JSON of the [`ReplicaState`].
    data: Vec<u8>,
}

impl StoredSnapshot {
    fn to_snapshot(&self) -> Snapshot<TypeConfig> {
        Snapshot {
            meta: self.meta.clone(),
            snapshot: Box::new(Cursor::new(self.data.clone())),
        }
    }
}

/// The state machine of one controller replica.
#[derive(Debug)]
pub struct StateMachineStore {
    snapshot_path: PathBuf,
    state: SharedState,
    last_applied: Option<LogId>,
    membership: StoredMembership,
    current: Arc<Mutex<Option<StoredSnapshot>>>,
    /// Tells apart snapshots built at the same log id.
    built: u64,
}

impl StateMachineStore {
    /// Opens the state machine of the store folder `dir`: the state of its
    /// snapshot file if there is one, else an empty state.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).map_err(record::io_err("create folder", dir))?;
        let snapshot_path = dir.join(SNAPSHOT_FILE);
        let stored: Option<StoredSnapshot> = record::read_single(&snapshot_path)?;
        let mut sm = Self {
            snapshot_path,
            state: SharedState::default(),
            last_applied: None,
            membership: StoredMembership::default(),
            current: Arc::default(),
            built: 0,
        };
        if let Some(s) = stored {
            let state = decode_state(&s.data, &sm.snapshot_path)?;
            sm.load(&s.meta, state);
            *sm.current.lock() = Some(s);
        }
        Ok(sm)
    }

    /// The handle the rest of the controller reads the state through.
    pub fn shared(&self) -> SharedState {
        self.state.clone()
    }

    fn load(&mut self, meta: &Meta, state: ReplicaState) {
        *self.state.write() = state;
        self.last_applied = meta.last_log_id;
        self.membership = meta.last_membership.clone();
    }
}

fn decode_state(data: &[u8], path: &Path) -> Result<ReplicaState, StoreError> {
    serde_json::from_slice(data).map_err(|source| StoreError::Decode {
        path: path.to_owned(),
        offset: 0,
        source,
    })
}

/// Writes `snap` to its file on a blocking thread.
async fn persist(path: PathBuf, snap: StoredSnapshot) -> Result<(), StoreError> {
    let task_path = path.clone();
    tokio::task::spawn_blocking(move || record::write_atomic(&task_path, &snap))
        .await
        .map_err(|_| StoreError::TaskLost { path })?
}

/// Builds a snapshot from a copy of the state taken when openraft asked.
#[derive(Debug)]
pub struct SnapshotBuilder {
    snapshot_path: PathBuf,
    state: ReplicaState,
    last_applied: Option<LogId>,
    membership: StoredMembership,
    current: Arc<Mutex<Option<StoredSnapshot>>>,
    built: u64,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let data = serde_json::to_vec(&self.state)
            .map_err(|e| StorageIOError::write_snapshot(None, &e))?;
        let snapshot_id = match self.last_applied {
            Some(l) => format!("{}-{}-{}", l.leader_id.term, l.index, self.built),
            None => format!("none-{}", self.built),
        };
        let snap = StoredSnapshot {
            meta: Meta {
                last_log_id: self.last_applied,
                last_membership: self.membership.clone(),
                snapshot_id,
            },
            data,
        };
        persist(self.snapshot_path.clone(), snap.clone())
            .await
            .map_err(|e| StorageIOError::write_snapshot(Some(snap.meta.signature()), &e))?;
        let out = snap.to_snapshot();
        *self.current.lock() = Some(snap);
        Ok(out)
    }
}

impl RaftStateMachine<TypeConfig> for StateMachineStore {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), StorageError> {
        Ok((self.last_applied, self.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Applied>, StorageError>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let mut out = Vec::new();
        let mut state = self.state.write();
        for entry in entries {
            match entry.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(event) => state.apply(&event),
                EntryPayload::Membership(m) => {
                    self.membership = StoredMembership::new(Some(entry.log_id), m);
                }
            }
            self.last_applied = Some(entry.log_id);
            out.push(Applied {
                index: entry.log_id.index,
            });
        }
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.built += 1;
        SnapshotBuilder {
            snapshot_path: self.snapshot_path.clone(),
            state: self.state.read().clone(),
            last_applied: self.last_applied,
            membership: self.membership.clone(),
            current: self.current.clone(),
            built: self.built,
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &Meta,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        let data = snapshot.into_inner();
        let state = decode_state(&data, &self.snapshot_path)
            .map_err(|e| StorageIOError::read_snapshot(Some(meta.signature()), &e))?;
        let snap = StoredSnapshot {
            meta: meta.clone(),
            data,
        };
        persist(self.snapshot_path.clone(), snap.clone())
            .await
            .map_err(|e| StorageIOError::write_snapshot(Some(meta.signature()), &e))?;
        self.load(meta, state);
        *self.current.lock() = Some(snap);
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        Ok(self
            .current
            .lock()
            .as_ref()
            .map(StoredSnapshot::to_snapshot))
    }
}
