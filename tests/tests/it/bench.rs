//! The load tool against a real broker: its counts agree with what the
//! broker stored and served, pacing and duration stop it as asked, and it
//! reads dispatch figures from `/metrics`. The store-level cell reports
//! every message dispatched. File and RocksDB backends. The POP bench
//! against the broker binary, both forms of POP state.

use std::time::Duration;

use rmq_broker::broker::Broker;
use rmq_common::config::CqBackend;
use rmq_tests::metered_settings;
use rmq_tools::bench::{load, pop, pop_consumer, store, timer, LoadSpec};

async fn broker(root: &std::path::Path, backend: CqBackend, test: &str) -> Broker {
    Broker::start(metered_settings(root, backend, &format!("bench-{test}")))
        .await
        .unwrap()
}

fn spec(args: &[&str]) -> LoadSpec {
    LoadSpec::from_args(args.iter().copied()).unwrap()
}

async fn counts_agree(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), backend, "counts").await;
    let s = spec(&[
        "--producers",
        "2",
        "--consumers",
        "2",
        "--topics",
        "2",
        "--queues",
        "3",
        "--size",
        "100",
        "--batch",
        "4",
        "--mode",
        "async",
        "--inflight",
        "4",
        "--messages",
        "2000",
        "--warmup",
    ]);
    let r = load::run(b.addr(), b.metrics_addr(), &s).await.unwrap();
    assert_eq!(r.first_error, None);
    assert_eq!((r.sent, r.send_errors), (2000, 0));
    // One latency per request of 4 messages.
    assert_eq!(r.send_latency.count, 500);
    assert_eq!((r.received, r.consume_errors), (2000, 0));
    assert!(r.caught_up);
    assert_eq!(r.e2e_latency.count, 2000);
    assert_eq!(r.total_queues, 6);
    let d = r.dispatch.clone().unwrap();
    assert!(d.scrapes >= 2, "{d:?}");
    assert!(d.delay_count >= 2000.0, "{d:?}");
    assert!(d.delay_p99_s.is_some(), "{d:?}");
    // The broker's CPU and memory over the run (here the test process's,
    // which holds the broker and the load alike).
    assert!(d.cpu_seconds.is_some_and(|c| c > 0.0), "{d:?}");
    assert!(d.cpu_us_per(r.sent).is_some(), "{d:?}");
    assert!(d.rss_max_bytes.is_some_and(|b| b > 1e6), "{d:?}");
    // What the broker holds matches: 6 queues, one warm-up message each
    // (which the consumers, starting at the end, did not count) and 2000.
    let store = &b.context().store;
    let mut stored = 0;
    for t in ["BenchTopic-0", "BenchTopic-1"] {
        for q in 0..3 {
            stored += store.consume_queue().max_offset(t, q).unwrap();
        }
    }
    assert_eq!(stored, 2006);
    b.shutdown().await;
}

async fn pacing_and_duration(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), backend, "pacing").await;
    // 1,000 messages at 2,000/s: the last is scheduled 0.4995 s in.
    let paced = spec(&["--rate", "2000", "--messages", "1000", "--consumers", "0"]);
    let r = load::run(b.addr(), None, &paced).await.unwrap();
    assert_eq!(r.sent, 1000);
    assert!(r.send_seconds >= 0.45, "{}", r.send_seconds);
    assert_eq!(r.catch_up_seconds, None);
    // A duration without a count stops on time.
    let timed = spec(&[
        "--duration",
        "300ms",
        "--producers",
        "1",
        "--topic-prefix",
        "Timed",
    ]);
    let r = load::run(b.addr(), None, &timed).await.unwrap();
    assert!(r.sent > 0);
    assert!(r.send_seconds >= 0.3, "{}", r.send_seconds);
    assert_eq!(r.received, r.sent);
    b.shutdown().await;
}

fn store_cell(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let cell = store::CellSpec {
        backend,
        queues: 1500,
        messages: 6000,
        size: 16,
        dir: dir.path().join("store"),
    };
    let r = store::run_cell(&cell).unwrap();
    assert_eq!(r.messages, 6000);
    assert!(r.append_rate > 0.0 && r.dispatch_rate > 0.0, "{r:?}");
    assert!(r.cq_files > 0 && r.cq_disk_bytes > 0, "{r:?}");
    if backend == CqBackend::File {
        // One file per queue (two topics of 750 queues).
        assert!(r.cq_files >= 1500, "{r:?}");
    }
}

macro_rules! per_backend {
    ($($backend:ident => $b:expr),*) => {$(
        mod $backend {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn load_counts_agree_with_the_broker() {
                counts_agree($b).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn rate_and_duration_stop_the_load() {
                pacing_and_duration($b).await;
            }

            #[test]
            fn store_cell_dispatches_everything() {
                store_cell($b);
            }
        }
    )*};
}

per_backend!(file => CqBackend::File, rocksdb => CqBackend::Rocksdb);

/// `rmq-bench pop` over the broker binary, both forms of POP state: every
/// message is handed out and acked, each one left unacked comes back once
/// through the retry topic (never before its invisible time ends), and the
/// counts add up. `batch_ack` sends BATCH_ACK_MESSAGE instead of one
/// ACK_MESSAGE per message.
async fn pop_forms(batch_ack: bool, forms: Vec<pop::PopForm>) {
    let dir = tempfile::tempdir().unwrap();
    let spec = pop::PopSpec {
        messages: 2000,
        queues: 4,
        consumers: 2,
        size: 64,
        batch: 32,
        unacked_fraction: 0.05,
        // Long enough that no ack arrives after its message's invisible
        // time ends (which would redeliver an acked message).
        invisible_time: Duration::from_secs(3),
        poll_time: Duration::from_millis(500),
        batch_ack,
        timeout: Duration::from_secs(60),
        forms: forms.clone(),
        broker_bin: Some(env!("CARGO_BIN_EXE_rmq-broker-under-test").into()),
        dir: Some(dir.path().into()),
    };
    let r = pop::run(&spec).await.unwrap();
    let unacked = (0..spec.messages)
        .filter(|s| pop_consumer::left_unacked(*s, spec.unacked_fraction))
        .count() as u64;
    assert!(unacked > 50, "{unacked}");
    assert_eq!(r.rows.len(), forms.len());
    for (row, form) in r.rows.iter().zip(&forms) {
        assert_eq!(row.form, *form);
        assert_eq!((row.errors, &row.first_error), (0, &None), "{row:?}");
        assert!(row.complete, "{row:?}");
        assert_eq!(row.left_unacked, unacked, "{row:?}");
        assert_eq!(row.redelivered, unacked, "{row:?}");
        assert_eq!((row.duplicates, row.early), (0, 0), "{row:?}");
        assert_eq!(row.popped, spec.messages + unacked, "{row:?}");
        assert_eq!(row.acks, spec.messages, "{row:?}");
        assert_eq!(row.revive_lag.count, unacked, "{row:?}");
        assert!(row.pops_per_s > 0.0 && row.acks_per_s > 0.0, "{row:?}");
        assert!(row.drain_seconds <= row.total_seconds, "{row:?}");
        // Revive waits for the invisible time, so the run outlasts it.
        assert!(row.total_seconds >= 3.0, "{row:?}");
        assert!(row.cpu_us_per_msg.is_some_and(|c| c > 0.0), "{row:?}");
    }
    assert_eq!(r.ratios.len(), forms.len() - 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pop_bench_compares_both_forms() {
    use pop::PopForm::{ReviveTopic, Rocksdb};
    pop_forms(false, vec![ReviveTopic, Rocksdb]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pop_bench_with_batch_acks() {
    use pop::PopForm::{ReviveTopic, Rocksdb};
    pop_forms(true, vec![Rocksdb, ReviveTopic]).await;
}

/// `rmq-bench timer` over the broker binary, both timer stores: every timer
/// message comes through the kill -9 between send and due time, none before
/// its due time, none twice, and the figures are filled in.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn timer_bench_delivers_every_timer_on_both_stores() {
    use rmq_common::TimerStoreType::{Rocksdb, Wheel};
    let dir = tempfile::tempdir().unwrap();
    let spec = timer::TimerSpec {
        timers: 3_000,
        queues: 4,
        size: 32,
        senders: 2,
        inflight: 8,
        due_after: Duration::from_secs(4),
        spread: Duration::from_secs(2),
        grace: Duration::from_secs(30),
        stores: vec![Wheel, Rocksdb],
        broker_bin: Some(env!("CARGO_BIN_EXE_rmq-broker-under-test").into()),
        dir: Some(dir.path().into()),
    };
    let r = timer::run(&spec).await.unwrap();
    let stores: Vec<&str> = r.rows.iter().map(|row| row.store).collect();
    assert_eq!(stores, ["wheel", "rocksdb"]);
    for row in &r.rows {
        assert_eq!(
            (row.missing, row.duplicates, row.early),
            (0, 0, 0),
            "{row:?}"
        );
        assert_eq!(row.delivered, spec.timers, "{row:?}");
        assert_eq!(row.deliver_lag.count, spec.timers, "{row:?}");
        assert!(row.inserts_per_s > 0.0 && row.restart_ms > 0.0, "{row:?}");
        assert!(row.disk_bytes > 0 && row.rss_inserted_kib > 0, "{row:?}");
    }
}
