//! Replication across implementations, on RocketMQ's HA protocol: this
//! broker as the slave of Apache RocketMQ 4.9.7's master, and Apache's
//! 4.9.7 slave following this broker as a SYNC_MASTER (every send then
//! answered only once the Java slave acknowledged it). Both sides use 4 MiB
//! CommitLog segments: replicated offsets and segment starts must agree.

use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_broker::ha::BrokerRole;
use rmq_client::{self as sdk, OutMessage, SendCode};
use rmq_common::config::CqBackend;
use rmq_common::remoting::{RemotingCommand, RequestCode};
use rmq_tests::apache::{self, Jvm};
use rmq_tools::admin;

/// Longest replication may take to show on the other side (Apache's slave
/// reports only a heartbeat interval, 5 s, after it connects).
const FOLLOW_TIMEOUT: Duration = Duration::from_secs(60);
const TOPIC: &str = "InteropTopic";
const SEGMENT: &str = "mapedFileSizeCommitLog=4194304\n";

fn msg(i: usize) -> OutMessage {
    OutMessage {
        body: format!("interop-{i}-").repeat(1 + i % 50).into_bytes(),
        tags: Some("T".into()),
        keys: vec![format!("k{i}")],
        properties: vec![],
    }
}

/// A key of GET_BROKER_RUNTIME_INFO (a fresh Java broker refuses it until
/// its statistics have a first sample: asked again, bounded).
async fn runtime_key(broker: std::net::SocketAddr, key: &str) -> i64 {
    let c = sdk::connect(broker).await.unwrap();
    let deadline = Instant::now() + FOLLOW_TIMEOUT;
    loop {
        let req = RemotingCommand::request(RequestCode::GetBrokerRuntimeInfo);
        match sdk::call(&c, req).await {
            Ok(r) => {
                let body = r.body.as_deref().unwrap_or_default();
                let v = rmq_common::json::parse::parse(body).unwrap();
                return v["table"][key].as_str().unwrap_or("0").parse().unwrap();
            }
            Err(e) => assert!(Instant::now() < deadline, "runtime info: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn max_offset(broker: std::net::SocketAddr, q: i32) -> i64 {
    let c = sdk::connect(broker).await.unwrap();
    sdk::queue_offset(&c, RequestCode::GetMaxOffset, TOPIC, q)
        .await
        .unwrap()
}

async fn wait_for(what: &str, mut ok: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + FOLLOW_TIMEOUT;
    while !ok().await {
        assert!(
            Instant::now() < deadline,
            "{what} within {FOLLOW_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Our broker as a slave, its store in `dir/ours`, its master the one the
/// NameServer at `ns` names.
async fn our_slave(dir: &std::path::Path, backend: CqBackend, ns: &str) -> Broker {
    let mut s = rmq_tests::broker_settings(&dir.join("ours"), backend);
    s.broker.broker_role = BrokerRole::Slave;
    s.broker.broker_id = 1;
    s.broker.namesrv_listen_port = -1;
    s.broker.namesrv_addr = ns.to_owned();
    Broker::start(s).await.unwrap()
}

async fn slave_of_apache(backend: CqBackend) {
    apache::require_jars();
    let dir = tempfile::tempdir().unwrap();
    let (_ns, ns_port) = Jvm::namesrv_on_free_port(&dir.path().join("ns"));
    let ns = format!("127.0.0.1:{ns_port}");
    let (_master, port) = Jvm::broker_on_free_ports(
        &dir.path().join("master"),
        &ns,
        &format!("brokerId=0\nbrokerRole=ASYNC_MASTER\n{SEGMENT}"),
    );
    let m = apache::local(port);
    admin::topic_create(&rmq_client::Connector::new(), m, TOPIC, 2, 6)
        .await
        .unwrap();
    let c = sdk::connect(m).await.unwrap();
    let mut bodies = Vec::new();
    for i in 0..40 {
        let r = sdk::send(&c, SendCode::V2, "p", TOPIC, (i % 2) as i32, &[msg(i)])
            .await
            .unwrap();
        assert_eq!(r.code, 0);
        if i % 2 == 0 {
            bodies.push(msg(i).body);
        }
    }

    let slave = our_slave(dir.path(), backend, &ns).await;
    let store = std::sync::Arc::clone(&slave.context().store);
    let master_end = runtime_key(m, "commitLogMaxOffset").await;
    assert!(master_end > 0);
    wait_for("our slave holds the Java master's CommitLog", async || {
        store.max_phy_offset() == master_end
    })
    .await;
    rmq_tests::wait_dispatched(&store);
    for q in 0..2 {
        assert_eq!(
            store.max_offset_in_queue(TOPIC, q).unwrap(),
            max_offset(m, q).await,
            "queue {q}"
        );
    }
    assert_eq!(store.reput_failures(), 0);
    // It copied the Java master's topic table, and serves the messages.
    let ctx = std::sync::Arc::clone(slave.context());
    wait_for("our slave copied the topic", async || {
        ctx.topics.get(TOPIC).is_some()
    })
    .await;
    let sc = sdk::connect(slave.addr()).await.unwrap();
    let r = sdk::pull(
        &sc,
        &sdk::PullRequest {
            group: "InteropGroup".into(),
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
    let got: Vec<Vec<u8>> = r.messages.iter().map(|m| m.body.clone()).collect();
    assert!(
        got == bodies,
        "the slave serves the master's messages in order"
    );
    slave.shutdown().await;

    // Restarted with a log of its own, our slave first compares its last
    // records with the Java master's (VIEW_MESSAGE_BY_ID), then follows on.
    for i in 40..50 {
        let r = sdk::send(&c, SendCode::V2, "p", TOPIC, (i % 2) as i32, &[msg(i)])
            .await
            .unwrap();
        assert_eq!(r.code, 0);
    }
    let slave = our_slave(dir.path(), backend, &ns).await;
    let store = std::sync::Arc::clone(&slave.context().store);
    let master_end = runtime_key(m, "commitLogMaxOffset").await;
    wait_for(
        "our restarted slave follows the Java master on",
        async || store.max_phy_offset() == master_end,
    )
    .await;
    slave.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_slave_follows_apache_4_9_7_master_file() {
    slave_of_apache(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_slave_follows_apache_4_9_7_master_rocksdb() {
    slave_of_apache(CqBackend::Rocksdb).await;
}

/// Apache's slave follows this broker; as a SYNC_MASTER every send is
/// answered SUCCESS only once the Java slave acknowledged it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_4_9_7_slave_follows_our_sync_master_file() {
    apache_slave_follows_our_sync_master(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apache_4_9_7_slave_follows_our_sync_master_rocksdb() {
    apache_slave_follows_our_sync_master(CqBackend::Rocksdb).await;
}

async fn apache_slave_follows_our_sync_master(backend: CqBackend) {
    apache::require_jars();
    let dir = tempfile::tempdir().unwrap();
    let mut s = rmq_tests::broker_settings(&dir.path().join("ours"), backend);
    s.broker.broker_role = BrokerRole::SyncMaster;
    let master = Broker::start(s).await.unwrap();
    let ns = master.namesrv_addr().unwrap().to_string();
    let c = sdk::connect(master.addr()).await.unwrap();
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
    let (_slave, port) = Jvm::broker_on_free_ports(
        &dir.path().join("java-slave"),
        &ns,
        &format!("brokerId=1\nbrokerRole=SLAVE\n{SEGMENT}"),
    );
    let acks = std::sync::Arc::clone(&master.context().ha_acks);
    wait_for("the Java slave connected", async || acks.slaves() == 1).await;
    // Apache's slave reports a heartbeat interval after connecting: the
    // first send may time out waiting (stored all the same); once it has
    // caught up, every send is acknowledged.
    let first = sdk::send(&c, SendCode::V2, "p", TOPIC, 0, &[msg(100)])
        .await
        .unwrap();
    assert!([0, 12].contains(&first.code), "{}", first.code);
    let end = master.context().store.max_phy_offset();
    wait_for("the Java slave caught up", async || acks.acked() >= end).await;
    for i in 0..20 {
        let r = sdk::send(&c, SendCode::V2, "p", TOPIC, (i % 2) as i32, &[msg(i)])
            .await
            .unwrap();
        assert_eq!(r.code, 0, "send {i} acknowledged by the Java slave");
    }
    let end = master.context().store.max_phy_offset();
    assert!(acks.acked() >= end);
    let j = apache::local(port);
    wait_for("the Java slave reports our CommitLog end", async || {
        runtime_key(j, "commitLogMaxOffset").await == end
    })
    .await;
    rmq_tests::wait_dispatched(&master.context().store);
    for q in 0..2 {
        let ours = master
            .context()
            .store
            .max_offset_in_queue(TOPIC, q)
            .unwrap();
        wait_for("the Java slave's queue", async || {
            max_offset(j, q).await == ours
        })
        .await;
    }
    master.shutdown().await;
}
