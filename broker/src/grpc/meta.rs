//! What a 5.x SDK says about itself in each call's metadata: its client
//! id (`x-mq-client-id`, required as by the proxy) and version, and the deadline the call carries (`grpc-timeout`).

use std::net::SocketAddr;
use std::time::Duration;

use tonic::metadata::MetadataMap;

use super::status::Failure;
use rmq_grpc::pb;

pub(crate) const CLIENT_ID: &str = "x-mq-client-id";
pub(crate) const CLIENT_VERSION: &str = "x-mq-client-version";
pub(crate) const LANGUAGE: &str = "x-mq-language";

/// One call's caller.
#[derive(Debug, Clone)]
pub(crate) struct CallMeta {
    pub client_id: String,
    pub version: String,
    /// `x-mq-language`, as sent.
    pub language: String,
    pub peer: SocketAddr,
    /// What is left of the call's deadline when it arrived.
    pub deadline: Option<Duration>,
    /// The call's signature, if it is signed.
    pub auth: Option<Signed>,
}

/// A 5.x SDK's signature: `authorization: MQv2-HMAC-SHA1
/// Credential=<accessKey>, SignedHeaders=x-mq-date-time,
/// Signature=<hex HMAC-SHA1 of the date-time>`, with `x-mq-date-time`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Signed {
    pub access_key: String,
    /// The signed content: the `x-mq-date-time` value.
    pub content: String,
    /// The HMAC bytes.
    pub signature: Vec<u8>,
}

/// Reads the `authorization` header (with `x-mq-date-time`), as Apache
/// RocketMQ 5.3.3 reads it (`DefaultAuthenticationContextBuilder`).
pub(crate) fn parse_auth(authorization: &str, date_time: Option<&str>) -> Result<Signed, Failure> {
    let bad = |m: String| Failure::new(pb::Code::Unauthorized, m);
    let date_time = date_time
        .filter(|d| !d.is_empty())
        .ok_or_else(|| bad("datetime is null.".into()))?;
    let (_, rest) = authorization
        .split_once(' ')
        .ok_or_else(|| bad("authentication header is incorrect.".into()))?;
    let (mut access_key, mut signature) = (None, None);
    for kv in rest.split(',') {
        let (k, v) = kv
            .trim()
            .split_once('=')
            .ok_or_else(|| bad("authentication keyValues length is incorrect.".into()))?;
        match k {
            "Credential" => access_key = v.split('/').next().map(str::to_owned),
            "Signature" => {
                signature = Some(hex(v).ok_or_else(|| bad("signature is not hex.".into()))?)
            }
            _ => {}
        }
    }
    Ok(Signed {
        access_key: access_key.ok_or_else(|| bad("no Credential in authorization.".into()))?,
        content: date_time.to_owned(),
        signature: signature.ok_or_else(|| bad("no Signature in authorization.".into()))?,
    })
}

fn hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
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
        let auth = match metadata.get("authorization").and_then(|v| v.to_str().ok()) {
            None | Some("") => None,
            Some(a) => Some(parse_auth(
                a,
                metadata.get("x-mq-date-time").and_then(|v| v.to_str().ok()),
            )?),
        };
        Ok(Self {
            auth,
            client_id,
            version: text(CLIENT_VERSION),
            language: text(LANGUAGE),
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
    fn signatures_as_the_sdks_send_them() {
        let a =
            "MQv2-HMAC-SHA1 Credential=rocketmq2, SignedHeaders=x-mq-date-time, Signature=0A1bff";
        let s = parse_auth(a, Some("20261205T120000Z")).unwrap();
        assert_eq!(s.access_key, "rocketmq2");
        assert_eq!(s.signature, vec![0x0a, 0x1b, 0xff]);
        assert_eq!(s.content, "20261205T120000Z");
        assert_eq!(
            parse_auth(a, None).unwrap_err().code,
            pb::Code::Unauthorized
        );
        assert!(parse_auth("MQv2-HMAC-SHA1", Some("d")).is_err());
        assert!(parse_auth("X Credential=a, Signature=zz", Some("d")).is_err());
        assert!(parse_auth("X Credential=a", Some("d")).is_err());
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
