//! Latency histograms (HdrHistogram, microseconds) and their summary.

use hdrhistogram::Histogram;

/// Highest latency recorded without saturating: one hour, in µs.
const MAX_MICROS: u64 = 3_600_000_000;

/// A latency histogram in microseconds; values past one hour saturate.
#[derive(Debug, Clone)]
pub struct Latencies(Histogram<u64>);

impl Default for Latencies {
    fn default() -> Self {
        Self::new()
    }
}

impl Latencies {
    /// An empty histogram (3 significant digits).
    pub fn new() -> Self {
        match Histogram::new_with_bounds(1, MAX_MICROS, 3) {
            Ok(h) => Self(h),
            // The bounds are constants that hdrhistogram accepts.
            Err(e) => unreachable!("1 us .. 1 h at 3 digits: {e}"),
        }
    }

    /// Records one latency.
    pub fn record(&mut self, micros: u64) {
        self.0.saturating_record(micros.clamp(1, MAX_MICROS));
    }

    /// Adds another histogram's counts.
    pub fn merge(&mut self, other: &Latencies) {
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.0.add(&other.0);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.0.len()
    }

    /// p50, p99, p99.9 and max.
    pub fn summary(&self) -> LatencySummary {
        let q = |p: f64| {
            if self.0.is_empty() {
                0
            } else {
                self.0.value_at_quantile(p)
            }
        };
        LatencySummary {
            count: self.count(),
            p50_us: q(0.50),
            p99_us: q(0.99),
            p999_us: q(0.999),
            max_us: if self.0.is_empty() { 0 } else { self.0.max() },
        }
    }
}

/// Percentiles of a latency distribution, µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LatencySummary {
    /// Values recorded.
    pub count: u64,
    /// Median.
    pub p50_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// 99.9th percentile.
    pub p999_us: u64,
    /// Largest.
    pub max_us: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_spread() {
        let mut a = Latencies::new();
        for v in 1..=1000 {
            a.record(v);
        }
        let mut b = Latencies::new();
        b.record(1_000_000);
        a.merge(&b);
        let s = a.summary();
        assert_eq!(s.count, 1001);
        assert!((499..=501).contains(&s.p50_us), "{s:?}");
        assert!((989..=991).contains(&s.p99_us), "{s:?}");
        assert!(s.max_us >= 999_000, "{s:?}");
        assert_eq!(Latencies::new().summary(), LatencySummary::default());
    }
}
