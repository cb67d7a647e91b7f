//! offsetMsgId: the store host and CommitLog offset of a message, as uppercase hex.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Why an offsetMsgId could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MsgIdError {
    /// Not 32 (IPv4) or 56 (IPv6) characters.
    #[error("message id {id:?} has length {len}, expected 32 (IPv4) or 56 (IPv6)")]
    BadLength {
        /// The id as given.
        id: String,
        /// Its length.
        len: usize,
    },
    /// A character is not a hex digit.
    #[error("message id {id:?} is not hexadecimal")]
    NotHex {
        /// The id as given.
        id: String,
    },
}

/// `hex(store ip) + hex(i32 port) + hex(i64 commitlog offset)`, uppercase.
pub fn encode_offset_msg_id(store_host: SocketAddr, commit_log_offset: i64) -> String {
    let mut bytes = Vec::with_capacity(28);
    match store_host.ip() {
        IpAddr::V4(ip) => bytes.extend_from_slice(&ip.octets()),
        IpAddr::V6(ip) => bytes.extend_from_slice(&ip.octets()),
    }
    bytes.extend_from_slice(&i32::from(store_host.port()).to_be_bytes());
    bytes.extend_from_slice(&commit_log_offset.to_be_bytes());
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0x0F)]));
    }
    out
}

/// The store host and CommitLog offset named by an offsetMsgId.
pub fn decode_offset_msg_id(id: &str) -> Result<(SocketAddr, i64), MsgIdError> {
    let ip_len = match id.len() {
        32 => 4,
        56 => 16,
        len => {
            return Err(MsgIdError::BadLength {
                id: id.to_owned(),
                len,
            })
        }
    };
    let bytes = (0..id.len())
        .step_by(2)
        .map(|i| {
            id.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| MsgIdError::NotHex { id: id.to_owned() })?;
    let ip = if ip_len == 4 {
        let mut a = [0u8; 4];
        a.copy_from_slice(&bytes[..4]);
        IpAddr::V4(Ipv4Addr::from(a))
    } else {
        let mut a = [0u8; 16];
        a.copy_from_slice(&bytes[..16]);
        IpAddr::V6(Ipv6Addr::from(a))
    };
    let mut port = [0u8; 4];
    port.copy_from_slice(&bytes[ip_len..ip_len + 4]);
    let mut off = [0u8; 8];
    off.copy_from_slice(&bytes[ip_len + 4..ip_len + 12]);
    // Ports are written as i32; anything outside u16 is not a real port.
    let port = u16::try_from(i32::from_be_bytes(port)).unwrap_or(0);
    Ok((SocketAddr::new(ip, port), i64::from_be_bytes(off)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_ipv4() {
        let host: SocketAddr = "192.168.1.10:10911"
            .parse()
            .unwrap_or_else(|_| unreachable!());
        let id = encode_offset_msg_id(host, 0x1234);
        assert_eq!(id, "C0A8010A00002A9F0000000000001234");
        assert_eq!(decode_offset_msg_id(&id), Ok((host, 0x1234)));
    }

    #[test]
    fn round_trip_ipv6() {
        let host: SocketAddr = "[::1]:10911".parse().unwrap_or_else(|_| unreachable!());
        let id = encode_offset_msg_id(host, i64::MAX);
        assert_eq!(id.len(), 56);
        assert_eq!(decode_offset_msg_id(&id), Ok((host, i64::MAX)));
    }

    #[test]
    fn bad_ids_are_named() {
        assert!(matches!(
            decode_offset_msg_id("ABC"),
            Err(MsgIdError::BadLength { len: 3, .. })
        ));
        assert!(matches!(
            decode_offset_msg_id("ZZA8010A00002A9F0000000000001234"),
            Err(MsgIdError::NotHex { .. })
        ));
        assert!(matches!(
            decode_offset_msg_id("é8010A00002A9F0000000000001234ab"),
            Err(MsgIdError::NotHex { .. }) | Err(MsgIdError::BadLength { .. })
        ));
    }
}
