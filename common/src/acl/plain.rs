//! `plain_acl.yml` as RocketMQ 4.9 writes it: `globalWhiteRemoteAddresses`
//! (a list of address patterns) and `accounts`, each with `accessKey`,
//! `secretKey` (both longer than 6 characters), `whiteRemoteAddress`,
//! `admin`, `defaultTopicPerm`, `defaultGroupPerm`, `topicPerms` and
//! `groupPerms` (lists of `name=PERM`). Read leniently as fastjson would
//! (`admin: "true"`, numbers as strings); an account that cannot be used
//! is an error naming it, and nothing of the file is taken then.

use std::collections::HashMap;

use serde_yaml::Value;

use super::address::AddrPattern;
use super::perm::Perm;

/// RocketMQ's prefix of a group's retry topic: a group's permission is
/// kept under that name.
pub const RETRY_PREFIX: &str = "%RETRY%";
/// Keys must be longer than this.
const MIN_KEY_LEN: usize = 6;

/// One account, ready to check requests against.
#[derive(Debug, Clone)]
pub struct Account {
    /// Its access key.
    pub access_key: String,
    /// Its secret key (never logged or answered).
    pub secret_key: String,
    /// Requests from here are taken without a signature or permission check.
    pub white: AddrPattern,
    /// May use the administration codes.
    pub admin: bool,
    /// For topics not listed.
    pub default_topic: Perm,
    /// For groups not listed.
    pub default_group: Perm,
    /// Listed topics, and groups under `%RETRY%<group>`; `None` when the
    /// account lists neither.
    pub resources: Option<HashMap<String, Perm>>,
}

/// A whole file, compiled.
#[derive(Debug, Clone, Default)]
pub struct AclTable {
    /// Addresses taken without any check.
    pub global_white: Vec<AddrPattern>,
    /// Accounts by access key.
    pub accounts: HashMap<String, Account>,
    /// Permission strings that were none of RocketMQ's (taken as DENY).
    pub unknown_perms: Vec<String>,
}

impl AclTable {
    /// Compiles the YAML text of a plain_acl.yml.
    pub fn parse(yaml: &str) -> Result<Self, String> {
        let doc: Value = if yaml.trim().is_empty() {
            Value::Null
        } else {
            serde_yaml::from_str(yaml).map_err(|e| format!("not YAML: {e}"))?
        };
        let mut t = Self::default();
        if doc.is_null() {
            return Ok(t);
        }
        let root = doc.as_mapping().ok_or("the top level must be a map")?;
        for p in strings(
            root.get("globalWhiteRemoteAddresses"),
            "globalWhiteRemoteAddresses",
        )? {
            t.global_white.push(AddrPattern::parse(&p)?);
        }
        let accounts = match root.get("accounts") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Sequence(s)) => s.clone(),
            Some(_) => return Err("accounts must be a list".into()),
        };
        for (i, a) in accounts.iter().enumerate() {
            let a = a
                .as_mapping()
                .ok_or_else(|| format!("accounts[{i}] must be a map"))?;
            let account = t.account(i, a)?;
            if t.accounts.contains_key(&account.access_key) {
                return Err(format!(
                    "accounts[{i}]: accessKey {} appears twice",
                    account.access_key
                ));
            }
            t.accounts.insert(account.access_key.clone(), account);
        }
        Ok(t)
    }

    fn account(&mut self, i: usize, a: &serde_yaml::Mapping) -> Result<Account, String> {
        let ak = scalar(a.get("accessKey")).unwrap_or_default();
        let sk = scalar(a.get("secretKey")).unwrap_or_default();
        if ak.len() <= MIN_KEY_LEN || sk.len() <= MIN_KEY_LEN {
            return Err(format!(
                "accounts[{i}] (accessKey {ak:?}): accessKey and secretKey must be longer than \
                 {MIN_KEY_LEN} characters"
            ));
        }
        let white = AddrPattern::parse(&scalar(a.get("whiteRemoteAddress")).unwrap_or_default())
            .map_err(|e| format!("accounts[{i}] ({ak}): {e}"))?;
        let admin =
            scalar(a.get("admin")).is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
        let mut perm = |s: Option<String>| {
            let s = s.unwrap_or_default();
            let (p, known) = Perm::parse(&s);
            if !known && !s.is_empty() {
                self.unknown_perms.push(format!("{ak}: {s}"));
            }
            p
        };
        let default_topic = perm(scalar(a.get("defaultTopicPerm")));
        let default_group = perm(scalar(a.get("defaultGroupPerm")));
        let topics = strings(a.get("topicPerms"), "topicPerms")?;
        let groups = strings(a.get("groupPerms"), "groupPerms")?;
        let resources = if topics.is_empty() && groups.is_empty() {
            None
        } else {
            let mut map = HashMap::new();
            for (entries, group) in [(&topics, false), (&groups, true)] {
                for e in entries {
                    let parts: Vec<&str> = e.split('=').filter(|s| !s.is_empty()).collect();
                    let [name, p] = parts[..] else {
                        return Err(format!(
                            "accounts[{i}] ({ak}): {e:?} is not name=PERM (e.g. topicA=PUB|SUB)"
                        ));
                    };
                    let name = name.trim();
                    let key = if group {
                        format!("{RETRY_PREFIX}{name}")
                    } else {
                        name.to_owned()
                    };
                    map.insert(key, perm(Some(p.to_owned())));
                }
            }
            Some(map)
        };
        Ok(Account {
            access_key: ak,
            secret_key: sk,
            white,
            admin,
            default_topic,
            default_group,
            resources,
        })
    }
}

/// A scalar as text (`true`, `12345678` and `"x"` alike).
fn scalar(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A list of scalars (or one scalar, or nothing).
fn strings(v: Option<&Value>, what: &str) -> Result<Vec<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Sequence(s)) => s
            .iter()
            .map(|x| scalar(Some(x)).ok_or_else(|| format!("{what}: {x:?} is not a value")))
            .collect(),
        Some(x) => scalar(Some(x))
            .map(|s| vec![s])
            .ok_or_else(|| format!("{what} must be a list")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB
  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: \"true\"
";

    #[test]
    fn rocketmqs_sample_file_compiles() {
        let t = AclTable::parse(SAMPLE).unwrap();
        assert_eq!(t.global_white.len(), 2);
        let a = &t.accounts["RocketMQ"];
        assert_eq!(a.secret_key, "12345678");
        assert!(!a.admin);
        assert_eq!(a.white, AddrPattern::Never);
        assert_eq!(a.default_topic, Perm::DENY);
        let r = a.resources.as_ref().unwrap();
        assert_eq!(r["topicB"], Perm(12));
        assert_eq!(r["%RETRY%groupC"], Perm::SUB);
        let b = &t.accounts["rocketmq2"];
        assert!(b.admin && b.resources.is_none());
        assert!(b.white.matches("192.168.1.9".parse().unwrap()));
        assert!(t.unknown_perms.is_empty());
    }

    #[test]
    fn unusable_files_are_refused_by_name() {
        for (yaml, says) in [
            ("accounts:\n  - accessKey: short\n    secretKey: 12345678\n", "longer than 6"),
            ("accounts:\n  - accessKey: abcdefgh\n    secretKey: 12345678\n    topicPerms: [x]\n", "name=PERM"),
            ("accounts: 3\n", "must be a list"),
            ("globalWhiteRemoteAddresses: [1.2.3]\n", "pattern"),
            ("accounts:\n  - {accessKey: abcdefgh, secretKey: 12345678}\n  - {accessKey: abcdefgh, secretKey: 87654321}\n", "twice"),
            (": : :", "not YAML"),
        ] {
            let e = AclTable::parse(yaml).unwrap_err();
            assert!(e.contains(says), "{yaml:?}: {e}");
        }
        assert!(AclTable::parse("").unwrap().accounts.is_empty());
        let t = AclTable::parse(
            "accounts:\n  - {accessKey: abcdefgh, secretKey: 12345678, defaultTopicPerm: ALL}\n",
        )
        .unwrap();
        assert_eq!(t.unknown_perms, ["abcdefgh: ALL"]);
    }
}
