//! Broker metadata persisted as the JSON files RocketMQ operators know:
//! `config/topics.json`, `config/subscriptionGroup.json` and
//! `config/consumerOffset.json`. Requests change the tables in memory; the
//! [`MetaPersister`] writes them behind (see [`persist`]). Topic and group
//! changes are journaled one by one (see [`journal`]), so a change costs
//! the same with 100,000 entries as with 100.

pub mod generation;
pub mod groups;
pub mod journal;
pub mod offsets;
pub mod own_topics;
pub mod persist;
pub mod persister;
pub mod pulled;
pub mod topics;

pub use generation::Generation;
pub use groups::SubscriptionGroupManager;
pub use offsets::ConsumerOffsetManager;
pub use persist::{PersistTable, PERSIST_WAIT_TIMEOUT};
pub use persister::{MetaPersister, TABLE_WRITE_INTERVAL};
pub use topics::{TopicConfigManager, Unregistered};

pub(crate) use rmq_common::meta_file::{encode_json, read_json, write_bytes, write_json};
