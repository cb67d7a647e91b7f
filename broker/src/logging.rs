//! Log setup for the binaries: `tracing` to stderr, levels from `RUST_LOG`
//! or, when it is unset, the `logLevel` config key (default `info`); and a
//! rate limiter for log lines that a misbehaving client could repeat at
//! line rate (refused requests).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Installs the global subscriber with `RUST_LOG`, else `default_filter`
/// (an `EnvFilter` directive such as `info` or `info,rmq_broker=debug`).
/// A second call does nothing. Returns the directive in use.
pub fn init_with(default_filter: &str) -> String {
    let (filter, directive) = match std::env::var("RUST_LOG") {
        Ok(v) if !v.trim().is_empty() => (tracing_subscriber::EnvFilter::new(&v), v),
        _ => (
            tracing_subscriber::EnvFilter::new(default_filter),
            default_filter.to_owned(),
        ),
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    directive
}

/// [`init_with`] at `info`.
pub fn init() {
    init_with("info");
}

/// Lets one line per key through every `interval`, counting the rest.
#[derive(Debug)]
pub struct RateLimiter {
    interval: Duration,
    last: Mutex<HashMap<(i32, i32), (Instant, u64)>>,
}

impl RateLimiter {
    /// A limiter with one line per key per `interval`.
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            last: Mutex::new(HashMap::new()),
        }
    }

    /// `Some(suppressed)` when a line for `key` may be written now (with the
    /// number of lines held back since the last one), `None` otherwise.
    pub fn allow(&self, key: (i32, i32)) -> Option<u64> {
        let now = Instant::now();
        let mut last = self.last.lock();
        match last.get_mut(&key) {
            Some((at, held)) if now.duration_since(*at) < self.interval => {
                *held += 1;
                None
            }
            Some((at, held)) => {
                let n = *held;
                *at = now;
                *held = 0;
                Some(n)
            }
            None => {
                last.insert(key, (now, 0));
                Some(0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_key_per_interval() {
        let r = RateLimiter::new(Duration::from_secs(3600));
        assert_eq!(r.allow((10, 1)), Some(0));
        assert_eq!(r.allow((10, 1)), None);
        assert_eq!(r.allow((10, 1)), None);
        assert_eq!(r.allow((11, 1)), Some(0));
        let r = RateLimiter::new(Duration::ZERO);
        assert_eq!(r.allow((1, 1)), Some(0));
        assert_eq!(r.allow((1, 1)), Some(0));
    }
}
