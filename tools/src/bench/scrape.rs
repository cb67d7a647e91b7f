//! Reads the broker's `/metrics` while a load runs: the dispatch lag gauges
//! each second, the dispatch delay histogram and the process CPU time at
//! the start and the end, and the resident memory throughout.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use rmq_broker::metrics::names;

/// How long one scrape may take before it counts as failed.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(5);

/// One sample of the text exposition: `name{labels} value` lines.
#[derive(Debug, Clone, Default)]
pub struct Exposition {
    lines: Vec<(String, String, f64)>,
}

impl Exposition {
    /// Parses Prometheus text format; comments and bad lines are skipped.
    pub fn parse(text: &str) -> Self {
        let mut lines = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (series, value) = match line.rsplit_once(' ') {
                Some(p) => p,
                None => continue,
            };
            let Ok(value) = value.parse::<f64>() else {
                continue;
            };
            let (name, labels) = match series.split_once('{') {
                Some((n, rest)) => (n, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            lines.push((name.to_owned(), labels.to_owned(), value));
        }
        Self { lines }
    }

    /// The largest value of any series named `name`.
    pub fn max(&self, name: &str) -> Option<f64> {
        self.lines
            .iter()
            .filter(|(n, _, _)| n == name)
            .map(|(_, _, v)| *v)
            .reduce(f64::max)
    }

    /// The sum of every series named `name` whose labels include `sel`.
    pub fn sum_where(&self, name: &str, sel: &[(&str, &str)]) -> f64 {
        self.lines
            .iter()
            .filter(|(n, l, _)| n == name && matches(l, sel))
            .fold(0.0, |sum, (_, _, v)| sum + v)
    }

    /// The cumulative buckets of histogram `name` (summed over its other
    /// labels), as (upper bound, count) sorted by bound.
    pub fn buckets(&self, name: &str) -> Vec<(f64, f64)> {
        self.buckets_where(name, &[])
    }

    /// [`Exposition::buckets`] of the series whose labels include `sel`.
    pub fn buckets_where(&self, name: &str, sel: &[(&str, &str)]) -> Vec<(f64, f64)> {
        let bucket = format!("{name}_bucket");
        let mut out: Vec<(f64, f64)> = Vec::new();
        for (_, labels, v) in self
            .lines
            .iter()
            .filter(|(n, l, _)| *n == bucket && matches(l, sel))
        {
            let Some(le) = label(labels, "le") else {
                continue;
            };
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                match le.parse() {
                    Ok(x) => x,
                    Err(_) => continue,
                }
            };
            match out.iter_mut().find(|(b, _)| *b == le) {
                Some(slot) => slot.1 += v,
                None => out.push((le, *v)),
            }
        }
        out.sort_by(|a, b| a.0.total_cmp(&b.0));
        out
    }
}

fn matches(labels: &str, sel: &[(&str, &str)]) -> bool {
    sel.iter().all(|(k, v)| label(labels, k) == Some(*v))
}

fn label<'a>(labels: &'a str, key: &str) -> Option<&'a str> {
    labels.split(',').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k.trim() == key).then(|| v.trim().trim_matches('"'))
    })
}

/// The bucket bound under which `q` of the observations made between two
/// scrapes fall (an upper estimate), or `None` without observations.
pub fn quantile_between(before: &[(f64, f64)], after: &[(f64, f64)], q: f64) -> Option<f64> {
    let delta: Vec<(f64, f64)> = after
        .iter()
        .map(|(le, n)| {
            let old = before
                .iter()
                .find(|(b, _)| b == le)
                .map_or(0.0, |(_, c)| *c);
            (*le, n - old)
        })
        .collect();
    let total = delta.last()?.1;
    if total <= 0.0 {
        return None;
    }
    delta
        .iter()
        .find(|(_, n)| *n >= q * total)
        .map(|(le, _)| *le)
}

/// GETs `http://addr/metrics` and parses it.
pub async fn scrape(addr: SocketAddr) -> std::io::Result<Exposition> {
    let fetch = async {
        let mut s = tokio::net::TcpStream::connect(addr).await?;
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
            .await?;
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).await?;
        let text = String::from_utf8_lossy(&buf);
        let body = match text.split_once("\r\n\r\n") {
            Some((head, body)) if head.starts_with("HTTP/1.1 200") => body.to_owned(),
            _ => {
                return Err(std::io::Error::other(format!(
                    "{addr}/metrics: not a 200 answer"
                )))
            }
        };
        Ok(Exposition::parse(&body))
    };
    tokio::time::timeout(SCRAPE_TIMEOUT, fetch)
        .await
        .map_err(|_| std::io::Error::other(format!("{addr}/metrics: no answer in 5 s")))?
}

/// What the broker said about dispatch during a run.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct DispatchReport {
    /// Scrapes that answered.
    pub scrapes: u64,
    /// Largest `rmq_dispatch_behind_seconds` seen.
    pub lag_max_s: f64,
    /// Largest `rmq_dispatch_behind_bytes` seen.
    pub behind_max_bytes: f64,
    /// Median per-record dispatch delay (store time to readable) over the
    /// run, as the bucket bound it falls under, seconds.
    pub delay_p50_s: Option<f64>,
    /// Same, 99th percentile.
    pub delay_p99_s: Option<f64>,
    /// Records the delay histogram counted during the run.
    pub delay_count: f64,
    /// Broker CPU seconds (user + system) spent between the first and the
    /// last scrape, from `process_cpu_seconds_total`.
    pub cpu_seconds: Option<f64>,
    /// Largest broker resident memory seen, bytes.
    pub rss_max_bytes: Option<f64>,
}

impl DispatchReport {
    /// Broker CPU per message, microseconds, over `messages` (sent, or sent
    /// plus received).
    pub fn cpu_us_per(&self, messages: u64) -> Option<f64> {
        let cpu = self.cpu_seconds?;
        (messages > 0).then(|| cpu * 1e6 / messages as f64)
    }
}

/// Collects [`DispatchReport`] from scrapes.
#[derive(Debug, Default)]
pub struct DispatchProbe {
    first: Option<Vec<(f64, f64)>>,
    last: Option<Vec<(f64, f64)>>,
    cpu_first: Option<f64>,
    cpu_last: Option<f64>,
    report: DispatchReport,
}

impl DispatchProbe {
    /// Takes one scrape into account; returns its lag in seconds.
    pub fn observe(&mut self, e: &Exposition) -> f64 {
        let lag = e.max(names::DISPATCH_BEHIND_SECONDS).unwrap_or(0.0);
        let bytes = e.max(names::DISPATCH_BEHIND_BYTES).unwrap_or(0.0);
        let r = &mut self.report;
        r.scrapes += 1;
        r.lag_max_s = r.lag_max_s.max(lag);
        r.behind_max_bytes = r.behind_max_bytes.max(bytes);
        if let Some(rss) = e.max(names::PROCESS_RESIDENT_BYTES) {
            r.rss_max_bytes = Some(r.rss_max_bytes.map_or(rss, |m| m.max(rss)));
        }
        if let Some(cpu) = e.max(names::PROCESS_CPU_SECONDS_TOTAL) {
            self.cpu_first.get_or_insert(cpu);
            self.cpu_last = Some(cpu);
        }
        // The serving backend's: a shadow's catch-up records old messages.
        let serving = e.buckets_where(names::DISPATCH_DELAY_SECONDS, &[("role", "serving")]);
        let buckets = if serving.is_empty() {
            e.buckets(names::DISPATCH_DELAY_SECONDS)
        } else {
            serving
        };
        if self.first.is_none() {
            self.first = Some(buckets.clone());
        }
        self.last = Some(buckets);
        lag
    }

    /// The report over every scrape so far.
    pub fn report(&self) -> DispatchReport {
        let mut r = self.report.clone();
        if let (Some(a), Some(b)) = (&self.first, &self.last) {
            r.delay_p50_s = quantile_between(a, b, 0.50);
            r.delay_p99_s = quantile_between(a, b, 0.99);
            r.delay_count = b.last().map_or(0.0, |x| x.1) - a.last().map_or(0.0, |x| x.1);
        }
        if let (Some(a), Some(b)) = (self.cpu_first, self.cpu_last) {
            r.cpu_seconds = Some((b - a).max(0.0));
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# HELP rmq_dispatch_behind_seconds x
rmq_dispatch_behind_seconds{broker="b",backend="file"} 0.25
rmq_dispatch_behind_bytes{broker="b",backend="file"} 4096
rmq_dispatch_delay_seconds_bucket{broker="b",backend="file",le="0.001"} 90
rmq_dispatch_delay_seconds_bucket{broker="b",backend="file",le="0.01"} 99
rmq_dispatch_delay_seconds_bucket{broker="b",backend="file",le="+Inf"} 100
"#;

    #[test]
    fn parses_gauges_and_buckets() {
        let e = Exposition::parse(TEXT);
        assert_eq!(e.max(names::DISPATCH_BEHIND_SECONDS), Some(0.25));
        assert_eq!(e.max("nothing"), None);
        let b = e.buckets(names::DISPATCH_DELAY_SECONDS);
        assert_eq!(b, vec![(0.001, 90.0), (0.01, 99.0), (f64::INFINITY, 100.0)]);
        assert_eq!(quantile_between(&[], &b, 0.5), Some(0.001));
        assert_eq!(quantile_between(&[], &b, 0.99), Some(0.01));
        // Only what happened between the scrapes counts.
        let before = vec![(0.001, 90.0), (0.01, 90.0), (f64::INFINITY, 90.0)];
        assert_eq!(quantile_between(&before, &b, 0.5), Some(0.01));
        assert_eq!(quantile_between(&b, &b, 0.5), None);
    }

    #[test]
    fn probe_keeps_the_worst_lag() {
        let mut p = DispatchProbe::default();
        p.observe(&Exposition::parse(TEXT));
        p.observe(&Exposition::parse(""));
        let r = p.report();
        assert_eq!(r.scrapes, 2);
        assert_eq!(r.lag_max_s, 0.25);
        assert_eq!(r.behind_max_bytes, 4096.0);
        assert_eq!(r.cpu_seconds, None, "no CPU series, no CPU figure");
    }

    #[test]
    fn cpu_per_message_is_the_change_over_the_run() {
        let at = |cpu: f64, rss: f64| {
            Exposition::parse(&format!(
                "process_cpu_seconds_total{{broker=\"b\"}} {cpu}\nrmq_process_resident_bytes{{broker=\"b\"}} {rss}\n"
            ))
        };
        let mut p = DispatchProbe::default();
        p.observe(&at(10.0, 5e7));
        p.observe(&at(10.5, 9e7));
        p.observe(&at(12.0, 8e7));
        let r = p.report();
        assert_eq!(r.cpu_seconds, Some(2.0));
        assert_eq!(r.rss_max_bytes, Some(9e7));
        assert_eq!(r.cpu_us_per(100_000), Some(20.0));
        assert_eq!(r.cpu_us_per(0), None);
    }
}
