//! Ids a gRPC bench client makes, in the shapes a 5.x SDK makes them:
//!
//! * message ids: version `01`, then 16 bytes in upper-case hex: 6 bytes
//!   naming the host, the low 2 bytes of the process id, the low 4 bytes of
//!   the seconds since 2021-01-01T00:00:00Z, a 4-byte sequence number
//!   (34 characters, the SDK's `MessageIdCodec` v1 layout);
//! * client ids: `host@pid@index@nonce`, one per connection.
//!
//! The SDK puts its MAC address in the 6 host bytes; the bench puts random
//! bytes there, drawn once per process, so two bench processes on one
//! machine never make the same id and a consumer can tell its own run's
//! messages (same prefix) from leftovers of an earlier run.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// 2021-01-01T00:00:00Z in seconds since the Unix epoch: the SDKs' epoch
/// for the time field of a message id.
const CUSTOM_EPOCH_SECS: u64 = 1_609_459_200;

/// Characters in a v1 message id.
pub const MESSAGE_ID_LEN: usize = 34;

/// Characters of the prefix every id of one [`MessageIds`] shares: the
/// version, the host bytes and the process id.
const PREFIX_LEN: usize = 2 + 12 + 4;

/// Makes the message ids of one process.
#[derive(Debug)]
pub struct MessageIds {
    prefix: String,
    sequence: AtomicU32,
}

impl MessageIds {
    /// Ids for `host` bytes and process `pid` (only its low 2 bytes are
    /// used, as the SDK does).
    pub fn new(host: [u8; 6], pid: u32) -> Self {
        let mut prefix = String::with_capacity(PREFIX_LEN);
        prefix.push_str("01");
        for b in host {
            prefix.push_str(&format!("{b:02X}"));
        }
        prefix.push_str(&format!("{:04X}", pid & 0xFFFF));
        Self {
            prefix,
            sequence: AtomicU32::new(0),
        }
    }

    /// Ids for this process, with random host bytes.
    pub fn for_this_process() -> Self {
        Self::new(rand::random(), std::process::id())
    }

    /// The next id.
    pub fn next_id(&self) -> String {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
            .saturating_sub(CUSTOM_EPOCH_SECS);
        let seq = self.sequence.fetch_add(1, Ordering::Relaxed);
        // The low 4 bytes of the seconds, as the SDK keeps them.
        format!("{}{:08X}{seq:08X}", self.prefix, secs as u32)
    }

    /// For an id this maker made: a number unique among its ids (the time
    /// and sequence fields); `None` for anyone else's id.
    pub fn key_of(&self, id: &str) -> Option<u64> {
        if id.len() != MESSAGE_ID_LEN {
            return None;
        }
        let rest = id.strip_prefix(self.prefix.as_str())?;
        u64::from_str_radix(rest, 16).ok()
    }
}

/// A client id as the SDKs shape theirs (`host@pid@index@nonce`): one per
/// bench connection, `role` naming what it does (`p`, `c`, `idle`, ...).
pub fn client_id(nonce: u64, role: &str, index: usize) -> String {
    format!("rmq-bench@{}@{role}{index}@{nonce:x}", std::process::id())
}

/// A nonce for this process's client ids, so two runs against one broker
/// never share one.
pub fn client_nonce() -> u64 {
    rand::random::<u64>() >> 16
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_have_the_sdk_layout_and_are_unique() {
        let ids = MessageIds::new([0xAB, 0, 1, 2, 3, 0xFE], 0x1234_5678);
        let a = ids.next_id();
        assert_eq!(a.len(), MESSAGE_ID_LEN, "{a}");
        assert!(a.starts_with("01AB00010203FE5678"), "{a}");
        assert!(a.ends_with("00000000"), "first sequence is 0: {a}");
        assert!(a
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase()));
        let secs = u32::from_str_radix(&a[18..26], 16).unwrap();
        assert!(secs > 150_000_000, "seconds since 2021: {secs}");
        let mut keys = HashSet::new();
        for _ in 0..10_000 {
            let id = ids.next_id();
            assert!(keys.insert(ids.key_of(&id).unwrap()), "{id} made twice");
        }
    }

    #[test]
    fn only_own_ids_have_a_key() {
        let mine = MessageIds::new([1; 6], 7);
        let other = MessageIds::new([2; 6], 7);
        let id = mine.next_id();
        assert!(mine.key_of(&id).is_some());
        assert_eq!(other.key_of(&id), None, "another process's id");
        assert_eq!(mine.key_of(&id[..33]), None, "too short");
        assert_eq!(mine.key_of("M1"), None);
        let bad = format!("{}ZZZZZZZZZZZZZZZZ", &id[..18]);
        assert_eq!(mine.key_of(&bad), None, "not hex");
    }

    #[test]
    fn client_ids_differ_by_role_and_index() {
        let n = client_nonce();
        assert_ne!(client_id(n, "p", 0), client_id(n, "p", 1));
        assert_ne!(client_id(n, "p", 0), client_id(n, "c", 0));
        assert!(client_id(n, "idle", 3).starts_with("rmq-bench@"));
    }
}
