//! Bounds that keep a hostile or broken client from growing the server's
//! memory: connection caps (total and per peer IP), the byte charge of a
//! frame, and a rate limit for the log lines these refusals write (an
//! attacker must not be able to fill the log either).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A decoded header takes more memory than its wire bytes (a map entry of
/// two `String`s per ext field, ~50-100 bytes for a field of a few wire
/// bytes); a frame's header is charged this many times its length.
pub const HEADER_DECODE_FACTOR: usize = 16;

/// Bytes a frame of `frame_len` (everything after the length prefix) with a
/// header of `header_len` is charged against the byte budgets: the frame as
/// buffered plus the decoded header's expansion.
pub fn frame_charge(frame_len: usize, header_len: usize) -> usize {
    frame_len
        .saturating_add(4)
        .saturating_add(header_len.saturating_mul(HEADER_DECODE_FACTOR - 1))
}

/// Why a connection was refused at accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// `maxConnections` connections are open.
    Total,
    /// `maxConnectionsPerAddress` connections from this IP are open.
    PerAddress,
}

impl Refused {
    /// The config key that refused it.
    pub fn key(self) -> &'static str {
        match self {
            Self::Total => "maxConnections",
            Self::PerAddress => "maxConnectionsPerAddress",
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
}

/// Open connections of one server, in total and per peer IP.
#[derive(Debug)]
pub struct ConnectionCaps {
    max_total: usize,
    max_per_ip: usize,
    counts: Mutex<Counts>,
}

impl ConnectionCaps {
    /// At most `max_total` connections, `max_per_ip` of them from one IP.
    pub fn new(max_total: usize, max_per_ip: usize) -> Arc<Self> {
        Arc::new(Self {
            max_total,
            max_per_ip,
            counts: Mutex::new(Counts::default()),
        })
    }

    /// Takes a slot for a connection from `ip`; the slot is given back when
    /// the returned guard drops.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<ConnectionSlot, Refused> {
        // Never held across an await; a panic elsewhere cannot leave the
        // counts half-updated (each update is one statement).
        let mut c = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        if c.total >= self.max_total {
            return Err(Refused::Total);
        }
        let n = c.per_ip.entry(ip).or_insert(0);
        if *n >= self.max_per_ip {
            return Err(Refused::PerAddress);
        }
        *n += 1;
        c.total += 1;
        Ok(ConnectionSlot {
            caps: Arc::clone(self),
            ip,
        })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .total
    }
}

/// A connection's place under the caps; gives it back on drop.
#[derive(Debug)]
pub struct ConnectionSlot {
    caps: Arc<ConnectionCaps>,
    ip: IpAddr,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut c = self
            .caps
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        c.total = c.total.saturating_sub(1);
        if let Some(n) = c.per_ip.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                c.per_ip.remove(&self.ip);
            }
        }
    }
}

/// Lets at most `per_window` log lines through per `window`; the first line
/// of the next window says how many were suppressed.
#[derive(Debug)]
pub struct LogLimiter {
    per_window: u64,
    window: Duration,
    started: Instant,
    /// Window number (since `started`) and lines seen in it, packed as
    /// `window << 32 | count` so one atomic holds both.
    state: AtomicU64,
    suppressed: AtomicU64,
}

impl LogLimiter {
    /// At most `per_window` lines per `window`.
    pub fn new(per_window: u32, window: Duration) -> Self {
        Self {
            per_window: u64::from(per_window),
            window,
            started: Instant::now(),
            state: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
        }
    }

    /// `Some(suppressed before this one)` if a line may be written now.
    pub fn allow(&self) -> Option<u64> {
        let w = (self.started.elapsed().as_nanos() / self.window.as_nanos().max(1)) as u64;
        let w = w & 0xFFFF_FFFF;
        let mut cur = self.state.load(Ordering::Relaxed);
        loop {
            let (cw, count) = (cur >> 32, cur & 0xFFFF_FFFF);
            let count = if cw == w { count } else { 0 };
            if count >= self.per_window {
                self.suppressed.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            let next = (w << 32) | (count + 1);
            match self
                .state
                .compare_exchange_weak(cur, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some(self.suppressed.swap(0, Ordering::Relaxed)),
                Err(now) => cur = now,
            }
        }
    }
}

/// Lines per second each kind of refusal may log.
pub const LOG_LINES_PER_SECOND: u32 = 10;

/// One limiter per kind of refusal, so one flood does not hide another.
#[derive(Debug)]
pub struct RefusalLogs {
    /// Connections refused at accept.
    pub accept: LogLimiter,
    /// Frames refused (header too large, no frame budget).
    pub frame: LogLimiter,
    /// Clients that stopped reading their answers.
    pub writer: LogLimiter,
}

impl Default for RefusalLogs {
    fn default() -> Self {
        let l = || LogLimiter::new(LOG_LINES_PER_SECOND, Duration::from_secs(1));
        Self {
            accept: l(),
            frame: l(),
            writer: l(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_count_total_and_per_ip_and_give_slots_back() {
        let caps = ConnectionCaps::new(3, 2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let a1 = caps.admit(a).unwrap();
        let _a2 = caps.admit(a).unwrap();
        assert_eq!(caps.admit(a).unwrap_err(), Refused::PerAddress);
        let b1 = caps.admit(b).unwrap();
        assert_eq!(caps.admit(b).unwrap_err(), Refused::Total);
        assert_eq!(caps.open(), 3);
        drop(a1);
        let _a3 = caps.admit(a).unwrap();
        drop(b1);
        assert_eq!(caps.open(), 2);
        assert_eq!(
            caps.counts.lock().unwrap().per_ip.get(&b),
            None,
            "an IP with no connection left is forgotten"
        );
    }

    #[test]
    fn log_limiter_lets_a_few_lines_through_per_window() {
        let l = LogLimiter::new(3, Duration::from_secs(3600));
        assert_eq!(l.allow(), Some(0));
        assert_eq!(l.allow(), Some(0));
        assert_eq!(l.allow(), Some(0));
        assert_eq!(l.allow(), None);
        assert_eq!(l.allow(), None);
        assert_eq!(l.suppressed.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn header_bytes_are_charged_with_their_expansion() {
        assert_eq!(frame_charge(100, 0), 104);
        assert_eq!(frame_charge(100, 10), 104 + 10 * 15);
        assert_eq!(frame_charge(usize::MAX, usize::MAX), usize::MAX);
    }
}
