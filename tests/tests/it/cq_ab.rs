//! Two consume-queue backends in one broker (issue 20): a shadow added under
//! load catches up, `cq verify` finds both equal (and finds a divergence
//! made on purpose), `cq serve` flips them both ways while a consumer sees
//! every message once and in order with no failed pull, `cq drop-shadow`
//! removes the shadow's files; and a kill -9 at each step of a flip restarts
//! on the choice last persisted with both backends equal again.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmq_client::{self as sdk, Connector, OutMessage, PullRequest, SendCode};
use rmq_common::config::CqBackend;
use rmq_common::remoting::ResponseCode;
use rmq_store::{backend_dir, FlipStep, VerifyOptions};
use rmq_tests::{message, open_store, read_queue, small_config, start_broker, wait_dispatched};
use rmq_tools::cq_admin;

const TOPIC: &str = "AbLoad";
const QUEUES: i32 = 4;
/// Longest wait for the shadow to catch up, or for a consumer to drain.
const CATCH_UP: Duration = Duration::from_secs(60);

/// What the producer had acknowledged, per queue, in offset order.
type Acked = Arc<Mutex<HashMap<i32, Vec<(i64, Vec<u8>)>>>>;
/// What a consumer received for its queue, and the pulls that failed.
type Seen = Arc<Mutex<(Vec<(i64, Vec<u8>)>, Vec<String>)>>;

/// Sends until `stop`, one message at a time over all queues.
async fn produce(addr: std::net::SocketAddr, stop: Arc<AtomicBool>, acked: Acked) {
    let c = sdk::connect(addr).await.unwrap();
    for n in 0u64.. {
        if stop.load(Ordering::Acquire) {
            break;
        }
        let q = (n % QUEUES as u64) as i32;
        let body = format!("m{n}").into_bytes();
        let msg = OutMessage {
            body: body.clone(),
            ..Default::default()
        };
        let r = sdk::send(&c, SendCode::V2, "ab-p", TOPIC, q, &[msg])
            .await
            .unwrap();
        acked
            .lock()
            .unwrap()
            .entry(q)
            .or_default()
            .push((r.queue_offset, body));
    }
}

/// Pulls queue `q` with long polling from offset 0 until `done` and the
/// queue's end `until` is reached; every answer other than found / no new
/// message is a failure.
async fn consume(
    addr: std::net::SocketAddr,
    q: i32,
    done: Arc<AtomicBool>,
    until: Arc<Mutex<HashMap<i32, i64>>>,
    seen: Seen,
) {
    let c = sdk::connect(addr).await.unwrap();
    let mut offset = 0;
    let deadline = Instant::now() + Duration::from_secs(300);
    while Instant::now() < deadline {
        if done.load(Ordering::Acquire) {
            let end = until.lock().unwrap().get(&q).copied().unwrap_or(0);
            if offset >= end {
                return;
            }
        }
        let p = PullRequest {
            group: "ab-c".into(),
            topic: TOPIC.into(),
            queue_id: q,
            offset,
            max_msgs: 32,
            subscription: Some("*".into()),
            suspend: Some(Duration::from_millis(500)),
            commit_offset: None,
        };
        match sdk::pull(&c, &p).await {
            Ok(r) if r.code == i32::from(ResponseCode::Success) => {
                let mut s = seen.lock().unwrap();
                for (m, qo) in r.messages.iter().zip(&r.queue_offsets) {
                    s.0.push((*qo, m.body.clone()));
                }
                offset = r.next_begin_offset;
            }
            Ok(r) if r.code == i32::from(ResponseCode::PullNotFound) => {}
            Ok(r) => {
                seen.lock().unwrap().1.push(format!(
                    "queue {q} offset {offset}: code {} next {}",
                    r.code, r.next_begin_offset
                ));
                offset = r.next_begin_offset;
            }
            Err(e) => seen
                .lock()
                .unwrap()
                .1
                .push(format!("queue {q} offset {offset}: {e}")),
        }
    }
    seen.lock()
        .unwrap()
        .1
        .push(format!("queue {q}: consumer timed out at {offset}"));
}

/// Waits for the shadow to have written everything stored so far.
fn caught_up(broker: &rmq_broker::broker::Broker) {
    let store = &broker.context().store;
    assert!(
        store.wait_shadow_caught_up(CATCH_UP),
        "the shadow did not catch up: {:?}",
        store.cq_status()
    );
}

async fn verify_equal(conn: &Connector, addr: std::net::SocketAddr, when: &str) {
    let report = cq_admin::verify_report(conn, addr, 1, 20).await.unwrap();
    let text = cq_admin::verify_text(&report);
    assert!(text.starts_with("EQUAL"), "{when}: {text}");
    assert!(
        report["unitsCompared"].as_u64().unwrap() > 0,
        "{when}: nothing compared: {text}"
    );
}

async fn migrate_under_load(serving: CqBackend, shadow: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(&dir.path().join("store"), serving).await;
    let addr = broker.addr();
    let conn = Connector::new();
    rmq_tools::admin::topic_create(&conn, addr, TOPIC, QUEUES, 6)
        .await
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Acked = Arc::default();
    let producer = tokio::spawn(produce(addr, Arc::clone(&stop), Arc::clone(&acked)));
    let until: Arc<Mutex<HashMap<i32, i64>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let mut consumers = Vec::new();
    let mut seen = Vec::new();
    for q in 0..QUEUES {
        let s: Seen = Arc::default();
        seen.push(Arc::clone(&s));
        consumers.push(tokio::spawn(consume(
            addr,
            q,
            Arc::clone(&done),
            Arc::clone(&until),
            s,
        )));
    }
    // Traffic before the shadow exists: it has a log to build from.
    let store = Arc::clone(&broker.context().store);
    let deadline = Instant::now() + CATCH_UP;
    while store.max_phy_offset() < 200_000 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let out = cq_admin::add_shadow(&conn, addr, shadow.as_str())
        .await
        .unwrap();
    assert!(out.contains("shadow"), "{out}");
    caught_up(&broker);
    verify_equal(&conn, addr, "after catch-up").await;

    cq_admin::serve(&conn, addr, shadow.as_str()).await.unwrap();
    assert_eq!(store.serving_backend(), shadow);
    let config = rmq_tools::admin::broker_config(&conn, addr).await.unwrap();
    let line = |l: String| config.lines().any(|c| c == l);
    assert!(
        line(format!("consumeQueueStore={shadow}"))
            && line(format!("shadowConsumeQueueStore={serving}")),
        "{config}"
    );
    let status = cq_admin::status(&conn, addr).await.unwrap();
    assert!(
        status
            .lines()
            .any(|l| l.starts_with(shadow.as_str()) && l.contains("serving")),
        "{status}"
    );
    caught_up(&broker);
    verify_equal(&conn, addr, "after the flip").await;

    cq_admin::serve(&conn, addr, serving.as_str())
        .await
        .unwrap();
    assert_eq!(store.serving_backend(), serving);
    caught_up(&broker);
    verify_equal(&conn, addr, "after the flip back").await;

    let out = cq_admin::drop_shadow(&conn, addr).await.unwrap();
    assert!(out.contains(shadow.as_str()), "{out}");
    assert_eq!(store.cq_status().len(), 1);
    let files = backend_dir(store.config(), shadow).unwrap();
    assert!(!files.exists(), "{} is still there", files.display());

    stop.store(true, Ordering::Release);
    producer.await.unwrap();
    {
        let acked = acked.lock().unwrap();
        let mut until = until.lock().unwrap();
        for q in 0..QUEUES {
            until.insert(q, acked.get(&q).map_or(0, |v| v.len() as i64));
        }
    }
    done.store(true, Ordering::Release);
    for c in consumers {
        c.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    for q in 0..QUEUES {
        let (got, failures) = &*seen[q as usize].lock().unwrap();
        assert!(
            failures.is_empty(),
            "queue {q}: {} failed pulls, the first: {:?}",
            failures.len(),
            &failures[..failures.len().min(5)]
        );
        let want = acked.get(&q).cloned().unwrap_or_default();
        assert!(want.len() > 50, "queue {q}: only {} sent", want.len());
        assert_eq!(got.len(), want.len(), "queue {q}: received vs sent");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.0, i as i64, "queue {q}: out of order or repeated");
            assert_eq!(g, w, "queue {q} offset {i}");
        }
    }
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn migrate_file_to_rocksdb_under_load() {
    migrate_under_load(CqBackend::File, CqBackend::Rocksdb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn migrate_rocksdb_to_file_under_load() {
    migrate_under_load(CqBackend::Rocksdb, CqBackend::File).await;
}

/// Differences made on purpose in the shadow only are reported: a topic
/// missing, and one unit's tags code changed in its file.
#[test]
fn verify_reports_an_injected_divergence() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = small_config(dir.path(), CqBackend::Rocksdb);
    config.shadow_consume_queue_store = Some(CqBackend::File);
    let store = open_store(&config).unwrap();
    for i in 0..40 {
        let topic = if i % 2 == 0 { "Kept" } else { "Gone" };
        store
            .put_message(&message(topic, 0, format!("b{i}")))
            .unwrap();
    }
    wait_dispatched(&store);
    assert!(store.wait_shadow_caught_up(CATCH_UP));
    let equal = store
        .verify_consume_queues(VerifyOptions::default())
        .unwrap();
    assert!(equal.equal(), "{equal:?}");
    assert_eq!(equal.units_compared, 40);

    let shadow = store.shadow_consume_queue().unwrap();
    shadow.delete_topic("Gone").unwrap();
    // Unit 5 of Kept/0: bytes 12..20 of the 20-byte unit are its tags code.
    let file = backend_dir(&config, CqBackend::File)
        .unwrap()
        .join("Kept/0/00000000000000000000");
    let mut bytes = std::fs::read(&file).unwrap();
    let at = 5 * 20 + 12;
    bytes[at..at + 8].copy_from_slice(&424_242i64.to_be_bytes());
    std::fs::write(&file, &bytes).unwrap();

    let report = store
        .verify_consume_queues(VerifyOptions::default())
        .unwrap();
    assert!(!report.equal());
    let gone = report
        .differences
        .iter()
        .find(|d| d.topic == "Gone")
        .unwrap_or_else(|| panic!("missing topic not reported: {report:?}"));
    assert_eq!(gone.what, "unitsBelowBound", "{gone:?}");
    assert!(gone.shadow.starts_with("0 "), "{gone:?}");
    let unit = report
        .differences
        .iter()
        .find(|d| d.topic == "Kept")
        .unwrap_or_else(|| panic!("changed unit not reported: {report:?}"));
    assert_eq!(
        (unit.what.as_str(), unit.offset),
        ("unit", Some(5)),
        "{unit:?}"
    );
    assert!(unit.shadow.contains("tags 424242"), "{unit:?}");

    // One unit in 7: offsets 0, 7, 14 and the last, 19, of Kept/0 (Gone
    // has nothing to compare in the shadow): the changed unit 5 is not
    // among them, the missing topic still is.
    let sampled = store
        .verify_consume_queues(VerifyOptions {
            every: 7,
            max_differences: 20,
        })
        .unwrap();
    assert_eq!(
        (sampled.every, sampled.units_compared),
        (7, 4),
        "{sampled:?}"
    );
    assert!(
        sampled.differences.iter().all(|d| d.topic == "Gone"),
        "{sampled:?}"
    );
}

/// What the writer child acknowledged before it died.
fn run_flip_child(
    root: &std::path::Path,
    serving: &str,
    shadow: &str,
    step: FlipStep,
) -> Vec<(i32, i64)> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crash-writer"))
        .args([
            "flip",
            root.to_str().unwrap(),
            serving,
            shadow,
            step.as_str(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut acks = Vec::new();
    let mut reached = false;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let Ok(line) = line else { break };
        let mut it = line.split_whitespace();
        match it.next() {
            Some("ACK") => {
                let q: i32 = it.next().unwrap().parse().unwrap();
                let o: i64 = it.next().unwrap().parse().unwrap();
                acks.push((q, o));
            }
            Some("AT") => reached = it.next() == Some(step.as_str()),
            _ => {}
        }
    }
    let status = child.wait().unwrap();
    assert!(
        reached,
        "the child never reached {}: {status}",
        step.as_str()
    );
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(9), "{status}");
    acks
}

fn flip_crash(serving: CqBackend, shadow: CqBackend) {
    for step in FlipStep::ALL {
        let dir = tempfile::tempdir().unwrap();
        let acks = run_flip_child(dir.path(), serving.as_str(), shadow.as_str(), step);
        assert!(!acks.is_empty());
        // Restart with the original config: the persisted choice decides.
        let mut config = small_config(dir.path(), serving);
        config.mapped_file_size_commit_log_bytes = 256 * 1024;
        let store = open_store(&config).unwrap();
        let flipped = matches!(step, FlipStep::Persisted | FlipStep::Swapped);
        let (want_serving, want_shadow) = if flipped {
            (shadow, serving)
        } else {
            (serving, shadow)
        };
        let status = store.cq_status();
        assert_eq!(
            store.serving_backend(),
            want_serving,
            "{step:?}: {status:?}"
        );
        assert_eq!(
            store.shadow_consume_queue().map(|c| c.backend()),
            Some(want_shadow),
            "{step:?}"
        );
        assert!(
            store.wait_shadow_caught_up(CATCH_UP),
            "{step:?}: {:?}",
            store.cq_status()
        );
        let report = store
            .verify_consume_queues(VerifyOptions::default())
            .unwrap();
        assert!(report.equal(), "{step:?}: {report:?}");
        let mut max_acked: HashMap<i32, i64> = HashMap::new();
        for (q, o) in &acks {
            let m = max_acked.entry(*q).or_insert(-1);
            *m = (*m).max(*o);
        }
        for (q, max) in max_acked {
            let read = read_queue(&store, "Crash", q);
            assert!(
                read.len() as i64 > max,
                "{step:?}: queue {q} has {} messages, {max} was acknowledged",
                read.len()
            );
        }
        store.shutdown().unwrap();
    }
}

#[test]
fn kill_9_at_each_flip_step_file_to_rocksdb() {
    flip_crash(CqBackend::File, CqBackend::Rocksdb);
}

#[test]
fn kill_9_at_each_flip_step_rocksdb_to_file() {
    flip_crash(CqBackend::Rocksdb, CqBackend::File);
}

/// A shadow added to a store whose log is far longer than the 4 MiB the
/// catch-up yields to, while puts go on, catches up; and waiting for it
/// blocks neither the serving dispatch nor the shadow.
#[test]
fn a_shadow_added_to_a_busy_store_catches_up() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = small_config(dir.path(), CqBackend::File);
    config.mapped_file_size_commit_log_bytes = 16 * 1024 * 1024;
    let store = Arc::new(open_store(&config).unwrap());
    let body = vec![b'x'; 1000];
    // 100 MB of log: building it takes longer than the writer below needs
    // to put the 4 MiB the catch-up yields to.
    for i in 0..100_000 {
        store
            .put_message(&message("Busy", i % 4, body.clone()))
            .unwrap();
    }
    wait_dispatched(&store);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, stop, body) = (Arc::clone(&store), Arc::clone(&stop), body.clone());
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(Ordering::Acquire) && n < 50_000 {
                store
                    .put_message(&message("Busy", n % 4, body.clone()))
                    .unwrap();
                n += 1;
            }
        })
    };
    store.add_shadow(CqBackend::Rocksdb).unwrap();
    let caught_up = store.wait_shadow_caught_up(CATCH_UP);
    let status = store.cq_status();
    stop.store(true, Ordering::Release);
    writer.join().unwrap();
    assert!(caught_up, "{status:?}");
    wait_dispatched(&store);
    assert!(store.wait_shadow_caught_up(CATCH_UP));
    let report = store
        .verify_consume_queues(VerifyOptions::default())
        .unwrap();
    assert!(report.equal(), "{report:?}");
    assert!(report.units_compared >= 100_000, "{report:?}");
}

/// A damaged `config/cqBackends.json` stops the store with an error naming
/// the file and what is wrong, and leaves the file as it was.
#[test]
fn a_damaged_backend_choice_is_refused_by_name() {
    for (bytes, says) in [
        (
            &b"{\"serving\": \"leveldb\"}"[..],
            "not a consume-queue backend choice",
        ),
        (
            &b"{\"serving\": \"file\", \"shadow\": \"file\"}"[..],
            "cannot shadow itself",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config/cqBackends.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, bytes).unwrap();
        let err = open_store(&small_config(dir.path(), CqBackend::File)).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("cqBackends.json") && text.contains(says),
            "{text}"
        );
        assert_eq!(std::fs::read(&file).unwrap(), bytes);
    }
}
