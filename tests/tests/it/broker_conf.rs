//! The broker binary with an operator's broker.conf: the example configs
//! RocketMQ 5.3.3 ships (`tests/conf/shipped/`), a file holding every 5.3.3
//! key at its Java default, `storePathCommitLog` and `brokerIP2`. Each
//! broker is a child process (`rmq-broker-under-test`, the broker's own
//! main built in this package) in a directory of its own, on port 0, with a
//! NameServer in this process; a test passes when the broker starts and
//! stores a send (the answer SEND_OK: the record is in the CommitLog).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmq_broker::config::{java, KeyUse, Settings};
use rmq_client::{self as sdk, OutMessage, SendCode};
use rmq_tests::fixtures::TestNameServer;

use crate::broker_process::{hermetic, BrokerProcess};

/// Longest a SYNC_MASTER send may keep answering SLAVE_NOT_AVAILABLE while
/// its slave connects and catches up.
const SLAVE_BOUND: Duration = Duration::from_secs(30);
/// What the start-up warning about 5.3.3 keys says.
const NOT_USED: &str = "not used here";

/// A NameServer in this process, on its clock now.
async fn namesrv() -> TestNameServer {
    let now = rmq_common::time::Clock::now_ms(&rmq_common::time::SystemClock);
    TestNameServer::start(now).await
}

/// A shipped config with `@ROOT@` and `@NAMESRV@` filled in, written into
/// `dir`.
fn shipped(name: &str, dir: &Path, ns: SocketAddr) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("conf/shipped")
        .join(name);
    let text = std::fs::read_to_string(&src).unwrap();
    let text = text
        .replace("@ROOT@", &dir.display().to_string())
        .replace("@NAMESRV@", &ns.to_string());
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn with_config(path: &Path, ns: SocketAddr) -> Vec<String> {
    let mut args = vec!["-c".to_owned(), path.display().to_string()];
    args.extend(hermetic(ns));
    args
}

/// One message sent to `topic` (auto-created); the send's answer code and
/// queue offset.
async fn send_one(addr: SocketAddr, topic: &str) -> Result<(i32, i64), String> {
    let c = sdk::connect(addr).await.map_err(|e| e.to_string())?;
    let m = OutMessage {
        body: b"conf".to_vec(),
        ..OutMessage::default()
    };
    let r = sdk::send(&c, SendCode::V2, "conf-producer", topic, 0, &[m])
        .await
        .map_err(|e| e.to_string())?;
    Ok((r.code, r.queue_offset))
}

/// A send answered SEND_OK (code 0).
async fn assert_send_ok(b: &BrokerProcess, topic: &str) -> i64 {
    let (code, offset) = send_one(b.addr, topic)
        .await
        .unwrap_or_else(|e| panic!("send: {e}\n{}", b.log()));
    assert_eq!(code, 0, "SEND_OK expected\n{}", b.log());
    offset
}

/// Lines of the broker's log that warn about 5.3.3 keys it does not use.
fn not_used_lines(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains(NOT_USED)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shipped_broker_conf() {
    let dir = tempfile::tempdir().unwrap();
    let ns = namesrv().await;
    let conf = shipped("broker.conf", dir.path(), ns.ns.addr);
    let b = BrokerProcess::start(dir.path(), "broker", &with_config(&conf, ns.ns.addr))
        .await
        .unwrap();
    assert_send_ok(&b, "ConfSingle").await;
    assert!(not_used_lines(&b.log()).is_empty(), "{}", b.log());
    b.stop().await;
    ns.stop().await;
}

/// A master and its slave of `2m-2s-{kind}`; the master's send is SEND_OK
/// (for SYNC_MASTER: only once the slave has the record).
async fn master_and_slave(kind: &str) {
    let dir = tempfile::tempdir().unwrap();
    let ns = namesrv().await;
    let (mdir, sdir) = (dir.path().join("master"), dir.path().join("slave"));
    let mconf = shipped(
        &format!("2m-2s-{kind}-broker-a.properties"),
        &mdir,
        ns.ns.addr,
    );
    let sconf = shipped(
        &format!("2m-2s-{kind}-broker-a-s.properties"),
        &sdir,
        ns.ns.addr,
    );
    let master = BrokerProcess::start(&mdir, "master", &with_config(&mconf, ns.ns.addr))
        .await
        .unwrap();
    let slave = BrokerProcess::start(&sdir, "slave", &with_config(&sconf, ns.ns.addr))
        .await
        .unwrap();
    let deadline = Instant::now() + SLAVE_BOUND;
    loop {
        let (code, _) = send_one(master.addr, "ConfPair")
            .await
            .unwrap_or_else(|e| panic!("send: {e}\n{}", master.log()));
        if code == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the master answers {code}, not SEND_OK, {SLAVE_BOUND:?} after its slave started\n\
             --- master ---\n{}\n--- slave ---\n{}",
            master.log(),
            slave.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    slave.stop().await;
    master.stop().await;
    ns.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shipped_2m_2s_sync_master_and_slave() {
    master_and_slave("sync").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shipped_2m_2s_async_master_and_slave() {
    master_and_slave("async").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shipped_dledger_n0() {
    let dir = tempfile::tempdir().unwrap();
    let ns = namesrv().await;
    let conf = shipped("dledger-broker-n0.conf", dir.path(), ns.ns.addr);
    let b = BrokerProcess::start(dir.path(), "n0", &with_config(&conf, ns.ns.addr))
        .await
        .unwrap();
    assert_send_ok(&b, "ConfRaft").await;
    let log = b.log();
    let lines = not_used_lines(&log);
    assert_eq!(lines.len(), 1, "one warning line\n{log}");
    for key in [
        "enableDLegerCommitLog",
        "dLegerGroup",
        "dLegerPeers",
        "dLegerSelfId",
        "sendMessageThreadPoolNums",
    ] {
        assert!(lines[0].contains(key), "{key} named: {}", lines[0]);
    }
    assert!(lines[0].contains("5 RocketMQ 5.3.3 keys"), "{}", lines[0]);
    // storePathRootDir and storePathCommitLog of the file.
    let node = dir.path().join("rmqstore/node00");
    assert!(node.join("commitlog").read_dir().unwrap().next().is_some());
    assert!(node.join("config").exists() || node.join("consumequeue").exists());
    b.stop().await;
    ns.stop().await;
}

/// Every 5.3.3 key at its Java default, as a properties file. Where the
/// default is a path or a port it points into `dir` or is 0; where it
/// depends on the machine (processor count, local address) or is a null
/// String, a value of that kind stands in.
fn every_key_file(dir: &Path, ns: SocketAddr) -> String {
    let store = dir.join("store");
    let path = |p: &str| store.join(p).display().to_string();
    let mut seen = std::collections::BTreeSet::new();
    let mut text = String::from("# Every RocketMQ 5.3.3 broker key at its Java default\n");
    for k in java::all() {
        if !seen.insert(k.key) {
            continue; // listenPort and the water marks are in two classes
        }
        let value = match k.key {
            "listenPort" | "haListenPort" | "metricsPromExporterPort" => "0".to_owned(),
            "storePathRootDir" => store.display().to_string(),
            "storePathCommitLog" => path("commitlog"),
            "storePathDLedgerCommitLog" => path("dledger_commitlog"),
            "storePathEpochFile" => path("epochFileCheckpoint"),
            "storePathBrokerIdentity" => path("brokerIdentity"),
            "rocketmqHome" => dir.display().to_string(),
            "brokerConfigPath" => dir.join("broker.conf").display().to_string(),
            "authConfigPath" => dir.join("auth").display().to_string(),
            "brokerIP1" | "brokerIP2" => "127.0.0.1".to_owned(),
            "namesrvAddr" => ns.to_string(),
            "brokerName" => "broker-every-key".to_owned(),
            _ => match (k.default, k.java_type) {
                (Some(v), _) => v.to_owned(),
                (None, "boolean") => "false".to_owned(),
                (None, "int" | "long") => "4".to_owned(),
                (None, _) => String::new(),
            },
        };
        text.push_str(&format!("{}={}\n", k.key, value));
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_5_3_3_key_at_its_java_default() {
    let dir = tempfile::tempdir().unwrap();
    let ns = namesrv().await;
    let conf = dir.path().join("every-key.properties");
    std::fs::write(&conf, every_key_file(dir.path(), ns.ns.addr)).unwrap();
    let b = BrokerProcess::start(dir.path(), "every-key", &with_config(&conf, ns.ns.addr))
        .await
        .unwrap();
    assert_send_ok(&b, "ConfEveryKey").await;
    let not_ours: std::collections::BTreeSet<&str> = java::all()
        .iter()
        .filter(|k| matches!(Settings::key_use(k.key), KeyUse::NotUsed(_)))
        .map(|k| k.key)
        .collect();
    let log = b.log();
    let lines = not_used_lines(&log);
    assert_eq!(lines.len(), 1, "one warning line\n{log}");
    assert!(
        lines[0].contains(&format!("{} RocketMQ 5.3.3 keys", not_ours.len())),
        "{}",
        lines[0]
    );
    for key in [
        "sendMessageThreadPoolNums",
        "transientStorePoolEnable",
        "bindAddress",
    ] {
        assert!(lines[0].contains(key), "{key}: {}", lines[0]);
    }
    for ours in [
        "listenPort",
        "brokerIP2",
        "storePathCommitLog",
        "warmMapedFileEnable",
    ] {
        assert!(!not_ours.contains(ours), "{ours} is applied");
    }
    assert!(dir
        .path()
        .join("store/commitlog")
        .read_dir()
        .unwrap()
        .next()
        .is_some());
    b.stop().await;
    ns.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_path_commit_log_places_the_commit_log() {
    let dir = tempfile::tempdir().unwrap();
    let ns = namesrv().await;
    let elsewhere = dir.path().join("disk2").join("cl");
    let mut args = hermetic(ns.ns.addr);
    args.extend([
        "--set".to_owned(),
        format!("storePathCommitLog={}", elsewhere.display()),
        "--set".to_owned(),
        "mappedFileSizeCommitLog=16777216".to_owned(),
        "--set".to_owned(),
        "maxMessageSize=1048576".to_owned(),
    ]);
    let b = BrokerProcess::start(dir.path(), "first", &args)
        .await
        .unwrap();
    assert_eq!(assert_send_ok(&b, "ConfPlaced").await, 0);
    let config = rmq_tools::admin::broker_config(&rmq_client::Connector::new(), b.addr)
        .await
        .unwrap();
    assert!(
        config.contains(&format!("storePathCommitLog={}\n", elsewhere.display())),
        "{config}"
    );
    b.stop().await;
    let segments: Vec<String> = std::fs::read_dir(&elsewhere)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        segments.iter().any(|s| s == "00000000000000000000"),
        "{elsewhere:?}: {segments:?}"
    );
    assert!(
        !dir.path().join("store/commitlog").exists(),
        "nothing under the root's commitlog"
    );
    // After a restart the record is found there again: the queue goes on
    // from offset 1 (a CommitLog not found would cut the queue back to 0).
    let b = BrokerProcess::start(dir.path(), "second", &args)
        .await
        .unwrap();
    assert_eq!(assert_send_ok(&b, "ConfPlaced").await, 1);
    b.stop().await;
    ns.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_ip2_is_where_the_ha_port_binds() {
    let dir = tempfile::tempdir().unwrap();
    let ns = namesrv().await;
    // brokerIP2 on this machine's address: the master registers its HA
    // port there.
    let mut args = hermetic(ns.ns.addr);
    args.extend(["--set".to_owned(), "brokerIP2=127.0.0.1".to_owned()]);
    let b = BrokerProcess::start(&dir.path().join("ok"), "ip2-ok", &args)
        .await
        .unwrap();
    let config = rmq_tools::admin::broker_config(&rmq_client::Connector::new(), b.addr)
        .await
        .unwrap();
    assert!(config.contains("brokerIP2=127.0.0.1\n"), "{config}");
    b.stop().await;
    ns.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_neither_knows_stops_the_start_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let ns = namesrv().await;
    let conf = dir.path().join("typo.conf");
    std::fs::write(&conf, "brokerName=broker-a\nsendMessageThreadPoolNum=16\n").unwrap();
    let err = BrokerProcess::start(dir.path(), "typo", &with_config(&conf, ns.ns.addr))
        .await
        .err()
        .expect("an unknown key refuses the start");
    assert!(err.contains("sendMessageThreadPoolNum"), "{err}");
    ns.stop().await;
}
