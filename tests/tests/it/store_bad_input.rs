//! Bad input gets a named error, never a panic, and loses nothing stored.

use rmq_common::config::CqBackend;
use rmq_store_file::commitlog::segment_name;
use rmq_store_file::StoreError;
use rmq_tests::{message, open_store, read_queue, small_config, wait_dispatched};

#[test]
fn oversized_message_and_illegal_topic() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path(), CqBackend::File);
    let store = open_store(&config).unwrap();
    store.put_message(&message("Ok", 0, "kept")).unwrap();
    let big = message(
        "Ok",
        0,
        vec![0u8; config.max_message_size_bytes as usize + 1],
    );
    let err = store.put_message(&big).unwrap_err();
    assert!(matches!(err, StoreError::MessageIllegal { .. }), "{err}");
    assert!(err.to_string().contains("maxMessageSize"), "{err}");
    let err = store
        .put_message(&message("bad/topic", 0, "x"))
        .unwrap_err();
    assert!(matches!(err, StoreError::IllegalName(_)), "{err}");
    assert!(err.to_string().contains("bad/topic"), "{err}");
    let err = store
        .put_message(&message(&"t".repeat(128), 0, "x"))
        .unwrap_err();
    assert!(matches!(err, StoreError::IllegalName(_)), "{err}");
    wait_dispatched(&store);
    assert_eq!(
        read_queue(&store, "Ok", 0).len(),
        1,
        "the good message is still there"
    );
}

#[test]
fn second_store_on_same_root_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path(), CqBackend::File);
    let _first = open_store(&config).unwrap();
    let err = open_store(&config).unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }), "{err}");
}

#[test]
fn second_process_on_same_root_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path(), CqBackend::File);
    let _first = open_store(&config).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_crash-writer"))
        .args(["open-only", dir.path().to_str().unwrap(), "file"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("locked by another process"), "{stderr}");
}

#[test]
fn corrupt_segment_in_the_middle_is_a_named_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path(), CqBackend::File);
    let segment = config.mapped_file_size_commit_log_bytes as i64;
    let mut offsets = Vec::new();
    {
        let store = open_store(&config).unwrap();
        for i in 0..400 {
            let r = store
                .put_message(&message("Mid", 0, vec![i as u8; 500]))
                .unwrap();
            offsets.push(r.appended[0].phy_offset);
        }
        store.shutdown().unwrap();
    }
    // A damaged record in the segment before the last one: valid records
    // follow it, so this is not a torn tail and nothing may be cut.
    let last_segment = offsets.last().unwrap() / segment;
    assert!(last_segment >= 2, "the test needs at least three segments");
    let middle = (last_segment - 1) * segment;
    let victim = *offsets.iter().find(|o| **o >= middle + 1000).unwrap();
    let path = config.commit_log_dir().join(segment_name(middle));
    let original = std::fs::read(&path).unwrap();
    let mut raw = original.clone();
    raw[(victim - middle) as usize + 4] ^= 0x55; // its magic code
    std::fs::write(&path, &raw).unwrap();
    let err = open_store(&config).unwrap_err();
    assert!(
        matches!(&err, StoreError::Corrupt { offset, .. } if *offset == victim),
        "{err}"
    );
    assert!(
        err.to_string().contains(&segment_name(middle)),
        "names the file: {err}"
    );
    // Nothing was cut: restoring the byte brings every message back.
    std::fs::write(&path, &original).unwrap();
    let store = open_store(&config).unwrap();
    assert_eq!(read_queue(&store, "Mid", 0).len(), 400);
    store.shutdown().unwrap();

    // A segment file of the wrong size, and a stray file name.
    let seg1 = config.commit_log_dir().join(segment_name(
        config.mapped_file_size_commit_log_bytes as i64,
    ));
    let seg1_bytes = std::fs::read(&seg1).unwrap();
    std::fs::write(&seg1, &seg1_bytes[..1000]).unwrap();
    let err = open_store(&config).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    std::fs::write(&seg1, &seg1_bytes).unwrap();
    std::fs::write(config.commit_log_dir().join("notes.txt"), "x").unwrap();
    let err = open_store(&config).unwrap_err();
    assert!(err.to_string().contains("notes.txt"), "{err}");
}
