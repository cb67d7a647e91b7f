//! Changes to the ACL file from the administration codes: an account
//! created or updated (UPDATE_AND_CREATE_ACL_CONFIG), deleted
//! (DELETE_ACL_CONFIG), the global white list replaced
//! (UPDATE_GLOBAL_WHITE_ADDRS_CONFIG). Each edit reads the file, changes
//! it, bumps its `dataVersion` (counter + 1, timestamp now), checks that
//! the result is a usable ACL, writes it to a temporary file and renames it
//! over the old one (a crash leaves the old file or the new, never half of
//! one), and puts it in force at once. Edits run one at a time.

use serde_yaml::{Mapping, Value};

use super::plain::AclTable;
use super::Acl;

/// What UPDATE_AND_CREATE_ACL_CONFIG carries. `None` leaves a field of an
/// existing account as it is.
#[derive(Debug, Clone, Default)]
pub struct AccountUpdate {
    /// The account.
    pub access_key: String,
    /// Its secret (required, as in RocketMQ).
    pub secret_key: String,
    /// Trusted address pattern.
    pub white_remote_address: Option<String>,
    /// Admin or not (always written, as in RocketMQ).
    pub admin: bool,
    /// Default topic permission.
    pub default_topic_perm: Option<String>,
    /// Default group permission.
    pub default_group_perm: Option<String>,
    /// `topic=PERM` entries.
    pub topic_perms: Option<Vec<String>>,
    /// `group=PERM` entries.
    pub group_perms: Option<Vec<String>>,
}

/// A file's data version: `dataVersion: [{counter, timestamp}]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct FileVersion {
    /// Edits so far.
    pub counter: i64,
    /// When the last edit was made, ms since the epoch.
    pub timestamp: i64,
}

fn key(k: &str) -> Value {
    Value::String(k.to_owned())
}

fn as_i64(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        Some(Value::String(s)) => s.trim().parse().unwrap_or(0),
        _ => 0,
    }
}

/// The version written in a parsed file.
pub fn version_of(doc: &Mapping) -> FileVersion {
    let first = doc
        .get(key("dataVersion"))
        .and_then(Value::as_sequence)
        .and_then(|s| s.first())
        .and_then(Value::as_mapping);
    first.map_or_else(FileVersion::default, |m| FileVersion {
        counter: as_i64(m.get(key("counter"))),
        timestamp: as_i64(m.get(key("timestamp"))),
    })
}

impl Acl {
    /// The file as YAML (an empty map when missing or empty).
    pub fn document(&self) -> Result<Mapping, String> {
        let text = match std::fs::read_to_string(self.file()) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("{}: {e}", self.file().display())),
        };
        if text.trim().is_empty() {
            return Ok(Mapping::new());
        }
        match serde_yaml::from_str::<Value>(&text) {
            Ok(Value::Mapping(m)) => Ok(m),
            Ok(Value::Null) => Ok(Mapping::new()),
            Ok(_) => Err(format!(
                "{}: the top level must be a map",
                self.file().display()
            )),
            Err(e) => Err(format!("{}: not YAML: {e}", self.file().display())),
        }
    }

    /// Applies `change` to the file as described in the module doc.
    fn edit(&self, change: impl FnOnce(&mut Mapping) -> Result<(), String>) -> Result<(), String> {
        let _one_at_a_time = self.edits.lock();
        let mut doc = self.document()?;
        change(&mut doc)?;
        let v = version_of(&doc);
        let mut next = Mapping::new();
        next.insert(key("counter"), Value::from(v.counter + 1));
        next.insert(key("timestamp"), Value::from(rmq_common::time::now_ms()));
        doc.insert(
            key("dataVersion"),
            Value::Sequence(vec![Value::Mapping(next)]),
        );
        let text = serde_yaml::to_string(&Value::Mapping(doc)).map_err(|e| e.to_string())?;
        let table = AclTable::parse(&text)?;
        let file = self.file();
        let tmp = file.with_extension("yml.tmp");
        let write = || -> std::io::Result<()> {
            if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)?;
            }
            let mut f = std::fs::File::create(&tmp)?;
            std::io::Write::write_all(&mut f, text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, file)
        };
        write().map_err(|e| format!("writing {}: {e}", file.display()))?;
        self.put_in_force(table);
        Ok(())
    }

    /// Creates the account, or updates the one with its access key (moved
    /// to the end of the list, as RocketMQ does).
    pub fn update_account(&self, u: &AccountUpdate) -> Result<(), String> {
        for e in u.topic_perms.iter().chain(&u.group_perms).flatten() {
            resource_perm(e)?;
        }
        self.edit(|doc| {
            let accounts = accounts(doc)?;
            let at = accounts.iter().position(|a| {
                a.get("accessKey").and_then(Value::as_str) == Some(u.access_key.as_str())
            });
            let mut a = at
                .map(|i| accounts.remove(i))
                .and_then(|v| v.as_mapping().cloned())
                .unwrap_or_default();
            a.insert(key("accessKey"), key(&u.access_key));
            a.insert(key("secretKey"), key(&u.secret_key));
            if let Some(w) = &u.white_remote_address {
                a.insert(key("whiteRemoteAddress"), key(w));
            }
            a.insert(key("admin"), Value::Bool(u.admin));
            for (k, v) in [
                ("defaultTopicPerm", &u.default_topic_perm),
                ("defaultGroupPerm", &u.default_group_perm),
            ] {
                if let Some(v) = v.as_ref().filter(|v| !v.is_empty()) {
                    a.insert(key(k), key(v));
                }
            }
            for (k, v) in [
                ("topicPerms", &u.topic_perms),
                ("groupPerms", &u.group_perms),
            ] {
                if let Some(list) = v {
                    a.insert(
                        key(k),
                        Value::Sequence(list.iter().map(|s| key(s)).collect()),
                    );
                }
            }
            accounts.push(Value::Mapping(a));
            Ok(())
        })
    }

    /// Deletes the account; false when there is none.
    pub fn delete_account(&self, access_key: &str) -> Result<bool, String> {
        let mut found = false;
        self.edit(|doc| {
            let accounts = accounts(doc)?;
            let before = accounts.len();
            accounts.retain(|a| a.get("accessKey").and_then(Value::as_str) != Some(access_key));
            found = accounts.len() < before;
            if found {
                Ok(())
            } else {
                Err(format!("no account for accessKey={access_key}"))
            }
        })
        .map(|()| true)
        .or_else(|e| if found { Err(e) } else { Ok(false) })
    }

    /// Replaces `globalWhiteRemoteAddresses`.
    pub fn set_global_white(&self, patterns: &[String]) -> Result<(), String> {
        for p in patterns {
            super::address::AddrPattern::parse(p)?;
        }
        self.edit(|doc| {
            doc.insert(
                key("globalWhiteRemoteAddresses"),
                Value::Sequence(patterns.iter().map(|p| key(p)).collect()),
            );
            Ok(())
        })
    }
}

fn accounts(doc: &mut Mapping) -> Result<&mut Vec<Value>, String> {
    let v = doc
        .entry(key("accounts"))
        .or_insert_with(|| Value::Sequence(Vec::new()));
    if v.is_null() {
        *v = Value::Sequence(Vec::new());
    }
    v.as_sequence_mut()
        .ok_or_else(|| "accounts must be a list".to_owned())
}

/// RocketMQ's check of a `name=PERM` entry of an update (DENY allowed too).
fn resource_perm(entry: &str) -> Result<(), String> {
    let Some((name, perm)) = entry.split_once('=') else {
        return Err(format!(
            "{entry:?}: the expected resource format is 'Res=Perm', e.g. topicA=SUB"
        ));
    };
    let (_, known) = super::perm::Perm::parse(perm);
    if name.trim().is_empty() || !known {
        return Err(format!(
            "{entry:?}: the expected permissions are SUB, PUB, PUB|SUB, SUB|PUB or DENY"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_keep_a_usable_file_and_count_versions() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("conf/plain_acl.yml");
        let acl = Acl::open(&f).unwrap();
        let mut u = AccountUpdate {
            access_key: "created1".into(),
            secret_key: "secret99".into(),
            topic_perms: Some(vec!["T=PUB".into()]),
            ..AccountUpdate::default()
        };
        acl.update_account(&u).unwrap();
        assert!(
            acl.table().accounts.contains_key("created1"),
            "in force at once"
        );
        u.admin = true;
        u.topic_perms = None;
        acl.update_account(&u).unwrap();
        let a = &acl.table().accounts["created1"];
        assert!(
            a.admin && a.resources.is_some(),
            "lists kept when not given"
        );
        acl.set_global_white(&["10.0.0.*".into()]).unwrap();
        assert!(acl.set_global_white(&["10.0.0".into()]).is_err());
        assert_eq!(version_of(&acl.document().unwrap()).counter, 3);
        u.secret_key = "short".into();
        assert!(
            acl.update_account(&u).is_err(),
            "a file we would refuse is not written"
        );
        u.secret_key = "secret99".into();
        u.topic_perms = Some(vec!["T=ALL".into()]);
        assert!(acl.update_account(&u).unwrap_err().contains("PUB|SUB"));
        assert!(acl.delete_account("created1").unwrap());
        assert!(!acl.delete_account("created1").unwrap());
        assert!(acl.table().accounts.is_empty());
        assert_eq!(version_of(&acl.document().unwrap()).counter, 4);
        assert!(!f.with_extension("yml.tmp").exists());
    }
}
