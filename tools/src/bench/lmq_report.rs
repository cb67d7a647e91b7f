//! What `rmq-bench lmq` measured, as text, as JSON, and as the markdown
//! table `rmq-bench lmq-table` makes of several runs' JSON.

use std::fmt::Write as _;

use super::broker_proc::Stopped;
use super::latency::LatencySummary;
use super::lmq_check::SampleCheck;

/// The knobs of a run, as the report keeps them.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct LmqRun {
    /// `file`, `rocksdb`, or `running` for a broker the bench did not start.
    pub backend: String,
    /// N.
    pub messages: u64,
    /// K.
    pub fan_out: u64,
    /// L.
    pub lmqs: u64,
    /// Sending connections.
    pub producers: usize,
    /// Body size, bytes.
    pub size: usize,
}

/// Disk under the store root (bytes allocated: preallocated CommitLog
/// segments count whole, sparse consume-queue files what they hold).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Disk {
    /// `consumequeue/` and `rocksdb_consumequeue/`.
    pub cq_bytes: u64,
    /// Files in them.
    pub cq_files: u64,
    /// `commitlog/`.
    pub commitlog_bytes: u64,
}

/// The stop and start again on the same store.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Restart {
    /// SIGTERM to exit (or to the kill past the bound), ms.
    pub stop_ms: f64,
    /// Whether it exited or had to be killed.
    pub stopped: Stopped,
    /// Launch to listening on its port, ms.
    pub port_ms: f64,
    /// Launch to the first pull of a sampled LMQ answered with its first
    /// message, ms.
    pub first_pull_ms: f64,
    /// RSS of the broker first started on the empty store, KiB.
    pub rss_fresh_kib: u64,
    /// RssAnon of the same, KiB.
    pub anon_fresh_kib: u64,
    /// RSS of the empty store's broker started again, idle, KiB (the
    /// baseline of the per-LMQ figures).
    pub rss_empty_kib: u64,
    /// RSS after the restart, idle, KiB.
    pub rss_after_kib: u64,
    /// (RSS after restart - RSS empty) / L, bytes.
    pub rss_per_lmq_bytes: f64,
    /// RssAnon of the empty store's broker started again, KiB.
    pub anon_empty_kib: u64,
    /// RssAnon after the restart, idle, KiB.
    pub anon_after_kib: u64,
    /// (RssAnon after restart - RssAnon empty) / L, bytes: the heap per
    /// LMQ, without the mapped files' pages that VmRSS also counts.
    pub anon_per_lmq_bytes: f64,
    /// Open files after the restart.
    pub open_files_after: Option<u64>,
}

/// One run.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct LmqReport {
    /// What ran.
    pub run: LmqRun,
    /// Sends per second.
    pub send_per_s: f64,
    /// Send round trips, µs.
    pub send_latency: LatencySummary,
    /// How the end of dispatch was seen.
    pub dispatch_probe: String,
    /// First send to every unit dispatched, s.
    pub dispatch_secs: f64,
    /// N*K / dispatch_secs.
    pub dispatch_units_per_s: f64,
    /// Broker CPU (user + system) from the first send to the end of
    /// dispatch per unit, µs.
    pub cpu_us_per_unit: Option<f64>,
    /// Broker VmRSS after dispatch, KiB.
    pub rss_kib: Option<u64>,
    /// Broker VmHWM after dispatch, KiB.
    pub hwm_kib: Option<u64>,
    /// Broker RssAnon after dispatch, KiB.
    pub anon_kib: Option<u64>,
    /// Broker open files after dispatch.
    pub open_files: Option<u64>,
    /// Store disk after dispatch, broker running.
    pub disk: Option<Disk>,
    /// Store disk after the broker stopped (memtables and queues flushed).
    pub disk_at_rest: Option<Disk>,
    /// CommitLog bytes written (max - min offset).
    pub commitlog_data_bytes: Option<u64>,
    /// The sampled LMQs pulled back.
    pub sample: SampleCheck,
    /// The restart, when asked for.
    pub restart: Option<Restart>,
}

fn mib(kib: u64) -> String {
    format!("{:.0} MiB", kib as f64 / 1024.0)
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn or_dash<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map_or_else(|| "-".to_owned(), f)
}

/// Prints one run.
pub fn print(r: &LmqReport) {
    let u = &r.run;
    println!(
        "lmq {}: {} messages x fan-out {} over {} LMQs, {} producers, {} B bodies",
        u.backend, u.messages, u.fan_out, u.lmqs, u.producers, u.size
    );
    println!(
        "  send      {:.0} msgs/s, p50 {} us, p99 {} us, max {} us",
        r.send_per_s, r.send_latency.p50_us, r.send_latency.p99_us, r.send_latency.max_us
    );
    println!(
        "  dispatch  {:.0} units/s ({} units in {:.2} s from the first send, seen by {})",
        r.dispatch_units_per_s,
        u.messages * u.fan_out,
        r.dispatch_secs,
        r.dispatch_probe
    );
    println!(
        "  broker    CPU {} per unit, RSS {} (anon {}), peak {}, {} open files",
        or_dash(r.cpu_us_per_unit, |c| format!("{c:.2} us")),
        or_dash(r.rss_kib, mib),
        or_dash(r.anon_kib, mib),
        or_dash(r.hwm_kib, mib),
        or_dash(r.open_files, |n| n.to_string())
    );
    for (when, d) in [("running", &r.disk), ("stopped", &r.disk_at_rest)] {
        if let Some(d) = d {
            println!(
                "  disk      {when}: consume queues {} in {} files, commitlog {} allocated",
                mb(d.cq_bytes),
                d.cq_files,
                mb(d.commitlog_bytes)
            );
        }
    }
    if let Some(b) = r.commitlog_data_bytes {
        println!("            commitlog data {}", mb(b));
    }
    println!(
        "  sample    {} LMQs, {} messages pulled: {}",
        r.sample.lmqs,
        r.sample.messages,
        if r.sample.exact() {
            "exact".to_owned()
        } else {
            format!("{} LMQs differ", r.sample.bad_lmqs)
        }
    );
    for m in &r.sample.mismatches {
        println!("    {m}");
    }
    if let Some(x) = &r.restart {
        println!(
            "  restart   stop {:.0} ms ({}); port answers {:.0} ms, first LMQ pull {:.0} ms after launch",
            x.stop_ms,
            stopped_text(x.stopped),
            x.port_ms,
            x.first_pull_ms
        );
        println!(
            "            RSS first start {} (anon {}); empty store restarted {}, with the LMQs restarted {}: {:.0} B per LMQ (anon {} -> {}: {:.0} B per LMQ); {} open files",
            mib(x.rss_fresh_kib),
            mib(x.anon_fresh_kib),
            mib(x.rss_empty_kib),
            mib(x.rss_after_kib),
            x.rss_per_lmq_bytes,
            mib(x.anon_empty_kib),
            mib(x.anon_after_kib),
            x.anon_per_lmq_bytes,
            or_dash(x.open_files_after, |n| n.to_string())
        );
    }
}

fn stopped_text(s: Stopped) -> &'static str {
    match s {
        Stopped::Exited => "exited on SIGTERM",
        Stopped::Killed => "killed: no exit within the stop bound",
    }
}

/// The markdown table of several runs: one row per run (backend x LMQs).
pub fn markdown(rows: &[LmqReport]) -> String {
    let mut out = String::new();
    out.push_str(
        "| backend | LMQs | messages x fan-out | send msgs/s | send p99 | dispatch units/s | broker CPU us/unit | CQ disk (stopped) | commitlog data | RSS / anon (peak) | RSS per LMQ (anon) | open files | restart: stop / port / first LMQ pull | sample exact |\n",
    );
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for r in rows {
        let u = &r.run;
        let restart = r.restart.as_ref();
        let _ = writeln!(
            out,
            "| {} | {} | {} x {} | {:.0} | {:.1} ms | {:.0} | {} | {} ({}) | {} | {} / {} ({}) | {} | {} | {} | {} |",
            u.backend,
            u.lmqs,
            u.messages,
            u.fan_out,
            r.send_per_s,
            r.send_latency.p99_us as f64 / 1e3,
            r.dispatch_units_per_s,
            or_dash(r.cpu_us_per_unit, |c| format!("{c:.2}")),
            or_dash(r.disk.as_ref(), |d| mb(d.cq_bytes)),
            or_dash(r.disk_at_rest.as_ref(), |d| mb(d.cq_bytes)),
            or_dash(r.commitlog_data_bytes, mb),
            or_dash(r.rss_kib, mib),
            or_dash(r.anon_kib, mib),
            or_dash(r.hwm_kib, mib),
            or_dash(restart, |x| format!(
                "{:.0} B ({:.0} B)",
                x.rss_per_lmq_bytes, x.anon_per_lmq_bytes
            )),
            or_dash(r.open_files, |n| n.to_string()),
            or_dash(restart, |x| format!(
                "{}{:.0} / {:.0} / {:.0} ms",
                if x.stopped == Stopped::Killed { "killed " } else { "" },
                x.stop_ms,
                x.port_ms,
                x.first_pull_ms
            )),
            if r.sample.exact() {
                format!("yes ({} LMQs)", r.sample.lmqs)
            } else {
                format!("**no** ({} of {} differ)", r.sample.bad_lmqs, r.sample.lmqs)
            },
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(backend: &str, bad: u64) -> LmqReport {
        LmqReport {
            run: LmqRun {
                backend: backend.into(),
                messages: 2000,
                fan_out: 10,
                lmqs: 1000,
                producers: 16,
                size: 256,
            },
            send_per_s: 12345.6,
            send_latency: LatencySummary {
                count: 2000,
                p50_us: 500,
                p99_us: 2500,
                p999_us: 3000,
                max_us: 4000,
            },
            dispatch_probe: "dispatchBehindBytes".into(),
            dispatch_secs: 0.5,
            dispatch_units_per_s: 40000.0,
            cpu_us_per_unit: Some(3.25),
            rss_kib: Some(102400),
            hwm_kib: Some(204800),
            anon_kib: Some(51200),
            open_files: Some(77),
            disk: Some(Disk {
                cq_bytes: 4_000_000,
                cq_files: 1001,
                commitlog_bytes: 1_000_000_000,
            }),
            disk_at_rest: Some(Disk {
                cq_bytes: 5_000_000,
                cq_files: 1001,
                commitlog_bytes: 1_000_000_000,
            }),
            commitlog_data_bytes: Some(600_000),
            sample: SampleCheck {
                lmqs: 1000,
                messages: 20000,
                bad_lmqs: bad,
                mismatches: Vec::new(),
            },
            restart: Some(Restart {
                stop_ms: 100.0,
                stopped: if bad > 0 {
                    Stopped::Killed
                } else {
                    Stopped::Exited
                },
                port_ms: 250.0,
                first_pull_ms: 260.0,
                rss_fresh_kib: 9000,
                anon_fresh_kib: 2000,
                rss_empty_kib: 10240,
                rss_after_kib: 20480,
                rss_per_lmq_bytes: 10485.76,
                anon_empty_kib: 5120,
                anon_after_kib: 6144,
                anon_per_lmq_bytes: 1048.576,
                open_files_after: Some(50),
            }),
        }
    }

    #[test]
    fn the_table_has_a_row_per_run_and_survives_json() {
        let rows = vec![report("file", 0), report("rocksdb", 3)];
        let json = serde_json::to_string(&rows).unwrap();
        let back: Vec<LmqReport> = serde_json::from_str(&json).unwrap();
        let t = markdown(&back);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4, "{t}");
        assert_eq!(
            lines[2],
            "| file | 1000 | 2000 x 10 | 12346 | 2.5 ms | 40000 | 3.25 | 4.0 MB (5.0 MB) | 0.6 MB | 100 MiB / 50 MiB (200 MiB) | 10486 B (1049 B) | 77 | 100 / 250 / 260 ms | yes (1000 LMQs) |"
        );
        assert!(
            lines[3].ends_with("| killed 100 / 250 / 260 ms | **no** (3 of 1000 differ) |"),
            "{t}"
        );
        let cols = |l: &str| l.matches('|').count();
        assert!(lines.iter().all(|l| cols(l) == cols(lines[0])), "{t}");
    }
}
