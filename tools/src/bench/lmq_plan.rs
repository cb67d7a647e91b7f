//! The pure part of `rmq-bench lmq`: which light message queues each
//! message goes to, what every LMQ must then hold, which LMQs are pulled
//! back, and the bodies that identify the messages.
//!
//! Message `i` goes to the `K` LMQs of indices `(i*K + k) mod L`, `k` in
//! `0..K`: the units `0..N*K` are laid over the `L` LMQs round-robin, so
//! every LMQ is used once `N*K >= L`, the LMQs of one message are distinct
//! while `K <= L`, and LMQ `j` holds the messages `(j + t*L) / K` for every
//! `t` with `j + t*L < N*K`, in increasing `i`.

use rmq_common::message::lmq::is_valid_lmq_name;

/// Why a plan cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A count is zero.
    #[error("--{0} must be at least 1")]
    Zero(&'static str),
    /// One message would name an LMQ twice.
    #[error("--fan-out {fan_out} is more than --lmqs {lmqs}: a message would name an LMQ twice")]
    FanOutAboveLmqs {
        /// K.
        fan_out: u64,
        /// L.
        lmqs: u64,
    },
    /// Some LMQs would get nothing.
    #[error("--messages {messages} x --fan-out {fan_out} is less than --lmqs {lmqs}: some LMQs would stay empty")]
    LmqsUnused {
        /// N.
        messages: u64,
        /// K.
        fan_out: u64,
        /// L.
        lmqs: u64,
    },
    /// The prefix makes names the broker would not take as LMQs.
    #[error("--topic-prefix {prefix:?} gives {example:?}, which is not a valid LMQ name (letters, digits, '-', '_', '%', '|', at most 127 characters)")]
    BadPrefix {
        /// The prefix.
        prefix: String,
        /// The longest name it gives.
        example: String,
    },
}

/// N messages, each to K of L LMQs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// N.
    pub messages: u64,
    /// K.
    pub fan_out: u64,
    /// L.
    pub lmqs: u64,
}

impl Plan {
    /// A plan that uses every LMQ, with distinct LMQs per message.
    pub fn new(messages: u64, fan_out: u64, lmqs: u64) -> Result<Self, PlanError> {
        for (v, name) in [(messages, "messages"), (fan_out, "fan-out"), (lmqs, "lmqs")] {
            if v == 0 {
                return Err(PlanError::Zero(name));
            }
        }
        if fan_out > lmqs {
            return Err(PlanError::FanOutAboveLmqs { fan_out, lmqs });
        }
        if messages.saturating_mul(fan_out) < lmqs {
            return Err(PlanError::LmqsUnused {
                messages,
                fan_out,
                lmqs,
            });
        }
        Ok(Self {
            messages,
            fan_out,
            lmqs,
        })
    }

    /// Units dispatched into LMQs in all: N*K.
    pub fn units(&self) -> u64 {
        self.messages * self.fan_out
    }

    /// The LMQ indices message `i` goes to, in the order it names them.
    pub fn targets(&self, i: u64) -> impl Iterator<Item = u64> + '_ {
        (0..self.fan_out).map(move |k| (i * self.fan_out + k) % self.lmqs)
    }

    /// The messages LMQ `j` holds, in increasing index (its offsets in the
    /// order one producer sending 0..N one by one would give).
    pub fn members(&self, j: u64) -> Vec<u64> {
        let units = self.units();
        (0..)
            .map(|t| j + t * self.lmqs)
            .take_while(|&u| u < units)
            .map(|u| u / self.fan_out)
            .collect()
    }

    /// How many messages LMQ `j` holds (`members(j).len()` without
    /// building it).
    pub fn count(&self, j: u64) -> u64 {
        self.units().saturating_sub(j).div_ceil(self.lmqs)
    }

    /// `sample` LMQ indices spread evenly over `0..L`, always the first and
    /// the last (all of them when `sample >= L`).
    pub fn sample(&self, sample: u64) -> Vec<u64> {
        let s = sample.min(self.lmqs);
        match s {
            0 => Vec::new(),
            1 => vec![0],
            _ => (0..s)
                .map(|n| (u128::from(n) * u128::from(self.lmqs - 1) / u128::from(s - 1)) as u64)
                .collect(),
        }
    }
}

/// The name of LMQ `index`: `%LMQ%<prefix>-<index>`.
pub fn lmq_name(prefix: &str, index: u64) -> String {
    format!("%LMQ%{prefix}-{index}")
}

/// `Err` when `prefix` gives names the broker would not treat as LMQs.
pub fn check_prefix(prefix: &str, lmqs: u64) -> Result<(), PlanError> {
    let example = lmq_name(prefix, lmqs.saturating_sub(1));
    if is_valid_lmq_name(&example) && rmq_common::names::validate_topic(prefix).is_ok() {
        Ok(())
    } else {
        Err(PlanError::BadPrefix {
            prefix: prefix.to_owned(),
            example,
        })
    }
}

/// The `INNER_MULTI_DISPATCH` value of message `i`.
pub fn dispatch_value(plan: &Plan, prefix: &str, i: u64) -> String {
    let names: Vec<String> = plan.targets(i).map(|j| lmq_name(prefix, j)).collect();
    names.join(",")
}

/// The body of message `i`: `m<i>` padded with `.` to `size` bytes (longer
/// than `size` when `m<i>` is).
pub fn body(i: u64, size: usize) -> Vec<u8> {
    let mut b = format!("m{i}").into_bytes();
    if b.len() < size {
        b.resize(size, b'.');
    }
    b
}

/// The message index a body names, if it is one of [`body`]'s.
pub fn index_of(body: &[u8]) -> Option<u64> {
    let rest = body.strip_prefix(b"m")?;
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 || rest[digits..].iter().any(|&c| c != b'.') {
        return None;
    }
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lmq_gets_exactly_the_units_laid_on_it() {
        for (n, k, l) in [(20, 3, 7), (10, 10, 100), (7, 1, 7), (5, 4, 4), (33, 5, 16)] {
            let plan = Plan::new(n, k, l).unwrap();
            let mut by_lmq = vec![Vec::new(); l as usize];
            for i in 0..n {
                let t: Vec<u64> = plan.targets(i).collect();
                let mut d = t.clone();
                d.sort_unstable();
                d.dedup();
                assert_eq!(d.len(), t.len(), "message {i} names an LMQ twice: {t:?}");
                for j in t {
                    by_lmq[j as usize].push(i);
                }
            }
            for (j, want) in by_lmq.iter().enumerate() {
                assert!(!want.is_empty(), "LMQ {j} of {n}x{k} over {l} unused");
                assert_eq!(&plan.members(j as u64), want, "LMQ {j} of {n}x{k}/{l}");
                assert_eq!(plan.count(j as u64), want.len() as u64);
            }
            assert_eq!((0..l).map(|j| plan.count(j)).sum::<u64>(), plan.units());
        }
    }

    #[test]
    fn plans_that_leave_lmqs_empty_or_repeat_one_are_refused() {
        assert_eq!(
            Plan::new(10, 11, 10),
            Err(PlanError::FanOutAboveLmqs {
                fan_out: 11,
                lmqs: 10
            })
        );
        assert!(matches!(
            Plan::new(99, 10, 1000),
            Err(PlanError::LmqsUnused { .. })
        ));
        assert_eq!(Plan::new(0, 1, 1), Err(PlanError::Zero("messages")));
        assert!(Plan::new(100, 10, 1000).is_ok());
    }

    #[test]
    fn the_sample_spans_first_to_last() {
        let plan = Plan::new(1000, 10, 1000).unwrap();
        let s = plan.sample(5);
        assert_eq!(s, vec![0, 249, 499, 749, 999]);
        assert_eq!(plan.sample(1), vec![0]);
        assert_eq!(plan.sample(5000).len(), 1000);
        let mut d = plan.sample(1000);
        d.dedup();
        assert_eq!(d.len(), 1000);
    }

    #[test]
    fn names_and_bodies_identify_their_lmq_and_message() {
        let plan = Plan::new(4, 3, 5).unwrap();
        assert_eq!(dispatch_value(&plan, "B", 3), "%LMQ%B-4,%LMQ%B-0,%LMQ%B-1");
        assert!(check_prefix("LmqBench", 1_000_000).is_ok());
        assert!(matches!(
            check_prefix("bad/prefix", 10),
            Err(PlanError::BadPrefix { .. })
        ));
        assert!(check_prefix(&"x".repeat(130), 10).is_err());
        assert_eq!(body(42, 8), b"m42.....");
        assert_eq!(body(123_456, 4), b"m123456");
        assert_eq!(index_of(&body(42, 256)), Some(42));
        assert_eq!(index_of(b"m42.x"), None);
        assert_eq!(index_of(b"m"), None);
        assert_eq!(index_of(b"x42"), None);
    }
}
