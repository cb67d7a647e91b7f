//! Counters with fractional values (CPU seconds, RocketMQ stall seconds),
//! which the recorder's whole-number counters cannot hold: kept here and
//! written after the recorder's exposition with their HELP and TYPE.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::OnceLock;

use metrics::Label;
use parking_lot::Mutex;

/// Per name: its help, and per rendered label set its value.
type Series = BTreeMap<&'static str, (&'static str, BTreeMap<String, f64>)>;

fn registry() -> &'static Mutex<Series> {
    static FLOATS: OnceLock<Mutex<Series>> = OnceLock::new();
    FLOATS.get_or_init(Mutex::default)
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Sets counter `name{labels}` to `value` (a running total).
pub fn set(name: &'static str, help: &'static str, labels: &[Label], value: f64) {
    let text = labels
        .iter()
        .map(|l| format!("{}=\"{}\"", l.key(), escape(l.value())))
        .collect::<Vec<_>>()
        .join(",");
    registry()
        .lock()
        .entry(name)
        .or_insert_with(|| (help, BTreeMap::new()))
        .1
        .insert(text, value);
}

/// The series whose labels contain `needle`, in the text format.
pub(super) fn render(needle: &str) -> String {
    let mut out = String::new();
    for (name, (help, series)) in registry().lock().iter() {
        let mine: Vec<_> = series.iter().filter(|(l, _)| l.contains(needle)).collect();
        if mine.is_empty() {
            continue;
        }
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for (labels, v) in mine {
            let _ = writeln!(out, "{name}{{{labels}}} {v}");
        }
    }
    out
}
