//! Multi-dispatch into light message queues (LMQ): the two properties a
//! message carries, `INNER_MULTI_DISPATCH` (the queues, written by the
//! producer) and `INNER_MULTI_QUEUE_OFFSET` (the offset taken in each,
//! written by the broker at append).
//!
//! Both are comma-separated lists of the same length. A name that is not a
//! valid LMQ name (it must start with `%LMQ%` and be a valid topic name), or
//! that repeats an earlier name of the same message, takes no offset: its
//! entry in the offset list is empty and no unit is written for it.

use crate::names::{is_lmq, validate_topic};

/// Separator of both lists (`MixAll.LMQ_DISPATCH_SEPARATOR`).
pub const SEPARATOR: char = ',';

/// One light message queue a stored message belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LmqTarget {
    /// The queue's name (its "topic"; the queue id is always 0).
    pub queue: String,
    /// The message's queue offset in it.
    pub offset: i64,
}

/// Why a record's two lists could not be read together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LmqError {
    /// The lists have different lengths.
    #[error("INNER_MULTI_DISPATCH names {names} queues but INNER_MULTI_QUEUE_OFFSET holds {offsets} offsets")]
    LengthMismatch {
        /// Entries in INNER_MULTI_DISPATCH.
        names: usize,
        /// Entries in INNER_MULTI_QUEUE_OFFSET.
        offsets: usize,
    },
    /// An offset is not a non-negative integer.
    #[error("INNER_MULTI_QUEUE_OFFSET entry {value:?} for {queue} is not a queue offset")]
    BadOffset {
        /// The queue.
        queue: String,
        /// The entry.
        value: String,
    },
}

/// Whether `props` carry a non-blank INNER_MULTI_DISPATCH (the message names
/// queues to be dispatched into).
pub fn names_queues(props: &crate::message::Properties) -> bool {
    props
        .get(crate::constants::property::INNER_MULTI_DISPATCH)
        .is_some_and(|v| !v.trim().is_empty())
}

/// Whether `name` may be a light message queue: `%LMQ%` and a valid topic.
pub fn is_valid_lmq_name(name: &str) -> bool {
    is_lmq(name) && validate_topic(name).is_ok()
}

/// The entries of an `INNER_MULTI_DISPATCH` value, each `Some(name)` when it
/// takes an offset (a valid LMQ name not seen earlier in the list), else
/// `None`.
pub fn dispatch_entries(dispatch: &str) -> Vec<Option<&str>> {
    // A set, not a scan of `out`: the list may hold thousands of names and
    // this runs under the put lock.
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    dispatch
        .split(SEPARATOR)
        .map(|name| (is_valid_lmq_name(name) && seen.insert(name)).then_some(name))
        .collect()
}

/// The `INNER_MULTI_QUEUE_OFFSET` value for offsets taken per entry (empty
/// where an entry took none).
pub fn join_offsets(offsets: &[Option<i64>]) -> String {
    let mut out = String::with_capacity(offsets.len() * 4);
    for (i, o) in offsets.iter().enumerate() {
        if i > 0 {
            out.push(SEPARATOR);
        }
        if let Some(o) = o {
            out.push_str(&o.to_string());
        }
    }
    out
}

/// The queues a stored record is dispatched into, from its two property
/// values, in list order (an entry whose offset is empty takes nothing).
pub fn targets(dispatch: &str, offsets: &str) -> Result<Vec<LmqTarget>, LmqError> {
    let entries = dispatch_entries(dispatch);
    let values: Vec<&str> = offsets.split(SEPARATOR).collect();
    if entries.len() != values.len() {
        return Err(LmqError::LengthMismatch {
            names: entries.len(),
            offsets: values.len(),
        });
    }
    let mut out = Vec::new();
    for (entry, value) in entries.into_iter().zip(values) {
        let Some(queue) = entry else { continue };
        if value.is_empty() {
            continue;
        }
        match value.parse::<i64>() {
            Ok(offset) if offset >= 0 => out.push(LmqTarget {
                queue: queue.to_owned(),
                offset,
            }),
            _ => {
                return Err(LmqError::BadOffset {
                    queue: queue.to_owned(),
                    value: value.to_owned(),
                })
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_take_offsets_only_for_valid_distinct_lmq_names() {
        assert_eq!(
            dispatch_entries("%LMQ%a,plain,%LMQ%b,%LMQ%a,%LMQ%x/y,,%LMQ%c"),
            vec![
                Some("%LMQ%a"),
                None,
                Some("%LMQ%b"),
                None,
                None,
                None,
                Some("%LMQ%c")
            ]
        );
    }

    #[test]
    fn offsets_round_trip_through_their_property() {
        let joined = join_offsets(&[Some(3), None, Some(0), None]);
        assert_eq!(joined, "3,,0,");
        assert_eq!(
            targets("%LMQ%a,plain,%LMQ%b,%LMQ%a", &joined).unwrap(),
            vec![
                LmqTarget {
                    queue: "%LMQ%a".into(),
                    offset: 3
                },
                LmqTarget {
                    queue: "%LMQ%b".into(),
                    offset: 0
                },
            ]
        );
    }

    #[test]
    fn malformed_lists_are_named() {
        assert_eq!(
            targets("%LMQ%a,%LMQ%b", "1"),
            Err(LmqError::LengthMismatch {
                names: 2,
                offsets: 1
            })
        );
        assert!(matches!(
            targets("%LMQ%a", "x"),
            Err(LmqError::BadOffset { .. })
        ));
        assert!(matches!(
            targets("%LMQ%a", "-1"),
            Err(LmqError::BadOffset { .. })
        ));
    }
}
