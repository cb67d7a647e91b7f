//! The soak's samples, cut into the periods between broker restarts, and
//! the verdicts: memory and open files at the end of each period, dispatch
//! and consumer lag away from restarts and flips, each compared between a
//! base period and the last.
//!
//! Memory is judged without RocksDB's memtables and block cache, which
//! fill up to their configured sizes as the store grows (a 1-hour run on
//! 2 cores reached ~750 MiB anonymous memory that way, then held), and open
//! files without the store's own data files, whose number grows with the
//! data retained (segments, consume-queue files, SSTs): what is left is
//! where a leak shows. Both wholes are reported too. The base is the second period when there are
//! three or more: like every later one it starts with a restart on a full
//! store, where the first starts empty.

/// One look at the broker and the clients.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Sample {
    /// Seconds since the soak phase began.
    pub at_s: f64,
    /// Broker process up at that moment (not between a stop and a start).
    pub up: bool,
    /// Resident set, MiB (file-backed pages of the mapped store included).
    pub rss_mib: f64,
    /// Anonymous resident memory, MiB (heap, stacks, RocksDB's caches).
    pub anon_mib: f64,
    /// RocksDB's memtables and block cache, MiB (its gauges).
    pub rocksdb_cache_mib: f64,
    /// Anonymous memory without RocksDB's caches, MiB: where a leak shows.
    pub heap_mib: f64,
    /// RocksDB's table readers outside the block cache, MiB (part of the
    /// heap figure).
    pub table_readers_mib: f64,
    /// RocksDB compactions running at that moment.
    pub running_compactions: f64,
    /// Open file descriptors.
    pub open_files: f64,
    /// Of those, the store's data files.
    pub store_files: f64,
    /// `rmq_dispatch_behind_seconds` (largest over the backends).
    pub dispatch_lag_s: f64,
    /// `rmq_consumer_lag_messages` of the soak's group.
    pub consumer_lag: f64,
    /// Acknowledged sends not yet received by the consumers.
    pub unreceived: f64,
    /// Acknowledged sends per second since the previous sample.
    pub acked_per_s: f64,
    /// Distinct receipts per second since the previous sample.
    pub received_per_s: f64,
    /// Within the settle time after a restart or a flip.
    pub settling: bool,
}

/// One period between restarts.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Period {
    /// Its start, seconds.
    pub from_s: f64,
    /// Its end, seconds.
    pub to_s: f64,
    /// Anonymous memory at its last sample, MiB.
    pub anon_end_mib: f64,
    /// Anonymous memory without RocksDB's caches at its last sample, MiB.
    pub heap_end_mib: f64,
    /// RocksDB's table readers at its last sample, MiB.
    pub table_readers_end_mib: f64,
    /// Resident set at its last sample, MiB.
    pub rss_end_mib: f64,
    /// Open files at its last sample.
    pub open_files_end: f64,
    /// Of those, the store's data files.
    pub store_files_end: f64,
    /// Dispatch lag: p99 and largest of the settled samples, s.
    pub dispatch_lag_p99_s: f64,
    /// Largest.
    pub dispatch_lag_max_s: f64,
    /// Unreceived acknowledged sends: p99 and largest of the settled
    /// samples.
    pub unreceived_p99: f64,
    /// Largest.
    pub unreceived_max: f64,
    /// The broker's consumer-lag gauge, largest of the settled samples.
    pub consumer_lag_max: f64,
    /// Samples taken while RocksDB ran a compaction.
    pub compacting_samples: usize,
}

/// Whether each figure stayed flat (last period against the base).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Flatness {
    /// Anonymous memory without RocksDB's caches at the end of the last
    /// period is within 20 % (and 32 MiB) of the base's.
    pub memory: bool,
    /// Open files other than the store's within 20 % (and 16) of the
    /// base's.
    pub open_files: bool,
    /// Dispatch lag p99 within twice the base's (and 1 s).
    pub dispatch_lag: bool,
    /// Unreceived p99 within twice the base's (and one second of sends).
    pub consumer_lag: bool,
}

impl Flatness {
    /// All four.
    pub fn all(&self) -> bool {
        self.memory && self.open_files && self.dispatch_lag && self.consumer_lag
    }
}

impl Period {
    /// Open files other than the store's at its last sample.
    pub fn other_files_end(&self) -> f64 {
        self.open_files_end - self.store_files_end
    }
}

/// Cuts `samples` at `restarts` (seconds) into periods; samples taken while
/// the broker was down count nowhere.
pub fn periods(samples: &[Sample], restarts: &[f64]) -> Vec<Period> {
    let mut bounds = vec![0.0];
    bounds.extend_from_slice(restarts);
    bounds.push(f64::INFINITY);
    bounds
        .windows(2)
        .filter_map(|w| {
            let inside: Vec<&Sample> = samples
                .iter()
                .filter(|s| s.up && s.at_s >= w[0] && s.at_s < w[1])
                .collect();
            let last = inside.last()?;
            let settled: Vec<&Sample> = inside.iter().copied().filter(|s| !s.settling).collect();
            let lag: Vec<f64> = settled.iter().map(|s| s.dispatch_lag_s).collect();
            let unreceived: Vec<f64> = settled.iter().map(|s| s.unreceived).collect();
            Some(Period {
                from_s: w[0],
                to_s: last.at_s,
                anon_end_mib: last.anon_mib,
                heap_end_mib: last.heap_mib,
                table_readers_end_mib: last.table_readers_mib,
                rss_end_mib: last.rss_mib,
                open_files_end: last.open_files,
                store_files_end: last.store_files,
                dispatch_lag_p99_s: p99(&lag),
                dispatch_lag_max_s: lag.iter().copied().fold(0.0, f64::max),
                unreceived_p99: p99(&unreceived),
                unreceived_max: unreceived.iter().copied().fold(0.0, f64::max),
                consumer_lag_max: settled.iter().map(|s| s.consumer_lag).fold(0.0, f64::max),
                compacting_samples: inside
                    .iter()
                    .filter(|s| s.running_compactions > 0.0)
                    .count(),
            })
        })
        .collect()
}

/// The last period against the base; `rate` is the target sends per
/// second (the slack of the consumer-lag verdict).
pub fn flatness(periods: &[Period], rate: f64) -> Flatness {
    let base = if periods.len() >= 3 { 1 } else { 0 };
    let (Some(first), Some(last)) = (periods.get(base), periods.last()) else {
        return Flatness::default();
    };
    Flatness {
        memory: last.heap_end_mib <= (first.heap_end_mib * 1.2).max(first.heap_end_mib + 32.0),
        open_files: last.other_files_end()
            <= (first.other_files_end() * 1.2).max(first.other_files_end() + 16.0),
        dispatch_lag: last.dispatch_lag_p99_s <= (first.dispatch_lag_p99_s * 2.0).max(1.0),
        consumer_lag: last.unreceived_p99 <= (first.unreceived_p99 * 2.0).max(rate),
    }
}

/// The 99th percentile (nearest rank); 0 for none.
fn p99(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = ((s.len() as f64) * 0.99).ceil() as usize;
    s[rank.clamp(1, s.len()) - 1]
}

/// The periods as a Markdown table.
pub fn table(periods: &[Period]) -> String {
    let mut out = String::from(
        "| period (min) | heap MiB at end (table readers) | anon MiB | RSS MiB | open files at end (store's) | dispatch lag p99 / max (s) | unreceived p99 / max | consumer-lag gauge max | samples compacting |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for p in periods {
        out.push_str(&format!(
            "| {:.1}–{:.1} | {:.0} ({:.0}) | {:.0} | {:.0} | {:.0} ({:.0}) | {:.3} / {:.3} | {:.0} / {:.0} | {:.0} | {} |\n",
            p.from_s / 60.0,
            p.to_s / 60.0,
            p.heap_end_mib,
            p.table_readers_end_mib,
            p.anon_end_mib,
            p.rss_end_mib,
            p.open_files_end,
            p.store_files_end,
            p.dispatch_lag_p99_s,
            p.dispatch_lag_max_s,
            p.unreceived_p99,
            p.unreceived_max,
            p.consumer_lag_max,
            p.compacting_samples,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaky_again() -> Period {
        Period {
            heap_end_mib: 300.0,
            open_files_end: 100.0,
            ..Period::default()
        }
    }

    fn sample(at_s: f64, anon: f64, lag: f64, settling: bool) -> Sample {
        Sample {
            at_s,
            up: true,
            anon_mib: anon,
            heap_mib: anon,
            rss_mib: anon * 2.0,
            open_files: 100.0,
            dispatch_lag_s: lag,
            unreceived: lag * 1000.0,
            settling,
            ..Sample::default()
        }
    }

    #[test]
    fn periods_end_at_restarts_and_leave_out_settling_and_down_samples() {
        let mut s = vec![
            sample(10.0, 100.0, 0.01, false),
            sample(20.0, 110.0, 0.02, false),
            sample(30.0, 50.0, 9.0, true), // just after the restart at 25
            sample(40.0, 60.0, 0.03, false),
        ];
        s.push(Sample {
            at_s: 26.0,
            ..Sample::default()
        }); // down
        let p = periods(&s, &[25.0]);
        assert_eq!(p.len(), 2);
        assert_eq!(
            (p[0].from_s, p[0].to_s, p[0].heap_end_mib),
            (0.0, 20.0, 110.0)
        );
        assert_eq!(p[1].heap_end_mib, 60.0);
        assert_eq!(
            p[1].dispatch_lag_max_s, 0.03,
            "the settling sample is left out"
        );
        assert!(flatness(&p, 100.0).all());
    }

    #[test]
    fn growth_past_the_bounds_is_not_flat() {
        let first = Period {
            heap_end_mib: 200.0,
            open_files_end: 100.0,
            dispatch_lag_p99_s: 0.2,
            unreceived_p99: 500.0,
            ..Period::default()
        };
        let leaky = Period {
            heap_end_mib: 300.0,
            open_files_end: 200.0,
            dispatch_lag_p99_s: 3.0,
            unreceived_p99: 50_000.0,
            ..Period::default()
        };
        let f = flatness(&[first.clone(), leaky], 1000.0);
        assert!(!f.memory && !f.open_files && !f.dispatch_lag && !f.consumer_lag);
        let f = flatness(&[first.clone(), first.clone()], 1000.0);
        assert!(f.all());
        // With three or more, the second is the base: an empty store's
        // first period may hold less.
        let small = Period {
            heap_end_mib: 50.0,
            ..first.clone()
        };
        assert!(flatness(&[small.clone(), first.clone(), first.clone()], 1000.0).all());
        assert!(!flatness(&[small.clone(), first.clone(), leaky_again()], 1000.0).memory);
        assert!(table(&[Period::default()]).contains("| 0.0–0.0 |"));
        // The store's files are left out of the open-files verdict.
        let grown_store = Period {
            open_files_end: 400.0,
            store_files_end: 300.0,
            ..first.clone()
        };
        assert!(flatness(&[first.clone(), grown_store], 1000.0).open_files);
    }
}
