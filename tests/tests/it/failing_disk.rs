//! Failing disks (issue 36): the broker as a child process on the
//! crash-consistency filesystem (`rmq-crashfs`), which then fails its
//! writes or syncs with EIO or ENOSPC under one folder of the store. What
//! must hold, per folder (CommitLog, consume queue, metadata):
//! * nothing whose write or sync failed is answered SUCCESS;
//! * while the CommitLog's disk fails, sends are refused with an error that
//!   names the problem; while the consume queue's fails, sends (durable in
//!   the CommitLog) are taken until its next flush meets the fault, then
//!   refused naming the consume queue; while the metadata's fails, the
//!   change is refused naming the file; what was stored before is still
//!   read;
//! * once the disk is healed the broker, restarted (after a power cut,
//!   which keeps only what was synced), has every acknowledged message and
//!   takes writes again.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use rmq_client::{self as sdk, OutMessage, RemotingClient, SendCode};
use rmq_common::remoting::{RemotingCommand, RequestCode};
use rmq_crashfs::{CrashFs, Fault, FaultOp};
use rmq_tests::fixtures::TestNameServer;

use crate::broker_process::{hermetic, BrokerProcess};
use crate::power_loss::read_topic;

const TOPIC: &str = "FailingDisk";
const QUEUES: i32 = 2;
/// Sends tried while the CommitLog's disk fails.
const TRIES: usize = 20;
/// Sends made while the consume queue's disk fails.
const CQ_TRIES: usize = 2000;
/// Longest the consume queue's flush (every `flushIntervalConsumeQueue`,
/// 1 s) may take to meet the fault and stop sends.
const FLUSH_WAIT: Duration = Duration::from_secs(30);

fn message(key: &str) -> OutMessage {
    OutMessage {
        body: key.as_bytes().to_vec(),
        keys: vec![key.to_owned()],
        ..OutMessage::default()
    }
}

/// Sends `count` messages tagged `tag`; the acknowledged ones by queue and
/// offset, and the refusals' texts.
async fn send(
    c: &RemotingClient,
    tag: &str,
    count: usize,
) -> (BTreeMap<(i32, i64), String>, Vec<String>) {
    let mut acked = BTreeMap::new();
    let mut refused = Vec::new();
    for n in 0..count {
        let key = format!("{tag}-{n}");
        let queue = (n as i32) % QUEUES;
        match sdk::send(
            c,
            SendCode::V2,
            "FailingDiskProducer",
            TOPIC,
            queue,
            &[message(&key)],
        )
        .await
        {
            Ok(r) if r.code == 0 => {
                acked.insert((r.queue_id, r.queue_offset), key);
            }
            Ok(r) => refused.push(format!("code {}", r.code)),
            Err(e) => refused.push(e.to_string()),
        }
    }
    (acked, refused)
}

/// Waits (bounded) until every message of `acked` is read from `addr`
/// (dispatch follows the append).
async fn all_read(addr: SocketAddr, acked: &BTreeMap<(i32, i64), String>, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let stored = read_topic(addr, TOPIC, QUEUES, 32).await;
        let lacking: Vec<_> = acked
            .iter()
            .filter(|(k, v)| stored.get(k) != Some(*v))
            .collect();
        if lacking.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: {} acknowledged messages not read, first {:?}",
            lacking.len(),
            lacking[0]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What a broker must do while its disk fails.
#[derive(Debug, Clone, Copy)]
enum WhileFailing {
    /// Refuse the next sends, the refusal naming one of these words (the
    /// CommitLog: a send is answered only once it is durable there).
    Refused(&'static [&'static str]),
    /// Take sends until the consume queue's next flush meets the fault
    /// (they are durable in the CommitLog), then refuse them, naming one
    /// of these words.
    RefusedOnceFlushed(&'static [&'static str]),
}

/// Sends one message at a time until one is refused (bounded by
/// [`FLUSH_WAIT`]); the acknowledged ones and the refusal.
async fn send_until_refused(c: &RemotingClient) -> (BTreeMap<(i32, i64), String>, Option<String>) {
    let deadline = std::time::Instant::now() + FLUSH_WAIT;
    let mut acked = BTreeMap::new();
    let mut n = 0;
    while std::time::Instant::now() < deadline {
        let (one, refused) = send(c, &format!("until-{n}"), 1).await;
        acked.extend(one);
        if let Some(r) = refused.into_iter().next() {
            return (acked, Some(r));
        }
        n += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (acked, None)
}

/// The fault `fault` under the store of a broker on `backend` and the
/// checks of this file.
async fn fails_safely(backend: &str, fault: Fault, expect: WhileFailing) {
    let dir = tempfile::tempdir().unwrap();
    let (backing, mnt) = (dir.path().join("backing"), dir.path().join("mnt"));
    std::fs::create_dir_all(&backing).unwrap();
    std::fs::create_dir_all(&mnt).unwrap();
    let mut fs = CrashFs::mount(&backing, &mnt)
        .unwrap_or_else(|e| panic!("{e}: the failing-disk tests need root and /dev/fuse"));
    let now = rmq_common::time::Clock::now_ms(&rmq_common::time::SystemClock);
    let ns = TestNameServer::start(now).await;
    let mut args = hermetic(ns.ns.addr);
    for s in [
        format!("storePathRootDir={}", mnt.join("store").display()),
        format!("consumeQueueStore={backend}"),
        "flushDiskType=SYNC_FLUSH".to_owned(),
        "mappedFileSizeCommitLog=1048576".to_owned(),
        "maxMessageSize=65536".to_owned(),
    ] {
        args.extend(["--set".to_owned(), s]);
    }
    let what = format!("{backend}, {fault:?}");
    let run = dir.path().join("run");
    let b = BrokerProcess::start(&run, "before", &args).await.unwrap();
    let c = sdk::connect(b.addr).await.unwrap();
    let (mut acked, refused) = send(&c, "before", 10).await;
    assert!(
        refused.is_empty(),
        "{what}: refused on a good disk: {refused:?}"
    );
    all_read(b.addr, &acked, &what).await;

    fs.faults().inject(fault);
    // Enough for the consume queue to write a few pages per queue
    // (`flushConsumeQueueLeastPages`), so its next flush meets the fault.
    let tries = match expect {
        WhileFailing::Refused(_) => TRIES,
        WhileFailing::RefusedOnceFlushed(_) => CQ_TRIES,
    };
    let (during, refused) = send(&c, "during", tries).await;
    // What was answered SUCCESS while the disk failed must be kept too.
    acked.extend(during.clone());
    let reported = match expect {
        WhileFailing::Refused(words) => {
            assert!(
                !refused.is_empty(),
                "{what}: every send was answered SUCCESS while the disk failed"
            );
            let last = refused.last().unwrap().clone();
            assert!(
                words.iter().any(|w| last.contains(w)),
                "{what}: the refusal does not say what is wrong: {refused:?}"
            );
            last
        }
        WhileFailing::RefusedOnceFlushed(words) => {
            let (more, refusal) = send_until_refused(&c).await;
            acked.extend(more);
            let refusal = refusal.unwrap_or_else(|| {
                panic!("{what}: sends still taken {FLUSH_WAIT:?} after the consume queue's disk failed; broker log:\n{}", b.log())
            });
            assert!(
                words.iter().any(|w| refusal.contains(w)),
                "{what}: the refusal does not say what is wrong: {refusal}"
            );
            refusal
        }
    };
    // Reads go on.
    let before: BTreeMap<_, _> = acked
        .iter()
        .filter(|(_, v)| v.starts_with("before"))
        .map(|(k, v)| (*k, v.clone()))
        .collect();
    all_read(
        b.addr,
        &before,
        &format!("{what}, reads while the disk fails"),
    )
    .await;

    // Healed, and a power cut: only what was synced is there.
    fs.faults().heal();
    b.freeze();
    fs.power_cut();
    b.kill9();
    fs.restart().unwrap();
    let b = BrokerProcess::start(&run, "after", &args)
        .await
        .unwrap_or_else(|e| panic!("{what}: start after healing: {e}"));
    all_read(
        b.addr,
        &acked,
        &format!("{what}, after healing and a restart"),
    )
    .await;
    let c = sdk::connect(b.addr).await.unwrap();
    let (after, refused) = send(&c, "after", 10).await;
    assert!(
        refused.is_empty(),
        "{what}: refused after healing: {refused:?}"
    );
    acked.extend(after);
    all_read(b.addr, &acked, &format!("{what}, writes after healing")).await;
    // No offset answered twice: every acknowledged (queue, offset) holds
    // its own message, which all_read checked; and the metadata takes
    // writes again.
    let mut create = sdk::request(
        RequestCode::UpdateAndCreateTopic,
        &[
            ("topic", "FailingDiskAfter".to_owned()),
            ("readQueueNums", "1".to_owned()),
            ("writeQueueNums", "1".to_owned()),
        ],
    );
    create.put_ext("perm", "6");
    let r = c.invoke(create, sdk::DEFAULT_TIMEOUT).await.unwrap();
    assert_eq!(r.code, 0, "{what}: {:?}", r.remark);
    b.stop().await;
    ns.stop().await;
    drop(fs);
    eprintln!(
        "failing_disk {what}: {} acknowledged kept; while failing: {reported}",
        acked.len()
    );
}

/// The metadata journal's folder fails: a topic creation is not answered
/// SUCCESS, names the problem, and works once the disk is healed; messages
/// are still taken meanwhile.
async fn metadata_fails_safely(backend: &str, errno: i32) {
    let dir = tempfile::tempdir().unwrap();
    let (backing, mnt) = (dir.path().join("backing"), dir.path().join("mnt"));
    std::fs::create_dir_all(&backing).unwrap();
    std::fs::create_dir_all(&mnt).unwrap();
    let fs = CrashFs::mount(&backing, &mnt)
        .unwrap_or_else(|e| panic!("{e}: the failing-disk tests need root and /dev/fuse"));
    let now = rmq_common::time::Clock::now_ms(&rmq_common::time::SystemClock);
    let ns = TestNameServer::start(now).await;
    let mut args = hermetic(ns.ns.addr);
    for s in [
        format!("storePathRootDir={}", mnt.join("store").display()),
        format!("consumeQueueStore={backend}"),
    ] {
        args.extend(["--set".to_owned(), s]);
    }
    let b = BrokerProcess::start(&dir.path().join("run"), "meta", &args)
        .await
        .unwrap();
    let c = sdk::connect(b.addr).await.unwrap();
    let create = |topic: &str| {
        sdk::request(
            RequestCode::UpdateAndCreateTopic,
            &[
                ("topic", topic.to_owned()),
                ("readQueueNums", "1".to_owned()),
                ("writeQueueNums", "1".to_owned()),
                ("perm", "6".to_owned()),
            ],
        )
    };
    fs.faults()
        .inject(Fault::always(FaultOp::Write, "/store/config", errno));
    fs.faults()
        .inject(Fault::always(FaultOp::Sync, "/store/config", errno));
    let r = c
        .invoke(create("FailingMeta"), sdk::DEFAULT_TIMEOUT)
        .await
        .unwrap();
    assert_ne!(r.code, 0, "a topic was created on a failing disk");
    let remark = r.remark.unwrap_or_default();
    assert!(
        remark.contains("config"),
        "the refusal names no file: {remark}"
    );
    fs.faults().heal();
    let r = c
        .invoke(create("FailingMeta"), sdk::DEFAULT_TIMEOUT)
        .await
        .unwrap();
    assert_eq!(r.code, 0, "after healing: {:?}", r.remark);
    let all = c
        .invoke(
            RemotingCommand::request(RequestCode::GetAllTopicConfig),
            sdk::DEFAULT_TIMEOUT,
        )
        .await
        .unwrap();
    assert!(
        String::from_utf8_lossy(all.body.as_deref().unwrap_or_default()).contains("FailingMeta")
    );
    b.stop().await;
    ns.stop().await;
    drop(fs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_disk_commitlog_sync_eio_file() {
    let fault = Fault::always(FaultOp::Sync, "/store/commitlog", libc::EIO);
    fails_safely(
        "file",
        fault,
        WhileFailing::Refused(&["CommitLog", "commitlog"]),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_disk_commitlog_write_enospc_rocksdb() {
    let fault = Fault::always(FaultOp::Write, "/store/commitlog", libc::ENOSPC);
    fails_safely(
        "rocksdb",
        fault,
        WhileFailing::Refused(&["CommitLog", "commitlog"]),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_disk_consume_queue_write_eio_file() {
    let fault = Fault::always(FaultOp::Write, "/store/consumequeue", libc::EIO);
    fails_safely(
        "file",
        fault,
        WhileFailing::RefusedOnceFlushed(&["consume queue"]),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_disk_consume_queue_write_enospc_rocksdb() {
    let fault = Fault::always(FaultOp::Write, "/store/rocksdb_consumequeue", libc::ENOSPC);
    fails_safely(
        "rocksdb",
        fault,
        WhileFailing::RefusedOnceFlushed(&["consume queue"]),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_disk_meta_journal_eio() {
    metadata_fails_safely("file", libc::EIO).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_disk_meta_journal_enospc() {
    metadata_fails_safely("rocksdb", libc::ENOSPC).await;
}
