//! Master/slave replication on RocketMQ's HA protocol: a slave found
//! through the NameServer follows its master byte for byte (on the same or
//! the other consume-queue backend) and builds its own consume queue; a
//! SYNC_MASTER answers a send once the slave has it, SLAVE_NOT_AVAILABLE
//! with no slave and FLUSH_SLAVE_TIMEOUT when the slave does not
//! acknowledge in time; a slave refuses sends. The master side is also
//! checked with raw protocol bytes (a hand-made slave).

use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_broker::ha::wire::{encode_report, FrameHeader, HEADER_LEN};
use rmq_broker::ha::BrokerRole;
use rmq_client::{self as sdk, OutMessage, SendCode};
use rmq_common::config::CqBackend;
use rmq_common::remoting::{RequestCode, ResponseCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Longest a slave may take to hold what its master stored.
const CATCH_UP: Duration = Duration::from_secs(20);
const TOPIC: &str = "HaTopic";

/// Bodies from 4 bytes to ~5 KiB, so that frames (1,000 bytes here) cut
/// records anywhere.
fn msg(i: usize) -> OutMessage {
    OutMessage {
        body: format!("ha-{i}-").repeat(1 + (i % 7) * 120).into_bytes(),
        tags: None,
        keys: vec![format!("k{i}")],
        properties: vec![],
    }
}

async fn master(dir: &std::path::Path, backend: CqBackend, role: BrokerRole) -> Broker {
    let mut s = rmq_tests::broker_settings(&dir.join("master"), backend);
    s.broker.broker_role = role;
    s.broker.slave_timeout_ms = 2_000;
    s.broker.ha_transfer_batch_size = 1_000;
    Broker::start(s).await.unwrap()
}

/// A slave of `master` found through its NameServer.
async fn slave(dir: &std::path::Path, backend: CqBackend, master: &Broker) -> Broker {
    let mut s = rmq_tests::broker_settings(&dir.join("slave"), backend);
    s.broker.broker_role = BrokerRole::Slave;
    s.broker.broker_id = 1;
    s.broker.namesrv_listen_port = -1;
    s.broker.namesrv_addr = master.namesrv_addr().unwrap().to_string();
    Broker::start(s).await.unwrap()
}

async fn create_topic(b: &Broker) {
    let c = sdk::connect(b.addr()).await.unwrap();
    sdk::call(
        &c,
        sdk::request(
            RequestCode::UpdateAndCreateTopic,
            &[
                ("topic", TOPIC.into()),
                ("readQueueNums", "2".into()),
                ("writeQueueNums", "2".into()),
            ],
        ),
    )
    .await
    .unwrap();
}

fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + CATCH_UP;
    while !ok() {
        assert!(Instant::now() < deadline, "{what} within {CATCH_UP:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

async fn follows(master_backend: CqBackend, slave_backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let m = master(dir.path(), master_backend, BrokerRole::SyncMaster).await;
    create_topic(&m).await;
    let c = sdk::connect(m.addr()).await.unwrap();
    // No slave yet: stored, but SLAVE_NOT_AVAILABLE.
    let r = sdk::send(&c, SendCode::V2, "p", TOPIC, 0, &[msg(0)])
        .await
        .unwrap();
    assert_eq!(r.code, ResponseCode::SlaveNotAvailable.code());

    // Metadata the slave must copy: an offset and a subscription group.
    sdk::call(
        &c,
        sdk::request(
            RequestCode::UpdateConsumerOffset,
            &[
                ("consumerGroup", "HaGroup".into()),
                ("topic", TOPIC.into()),
                ("queueId", "0".into()),
                ("commitOffset", "1".into()),
            ],
        ),
    )
    .await
    .unwrap();
    let mut group = rmq_common::remoting::RemotingCommand::request(
        RequestCode::UpdateAndCreateSubscriptionGroup,
    );
    group.body = Some(br#"{"groupName":"HaGroup","retryMaxTimes":3}"#.to_vec().into());
    assert_eq!(c.invoke(group, CATCH_UP).await.unwrap().code, 0);

    let s = slave(dir.path(), slave_backend, &m).await;
    // The slave copies the master's topics, offsets and groups (first
    // round 3 s after start).
    let sctx = std::sync::Arc::clone(s.context());
    wait_until("the slave copied the master's metadata", || {
        sctx.topics.get(TOPIC).is_some()
            && sctx.offsets.query("HaGroup", TOPIC, 0) == Some(1)
            && sctx
                .groups
                .get("HaGroup")
                .is_some_and(|g| g.retry_max_times == 3)
    });
    let mstore = std::sync::Arc::clone(&m.context().store);
    wait_until("the slave connected", || m.context().ha_acks.slaves() == 1);
    // Every SYNC_MASTER send now waits for the slave.
    for i in 1..50 {
        let r = sdk::send(&c, SendCode::V2, "p", TOPIC, (i % 2) as i32, &[msg(i)])
            .await
            .unwrap();
        assert_eq!(r.code, 0, "send {i}");
    }
    assert!(m.context().ha_acks.acked() >= mstore.max_phy_offset());
    let sstore = std::sync::Arc::clone(&s.context().store);
    let end = mstore.max_phy_offset();
    assert!(sstore.max_phy_offset() >= end, "acknowledged means held");
    // Byte for byte, at the same offsets.
    let a = mstore
        .commit_log()
        .select(0, end as usize)
        .unwrap()
        .bytes()
        .to_vec();
    let b = sstore
        .commit_log()
        .select(0, end as usize)
        .unwrap()
        .bytes()
        .to_vec();
    assert!(a == b, "the slave's CommitLog equals the master's");
    // The slave's own reput built its queues, on its own backend.
    wait_until("the slave dispatched", || {
        sstore.dispatch_behind_bytes() == 0
    });
    // Frames cut records anywhere: a partial tail waits for its rest, it is
    // not a failed pass.
    assert_eq!(sstore.reput_failures(), 0);
    rmq_tests::wait_dispatched(&mstore);
    for q in 0..2 {
        assert_eq!(
            sstore.max_offset_in_queue(TOPIC, q).unwrap(),
            mstore.max_offset_in_queue(TOPIC, q).unwrap(),
            "queue {q}"
        );
    }
    // Consumers can read the slave: the same messages as on the master.
    let pull = |client| async move {
        let r = sdk::pull(
            client,
            &sdk::PullRequest {
                group: "HaGroup".into(),
                topic: TOPIC.into(),
                queue_id: 0,
                offset: 0,
                max_msgs: 32,
                subscription: Some("*".into()),
                suspend: None,
                commit_offset: None,
            },
        )
        .await
        .unwrap();
        r.messages
            .iter()
            .map(|m| m.body.clone())
            .collect::<Vec<_>>()
    };
    let sc = sdk::connect(s.addr()).await.unwrap();
    let from_slave = pull(&sc).await;
    assert!(!from_slave.is_empty());
    assert!(
        from_slave == pull(&c).await,
        "the slave serves what the master does"
    );
    // Topics and groups are the master's: a slave refuses to change them.
    let refused = sc
        .invoke(
            sdk::request(
                RequestCode::UpdateAndCreateTopic,
                &[("topic", "OnSlave".into()), ("readQueueNums", "1".into())],
            ),
            CATCH_UP,
        )
        .await
        .unwrap();
    assert_eq!(refused.code, 1);
    assert!(refused.remark.unwrap().contains("from slave broker"));
    // A slave takes no sends.
    let e = sdk::send(&sc, SendCode::V2, "p", TOPIC, 0, &[msg(99)])
        .await
        .unwrap_err();
    assert!(e.to_string().contains("slave"), "{e}");
    s.shutdown().await;
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slave_follows_master_file_file() {
    follows(CqBackend::File, CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slave_follows_master_rocksdb_rocksdb() {
    follows(CqBackend::Rocksdb, CqBackend::Rocksdb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slave_on_rocksdb_follows_master_on_file() {
    follows(CqBackend::File, CqBackend::Rocksdb).await;
}

/// The master's side, by raw bytes: a hand-made slave reports 0 and gets
/// the CommitLog from the start of the master's last segment, in frames at
/// the offsets it claims; it acknowledges nothing more, so a SYNC_MASTER
/// send answers FLUSH_SLAVE_TIMEOUT after slaveTimeout (and is stored).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_slave_gets_frames_and_a_silent_one_times_sync_sends_out() {
    let dir = tempfile::tempdir().unwrap();
    let m = master(dir.path(), CqBackend::File, BrokerRole::SyncMaster).await;
    create_topic(&m).await;
    let c = sdk::connect(m.addr()).await.unwrap();
    sdk::send(&c, SendCode::V2, "p", TOPIC, 0, &[msg(0)])
        .await
        .unwrap();
    let ha = *m.context().ha_addr.get().expect("the master takes slaves");
    let mut raw = tokio::net::TcpStream::connect(ha).await.unwrap();
    raw.write_all(&encode_report(0)).await.unwrap();
    let end = m.context().store.max_phy_offset();
    let mut got = Vec::new();
    while (got.len() as i64) < end {
        let mut h = [0u8; HEADER_LEN];
        tokio::time::timeout(CATCH_UP, raw.read_exact(&mut h))
            .await
            .unwrap()
            .unwrap();
        let h = FrameHeader::decode(&h);
        assert_eq!(h.offset, got.len() as i64, "frames follow each other");
        let mut body = vec![0u8; h.size as usize];
        raw.read_exact(&mut body).await.unwrap();
        got.extend_from_slice(&body);
    }
    let want = m
        .context()
        .store
        .commit_log()
        .select(0, end as usize)
        .unwrap()
        .bytes()
        .to_vec();
    assert!(got == want, "the frames carry the CommitLog's bytes");
    // Acknowledge what we have, then stay silent.
    raw.write_all(&encode_report(end)).await.unwrap();
    wait_until("the ack arrived", || m.context().ha_acks.acked() == end);
    let started = Instant::now();
    let r = sdk::send(&c, SendCode::V2, "p", TOPIC, 0, &[msg(1)])
        .await
        .unwrap();
    assert_eq!(r.code, ResponseCode::FlushSlaveTimeout.code());
    assert!(
        started.elapsed() >= Duration::from_millis(1_900),
        "{:?}",
        started.elapsed()
    );
    drop(raw);
    wait_until("the slave's connection is gone", || {
        m.context().ha_acks.slaves() == 0
    });
    let r = sdk::send(&c, SendCode::V2, "p", TOPIC, 0, &[msg(2)])
        .await
        .unwrap();
    assert_eq!(r.code, ResponseCode::SlaveNotAvailable.code());
    m.shutdown().await;
}

/// A slave's store takes a record in pieces (as frames cut it): the piece
/// that ends inside a record waits for its rest, no reput pass fails, and
/// the record is dispatched once whole. Both backends.
#[test]
fn a_record_replicated_in_pieces_is_dispatched_once_whole() {
    for backend in [CqBackend::File, CqBackend::Rocksdb] {
        let mdir = tempfile::tempdir().unwrap();
        let master = rmq_tests::open_store(&rmq_tests::small_config(mdir.path(), backend)).unwrap();
        for i in 0..3 {
            master
                .put_message(&rmq_tests::message(TOPIC, 0, vec![b'x'; 1_000 + i]))
                .unwrap();
        }
        let end = master.max_phy_offset();
        let bytes = master
            .commit_log()
            .select(0, end as usize)
            .unwrap()
            .bytes()
            .to_vec();

        let sdir = tempfile::tempdir().unwrap();
        let slave = rmq_tests::open_store(&rmq_tests::small_config(sdir.path(), backend)).unwrap();
        slave.set_replica_only();
        assert!(matches!(
            slave.put_message(&rmq_tests::message(TOPIC, 0, "no")),
            Err(rmq_store_file::StoreError::Slave)
        ));
        // The first record and half of the second.
        let cut = 1_500;
        slave.append_replica(0, &bytes[..cut]).unwrap();
        wait_until("the first record dispatched", || {
            slave.max_offset_in_queue(TOPIC, 0).unwrap() == 1
        });
        // The pass that dispatched it read the partial one behind it.
        assert_eq!(slave.max_offset_in_queue(TOPIC, 0).unwrap(), 1);
        assert_eq!(slave.reput_failures(), 0, "{backend}");
        slave.append_replica(cut as i64, &bytes[cut..]).unwrap();
        wait_until("all three dispatched", || {
            slave.max_offset_in_queue(TOPIC, 0).unwrap() == 3
        });
        assert_eq!(slave.reput_failures(), 0, "{backend}");
        slave.shutdown().unwrap();
        master.shutdown().unwrap();
    }
}

/// The master's `/metrics` show its slave: connected, in sync, nothing
/// unacknowledged after SYNC_MASTER sends, bytes streamed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn master_metrics_show_the_slave() {
    let dir = tempfile::tempdir().unwrap();
    let mut ms = rmq_tests::metered_settings(&dir.path().join("master"), CqBackend::File, "ha");
    ms.broker.broker_role = BrokerRole::SyncMaster;
    let name = ms.broker.broker_name.clone();
    let m = Broker::start(ms).await.unwrap();
    create_topic(&m).await;
    let mut ss = rmq_tests::broker_settings(&dir.path().join("slave"), CqBackend::File);
    ss.broker.broker_name = name.clone();
    ss.broker.broker_role = BrokerRole::Slave;
    ss.broker.broker_id = 1;
    ss.broker.namesrv_listen_port = -1;
    ss.broker.namesrv_addr = m.namesrv_addr().unwrap().to_string();
    let s = Broker::start(ss).await.unwrap();
    wait_until("the slave connected", || m.context().ha_acks.slaves() == 1);
    let c = sdk::connect(m.addr()).await.unwrap();
    for i in 0..10 {
        let r = sdk::send(&c, SendCode::V2, "p", TOPIC, 0, &[msg(i)])
            .await
            .unwrap();
        assert_eq!(r.code, 0);
    }
    let addr = m.metrics_addr().unwrap();
    let value = |text: &str, metric: &str| -> Option<f64> {
        text.lines()
            .find(|l| l.starts_with(metric) && l.contains(&format!("broker=\"{name}\"")))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
    };
    let deadline = Instant::now() + CATCH_UP;
    loop {
        let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
        conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .unwrap();
        let mut out = String::new();
        conn.read_to_string(&mut out).await.unwrap();
        let ok = value(&out, "rmq_ha_slaves{") == Some(1.0)
            && value(&out, "rmq_ha_in_sync_slaves{") == Some(1.0)
            && value(&out, "rmq_ha_replication_lag_bytes{") == Some(0.0)
            && value(&out, "rmq_ha_sent_bytes_total{").is_some_and(|b| b > 0.0)
            && value(&out, "rmq_ha_slave_acked_offset{")
                == Some(m.context().store.max_phy_offset() as f64);
        if ok {
            break;
        }
        assert!(Instant::now() < deadline, "HA metrics not shown:\n{out}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    s.shutdown().await;
    m.shutdown().await;
}
