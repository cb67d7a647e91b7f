//! The meta persister: one thread that makes the meta tables' changes
//! durable, each at most once per its interval unless a caller waits for a
//! change (then at once, one write for every waiter so far), and everything
//! still pending when it stops. For `topics.json` and
//! `subscriptionGroup.json` a write appends the queued journal lines and
//! compacts the journal into the file when it is due (see
//! [`super::journal`]); `consumerOffset.json` is written whole. Requests
//! only change memory.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_common::service::{Next, Pass, Service, Signal};

use super::persist::{write_all, write_dirty, PersistTable};

/// Shortest interval between two journal appends of `topics.json` or
/// `subscriptionGroup.json` that nobody waits for: a storm of creations
/// costs at most one synced append per interval.
pub const TABLE_WRITE_INTERVAL: Duration = Duration::from_millis(100);

/// Why the persister is asked to stop.
const STOP: &str = "broker stopping";

/// One table and how often it may be written when nobody waits.
#[derive(Debug)]
struct Entry {
    table: Arc<dyn PersistTable>,
    interval: Duration,
    /// When the last write was tried (`None`: never).
    last_try: Option<Instant>,
    /// The table's writes are failing (logged once per streak).
    failing: bool,
}

/// The running persister.
#[derive(Debug)]
pub struct MetaPersister {
    service: Service,
}

impl MetaPersister {
    /// Starts the persister over `tables`, each with the shortest interval
    /// between writes nobody waits for. From now on waiters on these
    /// tables wake it instead of writing themselves.
    pub fn start(tables: Vec<(Arc<dyn PersistTable>, Duration)>) -> std::io::Result<Self> {
        let signal = Signal::new();
        let tick = tables
            .iter()
            .map(|(_, interval)| *interval)
            .min()
            .unwrap_or(TABLE_WRITE_INTERVAL)
            .max(Duration::from_millis(1));
        let entries = tables
            .into_iter()
            .map(|(table, interval)| {
                table.generations().attach(Arc::clone(&signal));
                Entry {
                    table,
                    interval,
                    last_try: None,
                    failing: false,
                }
            })
            .collect();
        let service = Service::start_with(
            "meta-persist",
            signal,
            Next::After(tick),
            PersistPass { entries, tick },
        )?;
        Ok(Self { service })
    }

    /// Stops after the pass in progress and writes every dirty table.
    pub fn stop(self) {
        self.service.stop(STOP);
    }

    /// Stops without writing, as a crash would leave the files.
    pub fn halt(self) {
        self.service.halt("broker halted");
    }
}

#[derive(Debug)]
struct PersistPass {
    entries: Vec<Entry>,
    tick: Duration,
}

impl PersistPass {
    fn write(entry: &mut Entry) {
        entry.last_try = Some(Instant::now());
        let path = entry.table.path().display().to_string();
        match write_dirty(entry.table.as_ref()) {
            Ok(_) if entry.failing => {
                entry.failing = false;
                tracing::info!(path, "meta file written again");
            }
            Ok(_) => {}
            Err(e) if !entry.failing => {
                entry.failing = true;
                tracing::error!(
                    path,
                    error = %e,
                    "writing a meta file failed; retrying every interval (not logged again \
                     until it works)"
                );
            }
            Err(e) => tracing::debug!(path, error = %e, "meta file write still failing"),
        }
    }
}

impl Pass for PersistPass {
    fn run(&mut self) -> Next {
        let now = Instant::now();
        for entry in &mut self.entries {
            let status = entry.table.generations().status();
            let due = entry
                .last_try
                .is_none_or(|at| now.duration_since(at) >= entry.interval);
            let compact = entry
                .table
                .journal()
                .is_some_and(|j| j.needs_compaction(now));
            if status.urgent || (status.dirty && due) || compact {
                Self::write(entry);
            }
        }
        Next::After(self.tick)
    }

    fn finish(&mut self, _reason: &str) {
        for entry in &mut self.entries {
            if let Err(e) = write_all(entry.table.as_ref()) {
                tracing::error!(
                    path = %entry.table.path().display(),
                    error = %e,
                    "writing a meta file at stop failed"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::meta::{ConsumerOffsetManager, SubscriptionGroupManager, TopicConfigManager};
    use rmq_common::remoting::body::{SubscriptionGroupConfig, TopicConfig};

    /// A timer interval no test waits for: whatever is written, a waiter
    /// or the stop wrote.
    const NEVER: Duration = Duration::from_secs(3600);

    /// Bound on the wait for a write the timer makes.
    const TIMER_WRITE_BOUND: Duration = Duration::from_secs(10);

    fn topics_file(dir: &std::path::Path) -> serde_json::Value {
        let raw = std::fs::read(dir.join("config/topics.json")).unwrap();
        serde_json::from_slice(&raw).unwrap()
    }

    /// What a restart would find: `topics.json` (if any) with its journal
    /// replayed, read without touching either.
    fn durable_topics(dir: &std::path::Path) -> super::super::topics::TopicsFile {
        let path = dir.join("config/topics.json");
        let mut table: super::super::topics::TopicsFile = std::fs::read(&path)
            .map(|raw| serde_json::from_slice(&raw).unwrap())
            .unwrap_or_default();
        crate::meta::journal::Journal::new(&path)
            .load(&mut table)
            .unwrap();
        table
    }

    #[test]
    fn many_changes_one_write_and_a_waiter_is_released_once_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let topics = Arc::new(TopicConfigManager::open(dir.path(), 8).unwrap());
        let persister = MetaPersister::start(vec![(Arc::clone(&topics) as _, NEVER)]).unwrap();
        // The first pass runs after one tick (NEVER): nothing is written
        // by the timer in this test.
        let created = topics.create_missing((0..1000).map(|i| format!("%RETRY%g{i}")), 1);
        assert_eq!(created, 1000);
        assert_eq!(topics.generations().status().writes, 0);
        assert!(!dir.path().join("config/topics.json").exists());
        // An admin's upsert waits for the disk: one journal append covers
        // all, and the JSON file is not rewritten for it.
        topics.upsert(TopicConfig::new("Admin", 4)).unwrap();
        let durable = durable_topics(dir.path());
        assert!(durable.topic_config_table.contains_key("Admin"));
        assert!(durable.topic_config_table.contains_key("%RETRY%g999"));
        assert_eq!(durable.data_version, topics.table().data_version);
        assert!(!dir.path().join("config/topics.json").exists());
        assert_eq!(topics.generations().status().writes, 1);
        assert!(!topics.generations().status().dirty);
        // The stop compacts the journal into the file Apache's tools read.
        persister.stop();
        assert_eq!(topics.generations().status().writes, 2);
        let file = topics_file(dir.path());
        assert!(file["topicConfigTable"]["Admin"].is_object());
        assert!(file["topicConfigTable"]["%RETRY%g999"].is_object());
        assert!(!dir.path().join("config/topics.json.journal").exists());
    }

    #[test]
    fn waiters_share_writes() {
        let dir = tempfile::tempdir().unwrap();
        let topics = Arc::new(TopicConfigManager::open(dir.path(), 8).unwrap());
        let persister = MetaPersister::start(vec![(Arc::clone(&topics) as _, NEVER)]).unwrap();
        const THREADS: usize = 8;
        const EACH: usize = 25;
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let topics = &topics;
                s.spawn(move || {
                    for i in 0..EACH {
                        topics
                            .upsert(TopicConfig::new(&format!("T{t}-{i}"), 2))
                            .unwrap();
                    }
                });
            }
        });
        let writes = topics.generations().status().writes;
        assert!(
            (1..=(THREADS * EACH) as u64).contains(&writes),
            "{writes} writes"
        );
        let durable = durable_topics(dir.path());
        for t in 0..THREADS {
            for i in 0..EACH {
                assert!(durable
                    .topic_config_table
                    .contains_key(&format!("T{t}-{i}")));
            }
        }
        persister.stop();
    }

    #[test]
    fn the_timer_writes_what_nobody_waits_for() {
        let dir = tempfile::tempdir().unwrap();
        let topics = Arc::new(TopicConfigManager::open(dir.path(), 8).unwrap());
        let persister =
            MetaPersister::start(vec![(Arc::clone(&topics) as _, Duration::from_millis(5))])
                .unwrap();
        let (_, created) = topics.get_or_create_deferred("%RETRY%timer", 1).unwrap();
        assert!(created.is_some());
        let give_up = Instant::now() + TIMER_WRITE_BOUND;
        while topics.generations().status().dirty {
            assert!(Instant::now() < give_up, "the timer never wrote the table");
            std::thread::yield_now();
        }
        assert!(durable_topics(dir.path())
            .topic_config_table
            .contains_key("%RETRY%timer"));
        persister.stop();
    }

    #[test]
    fn stop_writes_every_dirty_table_and_halt_writes_none() {
        let dir = tempfile::tempdir().unwrap();
        let open = || {
            (
                Arc::new(TopicConfigManager::open(dir.path(), 8).unwrap()),
                Arc::new(ConsumerOffsetManager::open(dir.path()).unwrap()),
                Arc::new(SubscriptionGroupManager::open(dir.path()).unwrap()),
            )
        };
        let start = |t: &Arc<TopicConfigManager>,
                     o: &Arc<ConsumerOffsetManager>,
                     g: &Arc<SubscriptionGroupManager>| {
            MetaPersister::start(vec![
                (Arc::clone(t) as _, NEVER),
                (Arc::clone(o) as _, NEVER),
                (Arc::clone(g) as _, NEVER),
            ])
            .unwrap()
        };
        let (topics, offsets, groups) = open();
        let persister = start(&topics, &offsets, &groups);
        topics.get_or_create_deferred("%RETRY%halted", 1).unwrap();
        offsets.commit("halted", "T", 0, 3);
        persister.halt();
        assert!(!dir.path().join("config/topics.json").exists());
        assert!(!dir.path().join("config/consumerOffset.json").exists());

        let (topics, offsets, groups) = open();
        let persister = start(&topics, &offsets, &groups);
        topics.get_or_create_deferred("%RETRY%stopped", 1).unwrap();
        offsets.commit("stopped", "T", 0, 7);
        let group: SubscriptionGroupConfig =
            rmq_common::json::from_str(r#"{"groupName":"stopped"}"#).unwrap();
        // A group change waits for its write, which the persister makes.
        groups.upsert(group).unwrap();
        assert_eq!(groups.generations().status().writes, 1);
        persister.stop();
        let (topics, offsets, groups) = open();
        assert!(topics.get("%RETRY%stopped").is_some());
        assert!(topics.get("%RETRY%halted").is_none());
        assert_eq!(offsets.query("stopped", "T", 0), Some(7));
        assert_eq!(offsets.query("halted", "T", 0), None);
        assert!(groups.get("stopped").is_some());
    }

    #[test]
    fn a_failing_write_releases_its_waiter_with_the_error() {
        let dir = tempfile::tempdir().unwrap();
        let topics = Arc::new(TopicConfigManager::open(dir.path(), 8).unwrap());
        let persister = MetaPersister::start(vec![(Arc::clone(&topics) as _, NEVER)]).unwrap();
        // Folders where the journal and the file should be: the append
        // fails, and so does the whole-file write that stands in for it.
        let config = dir.path().join("config");
        for name in ["topics.json", "topics.json.journal"] {
            std::fs::create_dir_all(config.join(name).join("blocker")).unwrap();
        }
        let err = topics.upsert(TopicConfig::new("Doomed", 4)).unwrap_err();
        assert!(err.to_string().contains("topics.json"), "{err}");
        // Kept in memory, and written once the disk lets it.
        assert!(topics.get("Doomed").is_some());
        for name in [
            "topics.json",
            "topics.json.journal",
            "topics.json.journal.compacting",
        ] {
            let _ = std::fs::remove_dir_all(config.join(name));
        }
        topics.upsert(TopicConfig::new("Later", 4)).unwrap();
        let durable = durable_topics(dir.path());
        assert!(durable.topic_config_table.contains_key("Doomed"));
        assert!(durable.topic_config_table.contains_key("Later"));
        persister.stop();
    }
}
