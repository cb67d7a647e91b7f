//! The check of one request against an [`AclTable`], in RocketMQ's order
//! (`PlainPermissionManager.validate`): the global white list lets in;
//! then the account named by `AccessKey` must exist; its own white address
//! lets in; the signature must match; administration codes need an admin;
//! a lone PUB to the trace topic is taken; then every topic and group the
//! request touches needs the permission listed for it, or the default.

use std::collections::BTreeMap;
use std::net::IpAddr;

use super as sig;
use super::perm::Perm;
use super::plain::{AclTable, RETRY_PREFIX};

/// The trace topic: a PUB to it alone is taken from any valid account.
const TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";

/// A refused request: the remark to answer. It names the request code, the
/// account and the resource, never a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied(pub String);

impl AclTable {
    /// Checks a request of `code` from `peer`, with its extFields and body.
    pub fn check(
        &self,
        code: i32,
        peer: IpAddr,
        ext: &BTreeMap<String, String>,
        body: Option<&[u8]>,
    ) -> Result<(), Denied> {
        let signature = ext.get(sig::SIGNATURE).map_or("", String::as_str);
        // The Java client signs a unique-key query's flag, Java's broker
        // leaves it out: either form is taken.
        let signed = |secret: &str| {
            sig::verify(secret, &sig::content(ext, &[], body), signature)
                || (ext.contains_key(sig::UNIQUE_KEY_QUERY)
                    && sig::verify(
                        secret,
                        &sig::content(ext, &[sig::UNIQUE_KEY_QUERY], body),
                        signature,
                    ))
        };
        let ak = ext.get(sig::ACCESS_KEY).map(String::as_str);
        self.check_signed(code, peer, ak, &signed, ext, body)
    }

    /// [`check`](Self::check) for a request whose signature is carried
    /// elsewhere (a gRPC call's `authorization` metadata): `ak` is the
    /// access key it names, and `signed` tells whether it signs the
    /// request under an account's secret key.
    pub fn check_signed(
        &self,
        code: i32,
        peer: IpAddr,
        ak: Option<&str>,
        signed: &dyn Fn(&str) -> bool,
        ext: &BTreeMap<String, String>,
        body: Option<&[u8]>,
    ) -> Result<(), Denied> {
        if self.global_white.iter().any(|p| p.matches(peer)) {
            return Ok(());
        }
        let deny = |why: String| Err(Denied(format!("ACL: request code {code}: {why}")));
        let Some(ak) = ak else {
            return deny(format!(
                "no {} (an unsigned request from {peer})",
                sig::ACCESS_KEY
            ));
        };
        let Some(account) = self.accounts.get(ak) else {
            return deny(format!("no account for accessKey={ak}"));
        };
        if account.white.matches(peer) {
            return Ok(());
        }
        if !signed(&account.secret_key) {
            return deny(format!("check signature failed for accessKey={ak}"));
        }
        if super::resources::is_admin(code) && !account.admin {
            return deny(format!(
                "needs an admin account, but accessKey={ak} is not admin"
            ));
        }
        let needed = super::resources::needed(code, ext, body)
            .map_err(|e| Denied(format!("ACL: request code {code}: accessKey={ak}: {e}")))?;
        if needed.len() == 1 && needed[0].0 == TRACE_TOPIC && needed[0].1 == Perm::PUB {
            return Ok(());
        }
        if needed.is_empty() || (account.resources.is_none() && account.admin) {
            return Ok(());
        }
        for (name, want) in &needed {
            let group = name.strip_prefix(RETRY_PREFIX);
            let listed = account
                .resources
                .as_ref()
                .and_then(|r| r.get(name))
                .copied();
            let owned = listed.unwrap_or(if group.is_some() {
                account.default_group
            } else {
                account.default_topic
            });
            if !owned.grants(*want) {
                let what = match group {
                    Some(g) => format!("group {g}"),
                    None => format!("topic {name}"),
                };
                return deny(format!(
                    "accessKey={ak} has no {} permission on {what} ({})",
                    want.name(),
                    if listed.is_some() {
                        "as listed"
                    } else {
                        "by default"
                    }
                ));
            }
        }
        Ok(())
    }
}
