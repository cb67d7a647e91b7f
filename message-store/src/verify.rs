//! `cq verify`: the shadow backend compared with the serving one, queue by
//! queue, while both keep being written.
//!
//! Both are compared below one CommitLog offset, the lower of the two
//! written positions when the check starts: below it both hold their final
//! units (units are only appended; retention raises both mins alike). Per
//! queue: the min offset, the number of units below that offset, and the
//! units themselves (offset, CommitLog offset, size, tags code), every one
//! or one in `every`.

use std::collections::BTreeSet;

use rmq_common::cq::{ConsumeQueueStore, CqError, CqUnit, QueueKey};
use rmq_store_file::StoreError;
use serde::Serialize;

use super::MessageStore;

/// Units read per call when every unit is compared.
const CHUNK: usize = 1024;

/// How thorough a verify is.
#[derive(Debug, Clone, Copy)]
pub struct VerifyOptions {
    /// Compare one unit in this many (1: every unit); the last unit below
    /// the bound is always compared.
    pub every: u64,
    /// Differences listed at most (the rest are counted).
    pub max_differences: usize,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        Self {
            every: 1,
            max_differences: 20,
        }
    }
}

/// One way the two backends disagree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Difference {
    /// Topic.
    pub topic: String,
    /// Queue id.
    pub queue_id: i32,
    /// `minOffset`, `unitsBelowBound` or `unit`.
    pub what: String,
    /// The queue offset of a differing unit.
    pub offset: Option<i64>,
    /// What the serving backend has.
    pub serving: String,
    /// What the shadow has.
    pub shadow: String,
}

/// What a verify found.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyReport {
    /// The serving engine.
    pub serving: String,
    /// The shadow engine.
    pub shadow: String,
    /// Units stored below this CommitLog offset were compared.
    pub bound: i64,
    /// One unit in this many was compared.
    pub every: u64,
    /// Queues either backend knows.
    pub queues: u64,
    /// Units compared.
    pub units_compared: u64,
    /// The first differences, in queue order.
    pub differences: Vec<Difference>,
    /// Differences found beyond those listed.
    pub more_differences: u64,
}

impl VerifyReport {
    /// No difference found.
    pub fn equal(&self) -> bool {
        self.differences.is_empty() && self.more_differences == 0
    }

    fn add(&mut self, limit: usize, d: Difference) {
        if self.differences.len() < limit {
            self.differences.push(d);
        } else {
            self.more_differences += 1;
        }
    }
}

/// Why a verify could not run.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// Nothing to compare with.
    #[error("there is no shadow consume queue to compare with")]
    NoShadow,
    /// Reading a backend failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<CqError> for VerifyError {
    fn from(e: CqError) -> Self {
        Self::Store(e.into())
    }
}

impl MessageStore {
    /// Compares the shadow with the serving backend (see the module doc).
    pub fn verify_consume_queues(&self, opts: VerifyOptions) -> Result<VerifyReport, VerifyError> {
        let serving = self.consume_queue();
        let (shadow, shadow_at) = self
            .dispatcher
            .with_shadow(|s| (s.cq(), s.written_to()))
            .ok_or(VerifyError::NoShadow)?;
        let bound = self.dispatcher.reput_from().min(shadow_at);
        let every = opts.every.max(1);
        let mut report = VerifyReport {
            serving: serving.backend().to_string(),
            shadow: shadow.backend().to_string(),
            bound,
            every,
            queues: 0,
            units_compared: 0,
            differences: Vec::new(),
            more_differences: 0,
        };
        let queues: BTreeSet<(String, i32)> = serving
            .queues()?
            .into_iter()
            .chain(shadow.queues()?)
            .map(|QueueKey { topic, queue_id }| (topic, queue_id))
            .collect();
        report.queues = queues.len() as u64;
        let limit = opts.max_differences;
        for (topic, queue_id) in &queues {
            let diff = |what: &str, offset, s: String, h: String| Difference {
                topic: topic.clone(),
                queue_id: *queue_id,
                what: what.to_owned(),
                offset,
                serving: s,
                shadow: h,
            };
            let (s_min, h_min) = (
                serving.min_offset(topic, *queue_id)?,
                shadow.min_offset(topic, *queue_id)?,
            );
            if s_min != h_min {
                report.add(
                    limit,
                    diff("minOffset", None, s_min.to_string(), h_min.to_string()),
                );
            }
            let s_end = end_below(&*serving, topic, *queue_id, bound)?;
            let h_end = end_below(&*shadow, topic, *queue_id, bound)?;
            if s_end != h_end {
                report.add(
                    limit,
                    diff(
                        "unitsBelowBound",
                        None,
                        format!("{} (offsets {s_min}..{s_end})", s_end - s_min),
                        format!("{} (offsets {h_min}..{h_end})", h_end - h_min),
                    ),
                );
            }
            let (from, to) = (s_min.max(h_min), s_end.min(h_end));
            let mut offset = from;
            while offset < to {
                let n = if every == 1 {
                    usize::try_from(to - offset).unwrap_or(CHUNK).min(CHUNK)
                } else {
                    1
                };
                let (a, b) = (
                    read(&*serving, topic, *queue_id, offset, n)?,
                    read(&*shadow, topic, *queue_id, offset, n)?,
                );
                for i in 0..a.len().max(b.len()) {
                    report.units_compared += 1;
                    let (x, y) = (a.get(i), b.get(i));
                    if x != y {
                        report.add(
                            limit,
                            diff("unit", Some(offset + i as i64), describe(x), describe(y)),
                        );
                    }
                }
                offset = if every == 1 {
                    offset + n as i64
                } else if offset + 1 < to {
                    // The last unit below the bound is always compared.
                    (offset + every as i64).min(to - 1)
                } else {
                    to
                };
            }
        }
        Ok(report)
    }
}

/// `n` units from `offset` (fewer if the queue ends).
fn read(
    cq: &dyn ConsumeQueueStore,
    topic: &str,
    queue_id: i32,
    offset: i64,
    n: usize,
) -> Result<Vec<CqUnit>, CqError> {
    let mut out = Vec::with_capacity(n);
    cq.get(topic, queue_id, offset, n, &mut out)?;
    Ok(out)
}

fn describe(unit: Option<&CqUnit>) -> String {
    match unit {
        Some(u) => format!("phy {} size {} tags {}", u.phy_offset, u.size, u.tags_code),
        None => "no unit".to_owned(),
    }
}

/// The first queue offset whose unit was stored at or past CommitLog
/// offset `bound` (the max offset if none was): a binary search, as units
/// of a queue are in CommitLog order.
fn end_below(
    cq: &dyn ConsumeQueueStore,
    topic: &str,
    queue_id: i32,
    bound: i64,
) -> Result<i64, CqError> {
    let (mut lo, mut hi) = (
        cq.min_offset(topic, queue_id)?,
        cq.max_offset(topic, queue_id)?,
    );
    let phy_at = |offset: i64| -> Result<Option<i64>, CqError> {
        Ok(read(cq, topic, queue_id, offset, 1)?
            .first()
            .map(|u| u.phy_offset))
    };
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match phy_at(mid)? {
            Some(phy) if phy < bound => lo = mid + 1,
            _ => hi = mid,
        }
    }
    Ok(lo)
}
