//! The NameServer's KV config (PUT/GET/DELETE_KV_CONFIG,
//! GET_KVLIST_BY_NAMESPACE; mqadmin updateKvConfig / deleteKvConfig), kept
//! in `kvConfig.json` as Java's `KVConfigManager` keeps it:
//! `{"configTable":{"<namespace>":{"<key>":"<value>"}}}`. Every change is
//! written (atomically) before it is answered; a namespace whose keys are
//! all deleted stays, empty, as in Java.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use rmq_common::meta_file::MetaError;
use rmq_common::meta_file::{read_json, write_json};

/// `kvConfig.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct KvFile {
    config_table: BTreeMap<String, BTreeMap<String, String>>,
}

/// The KV table, in memory and (when it has a path) on disk.
#[derive(Debug)]
pub struct KvConfig {
    path: Option<PathBuf>,
    table: Mutex<KvFile>,
}

impl KvConfig {
    /// Loads `path` (absent: empty); `None` keeps the table in memory only.
    pub fn open(path: Option<&Path>) -> Result<Self, MetaError> {
        let table = match path {
            Some(p) => read_json(p)?.unwrap_or_default(),
            None => KvFile::default(),
        };
        Ok(Self {
            path: path.map(Path::to_owned),
            table: Mutex::new(table),
        })
    }

    /// Where the table is kept, if anywhere.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Sets `namespace`/`key` and writes the table.
    pub fn put(&self, namespace: &str, key: &str, value: &str) -> Result<(), MetaError> {
        let mut t = self.table.lock();
        t.config_table
            .entry(namespace.to_owned())
            .or_default()
            .insert(key.to_owned(), value.to_owned());
        self.persist(&t)
    }

    /// The value of `namespace`/`key`.
    pub fn get(&self, namespace: &str, key: &str) -> Option<String> {
        self.table
            .lock()
            .config_table
            .get(namespace)
            .and_then(|m| m.get(key))
            .cloned()
    }

    /// Removes `namespace`/`key` (nothing to remove is not an error) and
    /// writes the table.
    pub fn delete(&self, namespace: &str, key: &str) -> Result<(), MetaError> {
        let mut t = self.table.lock();
        if let Some(m) = t.config_table.get_mut(namespace) {
            m.remove(key);
        }
        self.persist(&t)
    }

    /// Every key of `namespace`, if the namespace exists.
    pub fn namespace(&self, namespace: &str) -> Option<BTreeMap<String, String>> {
        self.table.lock().config_table.get(namespace).cloned()
    }

    fn persist(&self, t: &KvFile) -> Result<(), MetaError> {
        match &self.path {
            Some(p) => write_json(p, t),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_delete_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("namesrv").join("kvConfig.json");
        let kv = KvConfig::open(Some(&path)).unwrap();
        kv.put("ns", "k", "v").unwrap();
        kv.put("ns", "k2", "v2").unwrap();
        let kv = KvConfig::open(Some(&path)).unwrap();
        assert_eq!(kv.get("ns", "k").as_deref(), Some("v"));
        assert_eq!(kv.get("other", "k"), None);
        kv.delete("ns", "k").unwrap();
        kv.delete("ns", "k2").unwrap();
        kv.delete("nope", "k").unwrap();
        let kv = KvConfig::open(Some(&path)).unwrap();
        assert_eq!(kv.namespace("ns"), Some(BTreeMap::new()));
        assert_eq!(kv.namespace("nope"), None);
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(json, serde_json::json!({"configTable": {"ns": {}}}));
    }
}
