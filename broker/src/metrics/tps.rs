//! Put and get rates over the last 10 s, 60 s and 600 s, and the day's
//! totals, as GET_BROKER_RUNTIME_INFO reports them (`putTps`,
//! `getTransferedTps`, `msgPutTotalTodayMorning`, ...). The sampler records
//! the running totals once a second; rates are differences of samples.

use std::collections::VecDeque;

use parking_lot::Mutex;

/// Longest window asked for, ms (RocketMQ's 600 s).
const LONGEST_WINDOW_MS: i64 = 600_000;
/// One day, ms (days roll over at UTC midnight).
const DAY_MS: i64 = 86_400_000;

#[derive(Debug, Clone, Copy)]
struct Sample {
    at_ms: i64,
    put: u64,
    get: u64,
}

#[derive(Debug, Default)]
struct State {
    samples: VecDeque<Sample>,
    /// (day number, put total, get total) at the first sample of today and
    /// of yesterday.
    today: Option<(i64, u64, u64)>,
    yesterday: Option<(i64, u64, u64)>,
}

/// The broker's own rate and day statistics.
#[derive(Debug, Default)]
pub struct BrokerStats {
    state: Mutex<State>,
}

/// Totals at the start of today and of yesterday.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DayMarks {
    /// Messages stored before today.
    pub put_today_morning: u64,
    /// Messages stored before yesterday.
    pub put_yesterday_morning: u64,
    /// Messages served before today.
    pub get_today_morning: u64,
    /// Messages served before yesterday.
    pub get_yesterday_morning: u64,
}

impl BrokerStats {
    /// No samples yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the running totals at `at_ms`.
    pub fn record(&self, at_ms: i64, put: u64, get: u64) {
        let mut s = self.state.lock();
        s.samples.push_back(Sample { at_ms, put, get });
        while s
            .samples
            .front()
            .is_some_and(|f| at_ms - f.at_ms > LONGEST_WINDOW_MS + 1_000)
        {
            s.samples.pop_front();
        }
        let day = at_ms.div_euclid(DAY_MS);
        match s.today {
            Some((d, _, _)) if d == day => {}
            Some(old) => {
                s.yesterday = Some(old);
                s.today = Some((day, put, get));
            }
            // The broker started today: everything it counted so far was
            // counted today (the first sample may come after some traffic).
            None => s.today = Some((day, 0, 0)),
        }
    }

    /// (put, get) per second over the last `window_ms`: the newest sample
    /// against the oldest one no older than the window.
    pub fn rates(&self, window_ms: i64) -> (f64, f64) {
        let s = self.state.lock();
        let Some(newest) = s.samples.back() else {
            return (0.0, 0.0);
        };
        let Some(oldest) = s
            .samples
            .iter()
            .find(|x| newest.at_ms - x.at_ms <= window_ms)
        else {
            return (0.0, 0.0);
        };
        let span_s = (newest.at_ms - oldest.at_ms) as f64 / 1000.0;
        if span_s <= 0.0 {
            return (0.0, 0.0);
        }
        (
            newest.put.saturating_sub(oldest.put) as f64 / span_s,
            newest.get.saturating_sub(oldest.get) as f64 / span_s,
        )
    }

    /// `"<10s> <60s> <600s>"` rates, as Java's `putTps` and
    /// `getTransferedTps` (put when `put`, else get).
    pub fn tps_text(&self, put: bool) -> String {
        [10_000, 60_000, 600_000]
            .map(|w| {
                let (p, g) = self.rates(w);
                format!("{:.2}", if put { p } else { g })
            })
            .join(" ")
    }

    /// The totals at the start of today and yesterday (0 before the broker
    /// saw that day begin, or saw it from its first sample).
    pub fn day_marks(&self) -> DayMarks {
        let s = self.state.lock();
        let (_, pt, gt) = s.today.unwrap_or_default();
        let (_, py, gy) = s.yesterday.unwrap_or_default();
        DayMarks {
            put_today_morning: pt,
            put_yesterday_morning: py,
            get_today_morning: gt,
            get_yesterday_morning: gy,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_over_windows_and_day_rollover() {
        let s = BrokerStats::new();
        assert_eq!(s.rates(10_000), (0.0, 0.0));
        let day = DAY_MS * 20_000;
        for i in 0..=20 {
            s.record(day + i * 1_000, (i * 100) as u64, (i * 10) as u64);
        }
        assert_eq!(s.rates(10_000), (100.0, 10.0));
        assert_eq!(s.tps_text(true), "100.00 100.00 100.00");
        assert_eq!(s.tps_text(false), "10.00 10.00 10.00");
        assert_eq!(s.day_marks().put_today_morning, 0);
        s.record(day + DAY_MS, 5_000, 500);
        let m = s.day_marks();
        assert_eq!((m.put_today_morning, m.put_yesterday_morning), (5_000, 0));
        assert_eq!(m.get_today_morning, 500);
        // Samples older than the longest window are dropped.
        assert_eq!(s.rates(600_000), (0.0, 0.0));
    }
}
