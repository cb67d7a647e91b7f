//! Which light message queues may have keys in the database: a Bloom
//! filter, so that the first use of a new LMQ (on the put path, in the
//! writer, by a pull) costs no RocksDB read.
//!
//! LMQ states are not kept in memory (see `offsets::OffsetCache`), so
//! without this every lookup of an LMQ the cache does not hold reads its
//! min and max keys; with a million LMQs that each take one message, those
//! reads (two per lookup, four per dispatched unit) were a fifth of the
//! broker's CPU. A "no" here is certain and skips the read; a "maybe"
//! (every LMQ with keys, and about one in a hundred others) reads as
//! before.
//!
//! Every LMQ with a min or max key is added at open; the writer adds an LMQ
//! before the batch holding its first keys is written. Nothing is ever
//! removed: a deleted LMQ stays a "maybe", which costs one read. The filter
//! grows by layers of twice the capacity, 10 to 20 bits per LMQ each
//! (a power of two). The 7 probes of a queue fall in one 64-byte block, so
//! a lookup touches one cache line per layer (about 1% false positives per
//! layer).

use std::hash::Hasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::RwLock;
use rustc_hash::FxHasher;

/// Bits per LMQ a layer is sized for.
const BITS_PER_KEY: usize = 10;
/// Bits set and tested per LMQ.
const PROBES: u64 = 7;
/// Words of a block (64 bytes, one cache line).
const BLOCK_WORDS: usize = 8;
/// Capacity of the smallest layer (a broker without LMQs holds 80 KiB).
const MIN_CAPACITY: usize = 1 << 16;

/// A growable Bloom filter of `(topic, queue id)`.
pub(crate) struct LmqFilter {
    layers: RwLock<Vec<Layer>>,
}

struct Layer {
    bits: Box<[AtomicU64]>,
    /// Block count minus one (a power of two).
    mask: u64,
    capacity: usize,
    len: AtomicUsize,
}

impl Layer {
    fn with_capacity(capacity: usize) -> Self {
        let bits = (capacity * BITS_PER_KEY)
            .next_power_of_two()
            .max(BLOCK_WORDS * 64);
        let words = bits / 64;
        Self {
            bits: (0..words).map(|_| AtomicU64::new(0)).collect(),
            mask: (words / BLOCK_WORDS) as u64 - 1,
            capacity,
            len: AtomicUsize::new(0),
        }
    }

    /// Word index and bit of each probe: the block from the first hash,
    /// the 9-bit positions in it from the second.
    fn probes(&self, h: (u64, u64)) -> impl Iterator<Item = (usize, u64)> + '_ {
        let block = (h.0 & self.mask) as usize * BLOCK_WORDS;
        (0..PROBES).map(move |i| {
            let bit = (h.1 >> (9 * i)) & 511;
            (block + (bit / 64) as usize, 1u64 << (bit % 64))
        })
    }

    fn insert(&self, h: (u64, u64)) {
        for (word, bit) in self.probes(h) {
            self.bits[word].fetch_or(bit, Ordering::Release);
        }
        self.len.fetch_add(1, Ordering::Relaxed);
    }

    fn may_hold(&self, h: (u64, u64)) -> bool {
        self.probes(h)
            .all(|(word, bit)| self.bits[word].load(Ordering::Acquire) & bit != 0)
    }

    fn full(&self) -> bool {
        self.len.load(Ordering::Relaxed) >= self.capacity
    }

    fn bytes(&self) -> usize {
        self.bits.len() * 8
    }
}

/// A queue's hash, from which [`hash`] derives both of the filter's.
pub(crate) fn queue_hash(topic: &str, queue_id: i32) -> u64 {
    let mut h = FxHasher::default();
    h.write(topic.as_bytes());
    h.write_i32(queue_id);
    mix(h.finish())
}

/// Two independent 64-bit hashes of a queue: one picks the block, the other
/// the bits in it.
fn hash(topic: &str, queue_id: i32) -> (u64, u64) {
    split(queue_hash(topic, queue_id))
}

fn split(a: u64) -> (u64, u64) {
    (a, mix(a ^ 0x9e37_79b9_7f4a_7c15))
}

/// splitmix64's finaliser: spreads every input bit over the output.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl LmqFilter {
    /// A filter holding the queues of `hashes` ([`queue_hash`]), sized for
    /// twice as many.
    pub fn build(hashes: &[u64]) -> Self {
        let layer = Layer::with_capacity((hashes.len() * 2).max(MIN_CAPACITY));
        for &h in hashes {
            layer.insert(split(h));
        }
        Self {
            layers: RwLock::new(vec![layer]),
        }
    }

    /// Adds a queue; call before its first keys are written.
    pub fn insert(&self, topic: &str, queue_id: i32) {
        let h = hash(topic, queue_id);
        {
            let layers = self.layers.read();
            if let Some(last) = layers.last().filter(|l| !l.full()) {
                last.insert(h);
                return;
            }
        }
        let mut layers = self.layers.write();
        if layers.last().is_none_or(Layer::full) {
            let capacity = layers.last().map_or(MIN_CAPACITY, |l| l.capacity * 2);
            layers.push(Layer::with_capacity(capacity));
        }
        if let Some(last) = layers.last() {
            last.insert(h);
        }
    }

    /// False when the queue certainly has no keys.
    pub fn may_hold(&self, topic: &str, queue_id: i32) -> bool {
        let h = hash(topic, queue_id);
        self.layers.read().iter().any(|l| l.may_hold(h))
    }

    /// Memory the filter holds.
    pub fn bytes(&self) -> usize {
        self.layers.read().iter().map(Layer::bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_every_insert_and_rejects_most_others() {
        let names: Vec<String> = (0..200_000).map(|i| format!("%LMQ%held-{i}")).collect();
        let hashes: Vec<u64> = names[..1000].iter().map(|n| queue_hash(n, 0)).collect();
        let f = LmqFilter::build(&hashes);
        // Past the first layer's capacity, so the filter grows.
        for n in &names[1000..] {
            f.insert(n, 0);
        }
        assert!(names.iter().all(|n| f.may_hold(n, 0)));
        let others = (0..100_000)
            .filter(|i| f.may_hold(&format!("%LMQ%other-{i}"), 0))
            .count();
        // Three layers at about 1% each.
        assert!(others < 5_000, "{others} false positives in 100,000");
        // 64 Ki + 128 Ki + 256 Ki capacity, at 16 bits each once rounded.
        assert!(f.bytes() <= 896 * 1024, "{} bytes", f.bytes());
    }
}
