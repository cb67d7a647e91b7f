//! Controller mode's store operations on both consume-queue backends:
//! runtime truncation (reads, new puts, reopen), the confirm offset holding
//! dispatch back (and persisted at checkpoint byte 32), and the epoch file
//! following truncation and `become_master`.

use std::time::Duration;

use rmq_common::config::CqBackend;
use rmq_common::constants::property;
use rmq_common::message::record::RecordView;
use rmq_common::message::MessageToStore;
use rmq_common::StoreConfig;
use rmq_store::{DispatchBound, GetRequest, GetStatus, MessageStore, TagFilter};
use rmq_store_file::StoreError;

/// Bound on every wait for dispatch.
const DISPATCH_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a test lets reput run to show it stops at the confirm offset.
const HELD_BACK: Duration = Duration::from_millis(300);
const BACKENDS: [CqBackend; 2] = [CqBackend::File, CqBackend::Rocksdb];

fn config(root: &std::path::Path, backend: CqBackend) -> StoreConfig {
    StoreConfig {
        mapped_file_size_commit_log_bytes: 64 * 1024,
        mapped_file_size_consume_queue_bytes: 20 * 1000,
        max_message_size_bytes: 16 * 1024,
        max_hash_slot_num: 1024,
        max_index_num: 4096,
        consume_queue_store: backend,
        ..StoreConfig::with_root(root)
    }
}

fn message(i: usize) -> MessageToStore {
    let mut m = MessageToStore::new("T", (i % 2) as i32, vec![b'a' + (i % 26) as u8; 900]);
    m.properties.insert(property::KEYS, format!("k{i}"));
    m
}

fn wait_dispatched(store: &MessageStore) {
    let target = store.max_phy_offset();
    assert!(
        store.wait_dispatched_to(target, DISPATCH_TIMEOUT),
        "dispatch stuck at {} below {target}",
        store.reput_from_offset()
    );
}

/// Every (queue offset, body) of queue `q` a pull returns.
fn read_queue(store: &MessageStore, q: i32) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut offset = store.min_offset_in_queue("T", q).unwrap();
    loop {
        let r = store
            .get_message(&GetRequest::new("T", q, offset, 32, &TagFilter::all()))
            .unwrap();
        if r.status != GetStatus::Found {
            return out;
        }
        for (sel, qo) in r.messages.iter().zip(&r.queue_offsets) {
            out.push((
                *qo,
                RecordView::parse(sel.bytes(), true)
                    .unwrap()
                    .body()
                    .to_vec(),
            ));
            offset = qo + 1;
        }
    }
}

#[test]
fn truncate_to_cuts_reads_continues_puts_and_survives_a_reopen() {
    for backend in BACKENDS {
        let dir = tempfile::tempdir().unwrap();
        let c = config(dir.path(), backend);
        let store = MessageStore::open(c.clone()).unwrap();
        let put: Vec<_> = (0..200)
            .map(|i| store.put_message(&message(i)).unwrap().appended[0].clone())
            .collect();
        wait_dispatched(&store);
        assert!(store.commit_log().segments().snapshot().len() > 2);
        let cut = &put[101]; // queue 1, queue offset 50
        assert!(
            matches!(
                store.truncate_to(cut.phy_offset + 7),
                Err(StoreError::NotRecordBoundary { .. })
            ),
            "{backend}"
        );
        store.truncate_to(cut.phy_offset).unwrap();
        assert_eq!(store.max_phy_offset(), cut.phy_offset);
        assert_eq!(store.reput_from_offset(), cut.phy_offset);
        assert_eq!(store.max_offset_in_queue("T", 1).unwrap(), 50, "{backend}");
        assert_eq!(store.max_offset_in_queue("T", 0).unwrap(), 51, "{backend}");
        let r = store
            .get_message(&GetRequest::new("T", 1, 50, 32, &TagFilter::all()))
            .unwrap();
        assert_ne!(
            r.status,
            GetStatus::Found,
            "{backend}: a cut message is pulled"
        );
        // The index still names the cut record; the lookup drops it.
        assert!(store
            .query_by_key("T", "k150", 10, 0, i64::MAX)
            .unwrap()
            .is_empty());
        assert_eq!(
            store
                .query_by_key("T", "k3", 10, 0, i64::MAX)
                .unwrap()
                .len(),
            1
        );
        // New puts continue at the cut, queue offsets too.
        let next = store.put_message(&message(1001)).unwrap().appended[0].clone();
        assert_eq!((next.phy_offset, next.queue_offset), (cut.phy_offset, 50));
        wait_dispatched(&store);
        // Reput indexes a batch after handing it to the consume queue, so
        // the index may trail the dispatched offset a little.
        let deadline = std::time::Instant::now() + DISPATCH_TIMEOUT;
        while store
            .query_by_key("T", "k1001", 10, 0, i64::MAX)
            .unwrap()
            .len()
            != 1
        {
            assert!(
                std::time::Instant::now() < deadline,
                "{backend}: k1001 never indexed"
            );
            std::thread::yield_now();
        }
        let before = (
            read_queue(&store, 0),
            read_queue(&store, 1),
            store.max_phy_offset(),
        );
        assert_eq!(before.1.len(), 51);
        assert_eq!(before.1[50].1, message(1001).body);
        store.shutdown().unwrap();
        drop(store);
        let store = MessageStore::open(c).unwrap();
        wait_dispatched(&store);
        let after = (
            read_queue(&store, 0),
            read_queue(&store, 1),
            store.max_phy_offset(),
        );
        assert!(before == after, "{backend}: reopen differs");
        store.shutdown().unwrap();
    }
}

#[test]
fn the_confirm_offset_holds_dispatch_back_and_is_checkpointed() {
    for backend in BACKENDS {
        let dir = tempfile::tempdir().unwrap();
        let c = config(dir.path(), backend);
        let store = MessageStore::open(c.clone()).unwrap();
        store.set_dispatch_bound(DispatchBound::ConfirmOffset);
        let put: Vec<_> = (0..10)
            .map(|i| store.put_message(&message(i)).unwrap().appended[0].clone())
            .collect();
        // Inside record 6: records 0..6 are consumable, 6 is not.
        let confirm = put[6].phy_offset + 10;
        store.set_confirm_offset(confirm);
        assert!(store.wait_dispatched_to(put[6].phy_offset, DISPATCH_TIMEOUT));
        assert!(!store.wait_dispatched_to(put[6].end_offset(), HELD_BACK));
        assert_eq!(store.reput_from_offset(), put[6].phy_offset, "{backend}");
        assert_eq!(store.max_offset_in_queue("T", 0).unwrap(), 3);
        assert_eq!(store.confirm_offset(), confirm);
        store.shutdown().unwrap();
        let raw = std::fs::read(dir.path().join("checkpoint")).unwrap();
        assert_eq!(
            raw[32..40],
            confirm.to_be_bytes(),
            "Java's confirmPhyOffset slot"
        );
        drop(store);
        let store = MessageStore::open(c).unwrap();
        assert_eq!(store.confirm_offset_stored(), confirm);
        store.set_dispatch_bound(DispatchBound::ConfirmOffset);
        store.set_confirm_offset(store.max_phy_offset());
        wait_dispatched(&store);
        assert_eq!(store.max_offset_in_queue("T", 0).unwrap(), 5);
        // Back to the default: the log's end.
        store.set_dispatch_bound(DispatchBound::LogEnd);
        store.put_message(&message(10)).unwrap();
        wait_dispatched(&store);
        assert_eq!(store.confirm_offset(), store.max_phy_offset());
        store.shutdown().unwrap();
    }
}

#[test]
fn epoch_entries_follow_become_master_and_truncation() {
    for backend in BACKENDS {
        let dir = tempfile::tempdir().unwrap();
        let c = config(dir.path(), backend);
        let store = MessageStore::open(c.clone()).unwrap();
        assert_eq!(store.become_master(1, DISPATCH_TIMEOUT).unwrap(), 0);
        let first: Vec<_> = (0..5)
            .map(|i| store.put_message(&message(i)).unwrap().appended[0].clone())
            .collect();
        let e2 = store.become_master(2, DISPATCH_TIMEOUT).unwrap();
        assert_eq!(e2, first[4].end_offset());
        // Epoch 3 writes nothing; epoch 4 replaces it at the same start.
        store.become_master(3, DISPATCH_TIMEOUT).unwrap();
        for i in 5..10 {
            store.put_message(&message(i)).unwrap();
        }
        assert!(matches!(
            store.become_master(2, DISPATCH_TIMEOUT),
            Err(StoreError::StaleEpoch { epoch: 2, last: 3 })
        ));
        assert_eq!(store.epoch_pairs(), [(1, 0), (3, e2)]);
        store.truncate_to(first[2].phy_offset).unwrap();
        assert_eq!(store.epoch_pairs(), [(1, 0)], "{backend}");
        // A half-replicated tail is cut when the store becomes master.
        store.set_replica_only();
        let whole = store.max_phy_offset();
        store
            .append_replica(whole, &[0, 0, 3, 0, 0xda, 0xa3, 0x20, 0xa7, 1, 2])
            .unwrap();
        assert_eq!(store.become_master(4, DISPATCH_TIMEOUT).unwrap(), whole);
        assert_eq!(store.max_phy_offset(), whole);
        assert!(!store.is_replica_only());
        store.put_message(&message(42)).unwrap();
        assert_eq!(store.epoch_pairs(), [(1, 0), (4, whole)]);
        store.shutdown().unwrap();
        drop(store);
        let store = MessageStore::open(c).unwrap();
        assert_eq!(store.epoch_pairs(), [(1, 0), (4, whole)]);
        store.shutdown().unwrap();
    }
}

/// A slave holds records past its confirm offset (the old master's
/// acknowledgements reached it before its confirm offset did): once it is
/// master they are the set's log, so they are dispatched before a new put
/// takes a queue offset, and no queue offset is handed out twice.
#[test]
fn become_master_dispatches_past_the_confirm_offset_before_new_puts() {
    for backend in BACKENDS {
        let dir = tempfile::tempdir().unwrap();
        let store = MessageStore::open(config(dir.path(), backend)).unwrap();
        store.set_dispatch_bound(DispatchBound::ConfirmOffset);
        let put: Vec<_> = (0..10)
            .map(|i| store.put_message(&message(i)).unwrap().appended[0].clone())
            .collect();
        // Records 0..4 confirmed, 4..10 held back.
        store.set_confirm_offset(put[4].phy_offset);
        assert!(store.wait_dispatched_to(put[4].phy_offset, DISPATCH_TIMEOUT));
        assert_eq!(store.max_offset_in_queue("T", 0).unwrap(), 2);
        store.set_replica_only();
        store.become_master(2, DISPATCH_TIMEOUT).unwrap();
        assert_eq!(
            store.max_offset_in_queue("T", 0).unwrap(),
            5,
            "{backend}: the held-back records are consumable"
        );
        let next = store.put_message(&message(10)).unwrap().appended[0].clone();
        assert_eq!(
            next.queue_offset, 5,
            "{backend}: queue offset handed out twice"
        );
        // A master alone waits for no one (the broker's InSync sets this).
        store.set_dispatch_bound(DispatchBound::LogEnd);
        wait_dispatched(&store);
        let offsets: Vec<i64> = read_queue(&store, 0).iter().map(|(o, _)| *o).collect();
        assert_eq!(offsets, (0..6).collect::<Vec<_>>(), "{backend}");
        store.shutdown().unwrap();
    }
}
