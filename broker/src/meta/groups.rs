//! Subscription groups (`config/subscriptionGroup.json`), as RocketMQ keeps
//! them: created and deleted by UPDATE_AND_CREATE_SUBSCRIPTIONGROUP and
//! DELETE_SUBSCRIPTIONGROUP (mqadmin updateSubGroup / deleteSubGroup),
//! persisted on every change in Java's file layout.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::MetaError;
use parking_lot::RwLock;
use rmq_common::remoting::body::{DataVersion, SubscriptionGroupConfig};
use serde::{Deserialize, Serialize};

use super::{read_json, write_json};

/// `config/subscriptionGroup.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct GroupsFile {
    pub(crate) subscription_group_table: BTreeMap<String, SubscriptionGroupConfig>,
    pub(crate) data_version: DataVersion,
}

/// The subscription-group table.
#[derive(Debug)]
pub struct SubscriptionGroupManager {
    path: PathBuf,
    state: RwLock<GroupsFile>,
}

impl SubscriptionGroupManager {
    /// Loads the file under the store root.
    pub fn open(root: &std::path::Path) -> Result<Self, MetaError> {
        let path = root.join("config").join("subscriptionGroup.json");
        let file = read_json(&path)?.unwrap_or_default();
        Ok(Self {
            path,
            state: RwLock::new(file),
        })
    }

    /// A group's settings.
    pub fn get(&self, group: &str) -> Option<SubscriptionGroupConfig> {
        self.state
            .read()
            .subscription_group_table
            .get(group)
            .cloned()
    }

    /// Every group, by name.
    pub fn all(&self) -> Vec<SubscriptionGroupConfig> {
        self.state
            .read()
            .subscription_group_table
            .values()
            .cloned()
            .collect()
    }

    /// Creates or replaces a group and persists the table.
    pub fn upsert(&self, config: SubscriptionGroupConfig) -> Result<(), MetaError> {
        self.change(|f| {
            f.subscription_group_table
                .insert(config.group_name.clone(), config);
            true
        })
    }

    /// Deletes a group (true if it existed) and persists the table.
    pub fn delete(&self, group: &str) -> Result<bool, MetaError> {
        let mut existed = false;
        self.change(|f| {
            existed = f.subscription_group_table.remove(group).is_some();
            existed
        })?;
        Ok(existed)
    }

    fn change(&self, f: impl FnOnce(&mut GroupsFile) -> bool) -> Result<(), MetaError> {
        let mut s = self.state.write();
        if !f(&mut s) {
            return Ok(());
        }
        s.data_version.counter += 1;
        s.data_version.timestamp = rmq_common::time::now_ms();
        write_json(&self.path, &*s)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn upsert_delete_reload_with_java_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let m = SubscriptionGroupManager::open(dir.path()).unwrap();
        assert!(m.get("g").is_none());
        let g: SubscriptionGroupConfig =
            rmq_common::json::from_str(r#"{"groupName":"g","retryMaxTimes":"3"}"#).unwrap();
        assert!(g.consume_enable && g.consume_broadcast_enable);
        assert_eq!((g.retry_queue_nums, g.retry_max_times), (1, 3));
        m.upsert(g.clone()).unwrap();
        let m = SubscriptionGroupManager::open(dir.path()).unwrap();
        assert_eq!(m.get("g"), Some(g));
        assert!(m.delete("g").unwrap());
        assert!(!m.delete("g").unwrap());
        let m = SubscriptionGroupManager::open(dir.path()).unwrap();
        assert!(m.all().is_empty());
    }
}
