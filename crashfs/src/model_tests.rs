//! The model's promises without a kernel: what a cut keeps.

use super::*;

fn open(dir: &std::path::Path) -> Model {
    Model::new(Durable::open(dir).unwrap())
}

/// The power cut: the live model dropped, the synced state opened again.
fn cut(m: Model, dir: &std::path::Path) -> Model {
    drop(m);
    open(dir)
}

fn file(m: &mut Model, path: &[&str]) -> u64 {
    let mut at = ROOT;
    for p in path {
        at = m.lookup(at, p).unwrap().ino;
    }
    at
}

#[test]
fn only_synced_bytes_of_a_linked_file_survive_a_cut() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(dir.path());
    let f = m.create(ROOT, "log", 0o644).unwrap().ino;
    m.write(f, 0, b"first").unwrap();
    m.fsync(f).unwrap();
    m.fsyncdir(ROOT).unwrap();
    m.write(f, 5, b"-second").unwrap();
    assert_eq!(m.read(f, 0, 100).unwrap(), b"first-second");
    let mut m = cut(m, dir.path());
    let f = file(&mut m, &["log"]);
    assert_eq!(m.read(f, 0, 100).unwrap(), b"first");
}

#[test]
fn a_created_file_needs_its_directory_synced() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(dir.path());
    let f = m.create(ROOT, "new", 0o644).unwrap().ino;
    m.write(f, 0, b"data").unwrap();
    m.fsync(f).unwrap();
    let mut m = cut(m, dir.path());
    assert_eq!(
        m.lookup(ROOT, "new"),
        Err(libc::ENOENT),
        "the entry was never synced"
    );
    let f = m.create(ROOT, "new", 0o644).unwrap().ino;
    m.fsyncdir(ROOT).unwrap();
    let mut m = cut(m, dir.path());
    let g = file(&mut m, &["new"]);
    assert_eq!(g, f);
    assert_eq!(m.read(g, 0, 10).unwrap(), b"", "linked, bytes never synced");
}

#[test]
fn a_rename_is_durable_with_its_directory_and_the_old_file_stays_until_then() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(dir.path());
    let old = m.create(ROOT, "table.json", 0o644).unwrap().ino;
    m.write(old, 0, b"v1").unwrap();
    m.fsync(old).unwrap();
    m.fsyncdir(ROOT).unwrap();
    let tmp = m.create(ROOT, "table.json.tmp", 0o644).unwrap().ino;
    m.write(tmp, 0, b"v2").unwrap();
    m.fsync(tmp).unwrap();
    m.rename((ROOT, "table.json.tmp"), (ROOT, "table.json"), false)
        .unwrap();
    let mut m = cut(m, dir.path());
    let f = file(&mut m, &["table.json"]);
    assert_eq!(
        m.read(f, 0, 10).unwrap(),
        b"v1",
        "rename not synced: the old file"
    );
    assert_eq!(m.lookup(ROOT, "table.json.tmp"), Err(libc::ENOENT));
    let tmp = m.create(ROOT, "table.json.tmp", 0o644).unwrap().ino;
    m.write(tmp, 0, b"v2").unwrap();
    m.fsync(tmp).unwrap();
    m.rename((ROOT, "table.json.tmp"), (ROOT, "table.json"), false)
        .unwrap();
    m.fsyncdir(ROOT).unwrap();
    let mut m = cut(m, dir.path());
    let f = file(&mut m, &["table.json"]);
    assert_eq!(m.read(f, 0, 10).unwrap(), b"v2");
}

#[test]
fn truncation_and_regrowth_read_zeros_and_sync_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(dir.path());
    let f = m.create(ROOT, "f", 0o644).unwrap().ino;
    m.write(f, 0, &[7u8; 10_000]).unwrap();
    m.fsync(f).unwrap();
    m.fsyncdir(ROOT).unwrap();
    m.truncate(f, 100).unwrap();
    m.write(f, 8_000, b"x").unwrap();
    let read = m.read(f, 0, 10_000).unwrap();
    assert_eq!(read.len(), 8_001);
    assert!(read[..100].iter().all(|b| *b == 7));
    assert!(
        read[100..8_000].iter().all(|b| *b == 0),
        "cut bytes read as zeros"
    );
    m.fsync(f).unwrap();
    let mut m = cut(m, dir.path());
    let f = file(&mut m, &["f"]);
    assert_eq!(m.read(f, 0, 10_000).unwrap(), read);
}

#[test]
fn a_failed_sync_drops_the_unsynced_bytes_and_the_next_sync_succeeds_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(dir.path());
    let f = m.create(ROOT, "f", 0o644).unwrap().ino;
    m.fsyncdir(ROOT).unwrap();
    m.write(f, 0, b"kept").unwrap();
    m.fsync(f).unwrap();
    m.write(f, 4, b"-lost").unwrap();
    m.drop_unsynced(f);
    m.fsync(f).unwrap();
    let mut m = cut(m, dir.path());
    let f = file(&mut m, &["f"]);
    assert_eq!(m.read(f, 0, 100).unwrap(), b"kept");
}

#[test]
fn unlinked_open_files_live_until_forgotten_and_directories_must_be_empty() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(dir.path());
    let d = m.mkdir(ROOT, "d", 0o755).unwrap().ino;
    let f = m.create(d, "f", 0o644).unwrap().ino;
    assert_eq!(m.rmdir(ROOT, "d"), Err(libc::ENOTEMPTY));
    assert_eq!(m.path(f).as_deref(), Some("/d/f"));
    m.unlink(d, "f").unwrap();
    m.write(f, 0, b"still writable").unwrap();
    assert_eq!(m.path(f), None);
    m.forget(f, 1);
    assert_eq!(m.getattr(f), Err(libc::ENOENT));
    m.rmdir(ROOT, "d").unwrap();
    assert_eq!(
        m.rename((ROOT, "nope"), (ROOT, "x"), false),
        Err(libc::ENOENT)
    );
}

#[test]
fn a_hard_link_is_a_second_name_durable_with_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(dir.path());
    let f = m.create(ROOT, "f.tmp", 0o644).unwrap().ino;
    m.write(f, 0, b"whole").unwrap();
    m.fsync(f).unwrap();
    assert_eq!(m.link(f, ROOT, "f.tmp"), Err(libc::EEXIST));
    assert_eq!(m.link(f, ROOT, "f").unwrap().nlink, 2);
    m.unlink(ROOT, "f.tmp").unwrap();
    assert_eq!(m.getattr(f).unwrap().nlink, 1);
    assert_eq!(m.path(f).as_deref(), Some("/f"));
    m.fsyncdir(ROOT).unwrap();
    let mut m = cut(m, dir.path());
    let g = file(&mut m, &["f"]);
    assert_eq!(m.read(g, 0, 10).unwrap(), b"whole");
    assert_eq!(m.lookup(ROOT, "f.tmp"), Err(libc::ENOENT));
}
