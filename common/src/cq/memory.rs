//! The in-memory model of [`ConsumeQueueStore`]: plain maps, no durability.
//! Real backends are checked against it.

use std::collections::{BTreeMap, HashMap};

use parking_lot::Mutex;

use super::{
    Boundary, ConsumeQueueStore, CqError, CqPut, CqStats, CqUnit, QueueKey, StoreTimeSource,
};
use crate::config::CqBackend;

#[derive(Debug, Default)]
struct QueueModel {
    min_offset: i64,
    units: BTreeMap<i64, (CqUnit, i64)>,
}

impl QueueModel {
    fn max_offset(&self) -> i64 {
        self.units
            .last_key_value()
            .map_or(self.min_offset, |(k, _)| k + 1)
    }

    fn max_phy_end(&self) -> i64 {
        self.units
            .values()
            .next_back()
            .map_or(-1, |(u, _)| u.phy_offset + i64::from(u.size))
    }
}

#[derive(Debug, Default)]
struct State {
    queues: HashMap<QueueKey, QueueModel>,
    dispatched: i64,
    closed: bool,
}

/// Consume queues held in memory.
#[derive(Debug, Default)]
pub struct MemoryConsumeQueueStore {
    state: Mutex<State>,
}

impl MemoryConsumeQueueStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> Result<T, CqError>) -> Result<T, CqError> {
        let mut state = self.state.lock();
        if state.closed {
            return Err(CqError::Closed);
        }
        f(&mut state)
    }
}

fn key(topic: &str, queue_id: i32) -> QueueKey {
    QueueKey::new(topic, queue_id)
}

impl ConsumeQueueStore for MemoryConsumeQueueStore {
    fn backend(&self) -> CqBackend {
        CqBackend::Memory
    }

    fn put(&self, batch: &[CqPut], dispatched_to: i64) -> Result<(), CqError> {
        self.with(|s| {
            for p in batch {
                let q = s.queues.entry(key(&p.topic, p.queue_id)).or_default();
                if p.phy_offset + i64::from(p.size) <= q.max_phy_end() {
                    continue;
                }
                if q.units.is_empty() {
                    q.min_offset = p.queue_offset;
                } else if p.queue_offset < q.max_offset() {
                    continue;
                }
                let unit = CqUnit {
                    queue_offset: p.queue_offset,
                    phy_offset: p.phy_offset,
                    size: p.size,
                    tags_code: p.tags_code,
                };
                q.units.insert(p.queue_offset, (unit, p.store_timestamp));
            }
            s.dispatched = s.dispatched.max(dispatched_to);
            Ok(())
        })
    }

    fn get(
        &self,
        topic: &str,
        queue_id: i32,
        from: i64,
        max_count: usize,
        out: &mut Vec<CqUnit>,
    ) -> Result<(), CqError> {
        self.with(|s| {
            let Some(q) = s.queues.get(&key(topic, queue_id)) else {
                return Ok(());
            };
            CqError::check_not_compacted(topic, queue_id, from, q.min_offset)?;
            // Dense read: stop at the first missing offset, as the RocksDB
            // backend's multi-get does.
            for (expected, (off, (unit, _))) in (from..).zip(q.units.range(from..).take(max_count))
            {
                if *off != expected {
                    break;
                }
                out.push(*unit);
            }
            Ok(())
        })
    }

    fn min_offset(&self, topic: &str, queue_id: i32) -> Result<i64, CqError> {
        self.with(|s| {
            Ok(s.queues
                .get(&key(topic, queue_id))
                .map_or(0, |q| q.min_offset))
        })
    }

    fn max_offset(&self, topic: &str, queue_id: i32) -> Result<i64, CqError> {
        self.with(|s| {
            Ok(s.queues
                .get(&key(topic, queue_id))
                .map_or(0, QueueModel::max_offset))
        })
    }

    fn dispatched_phy_offset(&self) -> Result<i64, CqError> {
        self.with(|s| Ok(s.dispatched))
    }

    fn truncate_from_phy(&self, phy_offset: i64) -> Result<(), CqError> {
        self.with(|s| {
            for q in s.queues.values_mut() {
                q.units.retain(|_, (u, _)| u.phy_offset < phy_offset);
            }
            s.dispatched = s.dispatched.min(phy_offset);
            Ok(())
        })
    }

    fn correct_min_offset(&self, commit_log_min: i64) -> Result<(), CqError> {
        self.with(|s| {
            for q in s.queues.values_mut() {
                let first = q
                    .units
                    .iter()
                    .find(|(_, (u, _))| u.phy_offset >= commit_log_min)
                    .map(|(k, _)| *k);
                let new_min = first.unwrap_or_else(|| q.max_offset());
                if new_min > q.min_offset {
                    q.min_offset = new_min;
                }
                let min = q.min_offset;
                q.units.retain(|k, _| *k >= min);
            }
            Ok(())
        })
    }

    fn offset_by_time(
        &self,
        topic: &str,
        queue_id: i32,
        timestamp_ms: i64,
        boundary: Boundary,
        _times: &dyn StoreTimeSource,
    ) -> Result<i64, CqError> {
        self.with(|s| {
            let Some(q) = s.queues.get(&key(topic, queue_id)) else {
                return Ok(0);
            };
            let found = match boundary {
                Boundary::Lower => q
                    .units
                    .iter()
                    .find(|(_, (_, ts))| *ts >= timestamp_ms)
                    .map_or_else(|| q.max_offset(), |(k, _)| *k),
                Boundary::Upper => q
                    .units
                    .iter()
                    .rev()
                    .find(|(_, (_, ts))| *ts <= timestamp_ms)
                    .map_or(q.min_offset, |(k, _)| *k),
            };
            Ok(found)
        })
    }

    fn flush(&self) -> Result<(), CqError> {
        self.with(|_| Ok(()))
    }

    fn delete_topic(&self, topic: &str) -> Result<(), CqError> {
        self.with(|s| {
            s.queues.retain(|k, _| k.topic != topic);
            Ok(())
        })
    }

    fn queues(&self) -> Result<Vec<QueueKey>, CqError> {
        self.with(|s| {
            let mut keys: Vec<QueueKey> = s.queues.keys().cloned().collect();
            keys.sort();
            Ok(keys)
        })
    }

    fn stats(&self) -> CqStats {
        CqStats {
            queues: self.state.lock().queues.len() as u64,
            ..CqStats::default()
        }
    }

    fn close(&self) -> Result<(), CqError> {
        self.state.lock().closed = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoTimes;
    impl StoreTimeSource for NoTimes {
        fn store_time(&self, _: i64, _: i32) -> Option<i64> {
            None
        }
    }

    fn put(topic: &str, q: i32, off: i64, phy: i64) -> CqPut {
        CqPut {
            topic: topic.into(),
            queue_id: q,
            queue_offset: off,
            phy_offset: phy,
            size: 10,
            tags_code: 0,
            store_timestamp: phy,
        }
    }

    #[test]
    fn model_basics() {
        let s = MemoryConsumeQueueStore::new();
        s.put(
            &[put("t", 0, 0, 0), put("t", 0, 1, 10), put("t", 1, 5, 20)],
            30,
        )
        .unwrap();
        // replay is skipped
        s.put(&[put("t", 0, 1, 10)], 30).unwrap();
        assert_eq!(s.max_offset("t", 0).unwrap(), 2);
        assert_eq!(s.min_offset("t", 1).unwrap(), 5);
        assert_eq!(s.max_offset("t", 1).unwrap(), 6);
        let mut out = Vec::new();
        assert!(matches!(
            s.get("t", 1, 0, 10, &mut out),
            Err(CqError::Compacted { min_offset: 5, .. })
        ));
        s.get("t", 0, 0, 10, &mut out).unwrap();
        assert_eq!(out.len(), 2);
        s.truncate_from_phy(10).unwrap();
        assert_eq!(s.max_offset("t", 0).unwrap(), 1);
        assert_eq!(s.dispatched_phy_offset().unwrap(), 10);
        assert_eq!(
            s.offset_by_time("t", 0, 0, Boundary::Lower, &NoTimes)
                .unwrap(),
            0
        );
        assert_eq!(
            s.offset_by_time("t", 0, 5, Boundary::Lower, &NoTimes)
                .unwrap(),
            1
        );
        s.correct_min_offset(5).unwrap();
        assert_eq!(s.min_offset("t", 0).unwrap(), 1);
        s.close().unwrap();
        assert!(matches!(s.flush(), Err(CqError::Closed)));
    }
}
