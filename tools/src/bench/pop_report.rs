//! The text report of `rmq-bench pop`: one line per form, then the ratios.

use super::pop::{PopReport, PopRow};

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.1}"))
}

/// Prints the table.
pub fn print(r: &PopReport) {
    let s = &r.spec;
    println!(
        "{} messages of {} B in {} queues, {} POP consumers (maxMsgNums {}, invisibleTime {} ms, {}), {:.1} % of first deliveries left unacked",
        s.messages,
        s.size,
        s.queues,
        s.consumers,
        s.batch,
        s.invisible_time.as_millis(),
        if s.batch_ack { "batch acks" } else { "one ack per message" },
        s.unacked_fraction * 100.0
    );
    println!(
        "{:<13} {:>9} {:>9} {:>10} {:>9} {:>10} {:>9} {:>9} {:>8} {:>8} {:>9} {:>9}",
        "form",
        "pops/s",
        "acks/s",
        "cpu us/msg",
        "drain cpu",
        "redeliv",
        "lag p50",
        "lag p99",
        "drain s",
        "total s",
        "pop p99",
        "complete"
    );
    for row in &r.rows {
        line(row);
    }
    for q in &r.ratios {
        println!(
            "{}: pops/s {:.2}, acks/s {:.2}, cpu/msg {}, lag p50 {:.2}, lag p99 {:.2}",
            q.forms,
            q.pops_per_s,
            q.acks_per_s,
            q.cpu_us_per_msg
                .map_or_else(|| "-".into(), |v| format!("{v:.2}")),
            q.revive_lag_p50,
            q.revive_lag_p99
        );
    }
}

fn line(p: &PopRow) {
    println!(
        "{:<13} {:>9.0} {:>9.0} {:>10} {:>9} {:>4}/{:<5} {:>6.0} ms {:>6.0} ms {:>8.2} {:>8.2} {:>6.2} ms {:>9}",
        p.form.as_str(),
        p.pops_per_s,
        p.acks_per_s,
        opt(p.cpu_us_per_msg),
        opt(p.drain_cpu_us_per_msg),
        p.redelivered,
        p.left_unacked,
        ms(p.revive_lag.p50_us),
        ms(p.revive_lag.p99_us),
        p.drain_seconds,
        p.total_seconds,
        ms(p.pop_latency.p99_us),
        p.complete
    );
    if p.duplicates > 0 || p.early > 0 || p.errors > 0 {
        println!(
            "    {} redeliveries of acked messages, {} before their deadline, {} errors{}",
            p.duplicates,
            p.early,
            p.errors,
            p.first_error
                .as_ref()
                .map_or(String::new(), |e| format!(" (first: {e})"))
        );
    }
}
