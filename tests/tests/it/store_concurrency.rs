//! Several threads appending to several queues: each queue's offsets are
//! 0..n with no gap or duplicate, and every record reads back with its CRC.

use std::collections::HashSet;
use std::sync::Arc;

use rmq_common::config::CqBackend;
use rmq_tests::{message, open_store, read_queue, small_config, wait_dispatched, BACKENDS};

const THREADS: usize = 6;
const PER_THREAD: usize = 1500;
const QUEUES: i32 = 5;

fn concurrent_appends(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open_store(&small_config(dir.path(), backend)).unwrap());
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                for i in 0..PER_THREAD {
                    let q = ((t + i) % QUEUES as usize) as i32;
                    let body = format!("t{t}-i{i}-{}", "x".repeat(i % 97));
                    if i % 10 == 0 {
                        let batch = vec![
                            message("Conc", q, body.clone() + "-b0"),
                            message("Conc", q, body + "-b1"),
                        ];
                        store.put_messages(&batch).unwrap();
                    } else {
                        store.put_message(&message("Conc", q, body)).unwrap();
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    wait_dispatched(&store);
    let mut bodies = HashSet::new();
    let mut total = 0;
    for q in 0..QUEUES {
        let got = read_queue(&store, "Conc", q);
        for (i, m) in got.iter().enumerate() {
            assert_eq!(m.queue_offset, i as i64, "queue {q} has a gap or duplicate");
            assert_eq!(m.stored_queue_offset, i as i64);
            assert!(bodies.insert(m.body.clone()), "body read twice");
        }
        assert_eq!(
            store.max_offset_in_queue("Conc", q).unwrap(),
            got.len() as i64
        );
        total += got.len();
    }
    assert_eq!(total, THREADS * (PER_THREAD + PER_THREAD / 10));
}

#[test]
fn concurrent_appends_all_backends() {
    for backend in BACKENDS {
        concurrent_appends(backend);
    }
}
