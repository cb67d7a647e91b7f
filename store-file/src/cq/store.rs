//! [`FileConsumeQueueStore`]: opening, the map of queues, flushing and the
//! helpers the trait implementation (`api.rs`) is built from.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use rmq_common::config::CQ_UNIT_SIZE;
use rmq_common::cq::{CqError, CqPut, QueueKey};
use rmq_common::names::is_lmq;
use rmq_common::StoreConfig;

use super::checkpoint::{self, MinEntry};
use super::load::{self, DELETED_PREFIX};
use super::pool::MappingPool;
use super::queue::{QueueHandle, QueueState};
use super::{io_err, Env};

type QueueMap = HashMap<String, BTreeMap<i32, Arc<QueueHandle>>>;

/// The classic file consume queue: one folder per topic and queue under
/// `<store root>/consumequeue`, fixed-size files of 20-byte units, mapped
/// lazily within `maxMappedConsumeQueueFiles`.
pub struct FileConsumeQueueStore {
    /// Root, file size, mapping budget.
    pub(super) env: Env,
    /// Topic -> queue id -> queue; locked only to find or insert a queue.
    pub(super) queues: RwLock<QueueMap>,
    /// Next queue identity for the mapping pool.
    pub(super) next_uid: AtomicU64,
    /// CommitLog offset reput has dispatched up to.
    pub(super) dispatched: AtomicI64,
    /// Serializes flushes so checkpoint files are written in order; holds
    /// the last persisted dispatched offset.
    pub(super) flush_lock: Mutex<Option<i64>>,
    /// `close` was called.
    pub(super) closed: AtomicBool,
    /// Why writes are refused (an earlier write or fsync failed).
    pub(super) poison: Mutex<Option<String>>,
    /// Queues of `%LMQ%` topics (`maxLmqConsumeQueueNum` reads it).
    pub(super) lmq_queues: AtomicU64,
}

impl std::fmt::Debug for FileConsumeQueueStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileConsumeQueueStore")
            .field("root", &self.env.root)
            .field("file_size", &self.env.file_size)
            .field("dispatched", &self.dispatched.load(Ordering::Relaxed))
            .field("closed", &self.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl FileConsumeQueueStore {
    /// Opens (creating if needed) the consume queues under
    /// `config.consume_queue_dir()`. Validates every queue folder and file
    /// name and size ([`CqError::Corrupt`] names the path), finds each
    /// queue's offsets without mapping its files, and restores the
    /// dispatched offset from its checkpoint (or, without one, takes the
    /// highest record end of any queue and writes the checkpoint).
    pub fn open(config: &StoreConfig) -> Result<Self, CqError> {
        let file_size = config.mapped_file_size_consume_queue_bytes;
        if file_size == 0 || !file_size.is_multiple_of(CQ_UNIT_SIZE) || file_size > i32::MAX as u64
        {
            return Err(CqError::InvalidArgument(format!(
                "mappedFileSizeConsumeQueue {file_size} must be a positive multiple of {CQ_UNIT_SIZE} below 2^31"
            )));
        }
        let root = config.consume_queue_dir();
        rmq_common::meta_file::create_dir_all_durable(&root).map_err(io_err("create", &root))?;
        checkpoint::remove_temp_files(&root)?;
        let env = Env {
            pool: MappingPool::new(config.max_mapped_consume_queue_files as usize, file_size),
            root,
            file_size: file_size as i64,
            pending_dirs: Mutex::new(BTreeSet::new()),
            min_dirty: AtomicBool::new(false),
        };
        let snapshot = checkpoint::read_min_offsets(&env.root);
        let next_uid = AtomicU64::new(0);
        let handles = load::load_all(&env, &snapshot, &next_uid)?;
        let checkpointed = checkpoint::read_dispatched(&env.root)?;
        let mut map = QueueMap::new();
        let mut max_end = 0i64;
        let lmq_queues = handles.iter().filter(|h| is_lmq(&h.key.topic)).count() as u64;
        for h in handles {
            max_end = max_end.max(h.state.read().max_phy_end);
            map.entry(h.key.topic.clone())
                .or_default()
                .insert(h.key.queue_id, h);
        }
        // Without a checkpoint (a new store, or one another broker wrote)
        // the highest record end of any queue is taken, and written down at
        // once. A store of ours then always has one: a power cut in the
        // middle of its first flush, with some queues synced and others
        // not, must not leave it to this guess (the power-loss tests saw
        // the queues that were not synced skip what they lost).
        let dispatched = match checkpointed {
            Some(d) => d,
            None => {
                checkpoint::write_dispatched(&env.root, max_end)?;
                max_end
            }
        };
        tracing::info!(
            root = %env.root.display(),
            queues = map.values().map(BTreeMap::len).sum::<usize>(),
            dispatched,
            from_checkpoint = checkpointed.is_some(),
            "file consume queue opened"
        );
        Ok(Self {
            env,
            queues: RwLock::new(map),
            next_uid,
            dispatched: AtomicI64::new(dispatched),
            flush_lock: Mutex::new(Some(dispatched)),
            closed: AtomicBool::new(false),
            poison: Mutex::new(None),
            lmq_queues: AtomicU64::new(lmq_queues),
        })
    }

    pub(super) fn check_open(&self) -> Result<(), CqError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(CqError::Closed);
        }
        Ok(())
    }

    pub(super) fn check_writable(&self) -> Result<(), CqError> {
        self.check_open()?;
        match self.poison.lock().as_ref() {
            Some(reason) => Err(CqError::Poisoned {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Refuses further writes after a failed write or fsync: the files may
    /// no longer match what callers were told.
    pub(super) fn poisoned(&self, e: CqError) -> CqError {
        if matches!(
            e,
            CqError::Io { .. } | CqError::Corrupt { .. } | CqError::Engine { .. }
        ) {
            tracing::error!(error = %e, "consume queue write failed; refusing writes until restart");
            self.poison.lock().get_or_insert_with(|| e.to_string());
        }
        e
    }

    pub(super) fn lookup(&self, topic: &str, queue_id: i32) -> Option<Arc<QueueHandle>> {
        self.queues.read().get(topic)?.get(&queue_id).cloned()
    }

    pub(super) fn lookup_or_create(&self, topic: &str, queue_id: i32) -> Arc<QueueHandle> {
        if let Some(h) = self.lookup(topic, queue_id) {
            return h;
        }
        let mut map = self.queues.write();
        let queues = map.entry(topic.to_owned()).or_default();
        queues
            .entry(queue_id)
            .or_insert_with(|| {
                if is_lmq(topic) {
                    self.lmq_queues.fetch_add(1, Ordering::Relaxed);
                }
                let uid = self.next_uid.fetch_add(1, Ordering::Relaxed);
                QueueHandle::new(
                    QueueKey::new(topic, queue_id),
                    uid,
                    &self.env,
                    QueueState::new(),
                    false,
                )
            })
            .clone()
    }

    pub(super) fn handles(&self) -> Vec<Arc<QueueHandle>> {
        self.queues
            .read()
            .values()
            .flat_map(|q| q.values().cloned())
            .collect()
    }

    pub(super) fn put_one(
        &self,
        p: &CqPut,
        cached: &mut Option<Arc<QueueHandle>>,
    ) -> Result<(), CqError> {
        loop {
            let h = match cached.take() {
                Some(h) if h.key.topic == p.topic && h.key.queue_id == p.queue_id => h,
                _ => self.lookup_or_create(&p.topic, p.queue_id),
            };
            let mut st = h.state.write();
            if st.deleted {
                continue; // deleted meanwhile: look the queue up again
            }
            h.put_unit(&mut st, p, &self.env)?;
            drop(st);
            *cached = Some(h);
            return Ok(());
        }
    }

    /// Flushes queues, then folders, then checkpoints: a checkpoint is
    /// written only after what it claims is durable.
    pub(super) fn flush_inner(&self) -> Result<(), CqError> {
        let mut persisted = self.flush_lock.lock();
        // Captured first: units dispatched after this point may miss the
        // queue flushes below, so the checkpoint must not claim them.
        let dispatched = self.dispatched.load(Ordering::Acquire);
        for h in self.handles() {
            h.flush()?;
        }
        self.env.pool.sync_unmapped()?;
        let dirs = std::mem::take(&mut *self.env.pending_dirs.lock());
        for (i, dir) in dirs.iter().enumerate() {
            if let Err(e) = checkpoint::sync_dir(dir) {
                self.env
                    .pending_dirs
                    .lock()
                    .extend(dirs.iter().skip(i).cloned());
                return Err(e);
            }
        }
        if self.env.min_dirty.swap(false, Ordering::AcqRel) {
            if let Err(e) = checkpoint::write_min_offsets(&self.env.root, &self.min_entries()) {
                self.env.min_dirty.store(true, Ordering::Release);
                return Err(e);
            }
        }
        if *persisted != Some(dispatched) {
            checkpoint::write_dispatched(&self.env.root, dispatched)?;
            *persisted = Some(dispatched);
        }
        Ok(())
    }

    fn min_entries(&self) -> Vec<MinEntry> {
        let mut entries = Vec::new();
        for h in self.handles() {
            let st = h.state.read();
            if let (Some((pred_offset, pred_phy)), false) = (st.min_pred, st.deleted) {
                entries.push(MinEntry {
                    topic: h.key.topic.clone(),
                    queue_id: h.key.queue_id,
                    min: st.min,
                    pred_offset,
                    pred_phy,
                });
            }
        }
        entries
    }

    /// Renames a topic folder out of the way: a crash then cannot leave half
    /// of it (which would look corrupt at the next open). Returns the new
    /// name, to be removed without any lock held.
    pub(super) fn unlink_topic_dir(&self, topic: &str) -> Result<Option<PathBuf>, CqError> {
        let dir = self.env.root.join(topic);
        if !dir.exists() {
            return Ok(None);
        }
        let uid = self.next_uid.fetch_add(1, Ordering::Relaxed);
        let doomed = self.env.root.join(format!("{DELETED_PREFIX}{topic}-{uid}"));
        std::fs::rename(&dir, &doomed).map_err(io_err("rename", &dir))?;
        Ok(Some(doomed))
    }
}

/// A topic name that is safe as a single path component.
pub(super) fn check_topic(topic: &str) -> Result<(), CqError> {
    let bad = topic.is_empty()
        || topic.starts_with('.')
        || topic.len() > 255
        || topic.contains(['/', '\\', '\0']);
    if bad {
        return Err(CqError::InvalidArgument(format!(
            "topic {topic:?} cannot be a consume-queue folder name"
        )));
    }
    Ok(())
}
