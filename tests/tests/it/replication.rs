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
    sdk::commit_offset(&c, "HaGroup", TOPIC, 0, 1)
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
    // rmq-admin's cluster view names each role, and the slave's lag.
    let ns = m.namesrv_addr().unwrap();
    let cluster = rmq_tools::admin::cluster_list(&rmq_client::Connector::new(), ns)
        .await
        .unwrap();
    let row = |id: &str| -> Vec<String> {
        cluster
            .lines()
            .map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
            .find(|cols| cols.get(2).is_some_and(|c| c == id))
            .unwrap_or_else(|| panic!("no broker id {id} in\n{cluster}"))
    };
    let (mrow, srow) = (row("0"), row("1"));
    assert_eq!(mrow[4], "SYNC_MASTER", "{cluster}");
    assert_eq!(srow[4], "SLAVE", "{cluster}");
    assert_eq!(mrow[5], end.to_string(), "{cluster}");
    assert_eq!(srow[6], "0", "the slave holds all: {cluster}");
    assert_eq!(mrow[6], "0", "the slave acknowledged all: {cluster}");
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
    // RocketMQ's slave rules for pulls: an offset past the queue's end is
    // not corrected (PULL_RETRY_IMMEDIATELY; the master answers
    // PULL_OFFSET_MOVED), and a pull's commit flag stores nothing there.
    let beyond = raw_pull(&sc, "HaGroup", 1_000, 0, 0).await;
    assert_eq!(beyond.code, ResponseCode::PullRetryImmediately.code());
    let beyond = raw_pull(&c, "HaGroup", 1_000, 0, 0).await;
    assert_eq!(beyond.code, ResponseCode::PullOffsetMoved.code());
    let before = sctx.offsets.query("HaGroup", TOPIC, 0);
    let r = raw_pull(&sc, "HaGroup", 0, 1, 7).await;
    assert_eq!(r.code, 0);
    assert_eq!(sctx.offsets.query("HaGroup", TOPIC, 0), before);
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

/// A PULL_MESSAGE of queue 0 of [`TOPIC`] from `offset` with subscription
/// `*` (flag 4 added to `sys_flag`) and `commit_offset`, answered as it came.
async fn raw_pull(
    c: &rmq_client::RemotingClient,
    group: &str,
    offset: i64,
    sys_flag: i32,
    commit_offset: i64,
) -> rmq_common::remoting::RemotingCommand {
    let req = sdk::request(
        RequestCode::PullMessage,
        &[
            ("consumerGroup", group.into()),
            ("topic", TOPIC.into()),
            ("queueId", "0".into()),
            ("queueOffset", offset.to_string()),
            ("maxMsgNums", "4".into()),
            ("sysFlag", (sys_flag | 4).to_string()),
            ("subscription", "*".into()),
            ("expressionType", "TAG".into()),
            ("commitOffset", commit_offset.to_string()),
            ("suspendTimeoutMillis", "0".into()),
            ("subVersion", "0".into()),
        ],
    );
    c.invoke(req, CATCH_UP).await.unwrap()
}

/// `suggestWhichBrokerId` as RocketMQ's pull answers set it: always the
/// master (0) unless `slaveReadEnable`; then the group's `brokerId`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_answers_suggest_the_broker_rocketmq_would() {
    for read_slave in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut s = rmq_tests::broker_settings(dir.path(), CqBackend::File);
        s.broker.slave_read_enable = read_slave;
        let b = Broker::start(s).await.unwrap();
        create_topic(&b).await;
        let c = sdk::connect(b.addr()).await.unwrap();
        sdk::send(&c, SendCode::V2, "p", TOPIC, 0, &[msg(0)])
            .await
            .unwrap();
        rmq_tests::wait_dispatched(&b.context().store);
        let suggested = |r: &rmq_common::remoting::RemotingCommand| {
            assert_eq!(r.code, 0, "{:?}", r.remark);
            r.ext_fields.get("suggestWhichBrokerId").cloned()
        };
        let r = raw_pull(&c, "Suggest", 0, 4, 0).await;
        assert_eq!(suggested(&r).as_deref(), Some("0"));
        let mut group = rmq_common::remoting::RemotingCommand::request(
            RequestCode::UpdateAndCreateSubscriptionGroup,
        );
        group.body = Some(br#"{"groupName":"Suggest","brokerId":1}"#.to_vec().into());
        assert_eq!(c.invoke(group, CATCH_UP).await.unwrap().code, 0);
        let r = raw_pull(&c, "Suggest", 0, 4, 0).await;
        let want = if read_slave { "1" } else { "0" };
        assert_eq!(
            suggested(&r).as_deref(),
            Some(want),
            "slaveReadEnable={read_slave}"
        );
        b.shutdown().await;
    }
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
/// unacknowledged after SYNC_MASTER sends (per slave, labelled with its
/// address), bytes streamed; every replication metric the Grafana
/// dashboard reads is served.
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
        let ha_rows = crate::metrics::dashboard_metrics()
            .into_iter()
            .filter(|n| n.starts_with("rmq_ha_"))
            .collect::<Vec<_>>();
        assert!(ha_rows.len() >= 4, "{ha_rows:?}");
        let slave_label = |metric: &str| {
            out.lines()
                .find(|l| l.starts_with(metric))
                .is_some_and(|l| l.contains("slave=\"127.0.0.1:"))
        };
        let ok = value(&out, "rmq_ha_slaves{") == Some(1.0)
            && ha_rows
                .iter()
                .all(|n| value(&out, &format!("{n}{{")).is_some())
            && slave_label("rmq_ha_replication_lag_bytes{")
            && slave_label("rmq_ha_slave_acked_offset{")
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

/// The link between master and slave stalls, comes back, is cut and comes
/// back (through a proxy the test controls). A SYNC_MASTER answers every
/// send within its slaveTimeout: FLUSH_SLAVE_TIMEOUT while the stalled
/// slave still counts as connected, SLAVE_NOT_AVAILABLE at once once the
/// link is dropped (housekeeping, or the cut); an ASYNC_MASTER answers
/// SUCCESS throughout. Each time the link returns the slave catches up to
/// the master's end, byte for byte.
async fn link_cut(role: BrokerRole) {
    use rmq_tests::proxy::{Link, LinkProxy};
    const SLAVE_TIMEOUT: Duration = Duration::from_millis(1_500);
    const HOUSEKEEPING: Duration = Duration::from_millis(3_000);
    let dir = tempfile::tempdir().unwrap();
    let mut ms = rmq_tests::broker_settings(&dir.path().join("master"), CqBackend::File);
    ms.broker.broker_role = role;
    ms.broker.slave_timeout_ms = SLAVE_TIMEOUT.as_millis() as u64;
    ms.broker.ha_send_heartbeat_interval_ms = 300;
    ms.broker.ha_housekeeping_interval_ms = HOUSEKEEPING.as_millis() as u64;
    let m = Broker::start(ms).await.unwrap();
    create_topic(&m).await;
    let ha = *m.context().ha_addr.get().expect("the master takes slaves");
    let proxy = LinkProxy::start(ha).await;
    let mut ss = rmq_tests::broker_settings(&dir.path().join("slave"), CqBackend::Rocksdb);
    ss.broker.broker_role = BrokerRole::Slave;
    ss.broker.broker_id = 1;
    ss.broker.namesrv_listen_port = -1;
    ss.broker.namesrv_addr = m.namesrv_addr().unwrap().to_string();
    ss.broker.ha_master_address = proxy.addr().to_string();
    ss.broker.ha_send_heartbeat_interval_ms = 300;
    ss.broker.ha_housekeeping_interval_ms = HOUSEKEEPING.as_millis() as u64;
    let s = Broker::start(ss).await.unwrap();
    let (mctx, sctx) = (
        std::sync::Arc::clone(m.context()),
        std::sync::Arc::clone(s.context()),
    );
    let caught_up = || {
        let end = mctx.store.max_phy_offset();
        wait_until("the slave caught up", || {
            sctx.store.max_phy_offset() == end && mctx.ha_acks.acked() >= end
        });
    };
    let c = sdk::connect(m.addr()).await.unwrap();
    let mut n = 0;
    let mut send = || {
        n += 1;
        let c = &c;
        async move {
            let started = Instant::now();
            let r = sdk::send(c, SendCode::V2, "p", TOPIC, 0, &[msg(n)])
                .await
                .unwrap();
            (ResponseCode::from_i32(r.code), started.elapsed())
        }
    };
    wait_until("the slave connected", || mctx.ha_acks.slaves() == 1);
    for _ in 0..5 {
        assert_eq!(send().await.0, Some(ResponseCode::Success));
    }
    let sync = role == BrokerRole::SyncMaster;
    let in_time = SLAVE_TIMEOUT + Duration::from_millis(1_000);

    // Stalled: the master still counts the slave until housekeeping drops it.
    proxy.set(Link::Stalled);
    let (code, took) = send().await;
    assert!(took < in_time, "answered in {took:?}");
    if sync {
        assert_eq!(code, Some(ResponseCode::FlushSlaveTimeout));
        assert!(
            took >= SLAVE_TIMEOUT - Duration::from_millis(100),
            "{took:?}"
        );
    } else {
        assert_eq!(code, Some(ResponseCode::Success));
    }
    wait_until("housekeeping dropped the stalled slave", || {
        mctx.ha_acks.slaves() == 0
    });
    let (code, took) = send().await;
    assert!(took < Duration::from_millis(500), "answered in {took:?}");
    let want = if sync {
        ResponseCode::SlaveNotAvailable
    } else {
        ResponseCode::Success
    };
    assert_eq!(code, Some(want));

    // Back: the slave reconnects and catches up; sends wait for it again.
    proxy.set(Link::Up);
    wait_until("the slave reconnected", || mctx.ha_acks.slaves() == 1);
    caught_up();
    assert_eq!(send().await.0, Some(ResponseCode::Success));

    // Cut: the master sees the link close and stops waiting at once.
    proxy.set(Link::Cut);
    wait_until("the cut slave is gone", || mctx.ha_acks.slaves() == 0);
    for _ in 0..3 {
        let (code, took) = send().await;
        assert!(took < Duration::from_millis(500), "answered in {took:?}");
        assert_eq!(code, Some(want));
    }
    proxy.set(Link::Up);
    wait_until("the slave reconnected", || mctx.ha_acks.slaves() == 1);
    caught_up();
    assert_eq!(send().await.0, Some(ResponseCode::Success));
    caught_up();
    let end = mctx.store.max_phy_offset() as usize;
    let bytes = |ctx: &rmq_broker::context::BrokerContext| {
        ctx.store
            .commit_log()
            .select(0, end)
            .unwrap()
            .bytes()
            .to_vec()
    };
    assert!(
        bytes(&mctx) == bytes(&sctx),
        "the slave holds the master's log"
    );
    wait_until("the slave dispatched everything", || {
        sctx.store.max_offset_in_queue(TOPIC, 0).unwrap() == n as i64
    });
    s.shutdown().await;
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_cut_sync_master_answers_in_time_and_the_slave_catches_up() {
    link_cut(BrokerRole::SyncMaster).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_cut_async_master_keeps_answering_and_the_slave_catches_up() {
    link_cut(BrokerRole::AsyncMaster).await;
}

/// A slave whose CommitLog ends past its master's (it was another broker,
/// or the master lost its tail) is refused by the master, with an error
/// line naming both offsets, and keeps its own log untouched: SYNC_MASTER
/// sends never count it as a replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_ahead_of_its_master_is_refused_and_keeps_its_log() {
    let dir = tempfile::tempdir().unwrap();
    // The slave's store first held a broker of its own, with more data.
    let sroot = dir.path().join("slave");
    let alone = Broker::start(rmq_tests::broker_settings(&sroot, CqBackend::File))
        .await
        .unwrap();
    create_topic(&alone).await;
    let c = sdk::connect(alone.addr()).await.unwrap();
    for i in 0..20 {
        sdk::send(&c, SendCode::V2, "p", TOPIC, 0, &[msg(i)])
            .await
            .unwrap();
    }
    let own_end = alone.context().store.max_phy_offset();
    let own = alone
        .context()
        .store
        .commit_log()
        .select(0, own_end as usize)
        .unwrap()
        .bytes()
        .to_vec();
    alone.shutdown().await;

    let mut ms = rmq_tests::broker_settings(&dir.path().join("master"), CqBackend::File);
    ms.broker.broker_role = BrokerRole::SyncMaster;
    ms.broker.slave_timeout_ms = 500;
    let m = Broker::start(ms).await.unwrap();
    create_topic(&m).await;
    let mc = sdk::connect(m.addr()).await.unwrap();
    sdk::send(&mc, SendCode::V2, "p", TOPIC, 0, &[msg(0)])
        .await
        .unwrap();
    assert!(m.context().store.max_phy_offset() < own_end);
    let mut ss = rmq_tests::broker_settings(&sroot, CqBackend::File);
    ss.broker.broker_role = BrokerRole::Slave;
    ss.broker.broker_id = 1;
    ss.broker.namesrv_listen_port = -1;
    ss.broker.namesrv_addr = m.namesrv_addr().unwrap().to_string();
    ss.broker.ha_master_address = m.context().ha_addr.get().unwrap().to_string();
    ss.broker.ha_send_heartbeat_interval_ms = 100;
    let s = Broker::start(ss).await.unwrap();
    // Each send waits out slaveTimeout or finds no slave: over several of
    // the slave's 100 ms retries, none is ever acknowledged.
    for i in 1..6 {
        let r = sdk::send(&mc, SendCode::V2, "p", TOPIC, 0, &[msg(i)])
            .await
            .unwrap();
        assert!(
            r.code == ResponseCode::SlaveNotAvailable.code()
                || r.code == ResponseCode::FlushSlaveTimeout.code(),
            "send {i}: {}",
            r.code
        );
    }
    assert_eq!(m.context().ha_acks.acked(), 0);
    let sstore = &s.context().store;
    assert_eq!(sstore.max_phy_offset(), own_end);
    let kept = sstore
        .commit_log()
        .select(0, own_end as usize)
        .unwrap()
        .bytes()
        .to_vec();
    assert!(kept == own, "the slave's own log is untouched");
    s.shutdown().await;
    m.shutdown().await;
}

/// The log of a power cut of both: the slave holds records its master
/// lost, and the master has since written other records, past the slave's
/// end, at those offsets. The slave compares records with its master
/// before it follows, cuts back to the last one they share (its consume
/// queue too), and then holds the master's log byte for byte. Without
/// the cut, the master streams from inside one of its new records and the
/// slave appends those bytes to its own.
async fn heals(slave_backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let m = master(dir.path(), CqBackend::File, BrokerRole::AsyncMaster).await;
    create_topic(&m).await;
    let s = slave(dir.path(), slave_backend, &m).await;
    let c = sdk::connect(m.addr()).await.unwrap();
    for i in 0..10 {
        sdk::send(&c, SendCode::V2, "p", TOPIC, 0, &[msg(i)])
            .await
            .unwrap();
    }
    let (mstore, sstore) = (
        std::sync::Arc::clone(&m.context().store),
        std::sync::Arc::clone(&s.context().store),
    );
    let end = mstore.max_phy_offset();
    wait_until("the slave caught up", || sstore.max_phy_offset() == end);
    wait_until("the slave dispatched", || {
        sstore.max_offset_in_queue(TOPIC, 0).unwrap() == 10
    });
    s.shutdown().await;
    drop(c);

    // The master loses its last three records and takes four larger ones.
    let records = mstore.commit_log().records_from(0);
    assert_eq!(records.len(), 10, "{records:?}");
    let lost_from = records[7].0;
    mstore.truncate_to(lost_from).unwrap();
    let c = sdk::connect(m.addr()).await.unwrap();
    for i in 100..104 {
        sdk::send(&c, SendCode::V2, "p", TOPIC, 0, &[msg(i * 7 + 6)])
            .await
            .unwrap();
    }
    let end = mstore.max_phy_offset();
    assert!(
        end > sstore.max_phy_offset(),
        "the master grew past the slave"
    );
    drop(sstore);

    let s = slave(dir.path(), slave_backend, &m).await;
    let sstore = std::sync::Arc::clone(&s.context().store);
    wait_until("the slave holds the master's end", || {
        sstore.max_phy_offset() == end
    });
    let bytes = |store: &rmq_store::MessageStore| {
        store
            .commit_log()
            .select(0, end as usize)
            .unwrap()
            .bytes()
            .to_vec()
    };
    assert!(
        bytes(&mstore) == bytes(&sstore),
        "the slave holds the master's log byte for byte"
    );
    wait_until("the slave's queue holds the master's 11 messages", || {
        sstore.max_offset_in_queue(TOPIC, 0).unwrap() == 11
    });
    // Each queue offset names the same message on both (pulls wait for
    // the slave's copy of the topic table).
    let sctx = std::sync::Arc::clone(s.context());
    wait_until("the slave copied the topic", || {
        sctx.topics.get(TOPIC).is_some()
    });
    let pulled = |addr| async move {
        let c = sdk::connect(addr).await.unwrap();
        let p = sdk::PullRequest::new("HealGroup", TOPIC, 0, 0, 32);
        let r = sdk::pull(&c, &p).await.unwrap();
        let bodies: Vec<_> = r.messages.into_iter().map(|m| m.body).collect();
        (r.queue_offsets, bodies)
    };
    let (mine, theirs) = (pulled(s.addr()).await, pulled(m.addr()).await);
    assert_eq!(mine.0, (0..11).collect::<Vec<i64>>());
    assert!(
        mine == theirs,
        "the slave's queue names the master's messages"
    );
    s.shutdown().await;
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_holding_records_its_master_lost_cuts_back_and_follows_file() {
    heals(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_holding_records_its_master_lost_cuts_back_and_follows_rocksdb() {
    heals(CqBackend::Rocksdb).await;
}

/// A transfer stops anywhere, so a slave reconnects with its log ending
/// inside a record: the master streams the rest of that record from there
/// (RocketMQ's master does the same), and counts the slave.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_ending_inside_a_record_is_streamed_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let m = master(dir.path(), CqBackend::File, BrokerRole::AsyncMaster).await;
    create_topic(&m).await;
    let c = sdk::connect(m.addr()).await.unwrap();
    for i in 0..3 {
        sdk::send(&c, SendCode::V2, "p", TOPIC, 0, &[msg(i)])
            .await
            .unwrap();
    }
    let log = m.context().store.commit_log();
    let records = log.records_from(0);
    let inside = records[1].0 + 17;
    let end = m.context().store.max_phy_offset();
    let ha = *m.context().ha_addr.get().expect("the master takes slaves");
    let mut raw = tokio::net::TcpStream::connect(ha).await.unwrap();
    raw.write_all(&encode_report(inside)).await.unwrap();
    let mut got = Vec::new();
    while inside + (got.len() as i64) < end {
        let mut h = [0u8; HEADER_LEN];
        tokio::time::timeout(CATCH_UP, raw.read_exact(&mut h))
            .await
            .expect("the master streams to a slave ending inside a record")
            .unwrap();
        let h = FrameHeader::decode(&h);
        assert_eq!(
            h.offset,
            inside + got.len() as i64,
            "frames follow each other"
        );
        let mut body = vec![0u8; h.size as usize];
        raw.read_exact(&mut body).await.unwrap();
        got.extend_from_slice(&body);
    }
    let want = log.select(inside, (end - inside) as usize).unwrap();
    assert!(
        got == want.bytes(),
        "the rest of the log from inside the record"
    );
    wait_until("the master counts the slave", || {
        m.context().ha_acks.slaves() == 1
    });
    drop(raw);
    m.shutdown().await;
}
