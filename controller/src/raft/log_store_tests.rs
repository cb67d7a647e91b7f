//! The log store and state machine on disk: openraft's own storage suite,
//! then the crash cases (a torn last record, damage in the middle),
//! truncation, purge and the vote across reopening.

use std::fs;
use std::path::Path;

use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine};
use openraft::testing::{log_id, StoreBuilder, Suite};
use openraft::{CommittedLeaderId, EntryPayload, RaftLogReader};
use tempfile::TempDir;

use crate::event::Event;
use crate::raft::error::StoreError;
use crate::raft::log_store::{FileLogStore, LOG_FILE};
use crate::raft::record;
use crate::raft::state_machine::StateMachineStore;
use crate::raft::types::{Entry, StorageError, TypeConfig, Vote};

struct Builder;

impl StoreBuilder<TypeConfig, FileLogStore, StateMachineStore, TempDir> for Builder {
    async fn build(&self) -> Result<(TempDir, FileLogStore, StateMachineStore), StorageError> {
        let dir = TempDir::new().unwrap();
        let log = FileLogStore::open(dir.path()).unwrap();
        let sm = StateMachineStore::open(dir.path()).unwrap();
        Ok((dir, log, sm))
    }
}

/// openraft's conformance suite for RaftLogStorage + RaftStateMachine.
#[test]
fn openraft_storage_suite() {
    Suite::test_all(Builder).unwrap();
}

fn event(i: u64) -> Event {
    Event::UpdateBrokerAddress {
        broker_name: "broker-a".into(),
        broker_id: 1,
        addr: format!("10.0.0.{i}:10911"),
    }
}

fn entry(term: u64, index: u64) -> Entry {
    Entry {
        log_id: log_id(term, 1, index),
        payload: EntryPayload::Normal(event(index)),
    }
}

async fn append(log: &mut FileLogStore, term: u64, indexes: std::ops::RangeInclusive<u64>) {
    log.blocking_append(indexes.map(|i| entry(term, i)))
        .await
        .unwrap();
}

async fn indexes(log: &mut FileLogStore) -> Vec<u64> {
    log.try_get_log_entries(..)
        .await
        .unwrap()
        .iter()
        .map(|e| e.log_id.index)
        .collect()
}

fn record_offsets(dir: &Path) -> Vec<u64> {
    let path = dir.join(LOG_FILE);
    let bytes = fs::read(&path).unwrap();
    record::scan(&bytes, &path)
        .unwrap()
        .records
        .iter()
        .map(|r| r.offset)
        .collect()
}

/// (d) A crash in the middle of the last append leaves a partial record:
/// reopening cuts it off and keeps every whole record, and the log goes on
/// from there (the next append is readable after another reopen).
#[tokio::test]
async fn torn_last_record_is_cut_and_whole_records_kept() {
    let dir = TempDir::new().unwrap();
    let mut log = FileLogStore::open(dir.path()).unwrap();
    append(&mut log, 1, 1..=5).await;
    drop(log);

    let path = dir.path().join(LOG_FILE);
    let len = fs::metadata(&path).unwrap().len();
    let last = *record_offsets(dir.path()).last().unwrap();
    // Every cut inside the last record (header or payload) is torn.
    for cut in [last + 1, last + 11, last + 13, len - 1] {
        let f = fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(cut).unwrap();
        drop(f);
        let mut log = FileLogStore::open(dir.path()).unwrap();
        assert_eq!(indexes(&mut log).await, vec![1, 2, 3, 4], "cut at {cut}");
        assert_eq!(fs::metadata(&path).unwrap().len(), last, "file cut back");
        // Put the lost entry back, as the leader would resend it.
        append(&mut log, 1, 5..=5).await;
    }
    let mut log = FileLogStore::open(dir.path()).unwrap();
    assert_eq!(indexes(&mut log).await, vec![1, 2, 3, 4, 5]);
    assert_eq!(log.last_log_id(), Some(log_id(1, 1, 5)));
}

/// A flipped byte in a record that is followed by whole records is not a
/// crash: opening fails, naming the file and the record's offset.
#[tokio::test]
async fn damage_in_the_middle_is_a_typed_error_with_offset() {
    let dir = TempDir::new().unwrap();
    let mut log = FileLogStore::open(dir.path()).unwrap();
    append(&mut log, 1, 1..=5).await;
    drop(log);

    let offsets = record_offsets(dir.path());
    let path = dir.path().join(LOG_FILE);
    let mut bytes = fs::read(&path).unwrap();
    let at = offsets[2] as usize + record::HEADER_LEN + 3;
    bytes[at] ^= 0x01;
    fs::write(&path, &bytes).unwrap();

    match FileLogStore::open(dir.path()) {
        Err(StoreError::Corrupt {
            path: p, offset, ..
        }) => {
            assert_eq!(p, path);
            assert_eq!(offset, offsets[2]);
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

/// Truncation (a follower's conflicting suffix) and purge (after a
/// snapshot) are on disk: a reopen sees the same log.
#[tokio::test]
async fn truncate_and_purge_survive_reopen() {
    let dir = TempDir::new().unwrap();
    let mut log = FileLogStore::open(dir.path()).unwrap();
    append(&mut log, 1, 1..=10).await;
    log.truncate(log_id(1, 1, 7)).await.unwrap();
    append(&mut log, 2, 7..=8).await;
    log.purge(log_id(1, 1, 3)).await.unwrap();
    append(&mut log, 2, 9..=9).await;
    drop(log);

    let mut log = FileLogStore::open(dir.path()).unwrap();
    assert_eq!(indexes(&mut log).await, vec![4, 5, 6, 7, 8, 9]);
    let state = log.get_log_state().await.unwrap();
    assert_eq!(state.last_purged_log_id, Some(log_id(1, 1, 3)));
    assert_eq!(state.last_log_id, Some(log_id(2, 1, 9)));
    let e7 = log.try_get_log_entries(7..8).await.unwrap();
    assert_eq!(e7[0].log_id.leader_id, CommittedLeaderId::new(2, 1));

    // Purging everything leaves an empty log that goes on after the purge.
    log.purge(log_id(2, 1, 9)).await.unwrap();
    drop(log);
    let mut log = FileLogStore::open(dir.path()).unwrap();
    assert!(indexes(&mut log).await.is_empty());
    let state = log.get_log_state().await.unwrap();
    assert_eq!(state.last_log_id, Some(log_id(2, 1, 9)));
    append(&mut log, 2, 10..=10).await;
    assert!(log.blocking_append([entry(2, 12)]).await.is_err(), "a hole");
}

/// The vote and the committed id are read back after a reopen.
#[tokio::test]
async fn vote_and_committed_survive_reopen() {
    let dir = TempDir::new().unwrap();
    let mut log = FileLogStore::open(dir.path()).unwrap();
    let vote = Vote::new_committed(3, 2);
    log.save_vote(&vote).await.unwrap();
    log.save_committed(Some(log_id(3, 2, 4))).await.unwrap();
    drop(log);
    let mut log = FileLogStore::open(dir.path()).unwrap();
    assert_eq!(log.read_vote().await.unwrap(), Some(vote));
    assert_eq!(log.read_committed().await.unwrap(), Some(log_id(3, 2, 4)));
}

/// Applying entries changes the shared state; a built snapshot is on disk
/// and a reopened state machine starts from it.
#[tokio::test]
async fn snapshot_file_restores_the_state() {
    use openraft::RaftSnapshotBuilder;

    let dir = TempDir::new().unwrap();
    let mut sm = StateMachineStore::open(dir.path()).unwrap();
    let apply = Event::ApplyBrokerId {
        cluster: "c".into(),
        broker_name: "broker-a".into(),
        broker_id: 1,
        addr: "10.0.0.1:10911".into(),
        check_code: "x".into(),
    };
    let e1 = Entry {
        log_id: log_id(1, 1, 1),
        payload: EntryPayload::Normal(apply),
    };
    let applied = sm.apply([e1, entry(1, 2)]).await.unwrap();
    assert_eq!(applied.iter().map(|a| a.index).collect::<Vec<_>>(), [1, 2]);
    let want = sm.shared().read().clone();
    assert_eq!(
        want.set("broker-a").unwrap().members[&1].addr,
        "10.0.0.2:10911"
    );
    let mut builder = sm.get_snapshot_builder().await;
    builder.build_snapshot().await.unwrap();
    drop(sm);

    let mut sm = StateMachineStore::open(dir.path()).unwrap();
    assert_eq!(*sm.shared().read(), want);
    let (applied, _) = sm.applied_state().await.unwrap();
    assert_eq!(applied, Some(log_id(1, 1, 2)));
    assert!(sm.get_current_snapshot().await.unwrap().is_some());
}
