//! POP state in RocksDB, as RocketMQ's RIP-73 keeps it: one record per
//! popped (not orderly) message in column family `popState` of the
//! database at `<storePathRootDir>/kvStore`, keyed by the instant it
//! becomes visible again, so the due records are a range scan from the
//! start. An ack deletes the record; a change of invisible time writes a
//! new one and deletes the old. No revive topic, no timer.
//!
//! Key: 8-byte big-endian `popTime + invisibleTime`, the group, `@`, the
//! topic read, `@`, 4-byte big-endian queue id, `@`, 8-byte big-endian
//! queue offset. Value: RocketMQ's JSON (`popTime`, `groupId`, `topicId`,
//! `queueId`, `retryFlag`, `invisibleTime`, `offset`, `attemptTimes`).
//!
//! Where each queue's pops continue is kept beside the records (column
//! family `default`, key `o` + group `@` topic `@` queue id), written in
//! the same batch as the pop's records, so a restart never hands out again
//! what was popped before it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use rmq_common::pop::{
    retry_flag, Acked, Due, PopCheckPoint, PopOffset, PopStateError, PopStateStore, Popped,
};
use rocksdb::{ColumnFamilyDescriptor, IteratorMode, Options, WriteBatch, WriteOptions, DB};
use serde::{Deserialize, Serialize};

const FORM: &str = "rocksdb";
const CF_POP: &str = "popState";
const CF_DEFAULT: &str = "default";
const OFFSET_PREFIX: u8 = b'o';

/// One popped message (RocketMQ's `PopConsumerRecord`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    pop_time: i64,
    group_id: String,
    topic_id: String,
    queue_id: i32,
    retry_flag: i32,
    invisible_time: i64,
    offset: i64,
    #[serde(default)]
    attempt_times: i32,
}

/// The RocksDB form of [`PopStateStore`].
pub struct RocksPopState {
    db: DB,
    path: PathBuf,
    write: WriteOptions,
    broker_name: String,
    /// Next pop offset per (group, topic, queue), as stored.
    offsets: Mutex<HashMap<(String, String, i32), i64>>,
}

impl std::fmt::Debug for RocksPopState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksPopState")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn record_key(deadline: i64, group: &str, topic: &str, queue_id: i32, offset: i64) -> Vec<u8> {
    let mut k = Vec::with_capacity(8 + group.len() + topic.len() + 16);
    k.extend_from_slice(&deadline.to_be_bytes());
    k.extend_from_slice(group.as_bytes());
    k.push(b'@');
    k.extend_from_slice(topic.as_bytes());
    k.push(b'@');
    k.extend_from_slice(&queue_id.to_be_bytes());
    k.push(b'@');
    k.extend_from_slice(&offset.to_be_bytes());
    k
}

fn offset_key(group: &str, topic: &str, queue_id: i32) -> Vec<u8> {
    let mut k = vec![OFFSET_PREFIX];
    k.extend_from_slice(format!("{group}@{topic}@{queue_id}").as_bytes());
    k
}

fn parse_offset_key(k: &[u8]) -> Option<(String, String, i32)> {
    let s = std::str::from_utf8(k.strip_prefix(&[OFFSET_PREFIX])?).ok()?;
    let (rest, queue) = s.rsplit_once('@')?;
    let (group, topic) = rest.split_once('@')?;
    Some((group.to_owned(), topic.to_owned(), queue.parse().ok()?))
}

impl RocksPopState {
    /// Opens (or creates) the database under `root/kvStore`. `sync`: every
    /// write waits for its WAL to reach the disk (SYNC_FLUSH); otherwise
    /// the WAL is written without a sync, which a process crash does not
    /// lose.
    pub fn open(root: &Path, broker_name: &str, sync: bool) -> Result<Self, PopStateError> {
        let path = root.join("kvStore");
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        let cfs = vec![
            ColumnFamilyDescriptor::new(CF_DEFAULT, Options::default()),
            ColumnFamilyDescriptor::new(CF_POP, Options::default()),
        ];
        let db = DB::open_cf_descriptors(&opts, &path, cfs).map_err(|e| PopStateError::Read {
            form: FORM,
            reason: format!("opening {}: {e}", path.display()),
        })?;
        let mut write = WriteOptions::default();
        write.set_sync(sync);
        let s = Self {
            db,
            path,
            write,
            broker_name: broker_name.to_owned(),
            offsets: Mutex::default(),
        };
        s.load_offsets()?;
        Ok(s)
    }

    fn read_err(&self, e: impl std::fmt::Display) -> PopStateError {
        PopStateError::Read {
            form: FORM,
            reason: format!("{}: {e}", self.path.display()),
        }
    }

    fn write_err(&self, what: &'static str, e: impl std::fmt::Display) -> PopStateError {
        PopStateError::Write {
            form: FORM,
            what,
            reason: format!("{}: {e}", self.path.display()),
        }
    }

    fn load_offsets(&self) -> Result<(), PopStateError> {
        let cf = self
            .db
            .cf_handle(CF_DEFAULT)
            .ok_or_else(|| self.read_err("no default column family"))?;
        let mut map = self.offsets.lock();
        for item in self.db.iterator_cf(&cf, IteratorMode::Start) {
            let (k, v) = item.map_err(|e| self.read_err(e))?;
            if let (Some(key), Ok(bytes)) = (parse_offset_key(&k), <[u8; 8]>::try_from(&*v)) {
                map.insert(key, i64::from_be_bytes(bytes));
            }
        }
        Ok(())
    }

    fn apply(&self, what: &'static str, batch: WriteBatch) -> Result<(), PopStateError> {
        self.db
            .write_opt(batch, &self.write)
            .map_err(|e| self.write_err(what, e))
    }
}

impl PopStateStore for RocksPopState {
    fn name(&self) -> &'static str {
        FORM
    }

    fn popped(&self, p: &Popped) -> Result<(), PopStateError> {
        let ck = &p.ck;
        let cf = self
            .db
            .cf_handle(CF_POP)
            .ok_or_else(|| self.write_err("pop", "no popState column family"))?;
        let dcf = self
            .db
            .cf_handle(CF_DEFAULT)
            .ok_or_else(|| self.write_err("pop", "no default column family"))?;
        let mut batch = WriteBatch::default();
        let deadline = ck.revive_time();
        let offsets = ck.offsets();
        for offset in &offsets {
            let r = Record {
                pop_time: ck.pop_time,
                group_id: ck.cid.clone(),
                topic_id: ck.topic.clone(),
                queue_id: ck.queue_id,
                retry_flag: retry_flag(&ck.topic).digit(),
                invisible_time: ck.invisible_time,
                offset: *offset,
                attempt_times: 0,
            };
            let v = serde_json::to_vec(&r).map_err(|e| self.write_err("pop", e))?;
            batch.put_cf(
                &cf,
                record_key(deadline, &ck.cid, &ck.topic, ck.queue_id, *offset),
                v,
            );
        }
        let end = offsets.iter().max().copied().unwrap_or(ck.start_offset) + 1;
        let key = (ck.cid.clone(), ck.topic.clone(), ck.queue_id);
        let mut map = self.offsets.lock();
        let next = map.get(&key).copied().unwrap_or(0).max(end);
        batch.put_cf(
            &dcf,
            offset_key(&ck.cid, &ck.topic, ck.queue_id),
            next.to_be_bytes(),
        );
        self.apply("pop", batch)?;
        map.insert(key, next);
        Ok(())
    }

    fn acked(&self, a: &Acked) -> Result<(), PopStateError> {
        let cf = self
            .db
            .cf_handle(CF_POP)
            .ok_or_else(|| self.write_err("ack", "no popState column family"))?;
        let deadline = a.pop_time.saturating_add(a.invisible_time);
        let mut batch = WriteBatch::default();
        for offset in &a.offsets {
            batch.delete_cf(
                &cf,
                record_key(deadline, &a.group, &a.topic, a.queue_id, *offset),
            );
        }
        self.apply("ack", batch)
    }

    fn due(&self, now_ms: i64, max: usize) -> Result<Vec<Due>, PopStateError> {
        let cf = self
            .db
            .cf_handle(CF_POP)
            .ok_or_else(|| self.read_err("no popState column family"))?;
        let mut out = Vec::new();
        for item in self.db.iterator_cf(&cf, IteratorMode::Start) {
            let (k, v) = item.map_err(|e| self.read_err(e))?;
            let Some(deadline) = k.get(..8).and_then(|b| <[u8; 8]>::try_from(b).ok()) else {
                continue;
            };
            if i64::from_be_bytes(deadline) > now_ms || out.len() >= max {
                break;
            }
            let r: Record = serde_json::from_slice(&v).map_err(|e| PopStateError::Corrupt {
                form: FORM,
                at: format!("{}: key {k:?}", self.path.display()),
                reason: e.to_string(),
            })?;
            out.push(Due {
                ck: PopCheckPoint {
                    start_offset: r.offset,
                    pop_time: r.pop_time,
                    invisible_time: r.invisible_time,
                    bit_map: 0,
                    num: 1,
                    queue_id: r.queue_id,
                    topic: r.topic_id,
                    cid: r.group_id,
                    revive_offset: 0,
                    queue_offset_diff: vec![0],
                    broker_name: self.broker_name.clone(),
                    re_put_times: None,
                    revive_time_field: 0,
                },
                revive_qid: 0,
                offsets: vec![r.offset],
            });
        }
        Ok(out)
    }

    fn revived(&self, done: &[Due]) -> Result<(), PopStateError> {
        let cf = self
            .db
            .cf_handle(CF_POP)
            .ok_or_else(|| self.write_err("revive", "no popState column family"))?;
        let mut batch = WriteBatch::default();
        for d in done {
            for offset in &d.offsets {
                batch.delete_cf(
                    &cf,
                    record_key(
                        d.ck.revive_time(),
                        &d.ck.cid,
                        &d.ck.topic,
                        d.ck.queue_id,
                        *offset,
                    ),
                );
            }
        }
        self.apply("revive", batch)
    }

    fn pop_offsets(&self) -> Vec<PopOffset> {
        self.offsets
            .lock()
            .iter()
            .map(|((group, topic, queue_id), next)| PopOffset {
                group: group.clone(),
                topic: topic.clone(),
                queue_id: *queue_id,
                next_offset: *next,
            })
            .collect()
    }

    fn in_flight(&self) -> u64 {
        self.db
            .cf_handle(CF_POP)
            .and_then(|cf| {
                self.db
                    .property_int_value_cf(&cf, "rocksdb.estimate-num-keys")
                    .ok()
                    .flatten()
            })
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_by_deadline_and_offsets_parse_back() {
        assert!(record_key(5, "G", "T", 0, 9) < record_key(6, "A", "A", 0, 0));
        let k = offset_key("G", "%RETRY%G_T", 3);
        assert_eq!(
            parse_offset_key(&k),
            Some(("G".into(), "%RETRY%G_T".into(), 3))
        );
    }
}
