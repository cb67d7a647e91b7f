//! Segment roll-over with small CommitLog segments: records never straddle a
//! segment, and reput and recovery skip the blank records that pad them.

use rmq_common::config::CqBackend;
use rmq_tests::{message, open_store, read_queue, small_config, wait_dispatched, BACKENDS};

fn roll_over(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path(), backend);
    let segment = config.mapped_file_size_commit_log_bytes as i64;
    let mut sent = Vec::new();
    {
        let store = open_store(&config).unwrap();
        for i in 0..1500usize {
            let q = (i % 3) as i32;
            let body = vec![(i % 251) as u8; 50 + (i * 37) % 700];
            let r = store
                .put_message(&message("Roll", q, body.clone()))
                .unwrap();
            let a = &r.appended[0];
            assert_eq!(
                a.phy_offset / segment,
                (a.end_offset() - 1) / segment,
                "record straddles a segment"
            );
            sent.push((q, a.queue_offset, body));
        }
        assert!(
            store.max_phy_offset() > 10 * segment,
            "the test must cross many segments"
        );
        wait_dispatched(&store);
        check(&store, &sent);
        store.shutdown().unwrap();
    }
    // Clean restart, then a crash restart: both find the same tail and data.
    let store = open_store(&config).unwrap();
    assert!(!store.startup_report().abnormal);
    check(&store, &sent);
    store.halt_as_if_crashed();
    drop(store);
    let store = open_store(&config).unwrap();
    assert!(store.startup_report().abnormal);
    assert!(!store.startup_report().recovery.cut);
    check(&store, &sent);
}

fn check(store: &rmq_store::MessageStore, sent: &[(i32, i64, Vec<u8>)]) {
    for q in 0..3 {
        let got = read_queue(store, "Roll", q);
        let want: Vec<_> = sent.iter().filter(|(sq, _, _)| *sq == q).collect();
        assert_eq!(got.len(), want.len(), "queue {q}");
        for (g, (_, qo, body)) in got.iter().zip(want) {
            assert_eq!(g.queue_offset, *qo);
            assert_eq!(g.stored_queue_offset, *qo);
            assert_eq!(&g.body, body);
        }
    }
}

#[test]
fn roll_over_all_backends() {
    for backend in BACKENDS {
        roll_over(backend);
    }
}

/// The request path's async put: under SYNC_FLUSH it answers only once the
/// flush covers what it appended (single messages and batches); under
/// ASYNC_FLUSH it answers at once; either way the units become readable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_put_answers_sync_flush_after_the_flush() {
    use rmq_common::FlushDiskType;
    use rmq_store::PutStatus;
    for backend in BACKENDS {
        for flush in [FlushDiskType::SyncFlush, FlushDiskType::AsyncFlush] {
            let dir = tempfile::tempdir().unwrap();
            let mut config = small_config(dir.path(), backend);
            config.flush_disk_type = flush;
            let store = open_store(&config).unwrap();
            let one = store
                .put_async(&[message("AsyncPut", 0, "one")])
                .await
                .unwrap();
            assert_eq!(one.status, PutStatus::PutOk);
            let batch: Vec<_> = ["a", "b", "c"]
                .iter()
                .map(|b| message("AsyncPut", 0, *b))
                .collect();
            let three = store.put_async(&batch).await.unwrap();
            assert_eq!(three.status, PutStatus::PutOk);
            let offsets: Vec<i64> = three.appended.iter().map(|a| a.queue_offset).collect();
            assert_eq!(offsets, vec![1, 2, 3], "{backend} {flush:?}");
            if flush == FlushDiskType::SyncFlush {
                let end = three.appended.last().unwrap().end_offset();
                assert!(
                    store.commit_log().flushed_offset() >= end,
                    "{backend}: answered before the flush covered {end}"
                );
            }
            wait_dispatched(&store);
            assert_eq!(read_queue(&store, "AsyncPut", 0).len(), 4);
        }
    }
}
