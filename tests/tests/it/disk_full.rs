//! A full disk (simulated with an injected disk-use probe): past
//! `diskSpaceWarningLevelRatio` writes are refused with a remark naming the
//! problem, the CommitLog does not move, reads go on, writes resume once
//! space returns, and a restart serves every acknowledged message. Store
//! level and over the protocol, file and RocksDB backends.

use std::sync::Arc;

use rmq_broker::broker::Broker;
use rmq_client::{self as sdk, OutMessage, PullRequest, SdkError, SendCode};
use rmq_common::config::CqBackend;
use rmq_common::remoting::ResponseCode;
use rmq_store::MessageStore;
use rmq_store_file::StoreError;
use rmq_tests::{
    broker_settings, message, open_store, read_queue, small_config, wait_dispatched, FakeDisk,
};

const TOPIC: &str = "DiskFullTopic";

fn put(store: &MessageStore, i: usize) -> Result<(), StoreError> {
    store
        .put_message(&message(TOPIC, 0, format!("m{i}").into_bytes()))
        .map(|_| ())
}

fn store_level(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = small_config(dir.path(), backend);
    let store = open_store(&cfg).unwrap();
    let disk = FakeDisk::new(0.5);
    store.set_disk_usage(disk.clone());
    for i in 0..10 {
        put(&store, i).unwrap();
    }
    disk.set(0.95);
    assert!(store.check_disk());
    let end = store.max_phy_offset();
    let err = put(&store, 10).unwrap_err();
    assert!(
        matches!(err, StoreError::DiskFull { limit_pct: 90, .. }),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("diskSpaceWarningLevelRatio") && text.contains("95.0%"),
        "{text}"
    );
    assert_eq!(
        store.max_phy_offset(),
        end,
        "a refused write moved the CommitLog"
    );
    // Reads go on.
    wait_dispatched(&store);
    assert_eq!(read_queue(&store, TOPIC, 0).len(), 10);
    // Space returns: writes resume.
    disk.set(0.6);
    assert!(!store.check_disk());
    put(&store, 11).unwrap();
    store.shutdown().unwrap();
    drop(store);
    let store = open_store(&cfg).unwrap();
    let bodies: Vec<_> = read_queue(&store, TOPIC, 0)
        .into_iter()
        .map(|r| String::from_utf8(r.body).unwrap())
        .collect();
    let mut want: Vec<_> = (0..10).map(|i| format!("m{i}")).collect();
    want.push("m11".into());
    assert_eq!(bodies, want);
    store.shutdown().unwrap();
}

async fn protocol(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(broker_settings(dir.path(), backend))
        .await
        .unwrap();
    let store = Arc::clone(&broker.context().store);
    let disk = FakeDisk::new(0.5);
    store.set_disk_usage(disk.clone());
    let c = sdk::connect(broker.addr()).await.unwrap();
    rmq_tools::admin::topic_create(&rmq_client::Connector::new(), broker.addr(), TOPIC, 1, 6)
        .await
        .unwrap();
    let msg = |b: &str| OutMessage {
        body: b.as_bytes().to_vec(),
        ..OutMessage::default()
    };
    assert_eq!(
        sdk::send(&c, SendCode::V2, "p", TOPIC, 0, &[msg("a")])
            .await
            .unwrap()
            .code,
        0
    );
    disk.set(0.97);
    store.check_disk();
    match sdk::send(&c, SendCode::V2, "p", TOPIC, 0, &[msg("b")]).await {
        Err(SdkError::Refused { code, remark }) => {
            assert_eq!(code, i32::from(ResponseCode::ServiceNotAvailable));
            assert!(remark.contains("disk full"), "{remark}");
        }
        other => panic!("a send on a full disk answered {other:?}"),
    }
    let pull = PullRequest {
        group: "g".into(),
        topic: TOPIC.into(),
        queue_id: 0,
        offset: 0,
        max_msgs: 32,
        subscription: Some("*".into()),
        suspend: None,
        commit_offset: None,
    };
    wait_dispatched(&store);
    let r = sdk::pull(&c, &pull).await.unwrap();
    assert_eq!(r.messages.len(), 1, "reads go on while the disk is full");
    disk.set(0.5);
    store.check_disk();
    assert_eq!(
        sdk::send(&c, SendCode::V2, "p", TOPIC, 0, &[msg("c")])
            .await
            .unwrap()
            .code,
        0
    );
    broker.shutdown().await;
}

macro_rules! per_backend {
    ($($backend:ident => $b:expr),*) => {$(
        mod $backend {
            use super::*;

            #[test]
            fn writes_refused_reads_served_resumed_nothing_lost() {
                store_level($b);
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn send_answers_service_not_available_with_a_remark() {
                protocol($b).await;
            }
        }
    )*};
}

per_backend!(file => CqBackend::File, rocksdb => CqBackend::Rocksdb);
