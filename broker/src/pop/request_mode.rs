//! The request-mode table: per (topic, consumer group), whether
//! QUERY_ASSIGNMENT hands the group's clients queues to PULL or to POP, as
//! SET_MESSAGE_REQUEST_MODE set it. Kept in `config/messageRequestMode.json`
//! in RocketMQ 5.x's form
//! (`{"messageRequestModeMap":{topic:{group:{topic,consumerGroup,mode,popShareQueueNum}}}}`),
//! written behind by the meta persister like the other JSON tables.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use parking_lot::RwLock;
use rmq_common::remoting::body::SetMessageRequestModeBody;
use serde::{Deserialize, Serialize};

use crate::error::MetaError;
use crate::meta::persist::{wait_on_disk, Generations, PersistTable, Snapshot};

/// The file's content.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct ModeFile {
    /// topic → group → entry.
    message_request_mode_map: BTreeMap<String, BTreeMap<String, SetMessageRequestModeBody>>,
}

/// Every (topic, group) whose mode was set.
#[derive(Debug)]
pub struct RequestModeTable {
    path: PathBuf,
    state: RwLock<ModeFile>,
    generations: Generations,
}

impl RequestModeTable {
    /// Loads `config/messageRequestMode.json` under `root` (empty when it
    /// does not exist; an unreadable file is an error naming it).
    pub fn open(root: &Path) -> Result<Self, MetaError> {
        let path = root.join("config").join("messageRequestMode.json");
        let file = crate::meta::read_json(&path)?.unwrap_or_default();
        Ok(Self {
            path,
            state: RwLock::new(file),
            generations: Generations::default(),
        })
    }

    /// The entry set for (`topic`, `group`), if any.
    pub fn get(&self, topic: &str, group: &str) -> Option<SetMessageRequestModeBody> {
        self.state
            .read()
            .message_request_mode_map
            .get(topic)
            .and_then(|groups| groups.get(group))
            .cloned()
    }

    /// Sets the entry of (`entry.topic`, `entry.consumer_group`) and waits
    /// until the file holds it (Java persists before it answers).
    pub fn set(&self, entry: SetMessageRequestModeBody) -> Result<(), MetaError> {
        let generation = {
            let mut s = self.state.write();
            s.message_request_mode_map
                .entry(entry.topic.clone())
                .or_default()
                .insert(entry.consumer_group.clone(), entry);
            self.generations.mark()
        };
        wait_on_disk(self, generation, crate::meta::PERSIST_WAIT_TIMEOUT)
    }

    /// The table as its file holds it, compact (GET_ALL_MESSAGE_REQUEST_MODE's
    /// body, as Java's `encode()`).
    pub fn encode(&self) -> Result<Vec<u8>, MetaError> {
        let copy = self.state.read().clone();
        serde_json::to_vec(&copy).map_err(|source| MetaError::Encode {
            path: self.path.clone(),
            source,
        })
    }
}

impl PersistTable for RequestModeTable {
    fn path(&self) -> &Path {
        &self.path
    }

    fn generations(&self) -> &Generations {
        &self.generations
    }

    fn encode_snapshot(&self) -> Result<Snapshot, MetaError> {
        let (copy, generation) = {
            let s = self.state.read();
            (s.clone(), self.generations.current())
        };
        Ok(Snapshot {
            bytes: crate::meta::encode_json(&self.path, &copy)?,
            generation,
            cut: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_common::remoting::body::MessageRequestMode;

    fn entry(
        topic: &str,
        group: &str,
        mode: MessageRequestMode,
        share: i32,
    ) -> SetMessageRequestModeBody {
        SetMessageRequestModeBody {
            topic: topic.into(),
            consumer_group: group.into(),
            mode,
            pop_share_queue_num: share,
        }
    }

    #[test]
    fn a_set_mode_is_on_disk_when_set_returns_and_survives_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let t = RequestModeTable::open(dir.path()).unwrap();
        assert_eq!(t.get("T", "G"), None);
        t.set(entry("T", "G", MessageRequestMode::Pop, 2)).unwrap();
        t.set(entry("T", "H", MessageRequestMode::Pull, 0)).unwrap();
        let text =
            std::fs::read_to_string(dir.path().join("config/messageRequestMode.json")).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            json["messageRequestModeMap"]["T"]["G"],
            serde_json::json!({"topic":"T","consumerGroup":"G","mode":"POP","popShareQueueNum":2}),
            "{text}"
        );
        let again = RequestModeTable::open(dir.path()).unwrap();
        assert_eq!(
            again.get("T", "G"),
            Some(entry("T", "G", MessageRequestMode::Pop, 2))
        );
        assert_eq!(
            again.get("T", "H").map(|e| e.mode),
            Some(MessageRequestMode::Pull)
        );
        let answered: serde_json::Value = serde_json::from_slice(&again.encode().unwrap()).unwrap();
        assert_eq!(answered, json);
    }

    #[test]
    fn a_damaged_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("config")).unwrap();
        std::fs::write(
            dir.path().join("config/messageRequestMode.json"),
            "{not json",
        )
        .unwrap();
        let e = RequestModeTable::open(dir.path()).unwrap_err().to_string();
        assert!(e.contains("messageRequestMode.json"), "{e}");
    }
}
