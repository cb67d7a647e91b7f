//! RocketMQ's request signature (plain ACL, `AclClientRPCHook`): the values
//! of a request's extFields sorted by key, concatenated with no separator
//! (the `Signature` field itself left out), as UTF-8, then the body; signed
//! with HMAC-SHA1 under the account's secret key and written in standard
//! padded base64. The client adds its `AccessKey` (and `SecurityToken`, if
//! any) to the extFields before signing, so both are signed too.

pub mod address;
pub mod check;
pub mod perm;
pub mod plain;
pub mod resources;

pub use check::Denied;

use std::collections::BTreeMap;

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha1::Sha1;

/// extField naming the account.
pub const ACCESS_KEY: &str = "AccessKey";
/// extField carrying the signature.
pub const SIGNATURE: &str = "Signature";
/// extField carrying a session token (read, never checked, as in Java).
pub const SECURITY_TOKEN: &str = "SecurityToken";
/// extField the Java client adds to a query by unique key before signing,
/// which Java's broker then leaves out of what it checks.
pub const UNIQUE_KEY_QUERY: &str = "_UNIQUE_KEY_QUERY";

/// An account's keys, as a client signs with them. Debug output never
/// shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// Access key (sent).
    pub access_key: String,
    /// Secret key (never sent).
    pub secret_key: String,
}

impl Credentials {
    /// Keys `access_key` / `secret_key`.
    pub fn new(access_key: impl Into<String>, secret_key: impl Into<String>) -> Self {
        Self {
            access_key: access_key.into(),
            secret_key: secret_key.into(),
        }
    }

    /// Adds `AccessKey` and `Signature` to a request's extFields, as Java's
    /// `AclClientRPCHook` does.
    pub fn sign(&self, ext: &mut BTreeMap<String, String>, body: Option<&[u8]>) {
        sign_request(ext, body, &self.access_key, &self.secret_key);
    }
}

impl Credentials {
    /// Reads the JSON RocketMQ 5 takes as `innerClientAuthenticationCredentials`
    /// (`{"accessKey": "...", "secretKey": "..."}`); a blank text is `None`.
    /// The error names what is missing, never the secret.
    pub fn from_json(text: &str) -> Result<Option<Self>, String> {
        if text.trim().is_empty() {
            return Ok(None);
        }
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| format!("not a JSON object with accessKey and secretKey: {e}"))?;
        let field = |name: &str| {
            value
                .get(name)
                .and_then(serde_json::Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| format!("no {name} (a non-empty string) in the credentials"))
        };
        Ok(Some(Self::new(field("accessKey")?, field("secretKey")?)))
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key", &self.access_key)
            .finish_non_exhaustive()
    }
}

/// The bytes signed: every extField value but those named in `skip` (and
/// the signature), in key order, then the body.
pub fn content(ext: &BTreeMap<String, String>, skip: &[&str], body: Option<&[u8]>) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + body.map_or(0, <[u8]>::len));
    for (k, v) in ext {
        if k == SIGNATURE || skip.contains(&k.as_str()) {
            continue;
        }
        out.extend_from_slice(v.as_bytes());
    }
    if let Some(b) = body {
        out.extend_from_slice(b);
    }
    out
}

fn mac(secret: &str, content: &[u8]) -> Hmac<Sha1> {
    // HMAC takes a key of any length.
    let mut m = <Hmac<Sha1> as Mac>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts every key length"));
    m.update(content);
    m
}

/// The signature of `content` under `secret`: base64 of HMAC-SHA1.
pub fn sign(secret: &str, content: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(mac(secret, content).finalize().into_bytes())
}

/// Whether `signature` (base64) signs `content` under `secret`; the
/// comparison takes the same time wherever the bytes differ.
pub fn verify(secret: &str, content: &[u8], signature: &str) -> bool {
    let Ok(raw) = base64::engine::general_purpose::STANDARD.decode(signature.trim()) else {
        return false;
    };
    mac(secret, content).verify_slice(&raw).is_ok()
}

/// The raw HMAC-SHA1 of `content` under `secret` (a gRPC client sends
/// it hex-encoded).
pub fn sign_raw(secret: &str, content: &[u8]) -> Vec<u8> {
    mac(secret, content).finalize().into_bytes().to_vec()
}

/// Whether `raw` (the HMAC bytes, as a gRPC client's hex signature
/// decodes) signs `content` under `secret`; constant time.
pub fn verify_raw(secret: &str, content: &[u8], raw: &[u8]) -> bool {
    mac(secret, content).verify_slice(raw).is_ok()
}

/// Signs a request's extFields and body as the Java client does: adds
/// `AccessKey`, then `Signature` over everything.
pub fn sign_request(
    ext: &mut BTreeMap<String, String>,
    body: Option<&[u8]>,
    access_key: &str,
    secret: &str,
) {
    ext.insert(ACCESS_KEY.to_owned(), access_key.to_owned());
    let sig = sign(secret, &content(ext, &[], body));
    ext.insert(SIGNATURE.to_owned(), sig);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// extFields from pairs (also for the other ACL modules' tests).
    pub(crate) fn ext(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn content_is_values_in_key_order_then_the_body() {
        let e = ext(&[
            ("topic", "T"),
            ("AccessKey", "ak"),
            ("Signature", "x"),
            ("a", "1"),
        ]);
        // "AccessKey" < "a" < "topic" (upper case sorts first, as Java's TreeMap).
        assert_eq!(content(&e, &[], Some(b"BODY")), b"ak1TBODY");
        assert_eq!(content(&e, &["a"], None), b"akT");
    }

    #[test]
    fn hmac_sha1_base64_matches_the_published_vector() {
        // RFC 2202 test case 2: key "Jefe", "what do ya want for nothing?".
        let sig = sign("Jefe", b"what do ya want for nothing?");
        assert_eq!(sig, "7/zfauXrL6LSdBbV8YTfnCWafHk=");
        assert!(verify("Jefe", b"what do ya want for nothing?", &sig));
        assert!(!verify("Jefe", b"what do ya want for nothing!", &sig));
        assert!(!verify("jefe", b"what do ya want for nothing?", &sig));
        assert!(!verify(
            "Jefe",
            b"what do ya want for nothing?",
            "not base64!"
        ));
    }

    #[test]
    fn a_signed_request_verifies_and_any_changed_byte_does_not() {
        let mut e = ext(&[("topic", "T"), ("queueId", "3")]);
        sign_request(&mut e, Some(b"hello"), "RocketMQ", "12345678");
        let sig = e[SIGNATURE].clone();
        assert!(verify("12345678", &content(&e, &[], Some(b"hello")), &sig));
        assert!(!verify("12345678", &content(&e, &[], Some(b"hellp")), &sig));
        e.insert("queueId".into(), "4".into());
        assert!(!verify("12345678", &content(&e, &[], Some(b"hello")), &sig));
    }

    #[test]
    fn inner_credentials_read_from_json_and_errors_hide_the_secret() {
        let c = Credentials::from_json(r#"{"accessKey":"brokerAk","secretKey":"brokerSk1"}"#)
            .unwrap()
            .unwrap();
        assert_eq!(c, Credentials::new("brokerAk", "brokerSk1"));
        assert_eq!(Credentials::from_json("  ").unwrap(), None);
        let e = Credentials::from_json(r#"{"accessKey":"brokerAk","secretKey":""}"#).unwrap_err();
        assert!(e.contains("secretKey"), "{e}");
        let e = Credentials::from_json(r#"{"secretKey":"topSecret9"}"#).unwrap_err();
        assert!(e.contains("accessKey") && !e.contains("topSecret9"), "{e}");
        assert!(Credentials::from_json("accessKey=x").is_err());
    }
}
