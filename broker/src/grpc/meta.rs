//! What a 5.x SDK says about itself in each call's metadata: its client
//! id (`x-mq-client-id`, required as by the proxy) and version, and the deadline the call carries (`grpc-timeout`).

use std::net::SocketAddr;
use std::time::Duration;

use tonic::metadata::MetadataMap;

use super::status::Failure;
use rmq_grpc::pb;

pub(crate) const CLIENT_ID: &str = "x-mq-client-id";
pub(crate) const CLIENT_VERSION: &str = "x-mq-client-version";

/// One call's caller.
#[derive(Debug, Clone)]
pub(crate) struct CallMeta {
    pub client_id: String,
    pub version: String,
    pub peer: SocketAddr,
    /// What is left of the call's deadline when it arrived.
    pub deadline: Option<Duration>,
}

impl CallMeta {
    /// Reads the metadata; CLIENT_ID_REQUIRED without a client id.
    pub fn read(metadata: &MetadataMap, peer: Option<SocketAddr>) -> Result<Self, Failure> {
        let text = |key: &str| {
            metadata
                .get(key)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        let client_id = text(CLIENT_ID);
        if client_id.trim().is_empty() {
            return Err(Failure::new(
                pb::Code::ClientIdRequired,
                "client id cannot be empty",
            ));
        }
        Ok(Self {
            client_id,
            version: text(CLIENT_VERSION),
            peer: peer.unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0))),
            deadline: metadata
                .get("grpc-timeout")
                .and_then(|v| v.to_str().ok())
                .and_then(parse_timeout),
        })
    }
}

/// gRPC's `grpc-timeout`: at most 8 digits and a unit (H M S m u n).
pub(crate) fn parse_timeout(v: &str) -> Option<Duration> {
    let (last, _) = v.char_indices().last()?;
    let (digits, unit) = v.split_at(last);
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout("30S"), Some(Duration::from_secs(30)));
        assert_eq!(parse_timeout("2500m"), Some(Duration::from_millis(2500)));
        assert_eq!(parse_timeout("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_timeout("S"), None);
        assert_eq!(parse_timeout("123456789S"), None);
        assert_eq!(parse_timeout("12x"), None);
        assert_eq!(parse_timeout(""), None);
        assert_eq!(parse_timeout("5é"), None);
    }

    #[test]
    fn client_id_is_required() {
        let mut m = MetadataMap::new();
        let e = CallMeta::read(&m, None).unwrap_err();
        assert_eq!(e.code, pb::Code::ClientIdRequired);
        m.insert(CLIENT_ID, "c1".parse().unwrap());
        m.insert("grpc-timeout", "3S".parse().unwrap());
        let meta = CallMeta::read(&m, None).unwrap();
        assert_eq!(meta.client_id, "c1");
        assert_eq!(meta.deadline, Some(Duration::from_secs(3)));
    }
}
