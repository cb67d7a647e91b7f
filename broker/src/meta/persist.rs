//! Write-behind persistence of one meta table: every change in memory
//! takes the next *generation*; a write covers every generation up to the
//! one its snapshot was taken at. Writes happen on the
//! [`MetaPersister`](super::MetaPersister)'s thread, coalesced (one write
//! for however many changes came since the last), never on the request
//! path. A caller that promises durability (an admin creating a topic)
//! waits until its generation is on disk, which wakes the persister; many
//! such waiters share one write.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use rmq_common::service::Signal;

use crate::error::MetaError;

use super::generation::Generation;
use super::journal::{copy_in_chunks, Journal, Keyed, KeyedFile};

/// Longest a caller waits for its change to reach the disk before it is
/// told the write did not happen in time (the change stays in memory and
/// is written later).
pub const PERSIST_WAIT_TIMEOUT: Duration = Duration::from_secs(10);

/// A meta table that writes itself through [`write_dirty`].
pub trait PersistTable: Send + Sync + std::fmt::Debug {
    /// The file it is written to.
    fn path(&self) -> &Path;
    /// Its change generations.
    fn generations(&self) -> &Generations;
    /// Its change journal, when its changes are journaled rather than
    /// written as a whole file each time.
    fn journal(&self) -> Option<&Journal> {
        None
    }
    /// The table encoded as its file holds it, and the generation that
    /// snapshot covers (read under the same lock as the table, so every
    /// change up to it is in the bytes). A journaled table takes its
    /// journal's queued lines under that lock too.
    fn encode_snapshot(&self) -> Result<Snapshot, MetaError>;
}

/// A table's copy as its file holds it.
#[derive(Debug)]
pub struct Snapshot {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// The latest change they hold.
    pub generation: Generation,
    /// Journal lines queued up to that change (journaled tables).
    pub cut: Vec<u8>,
}

/// Change generations of one table and how far its file has caught up.
#[derive(Debug, Default)]
pub struct Generations {
    state: Mutex<GenState>,
    /// Signalled when `on_disk` moves or a write fails.
    moved: Condvar,
    /// Serialises writes of the file: the temporary file has a fixed name,
    /// and `on_disk` must only grow.
    write: Mutex<()>,
    /// The persister's wake-up, once one runs.
    persister: OnceLock<Arc<Signal>>,
}

#[derive(Debug, Default)]
struct GenState {
    /// Generation of the latest change in memory.
    changed: u64,
    /// Latest generation known to be on disk.
    on_disk: u64,
    /// Highest generation a caller waits for.
    wanted: u64,
    /// Successful writes of the file.
    writes: u64,
    /// The last failed write: the generation it would have covered, and
    /// why it failed. Cleared by a successful write.
    failed: Option<(u64, String)>,
}

/// A table's persistence at a glance (for the persister's pass).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenStatus {
    /// Changes are in memory only.
    pub dirty: bool,
    /// A caller waits for a change not yet on disk.
    pub urgent: bool,
    /// Successful writes so far.
    pub writes: u64,
}

impl Generations {
    /// Records a change; call it while holding the table's write lock, so
    /// a snapshot taken under that lock covers exactly the generations
    /// marked before it.
    pub fn mark(&self) -> Generation {
        let mut s = self.state.lock();
        s.changed += 1;
        Generation(s.changed)
    }

    /// The generation of the latest change; call it under the table's lock
    /// when taking a snapshot.
    pub fn current(&self) -> Generation {
        Generation(self.state.lock().changed)
    }

    /// Where things stand.
    pub fn status(&self) -> GenStatus {
        let s = self.state.lock();
        GenStatus {
            dirty: s.changed > s.on_disk,
            urgent: s.wanted > s.on_disk,
            writes: s.writes,
        }
    }

    /// Lets waiters wake `signal`'s persister instead of writing
    /// themselves.
    pub(crate) fn attach(&self, signal: Arc<Signal>) {
        if self.persister.set(signal).is_err() {
            tracing::warn!("a meta table was handed to a second persister; the first keeps it");
        }
    }

    fn written(&self, generation: Generation) {
        let mut s = self.state.lock();
        s.on_disk = s.on_disk.max(generation.0);
        s.writes += 1;
        s.failed = None;
        drop(s);
        self.moved.notify_all();
    }

    fn write_failed(&self, generation: Generation, error: &MetaError) {
        self.state.lock().failed = Some((generation.0, error.to_string()));
        self.moved.notify_all();
    }
}

impl Snapshot {
    /// The snapshot of a journaled table held in `state`: the generation
    /// and the journal's cut taken under its read lock (writers queue lines
    /// under the write lock, so the cut holds exactly the changes up to
    /// that generation), then a fuzzy copy taken in chunks
    /// ([`copy_in_chunks`]): every change after the cut goes to the journal
    /// the compaction starts, and replaying those over the copy gives the
    /// table. Encoded outside the lock (a table of many thousand entries
    /// takes milliseconds to encode).
    pub fn of_journaled<V: Keyed, T: KeyedFile<V> + serde::Serialize>(
        path: &Path,
        state: &parking_lot::RwLock<T>,
        generations: &Generations,
        journal: &Journal,
    ) -> Result<Self, MetaError> {
        let (generation, cut) = {
            let _s = state.read();
            (generations.current(), journal.take().0)
        };
        let copy = copy_in_chunks(state);
        Ok(Self {
            bytes: super::encode_json(path, &copy)?,
            generation,
            cut,
        })
    }
}

/// Writes `table` if it has changes not yet on disk: a journaled table
/// appends its queued lines (and compacts when its journal is due), any
/// other is written whole (atomically: temporary file, fsync, rename,
/// folder fsync). Returns whether it wrote.
pub fn write_dirty(table: &dyn PersistTable) -> Result<bool, MetaError> {
    let gens = table.generations();
    let _serial = gens.write.lock();
    let Some(journal) = table.journal() else {
        if !gens.status().dirty {
            return Ok(false);
        }
        return write_whole(table).map(|_| true);
    };
    let (lines, last) = journal.take();
    // After lost lines, only a compaction makes anything durable: a line
    // appended now would stand on changes the journal does not hold.
    if !journal.is_lost() {
        match journal.append(&lines) {
            Ok(()) => {
                if let Some(generation) = last {
                    gens.written(generation);
                }
            }
            Err(e) => {
                // The table in memory holds what the lines did.
                tracing::warn!(error = %e, "appending to a meta journal failed; compacting instead");
                journal.lost();
            }
        }
    }
    if journal.needs_compaction(Instant::now()) {
        compact(table, journal)?;
        return Ok(true);
    }
    Ok(last.is_some())
}

/// Writes everything of `table` into its file: a journaled table is
/// compacted (at a clean stop, so Apache RocketMQ's tools find the whole
/// table in the JSON file).
pub fn write_all(table: &dyn PersistTable) -> Result<(), MetaError> {
    write_dirty(table)?;
    let gens = table.generations();
    let _serial = gens.write.lock();
    match table.journal() {
        Some(journal) if journal.holds_changes() => compact(table, journal),
        _ => Ok(()),
    }
}

fn write_whole(table: &dyn PersistTable) -> Result<Generation, MetaError> {
    let gens = table.generations();
    let snapshot = table.encode_snapshot().inspect_err(|e| {
        gens.write_failed(gens.current(), e);
    })?;
    match super::write_bytes(table.path(), &snapshot.bytes) {
        Ok(()) => {
            gens.written(snapshot.generation);
            Ok(snapshot.generation)
        }
        Err(e) => {
            gens.write_failed(snapshot.generation, &e);
            Err(e)
        }
    }
}

/// A compaction (see [`super::journal`]): cut, append, rotate, write the
/// file, drop what it covers. Called with the table's writes serialised.
fn compact(table: &dyn PersistTable, journal: &Journal) -> Result<(), MetaError> {
    let gens = table.generations();
    let fail = |generation: Generation, e: MetaError| {
        gens.write_failed(generation, &e);
        Err(e)
    };
    let snapshot = match table.encode_snapshot() {
        Ok(s) => s,
        Err(e) => return fail(gens.current(), e),
    };
    if let Err(e) = journal.append(&snapshot.cut) {
        tracing::warn!(error = %e, "appending to a meta journal failed; the file write covers it");
    }
    let written = journal
        .rotate()
        .and_then(|()| super::write_bytes(table.path(), &snapshot.bytes))
        .and_then(|()| journal.compacted(snapshot.bytes.len()));
    match written {
        Ok(()) => {
            gens.written(snapshot.generation);
            Ok(())
        }
        Err(e) => {
            journal.lost();
            fail(snapshot.generation, e)
        }
    }
}

/// Waits until `generation` of `table` is on disk, at most `timeout`.
/// Wakes the persister, so the write comes now rather than at its next
/// interval; without a running persister the caller writes itself.
pub fn wait_on_disk(
    table: &dyn PersistTable,
    generation: Generation,
    timeout: Duration,
) -> Result<(), MetaError> {
    let gens = table.generations();
    let deadline = Instant::now() + timeout;
    let mut s = gens.state.lock();
    if s.on_disk >= generation.0 {
        return Ok(());
    }
    s.wanted = s.wanted.max(generation.0);
    match gens.persister.get() {
        Some(signal) if !signal.stopping() => signal.wake(),
        _ => {
            drop(s);
            write_dirty(table)?;
            s = gens.state.lock();
        }
    }
    loop {
        if s.on_disk >= generation.0 {
            return Ok(());
        }
        if let Some((failed, why)) = &s.failed {
            if *failed >= generation.0 {
                return Err(MetaError::Io {
                    action: "write",
                    path: table.path().to_owned(),
                    source: std::io::Error::other(why.clone()),
                });
            }
        }
        if gens.moved.wait_until(&mut s, deadline).timed_out() && s.on_disk < generation.0 {
            return Err(MetaError::Io {
                action: "wait for the write of",
                path: table.path().to_owned(),
                source: std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("not written within {timeout:?}"),
                ),
            });
        }
    }
}
