//! Opening the store: validating the folder tree and finding each queue's
//! offsets with `pread` (a scan of its last file's written part, a few units
//! of its first file), without mapping anything.

use std::collections::HashMap;
use std::fs::{self, File};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rmq_common::cq::{CqError, QueueKey};

use super::checkpoint::MinEntry;
use super::queue::{QueueHandle, QueueState, Segment};
use super::unit::{is_zero, parse_file_name, RawUnit, UNIT, UNIT_I64};
use super::{corrupt, io_err, Env};
use crate::mapped_file::MappedFile;

/// Prefix of a topic folder being deleted (renamed first, so a crash never
/// leaves a half-deleted topic that looks corrupt).
pub(crate) const DELETED_PREFIX: &str = ".deleted-";

/// Bytes read per step of the scan for a file's end (a multiple of 20).
const SCAN_BYTES: usize = 64_000;
/// First step of that scan: most queues of a broker with very many queues
/// hold a few units, and reading 64 KB of each made a restart at 100,000
/// queues read 6 GB. Steps grow by 4x up to [`SCAN_BYTES`].
const FIRST_SCAN_BYTES: usize = 4_000;

/// Loads every queue under the root.
pub(crate) fn load_all(
    env: &Env,
    snapshot: &HashMap<QueueKey, MinEntry>,
    next_uid: &AtomicU64,
) -> Result<Vec<Arc<QueueHandle>>, CqError> {
    let mut out = Vec::new();
    for entry in fs::read_dir(&env.root).map_err(io_err("list", &env.root))? {
        let entry = entry.map_err(io_err("list", &env.root))?;
        let path = entry.path();
        let name = entry.file_name();
        let Some(topic) = name.to_str() else {
            return Err(corrupt(&path, "topic folder name is not UTF-8"));
        };
        if topic.starts_with(DELETED_PREFIX) {
            fs::remove_dir_all(&path).map_err(io_err("finish deleting", &path))?;
            continue;
        }
        if topic.starts_with('.') {
            continue;
        }
        if !entry.file_type().map_err(io_err("stat", &path))?.is_dir() {
            tracing::warn!(path = %path.display(), "ignoring a file in the consume-queue root");
            continue;
        }
        for q in fs::read_dir(&path).map_err(io_err("list", &path))? {
            let q = q.map_err(io_err("list", &path))?;
            let qpath = q.path();
            let queue_id = q
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<i32>().ok().filter(|id| id.to_string() == s));
            let Some(queue_id) = queue_id else {
                return Err(corrupt(&qpath, "queue folder name is not a queue id"));
            };
            if !q.file_type().map_err(io_err("stat", &qpath))?.is_dir() {
                return Err(corrupt(&qpath, "queue entry is not a folder"));
            }
            let key = QueueKey::new(topic, queue_id);
            let uid = next_uid.fetch_add(1, Ordering::Relaxed);
            if let Some(h) = load_queue(env, key, &qpath, snapshot, uid)? {
                out.push(h);
            }
        }
    }
    Ok(out)
}

/// Lists and validates a queue's files: 20-digit names, the configured size,
/// aligned and contiguous start offsets.
fn list_segments(dir: &Path, file_size: i64) -> Result<Vec<i64>, CqError> {
    let mut found = Vec::new();
    for e in fs::read_dir(dir).map_err(io_err("list", dir))? {
        let e = e.map_err(io_err("list", dir))?;
        let path = e.path();
        let name = e.file_name();
        if name.to_str().is_some_and(|n| n.ends_with(".tmp")) {
            // A file whose creation a crash interrupted: never named, never
            // written.
            fs::remove_file(&path).map_err(io_err("remove", &path))?;
            tracing::info!(path = %path.display(), "removed a consume-queue file left half-created by a crash");
            continue;
        }
        let Some(start) = name.to_str().and_then(parse_file_name) else {
            return Err(corrupt(&path, "not a consume-queue file name (20 digits)"));
        };
        let meta = e.metadata().map_err(io_err("stat", &path))?;
        if !meta.is_file() {
            return Err(corrupt(&path, "not a regular file"));
        }
        found.push((start, meta.len(), path));
    }
    found.sort_unstable_by_key(|(start, _, _)| *start);
    // An empty last file is one whose creation a crash cut short before its
    // size was set (stores written before files were created under a
    // `.tmp` name): nothing was ever written to it.
    if found.last().is_some_and(|(_, len, _)| *len == 0) {
        if let Some((_, _, path)) = found.pop() {
            fs::remove_file(&path).map_err(io_err("remove", &path))?;
            tracing::warn!(path = %path.display(), "removed an empty last consume-queue file left by a crash during its creation");
        }
    }
    let mut starts = Vec::new();
    for (start, len, path) in found {
        if len != file_size as u64 {
            return Err(corrupt(&path, format!("{len} bytes, expected {file_size}")));
        }
        if start % file_size != 0 {
            return Err(corrupt(
                &path,
                format!("start offset is not a multiple of {file_size}"),
            ));
        }
        starts.push(start);
    }
    starts.sort_unstable();
    for w in starts.windows(2) {
        if w[1] != w[0] + file_size {
            return Err(corrupt(
                dir,
                format!("files at {} and {} are not contiguous", w[0], w[1]),
            ));
        }
    }
    Ok(starts)
}

/// Loads one queue; `None` for a folder without files.
fn load_queue(
    env: &Env,
    key: QueueKey,
    dir: &Path,
    snapshot: &HashMap<QueueKey, MinEntry>,
    uid: u64,
) -> Result<Option<Arc<QueueHandle>>, CqError> {
    let mut starts = list_segments(dir, env.file_size)?;
    let mut removed = false;
    let (last, end) = loop {
        let Some(&last) = starts.last() else {
            return Ok(None);
        };
        let path = Env::segment_path(dir, last);
        let end = scan_end(&path, env.file_size)?;
        if end > 0 || starts.len() == 1 {
            break (last, end);
        }
        // Created but never written: a crash between the two.
        tracing::info!(path = %path.display(), "removing an empty trailing consume-queue file");
        fs::remove_file(&path).map_err(io_err("delete", &path))?;
        starts.pop();
        removed = true;
    };
    let lo = starts.first().map_or(0, |s| s / UNIT_I64);
    let max = (last + end) / UNIT_I64;
    let mut state = QueueState::new();
    state.segments = starts.into_iter().map(Segment::new).collect();
    state.min = lo;
    state.max = max;
    let entry = snapshot.get(&key).cloned();
    let h = QueueHandle::new(key, uid, env, state, true);
    h.dir_dirty.store(removed, Ordering::Release);
    {
        let mut st = h.state.write();
        let verified = match entry {
            Some(e) if lo <= e.pred_offset && e.pred_offset < e.min && e.min <= max => {
                let u = h.unit_at(&st, e.pred_offset)?;
                (!u.is_blank() && u.phy == e.pred_phy).then_some(e)
            }
            _ => None,
        };
        if let Some(e) = verified {
            st.min = e.min;
            st.min_pred = Some((e.pred_offset, e.pred_phy));
        } else {
            st.min = h.next_record(&st, lo, max)?.map_or(max, |(j, _)| j);
        }
        if !st.is_empty() {
            match h.prev_record(&st, max - 1, st.min)? {
                Some((j, _)) if j + 1 < max => {
                    // Blanks after the last record: a hole fill whose record
                    // was never written. Reput writes both again.
                    h.cut(&mut st, j + 1, env)?;
                }
                Some((_, u)) => {
                    st.last_phy = u.phy;
                    st.max_phy_end = u.phy_end();
                }
                None => st.min = st.max,
            }
        }
    }
    Ok(Some(h))
}

/// Byte length of the written part of a segment: up to the first all-zero
/// unit, or the first unit that cannot be a record (logged). Non-zero bytes
/// after the end within the same read (pages written back out of order
/// before a power loss) are zeroed, so a later append cannot make them look
/// like units again.
fn scan_end(path: &Path, file_size: i64) -> Result<i64, CqError> {
    let f = File::open(path).map_err(io_err("open", path))?;
    let size = file_size as usize;
    let mut buf = vec![0u8; SCAN_BYTES.min(size)];
    let mut step = FIRST_SCAN_BYTES.min(buf.len());
    let mut pos = 0usize;
    while pos < size {
        let n = step.min(size - pos);
        step = (step * 4).min(buf.len());
        f.read_exact_at(&mut buf[..n], pos as u64)
            .map_err(io_err("read", path))?;
        for (k, c) in buf[..n].chunks_exact(UNIT).enumerate() {
            let at = pos + k * UNIT;
            let valid = RawUnit::decode(c).is_some_and(|u| u.is_valid());
            if is_zero(c) && is_zero(&buf[k * UNIT..n]) {
                return Ok(at as i64);
            }
            if !valid {
                tracing::warn!(
                    path = %path.display(),
                    byte = at,
                    "consume queue ends at an invalid unit or has data after its end; zeroing the rest"
                );
                zero_from(path, at, size)?;
                return Ok(at as i64);
            }
        }
        pos += n;
    }
    Ok(file_size)
}

/// Zeroes a segment from byte `at` to its end, durably.
fn zero_from(path: &Path, at: usize, size: usize) -> Result<(), CqError> {
    let mut file = MappedFile::open(path, 0, size).map_err(io_err("map", path))?;
    file.truncate_to(at);
    drop(file);
    File::open(path)
        .and_then(|f| f.sync_data())
        .map_err(io_err("fsync", path))
}
