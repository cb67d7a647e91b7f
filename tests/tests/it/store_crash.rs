//! Crash durability. Contract checked: under SYNC_FLUSH, every message whose
//! put was answered PutOk before the process was killed with SIGKILL is
//! readable through the consume queue after a restart, with its body, and
//! queue offsets continue after a restart without reusing an acknowledged one.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rand::Rng;
use rmq_common::config::CqBackend;
use rmq_tests::{crash_body, open_store, read_queue, small_config, BACKENDS};

/// Kill-and-restart rounds per backend.
const ROUNDS: usize = 4;
/// Acknowledgements to see before the kill is armed.
const MIN_ACKS_BEFORE_KILL: usize = 50;
/// Longest wait for those first acknowledgements (start-up included).
const FIRST_ACKS_TIMEOUT: Duration = Duration::from_secs(60);
/// The kill lands at a random moment up to this long after that.
const MAX_EXTRA_RUN: Duration = Duration::from_millis(400);
/// Writer threads in the child (group commit has company).
const WRITER_THREADS: usize = 4;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Ack {
    queue: i32,
    queue_offset: i64,
    token: String,
    len: usize,
    /// The LMQs the message was also dispatched into (`lmq` mode).
    lmqs: Vec<String>,
}

fn parse_ack(line: &str) -> Option<Ack> {
    let mut it = line.split_whitespace();
    (it.next()? == "ACK").then_some(())?;
    let queue = it.next()?.parse().ok()?;
    let queue_offset = it.next()?.parse().ok()?;
    let _phy: i64 = it.next()?.parse().ok()?;
    let token = it.next()?.to_owned();
    let len = it.next()?.parse().ok()?;
    let lmqs = it
        .next()
        .map(|l| l.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    Some(Ack {
        queue,
        queue_offset,
        token,
        len,
        lmqs,
    })
}

fn run_and_kill(root: &std::path::Path, mode: &str, backend: &str) -> Vec<Ack> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crash-writer"))
        .args([
            mode,
            root.to_str().unwrap(),
            backend,
            &WRITER_THREADS.to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut acks = Vec::new();
    let deadline = Instant::now() + FIRST_ACKS_TIMEOUT;
    while acks.len() < MIN_ACKS_BEFORE_KILL {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx.recv_timeout(left).unwrap_or_else(|_| {
            let _ = child.kill();
            panic!(
                "child produced only {} acks in {FIRST_ACKS_TIMEOUT:?}",
                acks.len()
            )
        });
        acks.extend(parse_ack(&line));
    }
    let extra = rand::thread_rng().gen_range(Duration::ZERO..MAX_EXTRA_RUN);
    let kill_at = Instant::now() + extra;
    while let Ok(line) = rx.recv_timeout(kill_at.saturating_duration_since(Instant::now())) {
        acks.extend(parse_ack(&line));
        if Instant::now() >= kill_at {
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // Lines written before the kill are still in the pipe: they count.
    reader.join().unwrap();
    acks.extend(rx.try_iter().filter_map(|l| parse_ack(&l)));
    acks
}

fn crash_rounds(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let mut acked: HashMap<(i32, i64), Ack> = HashMap::new();
    for round in 0..ROUNDS {
        let acks = run_and_kill(dir.path(), "write", backend.as_str());
        for a in acks {
            let prev = acked.insert((a.queue, a.queue_offset), a.clone());
            assert!(
                prev.is_none(),
                "round {round}: queue offset reused: {a:?} and {prev:?}"
            );
        }
        let mut config = small_config(dir.path(), backend);
        config.mapped_file_size_commit_log_bytes = 256 * 1024;
        let store = open_store(&config).unwrap();
        assert!(
            store.startup_report().abnormal,
            "a killed run leaves the abort file"
        );
        for q in 0..WRITER_THREADS as i32 {
            let got = read_queue(&store, "Crash", q);
            for (i, m) in got.iter().enumerate() {
                assert_eq!(m.queue_offset, i as i64, "round {round}: gap in queue {q}");
            }
            for a in acked.values().filter(|a| a.queue == q) {
                let m = got
                    .get(a.queue_offset as usize)
                    .unwrap_or_else(|| panic!("round {round}: acknowledged {a:?} lost"));
                assert_eq!(
                    m.body,
                    crash_body(&a.token, a.len),
                    "round {round}: body of {a:?}"
                );
            }
        }
        // Let the next child start from a clean or a crashed state in turn.
        if round % 2 == 0 {
            store.shutdown().unwrap();
        } else {
            store.halt_as_if_crashed();
        }
    }
    assert!(acked.len() >= ROUNDS * MIN_ACKS_BEFORE_KILL);
}

#[test]
fn sigkill_under_sync_flush_loses_no_acknowledged_message() {
    for backend in BACKENDS {
        crash_rounds(backend);
    }
}

/// Kill -9 while multi-dispatched messages are appended and dispatched:
/// after each restart every LMQ is gapless from 0, and every acknowledged
/// message is in each of its LMQs exactly once, with its body; offsets go
/// on after the restart without reuse.
fn lmq_crash_rounds(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let mut acked: Vec<Ack> = Vec::new();
    for round in 0..LMQ_ROUNDS {
        acked.extend(run_and_kill(dir.path(), "lmq", backend.as_str()));
        let mut config = small_config(dir.path(), backend);
        config.mapped_file_size_commit_log_bytes = 256 * 1024;
        config.enable_lmq = true;
        config.enable_multi_dispatch = true;
        let store = open_store(&config).unwrap();
        let mut lmqs: HashMap<String, Vec<Vec<u8>>> = HashMap::new();
        for a in &acked {
            for l in &a.lmqs {
                lmqs.entry(l.clone()).or_insert_with(|| {
                    let got = read_queue(&store, l, 0);
                    for (i, m) in got.iter().enumerate() {
                        assert_eq!(m.queue_offset, i as i64, "round {round}: gap in {l}");
                    }
                    got.into_iter().map(|m| m.body).collect()
                });
            }
        }
        assert!(
            lmqs.len() >= 10,
            "round {round}: the acknowledged messages name only {} LMQs",
            lmqs.len()
        );
        for a in &acked {
            let body = crash_body(&a.token, a.len);
            for l in &a.lmqs {
                let n = lmqs[l].iter().filter(|b| **b == body).count();
                assert_eq!(
                    n, 1,
                    "round {round}: acknowledged {} is {n} times in {l}",
                    a.token
                );
            }
        }
        if round % 2 == 0 {
            store.shutdown().unwrap();
        } else {
            store.halt_as_if_crashed();
        }
    }
    assert!(acked.len() >= LMQ_ROUNDS * MIN_ACKS_BEFORE_KILL);
}

/// Rounds of [`lmq_crash_rounds`] per backend.
const LMQ_ROUNDS: usize = 3;

#[test]
fn sigkill_during_lmq_dispatch_loses_no_acknowledged_message() {
    for backend in [CqBackend::File, CqBackend::Rocksdb] {
        lmq_crash_rounds(backend);
    }
}
