//! Subscription groups (`config/subscriptionGroup.json`), as RocketMQ keeps
//! them: created and deleted by UPDATE_AND_CREATE_SUBSCRIPTIONGROUP and
//! DELETE_SUBSCRIPTIONGROUP (mqadmin updateSubGroup / deleteSubGroup),
//! persisted in Java's file layout. A change waits until it is on disk;
//! the meta persister makes the write, one for every change since the last.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::MetaError;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::RwLock;
use rmq_common::names::is_lmq;
use rmq_common::remoting::body::{DataVersion, SubscriptionGroupConfig};
use serde::{Deserialize, Serialize};

use super::generation::Generation;
use super::journal::{Journal, Keyed, KeyedFile};
use super::persist::{wait_on_disk, Generations, PersistTable, Snapshot, PERSIST_WAIT_TIMEOUT};
use super::read_json;

/// `config/subscriptionGroup.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct GroupsFile {
    pub(crate) subscription_group_table: BTreeMap<String, SubscriptionGroupConfig>,
    pub(crate) data_version: DataVersion,
}

/// What a group may do, for the pull path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupPermits {
    /// `consumeEnable`.
    pub consume_enable: bool,
    /// `consumeBroadcastEnable`.
    pub consume_broadcast_enable: bool,
}

/// The subscription-group table.
#[derive(Debug)]
pub struct SubscriptionGroupManager {
    path: PathBuf,
    state: RwLock<GroupsFile>,
    generations: Generations,
    journal: Journal,
    /// `enableLmq`: every `%LMQ%` group exists with the defaults and is
    /// never stored (RocketMQ's `LmqSubscriptionGroupManager`).
    lmq: AtomicBool,
}

impl Keyed for SubscriptionGroupConfig {
    fn key(&self) -> &str {
        &self.group_name
    }
}

impl KeyedFile<SubscriptionGroupConfig> for GroupsFile {
    fn parts(&self) -> (&BTreeMap<String, SubscriptionGroupConfig>, &DataVersion) {
        (&self.subscription_group_table, &self.data_version)
    }
    fn parts_mut(
        &mut self,
    ) -> (
        &mut BTreeMap<String, SubscriptionGroupConfig>,
        &mut DataVersion,
    ) {
        (&mut self.subscription_group_table, &mut self.data_version)
    }
}

impl SubscriptionGroupManager {
    /// Loads the file under the store root.
    pub fn open(root: &std::path::Path) -> Result<Self, MetaError> {
        let path = root.join("config").join("subscriptionGroup.json");
        let mut file: GroupsFile = read_json(&path)?.unwrap_or_default();
        let journal = Journal::new(&path);
        super::journal::recover(&path, &journal, &mut file)?;
        Ok(Self {
            path,
            state: RwLock::new(file),
            generations: Generations::default(),
            journal,
            lmq: AtomicBool::new(false),
        })
    }

    /// Serves `%LMQ%` group names with the default settings, without
    /// storing them (`enableLmq`).
    pub fn serve_lmq(&self, on: bool) {
        self.lmq.store(on, Ordering::Relaxed);
    }

    fn is_served_lmq(&self, group: &str) -> bool {
        self.lmq.load(Ordering::Relaxed) && is_lmq(group)
    }

    /// A group's settings.
    pub fn get(&self, group: &str) -> Option<SubscriptionGroupConfig> {
        if self.is_served_lmq(group) {
            return Some(SubscriptionGroupConfig::named(group));
        }
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

    /// Whether `group` may consume at all and by broadcasting, if it
    /// exists (the pull path's check, without copying the config).
    pub fn permits(&self, group: &str) -> Option<GroupPermits> {
        if self.is_served_lmq(group) {
            let g = SubscriptionGroupConfig::named(group);
            return Some(GroupPermits {
                consume_enable: g.consume_enable,
                consume_broadcast_enable: g.consume_broadcast_enable,
            });
        }
        self.state
            .read()
            .subscription_group_table
            .get(group)
            .map(|g| GroupPermits {
                consume_enable: g.consume_enable,
                consume_broadcast_enable: g.consume_broadcast_enable,
            })
    }

    /// The settings of each of `groups`, creating those that do not exist
    /// with Java's defaults (autoCreateSubscriptionGroup). A creation does
    /// not wait for the disk: the meta persister writes it behind.
    pub fn get_or_create<'a>(
        &self,
        groups: impl IntoIterator<Item = &'a str>,
    ) -> Vec<SubscriptionGroupConfig> {
        let groups: Vec<&str> = groups.into_iter().collect();
        if groups.iter().any(|g| self.is_served_lmq(g)) {
            // LMQ groups are never stored; the others one by one (rare).
            return groups
                .iter()
                .flat_map(|g| match self.is_served_lmq(g) {
                    true => vec![SubscriptionGroupConfig::named(g)],
                    false => self.get_or_create([*g]),
                })
                .collect();
        }
        {
            let s = self.state.read();
            if groups
                .iter()
                .all(|g| s.subscription_group_table.contains_key(*g))
            {
                return groups
                    .iter()
                    .filter_map(|g| s.subscription_group_table.get(*g).cloned())
                    .collect();
            }
        }
        let mut s = self.state.write();
        let mut created = Vec::new();
        let out = groups
            .iter()
            .map(|g| {
                s.subscription_group_table
                    .entry((*g).to_owned())
                    .or_insert_with(|| {
                        tracing::info!(group = g, "subscription group created on first use");
                        let config = SubscriptionGroupConfig::named(g);
                        created.push(config.clone());
                        config
                    })
                    .clone()
            })
            .collect();
        if !created.is_empty() {
            self.changed(&mut s, created, Vec::new());
        }
        out
    }

    /// A slave takes its master's groups when the data version differs;
    /// returns whether it changed.
    pub fn take_from_master(
        &self,
        table: BTreeMap<String, SubscriptionGroupConfig>,
        version: DataVersion,
    ) -> bool {
        let mut s = self.state.write();
        if s.data_version == version {
            return false;
        }
        let (put, delete) = super::journal::difference(&s.subscription_group_table, &table);
        s.subscription_group_table = table;
        s.data_version = version;
        let generation = self.generations.mark();
        self.journal
            .record(generation, &s.data_version, put, delete);
        true
    }

    /// GET_ALL_SUBSCRIPTIONGROUP_CONFIG's body: the table and its data
    /// version, as the file holds them (Java's `SubscriptionGroupWrapper`).
    pub fn wrapper_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(&super::journal::copy_in_chunks(&self.state))
    }

    /// Creates or replaces a group and waits until the table is on disk.
    pub fn upsert(&self, config: SubscriptionGroupConfig) -> Result<(), MetaError> {
        self.upsert_many(vec![config])
    }

    /// Creates or replaces every group of `configs` and waits until the
    /// change is on disk: one journal line for them all.
    pub fn upsert_many(&self, configs: Vec<SubscriptionGroupConfig>) -> Result<(), MetaError> {
        if configs.is_empty() {
            return Ok(());
        }
        let generation = {
            let mut s = self.state.write();
            for config in &configs {
                s.subscription_group_table
                    .insert(config.group_name.clone(), config.clone());
            }
            self.changed(&mut s, configs, Vec::new())
        };
        wait_on_disk(self, generation, PERSIST_WAIT_TIMEOUT)
    }

    /// Deletes a group (true if it existed) and waits until the table is
    /// on disk.
    pub fn delete(&self, group: &str) -> Result<bool, MetaError> {
        let generation = {
            let mut s = self.state.write();
            if s.subscription_group_table.remove(group).is_none() {
                return Ok(false);
            }
            self.changed(&mut s, Vec::new(), vec![group.to_owned()])
        };
        wait_on_disk(self, generation, PERSIST_WAIT_TIMEOUT)?;
        Ok(true)
    }

    /// Its change generations (how far the file has caught up).
    pub fn generations(&self) -> &Generations {
        &self.generations
    }

    /// Moves the data version, marks the change and queues its journal
    /// line (under the write lock).
    fn changed(
        &self,
        s: &mut GroupsFile,
        put: Vec<SubscriptionGroupConfig>,
        delete: Vec<String>,
    ) -> Generation {
        s.data_version.counter += 1;
        s.data_version.timestamp = rmq_common::time::now_ms();
        let generation = self.generations.mark();
        self.journal
            .record(generation, &s.data_version, put, delete);
        generation
    }
}

impl PersistTable for SubscriptionGroupManager {
    fn path(&self) -> &Path {
        &self.path
    }

    fn generations(&self) -> &Generations {
        &self.generations
    }

    fn journal(&self) -> Option<&Journal> {
        Some(&self.journal)
    }

    fn encode_snapshot(&self) -> Result<Snapshot, MetaError> {
        Snapshot::of_journaled(&self.path, &self.state, &self.generations, &self.journal)
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
