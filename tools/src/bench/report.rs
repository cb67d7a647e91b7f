//! Human-readable output of load reports, and the JSON file.

use std::path::Path;
use std::time::Duration;

use super::load::LoadReport;

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Prints one run's final report.
pub fn print(r: &LoadReport) {
    let s = &r.spec;
    println!(
        "{:?}: {} producers ({:?}, batch {}), {} consumers, {} topics x {} queues, {} B bodies",
        r.protocol, s.producers, s.mode, s.batch, s.consumers, s.topics, s.queues, s.size
    );
    println!(
        "sent      {:>10} msgs in {:.2} s = {:.0} msgs/s ({:.1} MiB/s), {} errors",
        r.sent,
        r.send_seconds,
        r.send_rate,
        r.send_rate * s.size as f64 / 1_048_576.0,
        r.send_errors
    );
    let l = &r.send_latency;
    println!(
        "send      p50 {:.3} ms  p99 {:.3} ms  p99.9 {:.3} ms  max {:.3} ms",
        ms(l.p50_us),
        ms(l.p99_us),
        ms(l.p999_us),
        ms(l.max_us)
    );
    if s.consumers > 0 {
        println!(
            "received  {:>10} msgs = {:.0} msgs/s, caught up {} in {:.3} s after the last send, {} pull errors",
            r.received,
            r.consume_rate,
            if r.caught_up { "fully" } else { "NOT" },
            r.catch_up_seconds.unwrap_or(0.0),
            r.consume_errors
        );
        if r.received_again > 0 {
            println!(
                "received  {} messages again (POP redelivery, not counted above)",
                r.received_again
            );
        }
        let e = &r.e2e_latency;
        println!(
            "e2e       p50 {:.0} ms  p99 {:.0} ms  p99.9 {:.0} ms  max {:.0} ms (store time to receipt)",
            ms(e.p50_us),
            ms(e.p99_us),
            ms(e.p999_us),
            ms(e.max_us)
        );
    }
    if let Some(d) = &r.dispatch {
        if let Some(cpu) = d.cpu_seconds {
            let per = |n: u64| {
                d.cpu_us_per(n)
                    .map_or("-".to_owned(), |us| format!("{us:.1} µs"))
            };
            println!(
                "broker    CPU {:.2} s = {} per message in{}; RSS max {:.0} MiB",
                cpu,
                per(r.sent),
                if s.consumers > 0 {
                    format!(", {} per message in and out", per(r.sent + r.received))
                } else {
                    String::new()
                },
                d.rss_max_bytes.unwrap_or(0.0) / 1_048_576.0
            );
        }
        println!(
            "dispatch  lag max {:.3} s / {:.0} bytes; per-record delay p50 <= {} p99 <= {} ({} records, {} scrapes)",
            d.lag_max_s,
            d.behind_max_bytes,
            secs_text(d.delay_p50_s),
            secs_text(d.delay_p99_s),
            d.delay_count,
            d.scrapes
        );
    }
    if let Some(e) = &r.first_error {
        println!("first error: {e}");
    }
    if let Some(c) = &r.broker_cpu {
        println!(
            "broker CPU (pid {}): {:.2} s over the run = {:.1} µs per message (sent + received)",
            c.pid, c.seconds, c.us_per_message
        );
    }
}

/// A bucket bound in seconds as "1 ms", or "-".
pub fn secs_text(s: Option<f64>) -> String {
    match s {
        Some(v) if v.is_infinite() => "+Inf".into(),
        Some(v) if v < 1.0 => format!("{} ms", v * 1000.0),
        Some(v) => format!("{v} s"),
        None => "-".into(),
    }
}

/// Serializes a duration as whole milliseconds (the `--json` reports).
pub fn duration_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}

/// [`write_json`] when a path was given (`--json`).
pub fn write_json_to(path: Option<&Path>, doc: &impl serde::Serialize) -> anyhow::Result<()> {
    path.map_or(Ok(()), |p| write_json(p, doc))
}

/// Writes `doc` as pretty JSON.
pub fn write_json(path: &Path, doc: &impl serde::Serialize) -> anyhow::Result<()> {
    std::fs::write(path, serde_json::to_vec_pretty(doc)?)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}
