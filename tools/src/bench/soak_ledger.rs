//! What the soak's producers had acknowledged and its consumers received:
//! one bit per (producer, sequence number) each, so an hour of sends costs
//! a few MiB. A message body starts with its producer and sequence number.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

/// Bytes of a body the producer and sequence number take.
pub const HEAD: usize = 12;

/// A body of `size` bytes (at least [`HEAD`]) naming `producer` and `seq`.
pub fn body(producer: u32, seq: u64, size: usize) -> Vec<u8> {
    let mut b = Vec::with_capacity(size.max(HEAD));
    b.extend_from_slice(&producer.to_be_bytes());
    b.extend_from_slice(&seq.to_be_bytes());
    b.resize(size.max(HEAD), b's');
    b
}

/// The producer and sequence number a body names, if it is a soak body.
pub fn parse(body: &[u8]) -> Option<(u32, u64)> {
    let producer = u32::from_be_bytes(body.get(..4)?.try_into().ok()?);
    let seq = u64::from_be_bytes(body.get(4..HEAD)?.try_into().ok()?);
    Some((producer, seq))
}

/// A growable set of sequence numbers.
#[derive(Debug, Default)]
struct Bits(Mutex<Vec<u64>>);

impl Bits {
    /// Adds `i`; whether it was new.
    fn insert(&self, i: u64) -> bool {
        let (word, bit) = ((i / 64) as usize, 1u64 << (i % 64));
        let mut w = self.0.lock();
        if w.len() <= word {
            w.resize(word + 1, 0);
        }
        let new = w[word] & bit == 0;
        w[word] |= bit;
        new
    }

    #[cfg(test)]
    fn contains(&self, i: u64) -> bool {
        let w = self.0.lock();
        w.get((i / 64) as usize)
            .is_some_and(|x| x & (1u64 << (i % 64)) != 0)
    }

    fn snapshot(&self) -> Vec<u64> {
        self.0.lock().clone()
    }
}

/// Acknowledged and received sends of every producer.
#[derive(Debug)]
pub struct Ledger {
    acked: Vec<Bits>,
    seen: Vec<Bits>,
    acked_total: AtomicU64,
    seen_total: AtomicU64,
    repeats: AtomicU64,
    foreign: AtomicU64,
}

/// What the ledger found at the end.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Reckoning {
    /// Sends acknowledged SEND_OK.
    pub acked: u64,
    /// Distinct messages received.
    pub received: u64,
    /// Receipts of a message already received (at-least-once after a
    /// restart, or a pull repeated after a lost answer).
    pub repeats: u64,
    /// Acknowledged sends never received.
    pub lost: u64,
    /// Received bodies that name no producer of this run.
    pub foreign: u64,
    /// Up to ten lost sends, `producer:seq`.
    pub lost_examples: Vec<String>,
}

impl Ledger {
    /// A ledger for `producers` producers.
    pub fn new(producers: usize) -> Self {
        Self {
            acked: (0..producers).map(|_| Bits::default()).collect(),
            seen: (0..producers).map(|_| Bits::default()).collect(),
            acked_total: AtomicU64::new(0),
            seen_total: AtomicU64::new(0),
            repeats: AtomicU64::new(0),
            foreign: AtomicU64::new(0),
        }
    }

    /// A send answered SEND_OK.
    pub fn acked(&self, producer: u32, seq: u64) {
        if self.acked[producer as usize].insert(seq) {
            self.acked_total.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A message received.
    pub fn received(&self, body: &[u8]) {
        match parse(body).filter(|(p, _)| (*p as usize) < self.seen.len()) {
            Some((p, seq)) => {
                if self.seen[p as usize].insert(seq) {
                    self.seen_total.fetch_add(1, Ordering::Relaxed);
                } else {
                    self.repeats.fetch_add(1, Ordering::Relaxed);
                }
            }
            None => {
                self.foreign.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Acknowledged sends so far.
    pub fn acked_total(&self) -> u64 {
        self.acked_total.load(Ordering::Relaxed)
    }

    /// Distinct messages received so far.
    pub fn received_total(&self) -> u64 {
        self.seen_total.load(Ordering::Relaxed)
    }

    /// Whether every acknowledged send was received.
    pub fn all_received(&self) -> bool {
        self.acked
            .iter()
            .zip(&self.seen)
            .all(|(a, s)| missing_words(&a.snapshot(), &s.snapshot()).next().is_none())
    }

    /// The final count.
    pub fn reckon(&self) -> Reckoning {
        let mut r = Reckoning {
            acked: self.acked_total(),
            received: self.received_total(),
            repeats: self.repeats.load(Ordering::Relaxed),
            foreign: self.foreign.load(Ordering::Relaxed),
            ..Reckoning::default()
        };
        for (p, (a, s)) in self.acked.iter().zip(&self.seen).enumerate() {
            let (a, s) = (a.snapshot(), s.snapshot());
            for (word, bits) in missing_words(&a, &s) {
                r.lost += u64::from(bits.count_ones());
                let mut rest = bits;
                while rest != 0 && r.lost_examples.len() < 10 {
                    let bit = rest.trailing_zeros();
                    r.lost_examples
                        .push(format!("{p}:{}", word as u64 * 64 + u64::from(bit)));
                    rest &= rest - 1;
                }
            }
        }
        r
    }

    /// Whether `seq` of `producer` was received (tests).
    #[cfg(test)]
    fn was_received(&self, producer: u32, seq: u64) -> bool {
        self.seen[producer as usize].contains(seq)
    }
}

/// Words of `acked` with bits `seen` lacks, and those bits.
fn missing_words<'a>(acked: &'a [u64], seen: &'a [u64]) -> impl Iterator<Item = (usize, u64)> + 'a {
    acked.iter().enumerate().filter_map(move |(i, a)| {
        let missing = a & !seen.get(i).copied().unwrap_or(0);
        (missing != 0).then_some((i, missing))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_name_their_producer_and_sequence() {
        let b = body(3, 1 << 40, 64);
        assert_eq!(b.len(), 64);
        assert_eq!(parse(&b), Some((3, 1 << 40)));
        assert_eq!(body(1, 2, 4).len(), HEAD, "never shorter than the head");
        assert_eq!(parse(b"short"), None);
    }

    #[test]
    fn lost_repeated_and_foreign_are_counted() {
        let l = Ledger::new(2);
        for seq in 0..200 {
            l.acked(0, seq);
        }
        l.acked(1, 7);
        l.acked(1, 7);
        for seq in (0..200).filter(|s| *s != 5 && *s != 130) {
            l.received(&body(0, seq, 16));
        }
        l.received(&body(0, 9, 16));
        l.received(&body(1, 7, 16));
        l.received(&body(1, 8, 16)); // stored though its answer was lost
        l.received(&body(9, 1, 16));
        l.received(b"x");
        assert!(!l.all_received());
        assert!(l.was_received(1, 8));
        let r = l.reckon();
        assert_eq!(
            (r.acked, r.received, r.repeats, r.lost, r.foreign),
            (201, 200, 1, 2, 2)
        );
        assert_eq!(r.lost_examples, ["0:5", "0:130"]);
        l.received(&body(0, 5, 16));
        l.received(&body(0, 130, 16));
        assert!(l.all_received());
        assert_eq!(l.reckon().lost, 0);
    }
}
