//! Remote address patterns of plain ACL (`globalWhiteRemoteAddresses`, an
//! account's `whiteRemoteAddress`): empty never matches; `*` (or
//! `*.*.*.*`) always; `10.1.1.{2,5}` and `10.1.1.2,10.1.1.5` list
//! addresses; `10.1.*.*`, `10.1.1.*` and `10.1.1.1-20` range over the first
//! wildcard segment (later segments are not compared, as in RocketMQ);
//! anything else is one address. IPv6 addresses may be listed or named
//! alone (compared as addresses, so any spelling matches).

use std::net::IpAddr;

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddrPattern {
    /// Empty: matches nothing.
    Never,
    /// `*`: matches everything.
    Any,
    /// Any of these addresses.
    List(Vec<IpAddr>),
    /// IPv4 whose first `head.len()` segments are `head` and whose next
    /// segment lies in `lo..=hi`.
    Range {
        /// Leading segments.
        head: Vec<u8>,
        /// Lowest value of the ranged segment.
        lo: u8,
        /// Highest value of the ranged segment.
        hi: u8,
    },
}

impl AddrPattern {
    /// Compiles `pattern`; the error names what is wrong with it.
    pub fn parse(pattern: &str) -> Result<Self, String> {
        let p = pattern.trim();
        if p.is_empty() {
            return Ok(Self::Never);
        }
        if p == "*" || p == "*.*.*.*" || p == "*:*:*:*:*:*:*:*" {
            return Ok(Self::Any);
        }
        let bad = |why: &str| format!("remote address pattern {p:?}: {why}");
        if let Some(open) = p.strip_suffix('}') {
            let (prefix, items) = open
                .rsplit_once('{')
                .ok_or_else(|| bad("a closing '}' without '{'"))?;
            if !(prefix.ends_with('.') || prefix.ends_with(':')) {
                return Err(bad("'{' must open the last segment"));
            }
            let addrs = items
                .split(',')
                .map(|i| ip(&format!("{prefix}{}", i.trim())).ok_or_else(|| bad("not an address")))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Self::List(addrs));
        }
        if p.contains(',') {
            let addrs = p
                .split(',')
                .map(|i| ip(i).ok_or_else(|| bad(&format!("{:?} is not an address", i.trim()))))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Self::List(addrs));
        }
        if p.contains('*') || p.contains('-') {
            return range(p)
                .ok_or_else(|| bad("a range is a.b.c.*, a.b.*.*, a.b.c.x-y or a.b.x-y.* (IPv4)"));
        }
        ip(p)
            .map(|a| Self::List(vec![a]))
            .ok_or_else(|| bad("not an address"))
    }

    /// Whether `addr` matches.
    pub fn matches(&self, addr: IpAddr) -> bool {
        match self {
            Self::Never => false,
            Self::Any => true,
            Self::List(list) => list.contains(&addr),
            Self::Range { head, lo, hi } => match addr {
                IpAddr::V4(v4) => {
                    let o = v4.octets();
                    o[..head.len()] == head[..] && (*lo..=*hi).contains(&o[head.len()])
                }
                IpAddr::V6(_) => false,
            },
        }
    }
}

fn ip(s: &str) -> Option<IpAddr> {
    s.trim().parse().ok()
}

/// `a.b.c.*`, `a.b.*.*`, `a.b.c.x-y`, `a.b.x-y.*`: the first wildcard or
/// range segment (the 2nd, 3rd or 4th) is compared, later ones are not.
fn range(p: &str) -> Option<AddrPattern> {
    let parts: Vec<&str> = p.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let at = (1..4).find(|&i| parts[i] == "*" || parts[i].contains('-'))?;
    let head = parts[..at]
        .iter()
        .map(|s| s.parse::<u8>().ok())
        .collect::<Option<Vec<u8>>>()?;
    let (lo, hi) = if parts[at] == "*" {
        (0, 255)
    } else {
        let (a, b) = parts[at].split_once('-')?;
        let (a, b) = (a.parse::<u8>().ok()?, b.parse::<u8>().ok()?);
        (a <= b).then_some((a, b))?
    };
    Some(AddrPattern::Range { head, lo, hi })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, a: &str) -> bool {
        AddrPattern::parse(p).unwrap().matches(a.parse().unwrap())
    }

    #[test]
    fn patterns_match_as_rocketmqs() {
        assert!(!m("", "127.0.0.1"));
        assert!(m("*", "10.0.0.1") && m("*.*.*.*", "::1"));
        assert!(m("192.168.0.{1,2}", "192.168.0.2") && !m("192.168.0.{1,2}", "192.168.0.3"));
        assert!(m("1.1.1.1,2.2.2.2", "2.2.2.2") && !m("1.1.1.1,2.2.2.2", "3.3.3.3"));
        assert!(m("192.168.1.*", "192.168.1.77") && !m("192.168.1.*", "192.168.2.77"));
        assert!(m("192.168.*.*", "192.168.9.9") && !m("192.168.*.*", "192.169.9.9"));
        assert!(m("192.168.1.1-5", "192.168.1.5") && !m("192.168.1.1-5", "192.168.1.6"));
        assert!(m("192.168.1-10.*", "192.168.10.200") && !m("192.168.1-10.*", "192.168.11.1"));
        assert!(m("127.0.0.1", "127.0.0.1") && !m("127.0.0.1", "127.0.0.2"));
        assert!(m("0:0:0:0:0:0:0:1", "::1"));
        for bad in [
            "1.2.3",
            "1.2.3.x",
            "1.2.3.5-1",
            "a.b.c.{1}",
            "1.2.3.4,z",
            "300.1.1.*",
        ] {
            assert!(AddrPattern::parse(bad).is_err(), "{bad}");
        }
    }
}
